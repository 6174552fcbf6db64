"""The build panel's Diagnostics list: one row per message at one place, naming every source that
reports it (backends, workbench.toml, cpu-sim's run, rustfmt / clippy / tests), each source's rows
replaced as a whole when it reports again; rustc's "For more information…" footers left out."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QHeaderView, QStyle, QTreeWidget, QTreeWidgetItem

DIAG_SEVERITY, DIAG_BACKEND, DIAG_LOCATION, DIAG_MESSAGE = range(4)
#: Rows that add nothing to the error above them (rustc prints one per failed crate).
_NOISE = ("For more information about this error", "For more information about these errors")


def is_noise(message: str, file: Any) -> bool:
    """rustc's "For more information about this error, try `rustc --explain …`" footers."""
    return not file and message.startswith(_NOISE)


def field_of(obj: Any, name: str, default: Any = None) -> Any:
    """Read a field of a record or of its dict form."""
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


class DiagnosticsList(QTreeWidget):
    """Severity, source(s), location and message per row; `order()` gives the sources' order
    (the toolbar's backends) for a row that several report."""

    def __init__(self, order: Callable[[], list[str]]):
        super().__init__()
        self._order = order
        self._keys: set[tuple] = set()
        self._groups: dict[tuple, list[str]] = {}  # (severity, message, file, line, col) -> sources
        self._items: dict[tuple, QTreeWidgetItem] = {}
        self.setObjectName("diagnostics")
        self.setRootIsDecorated(False)
        self.setUniformRowHeights(True)
        self.setHeaderLabels(["", "Backend", "Location", "Message"])
        header = self.header()
        header.setStretchLastSection(True)
        for col in (DIAG_SEVERITY, DIAG_BACKEND, DIAG_LOCATION):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)

    def clear(self) -> None:
        super().clear()
        self._keys.clear()
        self._groups.clear()
        self._items.clear()

    def forget(self, source: str) -> None:
        """Take `source` off every row; rows no source reports any more go."""
        for key, sources in list(self._groups.items()):
            if source not in sources:
                continue
            sources.remove(source)
            item = self._items[key]
            if sources:
                item.setText(DIAG_BACKEND, ", ".join(sources))
                continue
            del self._groups[key], self._items[key]
            index = self.indexOfTopLevelItem(item)
            if index >= 0:
                self.takeTopLevelItem(index)
        self._keys = {k for k in self._keys if k[0] != source}

    def add(self, source: str, diagnostic: Any) -> str | None:
        """Show `diagnostic` (a record or its dict) from `source`; its severity when a row was
        added, None when it was noise, already shown, or joined a row another source reported."""
        severity = field_of(diagnostic, "severity", "error") or "error"
        message = field_of(diagnostic, "message", "") or ""
        file, line, column = (field_of(diagnostic, name) for name in ("file", "line", "column"))
        if is_noise(message, file):
            return None
        key = (source, severity, message, file, line, column)
        if key in self._keys:  # the same diagnostic arrives as an event and in the result
            return None
        self._keys.add(key)
        # The same message at the same place from several sources (one crate, many targets) is
        # one row naming them all.
        group = key[1:]
        if group in self._groups:
            sources = self._groups[group]
            sources.append(source)
            order = {name: i for i, name in enumerate(self._order())}
            sources.sort(key=lambda name: (order.get(name, len(order)), name))  # as the toolbar lists them
            self._items[group].setText(DIAG_BACKEND, ", ".join(sources))
            return None
        location = ""
        if file:
            location = f"{file}:{line}" if line else str(file)
            if line and column:
                location += f":{column}"
        item = QTreeWidgetItem(["", source, location, message.splitlines()[0] if message else ""])
        item.setIcon(DIAG_SEVERITY, self._severity_icon(severity))
        item.setToolTip(DIAG_SEVERITY, severity)
        item.setToolTip(DIAG_MESSAGE, field_of(diagnostic, "rendered", "") or message)
        item.setData(DIAG_SEVERITY, Qt.ItemDataRole.UserRole, (file, line, column))
        self._groups[group] = [source]
        self._items[group] = item
        self.addTopLevelItem(item)
        return severity

    @staticmethod
    def location(item: QTreeWidgetItem) -> tuple[Any, Any, Any]:
        """(file, line, column) of a row (Nones where it has none)."""
        return item.data(DIAG_SEVERITY, Qt.ItemDataRole.UserRole) or (None, None, None)

    def rows(self) -> list[dict[str, str]]:
        """The list as a user reads it: severity, source(s), location, message per row."""
        return [
            {
                "severity": item.toolTip(DIAG_SEVERITY),
                "backend": item.text(DIAG_BACKEND),
                "location": item.text(DIAG_LOCATION),
                "message": item.text(DIAG_MESSAGE),
            }
            for item in (self.topLevelItem(i) for i in range(self.topLevelItemCount()))
        ]

    def _severity_icon(self, severity: str) -> QIcon:
        pixmap = {
            "error": QStyle.StandardPixmap.SP_MessageBoxCritical,
            "warning": QStyle.StandardPixmap.SP_MessageBoxWarning,
        }.get(severity, QStyle.StandardPixmap.SP_MessageBoxInformation)
        return self.style().standardIcon(pixmap)
