"""The Sessions panel's Compare tab: the pinned baseline, the selected run against it.

It compares as `workbench sessions compare` does (`workbench.profile.sessions.compare`): "Pair
whole invocations" is its `--invocation`, on by default; each row's texts are that module's
`cells`, the verdict coloured from `workbench.ui.theme`; rows that measured different things say
what differs below the table, with the method named. Like the History tab it reads the store the
panel hands it and reports a failed query through `failed`.

The comparison itself runs in a child process (`profile.sessions.compare_child`, started when a
baseline is set, talked to through a `QProcess`: no thread of the window's): with 100,000 recorded
runs the noise floor reads thousands of earlier runs of the pair, half a second of pure Python
that, on a thread, would hold the GIL the GUI thread paints with. One question is in flight at a
time; a newer one waits in its place and replaces any that waited (clicking through rows compares
the last one clicked). `compared` says when an answer is shown; `failed` names what went wrong.

The table shows what a comparison is read for (`SHOWN`: the backend, its median, the change, its CI
and the verdict, on at most `VERDICT_LINES` lines, its end elided: every cell's tooltip has the whole
row); the device, the baseline's median, the invocations and the noise floor on demand from the
header's context menu, as the runs list does (at 1280×800 the CI and the invocations were cut off
or scrolled out of the dock; a verdict wrapped whole took five lines and hid the next row).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from PySide6.QtCore import QPoint, QProcess, Qt, Signal
from PySide6.QtGui import QAction, QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QHeaderView,
    QLabel,
    QMenu,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.errors import WorkbenchError
from workbench.frozen import python_command
from workbench.profile.sessions.compare import COLUMNS, cells
from workbench.profile.sessions.wording import against, baseline_line, sentence
from workbench.ui import theme
from workbench.ui.layout_fit import wrap_within

log = logging.getLogger(__name__)

#: The module the comparing process runs.
CHILD = "workbench.profile.sessions.compare_child"

NO_BASELINE = "No baseline: select a run and press “Set as baseline”."
#: The columns shown until the user picks others (the header's context menu).
SHOWN = ("backend", "median", "change", "95% CI of change", "verdict")
#: A row's height in lines: a long verdict wraps on these, then ends in "…".
VERDICT_LINES = 2
#: Shorter titles (the full name is the title's tooltip).
TITLES = {"95% CI of change": "95% CI", "invocations": "inv.", "noise floor": "floor"}
_VERDICT = COLUMNS.index("verdict")


class SessionCompare(QWidget):
    """A run against the baseline, row by row per backend × device, each verdict coloured."""

    #: A query failed: the error's text (the panel shows it).
    failed = Signal(str)
    #: "Pair whole invocations" was switched: the panel compares its selected run again.
    pairingChanged = Signal()
    #: A comparison is shown: `compare_runs`' answer.
    compared = Signal(object)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.baseline_id: int | None = None
        #: The last comparison shown (`compare_runs`' answer), None before the first.
        self.compare_result: dict[str, Any] | None = None
        #: (baseline, run, whole invocations) of the comparison shown: asked again, it is not redone.
        self._shown_for: tuple[int, int, bool] | None = None
        #: The comparison asked for last and not yet shown (None: none).
        self._asked_for: tuple[int, int, bool] | None = None
        #: The one the child is making, and the one waiting for it to be free (each with its file).
        self._in_flight: tuple[tuple[int, int, bool], Path] | None = None
        self._waiting: tuple[tuple[int, int, bool], Path] | None = None
        self._child: QProcess | None = None
        self._output = b""

        self.baseline_label = QLabel(NO_BASELINE)
        wrap_within(self.baseline_label)
        table = self.compare_table = QTableWidget(0, len(COLUMNS))
        table.setHorizontalHeaderLabels([TITLES.get(name, name) for name in COLUMNS])
        for column, name in enumerate(COLUMNS):
            table.horizontalHeaderItem(column).setToolTip(f"{name} (right-click: choose the columns)")
        table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        table.verticalHeader().hide()
        # The numbers as wide as their text; the verdict (the last column) takes the rest and wraps.
        header = table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(_VERDICT, QHeaderView.ResizeMode.Stretch)
        table.setWordWrap(True)
        rows = table.verticalHeader()
        rows.setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        rows.setDefaultSectionSize(VERDICT_LINES * table.fontMetrics().lineSpacing() + 8)
        for column, name in enumerate(COLUMNS):
            table.setColumnHidden(column, name not in SHOWN)
        header.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        header.customContextMenuRequested.connect(
            lambda at: self.column_menu().exec(header.mapToGlobal(QPoint(at)))
        )
        self.method_label = QLabel("")
        wrap_within(self.method_label)
        self.invocation_box = QCheckBox("Pair whole invocations")
        self.invocation_box.setChecked(True)
        self.invocation_box.setToolTip(
            "On: the baseline's and the selected run's whole invocations, row by row per backend × device "
            "(sessions compare --invocation). Off: the two selected rows only."
        )
        self.invocation_box.toggled.connect(lambda _checked: self.pairingChanged.emit())
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.baseline_label)
        layout.addWidget(self.invocation_box)
        layout.addWidget(self.compare_table, 1)
        layout.addWidget(self.method_label)

    def shown_columns(self) -> list[str]:
        return [name for c, name in enumerate(COLUMNS) if not self.compare_table.isColumnHidden(c)]

    def set_column_shown(self, name: str, shown: bool) -> None:
        self.compare_table.setColumnHidden(COLUMNS.index(name), not shown)

    def column_menu(self) -> QMenu:
        """Checkable entries, one per column (what ran and the verdict always shown)."""
        menu = QMenu(self)
        for column, name in enumerate(COLUMNS):
            action = QAction(name, menu)
            action.setCheckable(True)
            action.setChecked(not self.compare_table.isColumnHidden(column))
            action.setEnabled(name not in ("backend", "verdict"))
            action.toggled.connect(lambda on, n=name: self.set_column_shown(n, on))
            menu.addAction(action)
        return menu

    def set_baseline(self, store: Any, run_id: int) -> bool:
        """Pin run `run_id` as the baseline; False (and `failed`) when the store cannot read it."""
        try:
            run = store.get_run(run_id, samples=False)
        except WorkbenchError as exc:
            self.failed.emit(str(exc))
            return False
        self.baseline_id = run_id
        self.baseline_label.setText(baseline_line(run))
        self.start_child()  # ready by the time the next run is selected
        return True

    def forget(self) -> None:
        """Runs were recorded: the next comparison is made again, even of the same two runs (the
        noise floor reads the runs recorded before them)."""
        self._shown_for = None

    def compare(self, store: Any, run_id: int) -> None:
        """Compare run `run_id` against the baseline in the comparing process, in `store`'s file,
        and show it when answered (nothing without a baseline, or against itself)."""
        if self.baseline_id is None or run_id == self.baseline_id:
            return
        asked = (self.baseline_id, run_id, self.invocation_box.isChecked())
        if asked in (self._shown_for, self._asked_for):
            return
        self._asked_for = asked
        self.method_label.setText(f"{sentence(against(run_id, self.baseline_id, asked[2]))}: comparing …")
        self._waiting = (asked, Path(store.path))
        self._send()

    def busy(self) -> bool:
        """A comparison is being made."""
        return self._asked_for is not None

    def start_child(self) -> None:
        """Start the comparing process now (it takes a moment to import), if it is not running."""
        if self._child is not None and self._child.state() != QProcess.ProcessState.NotRunning:
            return
        child = QProcess(self)
        child.readyReadStandardOutput.connect(self._read)
        child.readyReadStandardError.connect(
            lambda: log.warning("%s", bytes(child.readAllStandardError()).decode(errors="replace").rstrip())
        )
        child.finished.connect(lambda code, _status: self._ended(child, code))
        child.errorOccurred.connect(
            lambda error: error == QProcess.ProcessError.FailedToStart and self._ended(child, -1)
        )
        program, *args = python_command(CHILD)
        child.start(program, args)
        self._child, self._output = child, b""

    def _send(self) -> None:
        """Hand the waiting question to the child when it is free."""
        if self._in_flight is not None or self._waiting is None:
            return
        self.start_child()
        self._in_flight, self._waiting = self._waiting, None
        (baseline_id, run_id, invocation), path = self._in_flight
        request = {"id": [baseline_id, run_id, invocation], "db": str(path), "baseline": baseline_id,
                   "run": run_id, "invocation": invocation}  # fmt: skip
        assert self._child is not None
        self._child.write((json.dumps(request) + "\n").encode())

    def _read(self) -> None:
        if self._child is None:  # output that arrived after the child was let go (shutdown)
            return
        self._output += bytes(self._child.readAllStandardOutput())
        while b"\n" in self._output:
            line, self._output = self._output.split(b"\n", 1)
            try:
                reply = json.loads(line)
            except ValueError:
                log.warning("the comparing process wrote %r", line[:200])
                continue
            self._answered(tuple(reply.get("id") or ()), reply)

    def _answered(self, asked: tuple, reply: dict[str, Any]) -> None:
        self._in_flight = None
        if asked == self._asked_for and self._waiting is None:  # else a newer question follows
            self._asked_for = None
            if "error" in reply:
                self.failed.emit(str(reply["error"]))
            else:
                self._show(asked, reply["result"])  # type: ignore[arg-type]
        self._send()

    def _ended(self, child: QProcess, code: int) -> None:
        """The child ended (crashed, could not start, or closed at shutdown): what it was making
        is failed; the next question starts another."""
        if child is not self._child:
            return
        self._child = None
        if self._in_flight is not None:
            asked, _path = self._in_flight
            self._in_flight = None
            if asked == self._asked_for and self._waiting is None:
                self._asked_for = None
                self.failed.emit(
                    f"the comparing process ({' '.join(python_command(CHILD))}) ended (exit {code}) before it answered"
                )
            self._send()

    def _show(self, asked: tuple[int, int, bool], result: dict[str, Any]) -> None:
        baseline_id, run_id, invocation = asked
        self.compare_result = result
        self._shown_for = asked
        self.compare_table.setRowCount(len(result["rows"]))
        for row, entry in enumerate(result["rows"]):
            texts = cells(entry)
            for column, text in enumerate(texts):
                item = QTableWidgetItem(text)
                # Each cell's tooltip: the whole row, the hidden columns too.
                item.setToolTip(
                    "\n".join(f"{name}: {value}" for name, value in zip(COLUMNS, texts, strict=True))
                )
                if column == len(texts) - 1:
                    item.setToolTip(f"{entry['verdict']}\n\n{item.toolTip()}")
                    if entry["outcome"] in theme.VERDICT:
                        item.setForeground(QColor(theme.VERDICT[entry["outcome"]]))
                self.compare_table.setItem(row, column, item)
        differs = [
            f"{e['backend']} on {e['device']}: {'; '.join(e['differs'])}"
            for e in result["rows"]
            if e["differs"]
        ]
        self.method_label.setText(
            f"{sentence(against(run_id, baseline_id, invocation))}. Method: {result['method']}."
            + "".join(f"\nDiffers — {line}" for line in differs)
        )
        self.compared.emit(result)

    def shutdown(self) -> None:
        """End the comparing process: its stdin closed, it closes its store and exits; one still
        comparing is killed after half a second (it only reads the database: nothing is lost)."""
        self._asked_for = self._waiting = self._in_flight = None
        child, self._child = self._child, None
        if child is not None and child.state() != QProcess.ProcessState.NotRunning:
            child.closeWriteChannel()
            if not child.waitForFinished(500):
                child.kill()
                child.waitForFinished(1000)
