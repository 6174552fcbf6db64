"""The sessions panel's export and import (`SessionsPanel` inherits `ExportImport`): the selected
runs, else the newest that pass the filters, written as CSV, a JSON bundle or a Chrome trace
(`profile.sessions.export`); a bundle's runs imported, those already here skipped. Errors go to
the panel's message line. A file is written over only when the save dialog asked and the user
said so (Qt's dialog confirms an existing name); never a device, a link or a folder
(`export.write_text`).
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QFileDialog

from workbench.errors import WorkbenchError
from workbench.profile.sessions import paging

#: Runs an export of the list takes when none is selected (the newest that pass the filters).
LIST_LIMIT = 2000
EXPORT_FORMATS = {
    "csv": ("CSV", "*.csv"),
    "json": ("JSON bundle", "*.json"),
    "chrome-trace": ("Chrome trace", "*.json"),
}


class ExportImport:
    """Export and import for a panel with `selected_ids`, `store`, `run_filter`, `show_message`
    and `refresh` (the sessions panel)."""

    def export_ids(self) -> list[int]:
        """The selected runs, else the newest `LIST_LIMIT` that pass the filters."""
        selected = self.selected_ids()
        store = self.store()
        if selected or store is None:
            return selected
        runs = paging.page(store, self.run_filter().resolved(store), limit=LIST_LIMIT)
        return [run["id"] for run in runs]

    def export_to(self, fmt: str, path: str | Path, overwrite: bool = False) -> bool:
        from workbench.profile.sessions.export import render, write_text

        store = self.store()
        if store is None:
            return False
        ids = self.export_ids()
        try:
            write_text(path, render(store, fmt, ids), overwrite=overwrite)
        except WorkbenchError as exc:
            self.show_message(str(exc), error=True)
            return False
        self.show_message(f"exported {len(ids)} run(s) to {path}")
        return True

    def export_dialog(self, fmt: str) -> None:
        label, pattern = EXPORT_FORMATS[fmt]
        path, _ = QFileDialog.getSaveFileName(self, f"Export runs as {label}", "", f"{label} ({pattern})")
        if path:
            # The dialog asked before returning an existing file's name: replacing it is the answer.
            self.export_to(fmt, path, overwrite=True)

    def import_from(self, path: str | Path) -> bool:
        from workbench.profile.sessions.export import import_bundle

        store = self.store()
        if store is None:
            return False
        try:
            added, skipped = import_bundle(store, path)
        except WorkbenchError as exc:
            self.show_message(str(exc), error=True)
            return False
        self.show_message(f"imported {added} run(s) from {path}; {skipped} were already here")
        self.refresh()
        return True

    def import_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Import runs", "", "Sessions bundle (*.json)")
        if path:
            self.import_from(path)
