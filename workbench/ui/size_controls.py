"""The window's problem sizes: one field per `[kernel.sizes]` name, on the toolbar.

A field shows the manifest's value until the user types another; what differs from the manifest
goes to the bridge (`ServiceBridge.set_sizes`), so the window's runs, the tuning panel's sweeps
and the recorded runs all use it. workbench.toml is never edited. A value is read with the
command line's `--size` rule (`workbench.size_values`) and checked against the kernel (lengths,
scalars, launch at those sizes): a refused value is marked, its field's tooltip and the status
bar say why, and nothing runs until it is fixed. An empty field is the manifest's value.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from PySide6.QtCore import Signal, SignalInstance
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QSizePolicy, QWidget

from workbench.errors import WorkbenchError
from workbench.size_values import size_value
from workbench.ui import theme


@runtime_checkable
class SizeControlsBridge(Protocol):
    """The bridge members the size fields use (`ServiceBridge` has them: tests/ui/test_typed_events.py)."""

    projectChanged: SignalInstance
    sizesChanged: SignalInstance
    project: Any

    def kernel_name(self) -> str | None: ...
    def sizes(self) -> dict[str, int]: ...
    def set_sizes(self, sizes: dict[str, int] | None) -> None: ...
    def tunables(self) -> dict[str, int | float]: ...


class SizeControls(QWidget):
    """Fields for the sizes of the bridge's project and kernel; `message` carries refusals."""

    message = Signal(str)

    def __init__(self, bridge: SizeControlsBridge, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("SizeControls")
        self.bridge = bridge
        self.fields: dict[str, QLineEdit] = {}
        self._made: list[QWidget] = []  # the fields and their labels, rebuilt with the kernel
        self.kernel: Any = None
        self.error = ""  # why the values shown cannot be run ("" when they can)
        # As wide as its fields: the toolbar must not spread them over the window's width.
        self.setSizePolicy(QSizePolicy.Policy.Maximum, QSizePolicy.Policy.Preferred)
        self._layout = QHBoxLayout(self)
        self._layout.setContentsMargins(4, 0, 4, 0)
        self._layout.setSpacing(4)
        self._title = QLabel("Sizes:")
        self._layout.addWidget(self._title)
        bridge.projectChanged.connect(self._project_changed)
        bridge.sizesChanged.connect(self._show_sizes)
        self._project_changed(bridge.project)

    # ------------------------------------------------------------------ fields
    def _project_changed(self, project: Any) -> None:
        """Rebuild the fields for the kernel as the manifest now reads; the user's values stay
        for the sizes the kernel still has."""
        self.kernel = None
        if project is not None:
            try:
                self.kernel = project.manifest.kernel(self.bridge.kernel_name())
            except (WorkbenchError, LookupError, ValueError):
                self.kernel = None
        names = list(self.kernel.sizes) if self.kernel is not None else []
        if names != list(self.fields):
            for widget in self._made:
                self._layout.removeWidget(widget)
                widget.deleteLater()
            self._made, self.fields = [], {}
            for name in names:
                label = QLabel(f"{name} =")
                field = QLineEdit()
                field.setObjectName(f"size-{name}")
                # wide enough for 2**30's ten digits, never so wide that the toolbar overflows
                field.setMinimumWidth(field.fontMetrics().horizontalAdvance("0" * 11))
                field.setMaximumWidth(field.fontMetrics().horizontalAdvance("0" * 16))
                field.editingFinished.connect(self.apply)
                self._layout.addWidget(label)
                self._layout.addWidget(field)
                self._made += [label, field]
                self.fields[name] = field
        self._title.setVisible(bool(names))
        kept = {n: v for n, v in self.bridge.sizes().items() if n in self.fields}
        if kept != self.bridge.sizes():
            self.bridge.set_sizes(kept)  # sizes of another kernel would make every run fail
        self._show_sizes(kept)

    def _show_sizes(self, sizes: dict[str, int]) -> None:
        """Show `sizes` (the bridge's), the manifest's value for the others."""
        if self.kernel is None:
            return
        for name, field in self.fields.items():
            field.setPlaceholderText(str(self.kernel.sizes[name]))
            field.setText(str(sizes.get(name, self.kernel.sizes[name])))
            self._mark(field, "")
        self.error = ""

    def _tip(self, name: str) -> str:
        default = self.kernel.sizes[name]
        return (f"size {name} of kernel {self.kernel.name!r}: {default} in workbench.toml (left as it is); "
                "an integer expression such as 65536, 2**20 or pow2(16); empty: the manifest's value")  # fmt: skip

    def _mark(self, field: QLineEdit, error: str) -> None:
        field.setStyleSheet(f"QLineEdit {{ border: 1px solid {theme.ERROR}; }}" if error else "")
        field.setToolTip(error or self._tip(field.objectName().removeprefix("size-")))

    # ------------------------------------------------------------------ values
    def values(self) -> dict[str, int]:
        """Every size as the fields say (empty: the manifest's); a WorkbenchError names the first
        refused one and says why."""
        values: dict[str, int] = {}
        for name, field in self.fields.items():
            text = field.text().strip()
            values[name] = self.kernel.sizes[name] if not text else size_value(name, text, self.kernel)
        return values

    def apply(self) -> bool:
        """Hand the fields' sizes to the bridge; False (the field marked, `message` saying why)
        when one is refused: the bridge keeps the sizes it had."""
        if self.kernel is None:
            return True
        for field in self.fields.values():
            self._mark(field, "")
        try:
            values = self.values()
            self.kernel.evaluate(self.kernel.symbols(values, self.bridge.tunables()))
        except (WorkbenchError, ValueError) as exc:
            self.error = str(exc)
            culprit = self._culprit(self.error)
            self._mark(culprit, self.error)
            self.message.emit(self.error)
            return False
        self.error = ""
        changed = {n: v for n, v in values.items() if v != self.kernel.sizes[n]}
        if changed != self.bridge.sizes():
            self.bridge.set_sizes(changed)
        return True

    def _culprit(self, error: str) -> QLineEdit:
        """The field an error is about: the one it names (`--size 'n=…'`), else every size's
        first field (a length that fails at these sizes concerns them all)."""
        for name, field in self.fields.items():
            if f"'{name}=" in error:
                return field
        return next(iter(self.fields.values()))
