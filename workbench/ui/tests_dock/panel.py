"""The Tests dock: the project's Rust tests (kernel bodies under `gpu_kernel::testing`), run all or
one, each with its state, its Rust line and, for a failure, why and its captured output.

A run is `workbench test PROJECT [NAME] --json` in a child process (`ChildJob`) under a time
limit: a failing, hanging or crashing test never blocks the window. The failures' diagnostics
(cpu-sim findings, the panic at its line) go to the window's diagnostics (`diagnosticsChanged`),
as a build's do: the build panel's list and the editor's gutter.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from workbench.ui import theme
from workbench.ui.child_job import ChildJob
from workbench.ui.editor.code_editor import editor_font
from workbench.ui.layout_fit import ElidedLabel

#: The source the window files test failures under (the build panel's backend column).
SOURCE = "tests"
COLUMNS = ("State", "Test", "Location", "Time", "Message")
COL_STATE, COL_TEST, COL_LOCATION, COL_TIME, COL_MESSAGE = range(len(COLUMNS))
_ROOT = QModelIndex()  # the model is a flat table: no row has children
#: A whole run's limit (building the tests included); each test binary has its own (`TEST_TIMEOUT_S`).
RUN_LIMIT_S = 600.0
TEST_TIMEOUT_S = 30.0
COLOURS = {
    "passed": theme.GOOD,
    "failed": theme.BAD,
    "timed out": theme.BAD,
    "crashed": theme.BAD,
    "running": theme.BUSY,
    "ignored": theme.MUTED,
    "not run": theme.MUTED,
}


class TestsModel(QAbstractTableModel):
    """One row per test, as `workbench test --json` reports it."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.tests: list[dict[str, Any]] = []

    def set_tests(self, tests: list[dict[str, Any]]) -> None:
        self.beginResetModel()
        self.tests = list(tests)
        self.endResetModel()

    def mark_running(self, name: str | None) -> None:
        """Every test (or the one named) shown as running until the answer comes."""
        for row, test in enumerate(self.tests):
            if name is None or name in (test.get("id"), test.get("name")):
                test["status"] = "running"
                self.dataChanged.emit(self.index(row, 0), self.index(row, len(COLUMNS) - 1))

    def rowCount(self, parent=_ROOT) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(self.tests)

    def columnCount(self, parent=_ROOT) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):  # noqa: N802
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        return None

    def data(self, index: QModelIndex, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        test = self.tests[index.row()]
        col = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            if col == COL_STATE:
                return test.get("status", "")
            if col == COL_TEST:
                return test.get("id", "")
            if col == COL_LOCATION:
                file, line = location(test)
                return f"{file}:{line}" if file and line else (file or "")
            if col == COL_TIME:
                seconds = test.get("seconds")
                return f"{seconds:.2f} s" if isinstance(seconds, (int, float)) else ""
            if col == COL_MESSAGE:
                return (test.get("message") or "").splitlines()[0] if test.get("message") else ""
        if role == Qt.ItemDataRole.ForegroundRole and col == COL_STATE:
            return QColor(COLOURS.get(test.get("status", ""), theme.MUTED))
        if role == Qt.ItemDataRole.ToolTipRole and col == COL_MESSAGE:
            return test.get("message") or None
        if role == Qt.ItemDataRole.UserRole:
            return test
        return None

    def rows(self) -> list[dict[str, str]]:
        """The table as a user reads it: each row's columns by name."""
        return [
            {name: self.data(self.index(r, c)) or "" for c, name in enumerate(COLUMNS)}
            for r in range(self.rowCount())
        ]


#: Which of a failure's diagnostics gives its row's location: a race first (a read of memory nobody
#: wrote is often the same race seen from its reader), the panic (an assertion) last.
RANK = {
    "shared-race": 0,
    "global-race": 0,
    "out-of-bounds": 1,
    "barrier-divergence": 2,
    "uninitialized-read": 3,
}


def location(test: dict[str, Any]) -> tuple[str | None, int | None]:
    """Where a test is shown: a failure's most telling finding (`RANK`), else its panic's line,
    else its function's."""
    placed = [d for d in test.get("diagnostics") or [] if d.get("file") and d.get("line")]
    if placed:
        best = min(placed, key=lambda d: RANK.get(d.get("code") or "", len(RANK)))
        return best["file"], best["line"]
    return test.get("file"), test.get("line")


class TestsPanel(QWidget):
    """The dock's widget: the tests, Run all / Run selected, the selected test's output."""

    #: A test's place (project-relative or absolute path, 1-based line, column): open it.
    openLocation = Signal(str, int, int)
    #: The failures' diagnostics of the last run (dicts, as `Diagnostic.to_dict()`).
    diagnosticsChanged = Signal(list)
    #: One line for the status bar (a run that could not be made, a missing cargo).
    message = Signal(str)

    def __init__(self, project_root=lambda: None, can_run=lambda: True, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("TestsPanel")
        self._root = project_root
        self._can_run = can_run
        self.model = TestsModel(self)
        self.job = ChildJob(RUN_LIMIT_S, self)
        self.job.finished.connect(self._on_finished)
        self._asked: str | None = None
        self._again: tuple[str | None] | None = None  # a run asked for while one ran

        self.run_all_button = QPushButton("Run all")
        self.run_all_button.clicked.connect(lambda: self.run_tests())
        self.run_one_button = QPushButton("Run selected")
        self.run_one_button.clicked.connect(self.run_selected)
        self.stop_button = QPushButton("Stop")
        self.stop_button.clicked.connect(self.stop)
        self.summary = ElidedLabel("Tests: not run yet")  # one line: it never widens the dock
        buttons = QHBoxLayout()
        for w in (self.run_all_button, self.run_one_button, self.stop_button):
            buttons.addWidget(w)
        buttons.addWidget(self.summary, 1)

        self.view = QTreeView()
        self.view.setObjectName("testsTable")
        self.view.setRootIsDecorated(False)
        self.view.setUniformRowHeights(True)
        self.view.setAlternatingRowColors(True)
        self.view.setModel(self.model)
        header = self.view.header()
        header.setStretchLastSection(True)
        for col in (COL_STATE, COL_TEST, COL_LOCATION, COL_TIME):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        self.view.doubleClicked.connect(self._open)
        self.view.selectionModel().currentRowChanged.connect(lambda *_: self._show_output())
        self.output = QPlainTextEdit()
        self.output.setObjectName("testOutput")
        self.output.setReadOnly(True)
        self.output.setFont(editor_font())
        self.output.setPlaceholderText("The selected test's captured output")

        # The dock shares the bottom row with the build panel and the results: its minimum width
        # must not take room from them (tests/ui/test_layout.py).
        for widget in (self.view, self.output):
            widget.setMinimumWidth(60)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.view)
        split.addWidget(self.output)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(buttons)
        layout.addWidget(split, 1)
        self._update_buttons()

    # ------------------------------------------------------------------ runs
    def run_tests(self, name: str | None = None) -> bool:
        """Run every test (or the one named, `TARGET::NAME`); a run asked for while one is running
        starts when it ends. False when there is nothing to run (no project, untrusted)."""
        root = self._root()
        if root is None or not self._can_run():
            return False
        if self.job.running():
            self._again = (name,)
            return True
        self._asked = name
        args = ["test", str(root), "--json", "--timeout", f"{TEST_TIMEOUT_S:g}"]
        if name:
            args.insert(2, name)
        self.model.mark_running(name)
        self.summary.setText("Tests: building and running…")
        self.job.start(*args)
        self._update_buttons()
        return True

    def run_selected(self) -> None:
        test = self.view.currentIndex().data(Qt.ItemDataRole.UserRole)
        if test:
            self.run_tests(test.get("id"))

    def stop(self) -> None:
        self.job.stop()
        self._again = None
        self.summary.setText("Tests: stopped")
        for test in self.model.tests:
            if test.get("status") == "running":
                test["status"] = "not run"
        self.model.layoutChanged.emit()
        self._update_buttons()

    def _on_finished(self, code: int, report: Any, stderr: str) -> None:
        self._update_buttons()
        if report is None:
            line = stderr.strip().splitlines()[-1] if stderr.strip() else f"exit status {code}"
            self.summary.setText(f"Tests: {line}")
            self.message.emit(f"Tests: {line}")
            for test in self.model.tests:
                if test.get("status") == "running":
                    test["status"] = "not run"
            self.model.layoutChanged.emit()
        else:
            self._show_report(report)
        if self._again is not None:
            (name,) = self._again
            self._again = None
            self.run_tests(name)

    def _show_report(self, report: dict[str, Any]) -> None:
        tests = report.get("tests") or []
        if self._asked is not None and self.model.tests:
            # One test ran: the others keep their last outcome.
            fresh = {t["id"]: t for t in tests if t.get("status") != "not run"}
            tests = [fresh.get(t.get("id"), t) for t in self.model.tests]
            tests = [dict(t, status="not run") if t.get("status") == "running" else t for t in tests]
        self.model.set_tests(tests)
        diagnostics = [d for t in tests for d in t.get("diagnostics") or []]
        if not report.get("built", True):
            diagnostics = report.get("diagnostics") or []
            self.summary.setText("Tests: they do not compile (see the build panel's diagnostics)")
        else:
            counts: dict[str, int] = {}
            for t in tests:
                counts[t.get("status", "")] = counts.get(t.get("status", ""), 0) + 1
            self.summary.setText(
                "Tests: " + ", ".join(f"{n} {s}" for s, n in counts.items()) if counts else "Tests: none"
            )
        self.diagnosticsChanged.emit([dict(d, backend=SOURCE) for d in diagnostics])
        self._show_output()

    # ------------------------------------------------------------------ view
    def _update_buttons(self) -> None:
        running = self.job.running()
        self.stop_button.setEnabled(running)

    def _show_output(self) -> None:
        test = self.view.currentIndex().data(Qt.ItemDataRole.UserRole)
        if not test:
            self.output.clear()
            return
        text = test.get("output") or ""
        head = f"{test.get('id')}: {test.get('status')}" + (
            f" — {test['message']}" if test.get("message") else ""
        )
        self.output.setPlainText(head + ("\n\n" + text if text.strip() else ""))

    def _open(self, index: QModelIndex) -> None:
        test = index.data(Qt.ItemDataRole.UserRole)
        if not test:
            return
        file, line = location(test)
        if file:
            self.openLocation.emit(str(file), int(line or 1), 1)

    def clear(self) -> None:
        """Another project: no run, no rows, no diagnostics of the last one's."""
        self.job.stop()
        self._again = None
        self.model.set_tests([])
        self.output.clear()
        self.summary.setText("Tests: not run yet")
        self.diagnosticsChanged.emit([])
        self._update_buttons()

    def shutdown(self) -> None:
        self.job.stop()
