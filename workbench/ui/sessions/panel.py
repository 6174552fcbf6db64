"""The Sessions panel: every recorded run, filtered; a run against a baseline; a kernel's history.

The panel composes its parts and owns what they share: the database, the filters, export and
import, the "Record runs" toggle and the message line.

Recording is not the panel's: the bridge records every run it finishes through the core's
`SessionRecorder` (with the sources its build read), whether or not this panel exists; the panel
shows how it went (`bridge.runRecorded`) and its "Record runs" toggle switches the recorder.
Browsing queries the database on the GUI thread, a page at a time (`profile.sessions.paging`):
each query is indexed and takes milliseconds even with 100,000 runs, and WAL mode means a writer
never blocks them (benchmarks/sessions_window.py measures the window's stalls). The panel
refreshes when it is on screen; a recording made while it is hidden marks it stale, and a refresh
with the same filters only adds the runs recorded since.

- the runs list (`runs_table.RunsTable`, a model/view) lists the runs that pass the
  filters (kernel, backend, device, date, verified), newest first, loading more as it scrolls;
- "Set as baseline" pins the selected run; selecting another run compares the two in the Compare
  tab (`compare.SessionCompare`, as `sessions compare` does);
- the History tab (`history.SessionHistory`) shows the selected run's kernel: median with
  its interquartile range per backend × device over the edits of its sources; clicking a point
  shows that run's source diff.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from PySide6.QtCore import Qt, QTimer, Signal, SignalInstance
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QMenu,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from workbench.errors import WorkbenchError
from workbench.profile.sessions import paging
from workbench.profile.sessions.paging import RunFilter
from workbench.profile.sessions.store import SessionStore, default_db_path
from workbench.profile.sessions.wording import runs_ref
from workbench.ui import theme
from workbench.ui.layout_fit import wrap_within
from workbench.ui.sessions.compare import SessionCompare
from workbench.ui.sessions.history import SessionHistory
from workbench.ui.sessions.runs_table import RunsTable
from workbench.ui.sessions.transfer import EXPORT_FORMATS, ExportImport
from workbench.ui.visibility import WhenSeen, on_screen

log = logging.getLogger(__name__)

#: Narrower than this, the list sits above the Compare/History tabs (a dock of a 1280×800 window
#: is about 420 px wide: side by side the list would show two columns).
SIDE_BY_SIDE_PX = 900
SINCE = {
    "any time": None,
    "last hour": 3600,
    "last 24 hours": 86400,
    "last 7 days": 7 * 86400,
    "last 30 days": 30 * 86400,
}


@runtime_checkable
class SessionsBridge(Protocol):
    """The bridge members the sessions panel uses (`ServiceBridge` has them:
    tests/ui/test_typed_events.py)."""

    runRecorded: SignalInstance
    recorder: Any


class SessionsPanel(ExportImport, QWidget):
    """Browse, compare and export the recorded runs (export / import: `transfer.ExportImport`)."""

    #: After each recording of the window's runs (the bridge's): {"ids": [...]} or {"error": "..."}.
    recorded = Signal(object)
    #: An export or import ended (`transfer.ExportImport`): {"kind", "ok", "message"}.
    transferred = Signal(object)

    def __init__(
        self,
        bridge: SessionsBridge | None = None,
        parent: QWidget | None = None,
        db_path: str | Path | None = None,
    ):
        super().__init__(parent)
        self.setObjectName("SessionsPanel")
        self.bridge = bridge
        self.settings: Any = None
        self.db_path = Path(db_path) if db_path else None
        self._store: SessionStore | None = None
        #: What the list was loaded for (filters and database): the same again only adds new runs.
        self._listed: tuple[Any, ...] | None = None
        #: The list waits until the panel is seen (a recording, another database).
        self._list_view = WhenSeen(self, self.refresh, stale=True)
        #: A recording arrived since the history was drawn: it is drawn again when next shown.
        self._history_stale = False
        self._history_queued = False
        self._closed = False
        self._build_ui()
        # Emitted on the transfer thread: shown on the GUI thread.
        self.transferred.connect(self._transfer_finished, Qt.ConnectionType.QueuedConnection)
        if bridge is not None:
            bridge.runRecorded.connect(self._on_recorded)

    # ================================================================ construction
    def _build_ui(self) -> None:
        self.kernel_box = self._combo("any kernel")
        self.backend_box = self._combo("any backend")
        self.device_box = self._combo("any device")
        self.since_box = QComboBox()
        self.since_box.addItems(list(SINCE))
        self.verified_box = QComboBox()
        self.verified_box.addItems(["verified or not", "verified", "not verified"])
        for box in (self.since_box, self.verified_box):
            box.currentIndexChanged.connect(lambda _i: self.refresh())
        self.record_box = QCheckBox("Record runs")
        self.record_box.setChecked(True)
        self.record_box.setToolTip("Record every run of the window in the sessions database")
        self.record_box.toggled.connect(self._record_toggled)
        self.baseline_button = QPushButton("Set as baseline")
        self.baseline_button.setToolTip("Compare the runs selected next against this one")
        self.baseline_button.clicked.connect(lambda: self.set_baseline(self.current_id()))
        self.export_button = QToolButton()
        self.export_button.setText("Export")
        self.export_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(self.export_button)
        for fmt, (label, _pattern) in EXPORT_FORMATS.items():
            action = QAction(f"{label}…", menu)
            action.triggered.connect(lambda _c=False, f=fmt: self.export_dialog(f))
            menu.addAction(action)
        self.export_button.setMenu(menu)
        self.import_button = QPushButton("Import…")
        self.import_button.clicked.connect(self.import_dialog)

        # Filters and actions on three short rows: on one row they set a minimum width (~900 px) that
        # a dock of a 1280×800 window does not have (issue 8).
        filters = QVBoxLayout()
        filters.setContentsMargins(4, 4, 4, 0)
        filters.setSpacing(2)
        rows = (
            (self.kernel_box, self.backend_box, self.device_box),
            (self.since_box, self.verified_box),
            (self.record_box, self.baseline_button, self.export_button, self.import_button),
        )
        for widgets in rows:
            row = QHBoxLayout()
            for widget in widgets:
                row.addWidget(widget)
            row.addStretch(1)
            filters.addLayout(row)

        self.table = RunsTable()
        self.table.currentRunChanged.connect(self._selection_changed)
        self.compare = SessionCompare()
        self.compare.failed.connect(lambda text: self.show_message(text, error=True))
        self.compare.pairingChanged.connect(self._recompare)

        self.history = SessionHistory()
        self.history.failed.connect(lambda text: self.show_message(text, error=True))
        self.history.diffShown.connect(lambda _run_id: self.tabs.setCurrentWidget(self.history))

        self.tabs = QTabWidget()
        self.tabs.addTab(self.compare, "Compare")
        self.tabs.addTab(self.history, "History")
        self.tabs.currentChanged.connect(lambda _index: self._show_selected())
        split = QSplitter(Qt.Orientation.Vertical)
        split.setChildrenCollapsible(False)
        split.addWidget(self.table)
        split.addWidget(self.tabs)
        self.split = split
        #: The user moved the list's divider: `_arrange` keeps their sizes.
        self._user_split = False
        self._arranged: Qt.Orientation | None = None
        split.splitterMoved.connect(lambda *_: setattr(self, "_user_split", True))

        self.message = QLabel("")
        self.message.setObjectName("SessionsMessage")
        wrap_within(self.message)  # an error naming a long path must not widen the window
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(filters)
        layout.addWidget(split, 1)
        layout.addWidget(self.message)

    def _combo(self, anything: str) -> QComboBox:
        box = QComboBox()
        box.addItem(anything, None)
        box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        # Long kernel or device names are elided, not widening the dock; "any backend" stays whole
        # (6 characters cut it to "any backen" at 1280×800).
        box.setMinimumContentsLength(max(6, len(anything)))
        box.currentIndexChanged.connect(lambda _i: self.refresh())
        return box

    def use_settings(self, settings: Any) -> None:
        """Take the window's settings: the record toggle and the database file live there."""
        self.settings = settings
        self.record_box.setChecked(bool(settings.record_runs))
        if settings.sessions_db:
            self.set_database(settings.sessions_db)

    def set_database(self, path: str | Path | None) -> None:
        """Use another database file (None: the default in the user data folder)."""
        self._close_database()
        self.db_path = Path(path) if path else None
        self._list_view.mark()

    def database_path(self) -> Path:
        return self.db_path or default_db_path()

    def store(self) -> SessionStore | None:
        """The open database, or None with the reason shown (a bad file is never touched)."""
        if self._store is None and not self._closed:
            try:
                self._store = SessionStore(self.database_path())
            except WorkbenchError as exc:
                self.show_message(str(exc), error=True)
        return self._store

    # ================================================================ recording
    def _record_toggled(self, checked: bool) -> None:
        if self.settings is not None:
            self.settings.record_runs = checked
        if self.bridge is not None and self.bridge.recorder is not None:
            self.bridge.recorder.enabled = checked

    def _on_recorded(self, outcome: dict[str, Any]) -> None:
        if self._closed:
            return
        if outcome.get("error"):
            self.show_message(outcome["error"], error=True)
        else:
            ids = outcome.get("ids") or []
            if ids:
                self.show_message(f"recorded {runs_ref(ids)} in {self.database_path()}")
            self._history_stale = True
            self.compare.forget()
            self._list_view.mark()
            if on_screen(self.history):
                self._show_selected()  # the plotted kernel may have new runs
        self.recorded.emit(outcome)

    # ================================================================ listing
    def filters(self) -> dict[str, Any]:
        since = SINCE[self.since_box.currentText()]
        return {
            "kernel": self.kernel_box.currentData(),
            "backend": self.backend_box.currentData(),
            "device": self.device_box.currentData(),
            "verified": {1: True, 2: False}.get(self.verified_box.currentIndex()),
            "since": time.time() - since if since else None,
        }

    def run_filter(self) -> RunFilter:
        return RunFilter(**self.filters())

    def refresh(self) -> None:
        """Bring the filter choices and the runs list up to date: with the filters (and database)
        of the last load only the runs recorded since are added; else the list reloads its first
        page. The selection stays where it can."""
        if self._closed:
            return
        store = self.store()
        if store is None:
            self._list_view.retry_when_shown()
            return
        self._list_view.clear()
        try:
            for box, column in (
                (self.kernel_box, "kernel"),
                (self.backend_box, "backend"),
                (self.device_box, "device"),
            ):
                self._fill_combo(box, paging.distinct(store, column))
            # The date filter is kept as its choice, not its time: "last hour" an hour later is the
            # same list with the new runs added (the oldest loaded ones stay: they were in range).
            listed = (id(store), *(box.currentData() for box in (self.kernel_box, self.backend_box,
                      self.device_box)), self.since_box.currentText(), self.verified_box.currentIndex())  # fmt: skip
            if listed == self._listed:
                self.table.update_runs()
            else:
                self.table.load(store, self.run_filter())
                self._listed = listed
        except WorkbenchError as exc:
            self._listed = None
            self.show_message(str(exc), error=True)
            return

    @staticmethod
    def _fill_combo(box: QComboBox, values: list[str]) -> None:
        current = box.currentData()
        present = [box.itemData(i) for i in range(1, box.count())]
        if present == values:
            return
        box.blockSignals(True)
        while box.count() > 1:
            box.removeItem(1)
        for value in values:
            box.addItem(value, value)
        index = box.findData(current) if current is not None else 0
        box.setCurrentIndex(max(index, 0))
        box.blockSignals(False)

    def set_filter(self, column: str, value: str | None) -> None:
        """Choose a filter value (`kernel`, `backend`, `device`); None: any."""
        box = {"kernel": self.kernel_box, "backend": self.backend_box, "device": self.device_box}[column]
        box.setCurrentIndex(max(box.findData(value), 0) if value is not None else 0)

    def shown_ids(self) -> list[int]:
        return self.table.shown_ids()

    def selected_ids(self) -> list[int]:
        return self.table.selected_ids()

    def current_id(self) -> int | None:
        return self.table.current_id()

    def select_run(self, run_id: int) -> None:
        self.table.select_run(run_id)

    def _selection_changed(self, _run_id: int) -> None:
        self._show_selected()

    def _show_selected(self) -> None:
        """Bring the tab on screen up to date with the selected run: Compare compares it with the
        baseline, History plots its kernel. The other tab catches up when it is brought up
        (`tabs.currentChanged`): each reads the store and draws, so doing both at every click
        would double what a click costs. The plot is drawn on the next turn of the event loop:
        the click (or the tab coming up) is painted first, the plot after, neither waiting for
        the other."""
        run_id = self.current_id()
        if run_id is None:
            return
        if self.tabs.currentWidget() is self.history:
            if not self._history_queued:
                self._history_queued = True
                QTimer.singleShot(0, self, self._draw_history)
        else:
            self._compare_with_baseline(run_id)

    def _draw_history(self) -> None:
        """The History tab: the selected run's kernel, unless it is already drawn and current."""
        self._history_queued = False
        run_id = self.current_id()
        run = self.table.shown_run(run_id) if run_id is not None else None
        if self._closed or run is None or self.tabs.currentWidget() is not self.history:
            return
        if self._history_stale or self.history.history_key != (run["project"], run["kernel"]):
            self.show_history(run["project"], run["kernel"])

    # ================================================================ compare
    def set_baseline(self, run_id: int | None) -> None:
        """Pin a run as the baseline the runs selected next are compared against (starred)."""
        store = self.store()
        if run_id is None or store is None:
            return
        if self.compare.set_baseline(store, run_id):
            self.table.runs_model.set_baseline(run_id)

    def _compare_with_baseline(self, run_id: int) -> None:
        store = self.store()
        if store is not None:
            self.compare.compare(store, run_id)

    def _recompare(self) -> None:
        run_id = self.current_id()
        if run_id is not None:
            self._compare_with_baseline(run_id)

    # The Compare tab's state, read where the panel was read before the tab was its own widget.
    @property
    def baseline_id(self) -> int | None:
        return self.compare.baseline_id

    @property
    def compare_result(self) -> dict[str, Any] | None:
        return self.compare.compare_result

    @property
    def baseline_label(self) -> QLabel:
        return self.compare.baseline_label

    @property
    def invocation_box(self) -> QCheckBox:
        return self.compare.invocation_box

    @property
    def compare_table(self) -> QTableWidget:
        return self.compare.compare_table

    @property
    def method_label(self) -> QLabel:
        return self.compare.method_label

    # ================================================================ history
    def show_history(self, project: str, kernel: str) -> None:
        """The History tab: one kernel's recorded medians over its edits (`SessionHistory`)."""
        store = self.store()
        if store is not None:
            self._history_stale = False
            self.history.show_history(store, project, kernel)

    def show_diff(self, run_id: int) -> None:
        """The History tab: one run's sources against the previous recorded run of its kernel."""
        store = self.store()
        if store is not None:
            self.history.show_diff(store, run_id)

    # ================================================================ plumbing
    def show_message(self, text: str, error: bool = False) -> None:
        self.message.setText(text)
        self.message.setStyleSheet(f"color: {theme.VERDICT['slower']};" if error else "")
        if error:
            log.warning("%s", text)

    def showEvent(self, event) -> None:  # noqa: N802
        super().showEvent(event)
        self._arrange()

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._arrange()

    def _arrange(self) -> None:
        """The list beside the tabs when the panel is wide, above them when narrow (a docked panel
        at 1280×800), so the list's columns that matter fit; the history plot and its diff follow.
        Until the user moves the divider the two share the panel half and half, however it is
        resized; after that the sizes are the user's (until the arrangement changes)."""
        if self.width() <= 200:
            return
        wide = self.width() >= SIDE_BY_SIDE_PX
        orientation = Qt.Orientation.Horizontal if wide else Qt.Orientation.Vertical
        if self._arranged != orientation:
            self._arranged = orientation
            self._user_split = False
            self.split.setOrientation(orientation)
            self.history.setOrientation(orientation)
            self.history.setSizes([60, 40])  # proportions: QSplitter shares its size by these weights
        if not self._user_split:
            total = self.split.width() if wide else self.split.height()
            self.split.setSizes([total // 2, total - total // 2])

    def _close_database(self) -> None:
        self._listed = None
        if self._store is not None:
            self._store.close()
            self._store = None

    def shutdown(self) -> None:
        """Close the database. Idempotent."""
        if self._closed:
            return
        self.compare.shutdown()
        self._wait_for_transfer()
        self._close_database()
        self._closed = True

    def closeEvent(self, event) -> None:  # noqa: N802
        self.shutdown()
        super().closeEvent(event)
