"""The Sessions panel: every recorded run, filtered; a run against a baseline; a kernel's history.

Recording: each `RunReport` the bridge finishes (`runFinished`) is handed, with a snapshot of the
project's sources read at that moment, to a `SessionRecorder` (its own thread and connection), unless
the "Record runs" toggle is off. Browsing queries the database on the GUI thread: the queries are
indexed and take milliseconds even with 100,000 runs (benchmarks/sessions.py), and WAL mode means a
writer never blocks them. The panel refreshes when it is on screen; a recording made while it is
hidden marks it stale.

- the runs table lists the newest runs that pass the filters (kernel, backend, device, date,
  verified);
- "Set as baseline" pins the selected run; selecting another run compares the two
  (`workbench.profile.compare`, as `sessions compare` does: "Pair whole invocations" is its
  `--invocation`, on by default; rows that measured different things say what differs; the method
  is named);
- the history plot shows the selected run's kernel: median with its interquartile range per
  backend × device over the edits of its sources; clicking a point shows that run's source diff.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal, SignalInstance
from PySide6.QtGui import QAction, QColor, QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMenu,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from workbench.errors import WorkbenchError
from workbench.profile.compare import COLUMNS as COMPARE_COLUMNS
from workbench.profile.compare import cells as compare_cells
from workbench.profile.conditions import run_conditions, series_text
from workbench.profile.store import SessionStore, default_db_path
from workbench.result_text import cell_of, row_verdict, verdict_tone
from workbench.ui import theme
from workbench.ui.layout_fit import wrap_within
from workbench.ui.plot_axes import OpaqueGridAxis
from workbench.ui.theme import PLOT_AXIS as AXIS
from workbench.ui.theme import PLOT_BACKGROUND as BACKGROUND
from workbench.ui.theme import PLOT_TEXT as TEXT
from workbench.ui.theme import SERIES as PALETTE
from workbench.ui.visibility import follow_dock, on_screen
from workbench.units import format_time

log = logging.getLogger(__name__)

#: Rows shown in the runs table (the newest that pass the filters).
LIST_LIMIT = 2000
RUN_COLUMNS = (
    "#", "time (UTC)", "kernel", "backend", "device", "verified", "median", "IQR", "n", "sources", "series",
    "conditions",
)  # fmt: skip
SINCE = {
    "any time": None,
    "last hour": 3600,
    "last 24 hours": 86400,
    "last 7 days": 7 * 86400,
    "last 30 days": 30 * 86400,
}
VERDICT_COLORS = theme.VERDICT
EXPORT_FORMATS = {
    "csv": ("CSV", "*.csv"),
    "json": ("JSON bundle", "*.json"),
    "chrome-trace": ("Chrome trace", "*.json"),
}


def verified_text(run: dict[str, Any]) -> str:
    """A recorded run's verdict cell, as the results table and `sessions list` show it."""
    return cell_of(row_verdict(run))


@runtime_checkable
class SessionsBridge(Protocol):
    """The bridge members the sessions panel uses (`ServiceBridge` has them:
    tests/ui/test_typed_events.py)."""

    runFinished: SignalInstance
    project: Any


