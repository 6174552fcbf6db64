"""The window: Qt widgets and wiring only; the work is done by the Qt-free core services."""

from workbench.ui import qtcompat  # noqa: F401  (PySide6 6.12 on Python 3.11: see its docstring)
