"""The sessions panel's export and import (`SessionsPanel` inherits `ExportImport`): the selected
runs, else the newest that pass the filters, written as CSV, a JSON bundle or a Chrome trace
(`profile.sessions.export`); a bundle's runs imported, those already here skipped. Errors go to
the panel's message line. A file is written over only when the save dialog asked and the user
said so (Qt's dialog confirms an existing name); never a device, a link or a folder
(`export.write_text`).

The work runs on a thread of its own, never the GUI thread: rendering 2,000 runs (the list's
export without a selection) holds the CPU for seconds (1.1 s as CSV, 3.9 s as a Chrome trace on
the project's VM). The thread opens its own `SessionStore` on the panel's file (WAL: the panel's
page reads and the window's recording go on meanwhile) and creates no Qt object; an import runs
`workbench sessions import` in a child process that the thread waits for (parsing a bundle is
one C call, which would hold the GIL and so the GUI thread). The outcome comes back as the
panel's `transferred` signal (queued to the GUI thread), which the message line shows. One
transfer at a time: the Export and Import buttons are disabled while one works, and closing the
panel waits for it (a half-written export or a half-read import is never left behind:
`write_text` is atomic, an import one transaction).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QFileDialog

from workbench.errors import WorkbenchError
from workbench.profile.sessions import paging

#: How long an import may take (its child process is stopped then).
IMPORT_LIMIT_S = 600.0
#: Runs an export of the list takes when none is selected (the newest that pass the filters).
LIST_LIMIT = 2000
EXPORT_FORMATS = {
    "csv": ("CSV", "*.csv"),
    "json": ("JSON bundle", "*.json"),
    "chrome-trace": ("Chrome trace", "*.json"),
}


class ExportImport:
    """Export and import for a panel with `selected_ids`, `store`, `run_filter`, `show_message`,
    `refresh`, `database_path`, `_closed`, the buttons `export_button` and `import_button` and the signal
    `transferred` (the sessions panel)."""

    _transfer: threading.Thread | None = None

    def export_ids(self) -> list[int]:
        """The selected runs, else the newest `LIST_LIMIT` that pass the filters."""
        selected = self.selected_ids()
        store = self.store()
        if selected or store is None:
            return selected
        runs = paging.page(store, self.run_filter().resolved(store), limit=LIST_LIMIT)
        return [run["id"] for run in runs]

    def transfer_busy(self) -> bool:
        """An export or import is working."""
        return self._transfer is not None

    def export_to(self, fmt: str, path: str | Path, overwrite: bool = False) -> bool:
        """Start writing the export on the transfer thread; False (the reason shown) when it
        cannot start. Its outcome: `transferred` ({"ok", "message", "kind": "export"})."""
        from workbench.profile.sessions.export import render, write_text

        if self.store() is None or not self._may_start():
            return False
        selected = bool(self.selected_ids())
        ids = self.export_ids()
        # The list's export stops at LIST_LIMIT: a user who meant the whole history is told.
        which = (
            f"the newest {len(ids)} run(s) that pass the filters (at most {LIST_LIMIT}: select rows, or use "
            "`workbench sessions export`, for others)"
            if not selected and len(ids) >= LIST_LIMIT
            else f"{len(ids)} run(s)"
        )

        def work(store) -> str:
            write_text(path, render(store, fmt, ids), overwrite=overwrite)
            return f"exported {which} to {path}"

        return self._start("export", work)

    def export_dialog(self, fmt: str) -> None:
        label, pattern = EXPORT_FORMATS[fmt]
        path, _ = QFileDialog.getSaveFileName(self, f"Export runs as {label}", "", f"{label} ({pattern})")
        if path:
            # The dialog asked before returning an existing file's name: replacing it is the answer.
            self.export_to(fmt, path, overwrite=True)

    def import_from(self, path: str | Path) -> bool:
        """Start importing a bundle: `workbench sessions import` in a child process, waited for
        on the transfer thread; False (the reason shown) when it cannot start. Its outcome:
        `transferred` ({"ok", "message", "kind": "import"}, the message the command's own); the
        list is refreshed after it."""
        if self.store() is None or not self._may_start():
            return False
        db = self.database_path()

        def work(_store) -> str:
            # Not in this process: reading a bundle is one C call (json.loads) that holds the GIL,
            # and so the GUI thread, for its whole length (0.4 s for 2,000 runs' 9 MB; a bundle
            # may be 256 MiB).
            from workbench import childproc
            from workbench.frozen import python_command

            command = python_command("workbench", "sessions", "import", str(path), "--db", str(db))
            try:
                done = childproc.capture(command, timeout_s=IMPORT_LIMIT_S)
            except TimeoutError:
                raise WorkbenchError(f"importing {path} took over {IMPORT_LIMIT_S:g} s: stopped") from None
            if done.returncode != 0:
                said = "\n".join(done.stderr).strip().removeprefix("error: ")
                raise WorkbenchError(
                    said or f"`workbench sessions import` ended with exit status {done.returncode}"
                )
            return "\n".join(done.stdout).strip()

        return self._start("import", work)

    def import_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Import runs", "", "Sessions bundle (*.json)")
        if path:
            self.import_from(path)

    # ------------------------------------------------------------------ the transfer thread
    def _may_start(self) -> bool:
        if self._transfer is not None:
            self.show_message("an export or import is still working; try again when it is done", error=True)
            return False
        return True

    def _start(self, kind: str, work) -> bool:
        from workbench.profile.sessions.store import SessionStore

        db = self.database_path()
        signal = self.transferred

        def run() -> None:
            outcome: dict[str, Any] = {"kind": kind, "ok": False}
            try:
                with SessionStore(db) as store:
                    outcome.update(ok=True, message=work(store))
            except WorkbenchError as exc:
                outcome["message"] = str(exc)
            except Exception as exc:  # noqa: BLE001 — shown in the panel, never lost on a thread
                outcome["message"] = f"the {kind} failed: {type(exc).__name__}: {exc}"
            signal.emit(outcome)

        self.show_message(f"{kind}ing …")
        self.export_button.setEnabled(False)
        self.import_button.setEnabled(False)
        self._transfer = threading.Thread(target=run, name=f"sessions-{kind}", daemon=True)
        self._transfer.start()
        return True

    def _transfer_finished(self, outcome: dict[str, Any]) -> None:
        """The transfer thread's outcome, on the GUI thread."""
        if self._closed:  # shut down meanwhile: it waited for the thread
            return
        thread, self._transfer = self._transfer, None
        if thread is not None:
            thread.join()  # it emitted as its last step
        self.export_button.setEnabled(True)
        self.import_button.setEnabled(True)
        self.show_message(outcome["message"], error=not outcome["ok"])
        if outcome["ok"] and outcome["kind"] == "import":
            self.refresh()

    def _wait_for_transfer(self) -> None:
        """At shutdown: let a working export or import finish (its outcome is not shown)."""
        thread, self._transfer = self._transfer, None
        if thread is not None:
            thread.join()
