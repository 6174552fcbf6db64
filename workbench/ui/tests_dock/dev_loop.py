"""Kernel code developed like CPU code, in the window: Format (rustfmt), format on save, clippy's
lints after a successful build and the Tests dock rerun after a save (issue 39; docs/kernel-tests.md).

`DevLoop(window)` adds its actions to the Edit menu and its dock beside the build panel, and
files what it finds under its own sources in the window's diagnostics (`show_source_diagnostics`):
`rustfmt`, `clippy`, `tests`. Nothing here is on the edit loop's path: lints and tests run in child
processes (`ChildJob`) after the build finished; rustfmt is run on one buffer, when asked (or on
save, when the setting is on).
"""

from __future__ import annotations

import difflib
import logging
from pathlib import Path
from typing import Protocol, runtime_checkable

from PySide6.QtCore import QObject, Qt, QTimer, SignalInstance
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import QDockWidget

from workbench.build import rustfmt
from workbench.ui.child_job import ChildJob
from workbench.ui.tests_dock.panel import TestsPanel

log = logging.getLogger(__name__)

#: How long after the last save (and the build it started) the tests rerun.
TESTS_DEBOUNCE_MS = 1000
LINT_LIMIT_S = 600.0


@runtime_checkable
class DevLoopBridge(Protocol):
    """The bridge members the dev loop uses (`ServiceBridge` has them: tests/ui/test_tests_dock.py)."""

    buildFinished: SignalInstance
    projectChanged: SignalInstance
    busy: bool


def apply_text(editor, new: str) -> bool:
    """Replace the editor's text with `new` through its undo stack (one step: Undo restores it):
    only the lines that differ are rewritten, so the cursor stays on its line when that line did
    not change, and the scroll position is kept. False when nothing differed."""
    old = editor.text()
    if old == new:
        return False
    doc = editor.document()
    scroll = editor.verticalScrollBar().value()
    before, after = old.splitlines(keepends=True), new.splitlines(keepends=True)
    ops = [
        op
        for op in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes()
        if op[0] != "equal"
    ]

    def start_of(line: int) -> int:  # a block per line; the one past the last is the document's end
        block = doc.findBlockByNumber(line)
        return block.position() if block.isValid() and line < len(before) else doc.characterCount() - 1

    edit = QTextCursor(doc)
    edit.beginEditBlock()
    for _tag, i1, i2, j1, j2 in reversed(ops):  # from the end: earlier positions stay valid
        edit.setPosition(start_of(i1))
        edit.setPosition(start_of(i2), QTextCursor.MoveMode.KeepAnchor)
        edit.insertText("".join(after[j1:j2]))
    edit.endEditBlock()
    editor.verticalScrollBar().setValue(scroll)
    return True


