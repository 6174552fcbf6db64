"""The Sessions panel's Compare tab: the pinned baseline, the selected run against it.

It compares as `workbench sessions compare` does (`workbench.profile.sessions.compare`): "Pair
whole invocations" is its `--invocation`, on by default; each row's texts are that module's
`cells`, the verdict coloured from `workbench.ui.theme`; rows that measured different things say
what differs below the table, with the method named. Like the History tab it reads the store the
panel hands it and reports a failed query through `failed`.

The comparison itself runs on a thread of its own, with its own connection to the database file
(`SessionStore` allows any number): with 100,000 recorded runs the noise floor reads thousands of
earlier runs of the pair (0.4 s of CPU on the 2-core VM), which would stall the window. The
answer comes back to the GUI thread as a queued signal; an answer to a question asked before the
last one is dropped. `compared` says when one is shown.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.errors import WorkbenchError
from workbench.profile.sessions.compare import COLUMNS, cells, compare_runs
from workbench.profile.sessions.wording import against, baseline_line, sentence
from workbench.ui import theme
from workbench.ui.layout_fit import wrap_within

NO_BASELINE = "No baseline: select a run and press “Set as baseline”."


class SessionCompare(QWidget):
    """A run against the baseline, row by row per backend × device, each verdict coloured."""

    #: A query failed: the error's text (the panel shows it).
    failed = Signal(str)
    #: "Pair whole invocations" was switched: the panel compares its selected run again.
    pairingChanged = Signal()
    #: A comparison is shown: `compare_runs`' answer.
    compared = Signal(object)
    #: From the worker thread: (what was asked, the Future of its answer).
    _answered = Signal(object)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.baseline_id: int | None = None
        #: The last comparison shown (`compare_runs`' answer), None before the first.
        self.compare_result: dict[str, Any] | None = None
        #: (baseline, run, whole invocations) of the comparison shown: asked again, it is not redone.
        self._shown_for: tuple[int, int, bool] | None = None
        #: The comparison being made on the worker thread (None: none).
        self._asked_for: tuple[int, int, bool] | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._future: Future | None = None
        #: The worker's own store: (its file, the store), opened and used on the worker thread only.
        self._worker_store: tuple[Path, Any] | None = None
        self._answered.connect(self._on_answered)

        self.baseline_label = QLabel(NO_BASELINE)
        wrap_within(self.baseline_label)
        self.compare_table = QTableWidget(0, len(COLUMNS))
        self.compare_table.setHorizontalHeaderLabels(COLUMNS)
        self.compare_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.compare_table.verticalHeader().hide()
        self.compare_table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.compare_table.horizontalHeader().setStretchLastSection(True)
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

    def set_baseline(self, store: Any, run_id: int) -> bool:
        """Pin run `run_id` as the baseline; False (and `failed`) when the store cannot read it."""
        try:
            run = store.get_run(run_id, samples=False)
        except WorkbenchError as exc:
            self.failed.emit(str(exc))
            return False
        self.baseline_id = run_id
        self.baseline_label.setText(baseline_line(run))
        return True

    def forget(self) -> None:
        """Runs were recorded: the next comparison is made again, even of the same two runs (the
        noise floor reads the runs recorded before them)."""
        self._shown_for = None

    def compare(self, store: Any, run_id: int) -> None:
        """Compare run `run_id` against the baseline on the worker thread, in `store`'s file, and
        show it when done (nothing without a baseline, or against itself)."""
        if self.baseline_id is None or run_id == self.baseline_id:
            return
        asked = (self.baseline_id, run_id, self.invocation_box.isChecked())
        if asked in (self._shown_for, self._asked_for):
            return
        self._asked_for = asked
        self.method_label.setText(f"{sentence(against(run_id, self.baseline_id, asked[2]))}: comparing …")
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="wb-sessions-compare")
        if self._future is not None:
            self._future.cancel()  # a comparison still queued is not made: this one replaces it
        self._future = future = self._pool.submit(self._work, Path(store.path), asked)
        future.add_done_callback(lambda done: self._answered.emit((asked, done)))

    def busy(self) -> bool:
        """A comparison is being made."""
        return self._asked_for is not None

    def _work(self, path: Path, asked: tuple[int, int, bool]) -> dict[str, Any]:
        """On the worker thread: `compare_runs` through the worker's own store of `path`."""
        from workbench.profile.sessions.store import SessionStore

        if self._worker_store is None or self._worker_store[0] != path:
            self._close_worker_store()
            self._worker_store = (path, SessionStore(path))
        baseline_id, run_id, invocation = asked
        return compare_runs(self._worker_store[1], baseline_id, run_id, invocation=invocation)

    def _close_worker_store(self) -> None:
        if self._worker_store is not None:
            self._worker_store[1].close()
            self._worker_store = None

    def _on_answered(self, answer: tuple[tuple[int, int, bool], Future]) -> None:
        asked, future = answer
        if asked != self._asked_for:
            return  # another comparison was asked for since
        self._asked_for = None
        error = future.exception()
        if error is not None:
            self.failed.emit(
                str(error) if isinstance(error, WorkbenchError) else f"the comparison failed: {error!r}"
            )
            return
        self._show(asked, future.result())

    def _show(self, asked: tuple[int, int, bool], result: dict[str, Any]) -> None:
        baseline_id, run_id, invocation = asked
        self.compare_result = result
        self._shown_for = asked
        self.compare_table.setRowCount(len(result["rows"]))
        for row, entry in enumerate(result["rows"]):
            texts = cells(entry)
            for column, text in enumerate(texts):
                item = QTableWidgetItem(text)
                if column == len(texts) - 1:
                    item.setToolTip(entry["verdict"])
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
        """Stop the worker (a comparison under way is finished first) and close its store."""
        self._asked_for = None
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._close_worker_store()  # its thread is gone: closed here (the store allows any thread)
