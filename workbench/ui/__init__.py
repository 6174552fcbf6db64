"""The window: Qt widgets and wiring only; the work is done by the Qt-free core services."""