class DevLoop(QObject):
    """The window's Format action, format on save, lints after a build and the Tests dock."""

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        tabs = window.editor_tabs
        self.format_action = window._action(
            "&Format",
            self.format_current,
            "Shift+Alt+F",
            tip="Format the current file with rustfmt (Undo reverts it)",
        )
        self.format_on_save_action = window._action(
            "Format on &save", checkable=True, tip="Run rustfmt on a Rust file each time it is saved"
        )
        self.format_on_save_action.setChecked(window.settings.format_on_save)
        self.format_on_save_action.toggled.connect(lambda on: setattr(window.settings, "format_on_save", on))
        edit_menu = next((a.menu() for a in window.menuBar().actions() if a.text() == "&Edit"), None)
        if edit_menu is not None:
            edit_menu.addSeparator()
            edit_menu.addActions([self.format_action, self.format_on_save_action])
        tabs.before_save = self._before_save

        self.tests = TestsPanel(
            project_root=lambda: window.project.root if window.project is not None else None,
            can_run=lambda: window.trusted,
        )
        dock = QDockWidget("Tests", window)
        dock.setObjectName("dock-tests")
        dock.setWidget(self.tests)
        window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, dock)
        window.tabifyDockWidget(window.docks["build"], dock)
        window.docks["build"].raise_()
        window.docks["tests"], window.panels["tests"] = dock, self.tests
        window.view_menu.insertAction(
            window.view_menu.actions()[len(window.docks) - 1], dock.toggleViewAction()
        )
        self.tests.openLocation.connect(window.open_location)
        self.tests.message.connect(window.show_message)
        self.tests.diagnosticsChanged.connect(lambda diags: window.show_source_diagnostics("tests", diags))

        self.lint_job = ChildJob(LINT_LIMIT_S, self)
        self.lint_job.finished.connect(self._on_lint_finished)
        self._lint_again = False
        self._tests_due = False
        self._tests_timer = QTimer(self)
        self._tests_timer.setSingleShot(True)
        self._tests_timer.setInterval(TESTS_DEBOUNCE_MS)
        self._tests_timer.timeout.connect(self._tests_time)
        tabs.saved.connect(self._on_saved)
        if window.bridge is not None:
            window.bridge.buildFinished.connect(self._on_build_finished)
            window.bridge.projectChanged.connect(self._on_project)
        self._root = None

    def _on_project(self, project) -> None:
        """Another project (not the same one re-read): the last one's lints and tests go."""
        root = project.root if project is not None else None
        if root == self._root:
            return
        self._root = root
        self.lint_job.stop()
        self._lint_again = self._tests_due = False
        self.tests.clear()

    # ------------------------------------------------------------------ format
    def format_current(self) -> bool:
        """rustfmt on the current Rust buffer, through the editor's undo stack. A syntax error is
        a diagnostic at its line; a missing rustfmt one line in the status bar."""
        editor = self.window.editor_tabs.current_editor()
        if editor is None or editor.isReadOnly() or editor.path is None or Path(editor.path).suffix != ".rs":
            return False
        return self._format(editor)

    def _format(self, editor) -> bool:
        project = self.window.project
        root = project.root if project is not None else Path(editor.path).parent
        crate = project.manifest.crate_dir if project is not None else root
        try:
            result = rustfmt.format_text(editor.text(), Path(editor.path), root, rustfmt.edition_of(crate))
        except rustfmt.RustfmtMissing as exc:
            self.window.show_message(str(exc))
            return False
        self.window.show_source_diagnostics(rustfmt.SOURCE, [d.to_dict() for d in result.diagnostics])
        if result.text is None:
            self.window.show_message(
                f"rustfmt: {result.diagnostics[0].message}" if result.diagnostics else "rustfmt failed"
            )
            return False
        return apply_text(editor, result.text)

    def _before_save(self, editor) -> None:
        if (
            self.format_on_save_action.isChecked()
            and editor.path is not None
            and Path(editor.path).suffix == ".rs"
        ):
            self._format(editor)

    # ------------------------------------------------------------------ lint and tests
    def _on_build_finished(self, results: dict) -> None:
        ok = any(getattr(r, "status", None) == "ok" for r in results.values())
        if ok and self.window.trusted and self.window.project is not None:
            self.lint()
        if self._tests_due:
            self._tests_timer.start()

    def lint(self) -> None:
        """clippy in a child process (`workbench lint --json`); one at a time, the last asked for
        runs when the one running ends."""
        if self.lint_job.running():
            self._lint_again = True
            return
        self.lint_job.start("lint", str(self.window.project.root), "--json")

    def _on_lint_finished(self, code: int, report, stderr: str) -> None:
        if report is not None:
            diags = [dict(d, backend="clippy") for d in report.get("diagnostics") or []]
            self.window.show_source_diagnostics("clippy", diags)
        elif stderr.strip():
            self.window.show_message(stderr.strip().splitlines()[-1])  # e.g. clippy is not installed
        if self._lint_again and self.window.project is not None:
            self._lint_again = False
            self.lint()

    def _on_saved(self, path: str) -> None:
        if Path(path).suffix not in (".rs", ".toml"):
            return
        self._tests_due = True
        self._tests_timer.start()

    def _tests_time(self) -> None:
        bridge: DevLoopBridge | None = self.window.bridge
        if bridge is not None and bridge.busy:
            return  # the build the save started: buildFinished restarts the timer
        if self.tests.run_tests():
            self._tests_due = False

    def shutdown(self) -> None:
        self._tests_timer.stop()
        self.lint_job.stop()
        self.tests.shutdown()