class SessionsPanel(QWidget):
    """Browse, compare and export the recorded runs; record the window's runs."""

    #: After each recording: {"ids": [...]} or {"error": "..."} (GUI thread).
    recorded = Signal(object)
    _recorder_done = Signal(object)  # from the recorder's thread (queued to the GUI thread)

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
        self.baseline_id: int | None = None
        self.runs: list[dict[str, Any]] = []
        self.compare_result: dict[str, Any] | None = None
        self.history_key: tuple[str, str] | None = None
        #: (backend, device) -> {"x", "median", "q1", "q3", "ids"} of the history plot
        self.history_series: dict[tuple[str, str], dict[str, np.ndarray]] = {}
        self._history_items: dict[tuple[str, str], tuple[pg.PlotDataItem, pg.ErrorBarItem]] = {}
        self._store: SessionStore | None = None
        self._recorder: Any = None
        self._stale = True
        self._closed = False
        self._build_ui()
        self._recorder_done.connect(self._on_recorded)
        if bridge is not None:
            bridge.runFinished.connect(self.on_run_finished)

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

        self.table = QTableWidget(0, len(RUN_COLUMNS))
        self.table.setHorizontalHeaderLabels(RUN_COLUMNS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.itemSelectionChanged.connect(self._selection_changed)

        self.baseline_label = QLabel("No baseline: select a run and press “Set as baseline”.")
        wrap_within(self.baseline_label)
        self.compare_table = QTableWidget(0, len(COMPARE_COLUMNS))
        self.compare_table.setHorizontalHeaderLabels(COMPARE_COLUMNS)
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
        self.invocation_box.toggled.connect(self._recompare)
        compare = QWidget()
        layout = QVBoxLayout(compare)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.baseline_label)
        layout.addWidget(self.invocation_box)
        layout.addWidget(self.compare_table, 1)
        layout.addWidget(self.method_label)

        self.plot = pg.PlotWidget(axisItems={side: OpaqueGridAxis(side) for side in ("left", "bottom")})
        self.plot.setBackground(BACKGROUND)
        item = self.plot.getPlotItem()
        item.setTitle("history: pick a run", color=TEXT, size="10pt")
        item.setLabel("left", "median (µs), bar: IQR", color=TEXT)
        item.setLabel("bottom", "edit of the kernel's sources (0 = first recorded)", color=TEXT)
        item.showGrid(x=True, y=True, alpha=0.2)
        item.addLegend(offset=(-10, 10), labelTextColor=TEXT)
        for axis in ("left", "bottom"):
            item.getAxis(axis).setTextPen(TEXT)
            item.getAxis(axis).setPen(AXIS)
        self.diff_label = QLabel("Click a point to see the source diff of that run.")
        self.diff_label.setWordWrap(True)  # else its text sets the splitter's minimum width
        self.diff_view = QPlainTextEdit()
        self.diff_view.setReadOnly(True)
        self.diff_view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.diff_view.setFont(QFont("monospace", 9))
        diff_box = QWidget()
        diff_layout = QVBoxLayout(diff_box)
        diff_layout.setContentsMargins(0, 0, 0, 0)
        diff_layout.addWidget(self.diff_label)
        diff_layout.addWidget(self.diff_view, 1)
        history = QSplitter(Qt.Orientation.Horizontal)
        history.addWidget(self.plot)
        history.addWidget(diff_box)
        self.history_split = history

        self.tabs = QTabWidget()
        self.tabs.addTab(compare, "Compare")
        self.tabs.addTab(history, "History")
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.table)
        split.addWidget(self.tabs)
        self.split = split
        self._sized = False

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
        box.setMinimumContentsLength(6)  # long kernel or device names are elided, not widening the dock
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
        self._stale = True
        self._refresh_if_shown()

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

    def on_run_finished(self, report: Any) -> None:
        """The bridge finished a run: record it (off the GUI thread) unless recording is off."""
        from workbench.profile.last_good import fresh_only

        report = fresh_only(report)  # rows kept stale from an earlier run were recorded then
        if self._closed or not self.record_box.isChecked() or report is None:
            return
        snapshot = None
        project = self.bridge.project if self.bridge is not None else None
        if project is not None:
            from workbench.profile.sources import snapshot as take_snapshot

            try:
                snapshot = take_snapshot(project)
            except OSError as exc:
                log.warning("could not read the sources to record: %s", exc)
        if self._recorder is None:
            from workbench.profile.recorder import SessionRecorder

            self._recorder = SessionRecorder(self.database_path(), on_done=self._recorder_done.emit)
        self._recorder.submit(report, snapshot)

    def _on_recorded(self, outcome: dict[str, Any]) -> None:
        if self._closed:
            return
        if outcome.get("error"):
            self.show_message(outcome["error"], error=True)
        else:
            ids = outcome.get("ids") or []
            if ids:
                self.show_message(f"recorded run(s) #{ids[0]}–#{ids[-1]} in {self.database_path()}")
            self._stale = True
            self._refresh_if_shown()
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

    def refresh(self) -> None:
        """Reload the filter choices and the runs table (keeps the selection when it can)."""
        if self._closed:
            return
        store = self.store()
        if store is None:
            return
        self._stale = False
        try:
            for box, column in (
                (self.kernel_box, "kernel"),
                (self.backend_box, "backend"),
                (self.device_box, "device"),
            ):
                self._fill_combo(box, store.distinct(column))
            runs = store.list_runs(limit=LIST_LIMIT, **self.filters())
            extras = run_conditions(store, [run["id"] for run in runs])
        except WorkbenchError as exc:
            self.show_message(str(exc), error=True)
            return
        selected = set(self.selected_ids())
        self.runs = runs
        self.table.blockSignals(True)
        self.table.setRowCount(len(runs))
        for row, run in enumerate(runs):
            cells = (
                str(run["id"]), run["time"].replace("T", " ").rstrip("Z"), f"{run['project']}/{run['kernel']}",
                run["backend"], run["device"], verified_text(run),
                format_time(run["median_s"], "–"), format_time(run["iqr_s"], "–"), str(run["n"] or "–"), (run["snapshot_hash"] or "")[:10],
                series_text(extras[run["id"]]["series"]), ", ".join(extras[run["id"]]["condition_flags"]),
            )  # fmt: skip
            for column, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setData(Qt.ItemDataRole.UserRole, run["id"])
                if column == 4:
                    item.setToolTip(run["device_name"])
                if run.get("invalid"):  # a poisoned row the store sanitised (bundle_check)
                    item.setToolTip("invalid values, shown as –: " + "; ".join(run["invalid"]))
                if column == 0 and run["id"] == self.baseline_id:
                    item.setText(f"{run['id']} ★")
                if column == 5 and verdict_tone(row_verdict(run)) == "bad":
                    item.setForeground(QColor(VERDICT_COLORS["slower"]))
                self.table.setItem(row, column, item)
            if run["id"] in selected:
                self.table.selectRow(row)
        self.table.blockSignals(False)

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
        return [
            int(self.table.item(row, 0).data(Qt.ItemDataRole.UserRole))
            for row in range(self.table.rowCount())
        ]

    def selected_ids(self) -> list[int]:
        rows = sorted({index.row() for index in self.table.selectionModel().selectedRows()})
        return [int(self.table.item(row, 0).data(Qt.ItemDataRole.UserRole)) for row in rows]

    def current_id(self) -> int | None:
        ids = self.selected_ids()
        return ids[-1] if ids else None

    def select_run(self, run_id: int) -> None:
        for row in range(self.table.rowCount()):
            if self.table.item(row, 0).data(Qt.ItemDataRole.UserRole) == run_id:
                self.table.selectRow(row)
                return

    def _selection_changed(self) -> None:
        run_id = self.current_id()
        if run_id is None:
            return
        self._update_compare(run_id)
        run = next((r for r in self.runs if r["id"] == run_id), None)
        if run is not None:
            self.show_history(run["project"], run["kernel"])

    # ================================================================ compare
    def set_baseline(self, run_id: int | None) -> None:
        store = self.store()
        if run_id is None or store is None:
            return
        try:
            run = store.get_run(run_id, samples=False)
        except WorkbenchError as exc:
            self.show_message(str(exc), error=True)
            return
        self.baseline_id = run_id
        self.baseline_label.setText(
            f"Baseline: run #{run_id} — {run['project']}/{run['kernel']}, {run['backend']} on {run['device']}, "
            f"{run['time']}. Select another run to compare."
        )
        self.refresh()

    def _update_compare(self, run_id: int) -> None:
        if self.baseline_id is None or run_id == self.baseline_id:
            return
        from workbench.profile.compare import compare_runs

        store = self.store()
        if store is None:
            return
        try:
            result = compare_runs(store, self.baseline_id, run_id, invocation=self.invocation_box.isChecked())
        except WorkbenchError as exc:
            self.show_message(str(exc), error=True)
            return
        self.compare_result = result
        self.compare_table.setRowCount(len(result["rows"]))
        for row, entry in enumerate(result["rows"]):
            texts = compare_cells(entry)
            for column, text in enumerate(texts):
                item = QTableWidgetItem(text)
                if column == len(texts) - 1:
                    item.setToolTip(entry["verdict"])
                    if entry["outcome"] in VERDICT_COLORS:
                        item.setForeground(QColor(VERDICT_COLORS[entry["outcome"]]))
                self.compare_table.setItem(row, column, item)
        differs = [
            f"{e['backend']} on {e['device']}: {'; '.join(e['differs'])}"
            for e in result["rows"]
            if e["differs"]
        ]
        self.method_label.setText(
            f"Run #{run_id} against baseline #{self.baseline_id}. Method: {result['method']}."
            + "".join(f"\nDiffers — {line}" for line in differs)
        )

    def _recompare(self) -> None:
        run_id = self.current_id()
        if run_id is not None:
            self._update_compare(run_id)

    # ================================================================ history
    def show_history(self, project: str, kernel: str) -> None:
        """Plot one kernel's recorded medians (IQR bars) per backend × device over its edits."""
        store = self.store()
        if store is None:
            return
        try:
            runs = store.history(project, kernel)
        except WorkbenchError as exc:
            self.show_message(str(exc), error=True)
            return
        self.history_key = (project, kernel)
        # x: how many times the sources changed before this run (runs of one version share an x).
        edit, previous = 0, None
        grouped: dict[tuple[str, str], list[tuple[int, dict]]] = {}
        for run in runs:
            digest = run["snapshot_hash"]
            if digest is not None:
                if previous is not None and digest != previous:
                    edit += 1
                previous = digest
            if run["median_s"] is not None:
                grouped.setdefault((run["backend"], run["device"]), []).append((edit, run))
        self.history_series = {
            key: {
                "x": np.array([x for x, _ in points], dtype=float),
                "median": np.array([r["median_s"] for _, r in points]) * 1e6,
                "q1": np.array([r["q1_s"] if r["q1_s"] is not None else r["median_s"] for _, r in points])
                * 1e6,
                "q3": np.array([r["q3_s"] if r["q3_s"] is not None else r["median_s"] for _, r in points])
                * 1e6,
                "ids": np.array([r["id"] for _, r in points], dtype=np.int64),
            }
            for key, points in grouped.items()
        }
        self._draw_history()

    def _draw_history(self) -> None:
        item = self.plot.getPlotItem()
        for curve, bars in self._history_items.values():
            item.removeItem(curve)
            item.removeItem(bars)
        self._history_items.clear()
        if self.history_key is not None:
            project, kernel = self.history_key
            item.setTitle(
                f"history of {project}/{kernel}: median per backend × device", color=TEXT, size="10pt"
            )
        for index, (key, series) in enumerate(sorted(self.history_series.items())):
            color = PALETTE[index % len(PALETTE)]
            name = f"{key[0]} · {key[1]}"
            curve = self.plot.plot(
                series["x"], series["median"], name=name, pen=pg.mkPen(color, width=1.5), symbol="o",
                symbolSize=8, symbolBrush=color, symbolPen=pg.mkPen(color), data=series["ids"].tolist(),
            )  # fmt: skip
            curve.sigPointsClicked.connect(self._point_clicked)
            bars = pg.ErrorBarItem(
                x=series["x"], y=series["median"], top=series["q3"] - series["median"],
                bottom=series["median"] - series["q1"], beam=0.12, pen=pg.mkPen(color, width=1),
            )  # fmt: skip
            self.plot.addItem(bars)
            self._history_items[key] = (curve, bars)
        edits = max((int(s["x"].max()) for s in self.history_series.values() if len(s["x"])), default=0)
        item.getAxis("bottom").setTickSpacing(*((1, 1) if edits <= 20 else (None, None)))
        item.enableAutoRange()

    def history_items(self) -> dict[tuple[str, str], tuple[pg.PlotDataItem, pg.ErrorBarItem]]:
        return dict(self._history_items)

    def _point_clicked(self, _curve: Any, points: Any, *_args: Any) -> None:
        if len(points):
            self.show_diff(int(points[0].data()))

    def show_diff(self, run_id: int) -> None:
        """Show the source diff of one run against the previous recorded run of its kernel."""
        store = self.store()
        if store is None:
            return
        try:
            run = store.get_run(run_id, samples=False)
            diff = store.diff(run_id)
        except WorkbenchError as exc:
            self.show_message(str(exc), error=True)
            return
        self.diff_label.setText(
            f"Run #{run_id} ({run['backend']} on {run['device']}, {format_time(run['median_s'], '–')}): its sources "
            "against the previous recorded run of this kernel"
        )
        self.diff_view.setPlainText(diff or "(no source change since the previous recorded run)")
        self.tabs.setCurrentIndex(1)

    # ================================================================ export / import
    def export_ids(self) -> list[int]:
        """The selected runs, else every run the table shows."""
        return self.selected_ids() or self.shown_ids()

    def export_to(self, fmt: str, path: str | Path) -> bool:
        from workbench.profile.export import render, write_text

        store = self.store()
        if store is None:
            return False
        ids = self.export_ids()
        try:
            write_text(path, render(store, fmt, ids))
        except WorkbenchError as exc:
            self.show_message(str(exc), error=True)
            return False
        self.show_message(f"exported {len(ids)} run(s) to {path}")
        return True

    def export_dialog(self, fmt: str) -> None:
        label, pattern = EXPORT_FORMATS[fmt]
        path, _ = QFileDialog.getSaveFileName(self, f"Export runs as {label}", "", f"{label} ({pattern})")
        if path:
            self.export_to(fmt, path)

    def import_from(self, path: str | Path) -> bool:
        from workbench.profile.export import import_bundle

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

    # ================================================================ plumbing
    def show_message(self, text: str, error: bool = False) -> None:
        self.message.setText(text)
        self.message.setStyleSheet(f"color: {VERDICT_COLORS['slower']};" if error else "")
        if error:
            log.warning("%s", text)

    def _refresh_if_shown(self) -> None:
        if self._stale and on_screen(self):
            self.refresh()

    def showEvent(self, event) -> None:  # noqa: N802
        super().showEvent(event)
        if not self._sized and self.width() > 200:
            self._sized = True
            self.split.setSizes([int(self.width() * 0.4), int(self.width() * 0.6)])
            self.history_split.setSizes([int(self.width() * 0.36), int(self.width() * 0.24)])
        if not hasattr(self, "_followed"):
            self._followed = follow_dock(self, lambda visible: visible and self._refresh_if_shown())
        self._refresh_if_shown()

    def _close_database(self) -> None:
        if self._recorder is not None:
            self._recorder.close()
            self._recorder = None
        if self._store is not None:
            self._store.close()
            self._store = None

    def shutdown(self) -> None:
        """Record what is queued, then close the database. Idempotent."""
        if self._closed:
            return
        self._close_database()
        self._closed = True

    def closeEvent(self, event) -> None:  # noqa: N802
        self.shutdown()
        super().closeEvent(event)
