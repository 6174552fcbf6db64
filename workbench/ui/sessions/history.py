"""The Sessions panel's History tab: one kernel's recorded medians over the edits of its sources,
and the source diff of a clicked run.

x is how many times the kernel's sources changed before a run (runs of one version share an x);
y the median with its interquartile range as bars, one series per backend × device. Clicking a
point shows that run's sources against the previous recorded run of the kernel.

It reads only what it draws (`paging.history`): the newest `paging.HISTORY_POINTS` runs of the
kernel, seven columns each; the title says when older runs are left out.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QSplitter, QVBoxLayout, QWidget

from workbench.errors import WorkbenchError
from workbench.profile.sessions import paging
from workbench.profile.sessions.wording import run_ref, sentence
from workbench.ui.plots.axes import OpaqueGridAxis
from workbench.ui.theme import PLOT_AXIS as AXIS
from workbench.ui.theme import PLOT_BACKGROUND as BACKGROUND
from workbench.ui.theme import PLOT_TEXT as TEXT
from workbench.ui.theme import SERIES as PALETTE
from workbench.units import format_time


class SessionHistory(QSplitter):
    """The history plot beside the diff of the clicked run; reads the store it is handed."""

    #: A diff is shown (the panel brings this tab up).
    diffShown = Signal(int)
    #: A query failed: the error's text (the panel shows it).
    failed = Signal(str)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(Qt.Orientation.Horizontal, parent)
        self.history_key: tuple[str, str] | None = None
        #: (backend, device) -> {"x", "median", "q1", "q3", "ids"} of the plot
        self.history_series: dict[tuple[str, str], dict[str, np.ndarray]] = {}
        #: Runs plotted, and the kernel's runs in all (older ones beyond `paging.HISTORY_POINTS`).
        self.history_shown = self.history_total = 0
        self._items: dict[tuple[str, str], tuple[pg.PlotDataItem, pg.ErrorBarItem]] = {}
        self._store: Any = None

        self.plot = pg.PlotWidget(axisItems={side: OpaqueGridAxis(side) for side in ("left", "bottom")})
        self.plot.setBackground(BACKGROUND)
        item = self.plot.getPlotItem()
        item.setTitle("history: pick a run", color=TEXT, size="10pt")
        item.setLabel("left", "median (µs), bar: IQR", color=TEXT)
        item.setLabel("bottom", "edit of the kernel's sources (0 = the first run plotted)", color=TEXT)
        item.showGrid(x=True, y=True, alpha=0.2)
        self._legend = item.addLegend(offset=(-10, 10), labelTextColor=TEXT)
        self._legend_names: list[str] = []
        #: The plot's curve and bars, one pair a series, reused (`_draw`).
        self._pool: list[tuple[pg.PlotDataItem, pg.ErrorBarItem]] = []
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
        self.addWidget(self.plot)
        self.addWidget(diff_box)

    def show_history(self, store: Any, project: str, kernel: str) -> None:
        """Plot one kernel's recorded medians (IQR bars) per backend × device over its edits."""
        try:
            runs, self.history_total = paging.history(store, project, kernel)
        except WorkbenchError as exc:
            self.failed.emit(str(exc))
            return
        self._store = store
        self.history_key = (project, kernel)
        self.history_shown = len(runs)
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
        self._draw()

    def _draw(self) -> None:
        """Show `history_series`, reusing the plot's items (one curve and one set of bars a
        series, kept between kernels): adding and removing pyqtgraph items costs more than the
        points themselves."""
        item = self.plot.getPlotItem()
        if self.history_key is not None:
            project, kernel = self.history_key
            older = (
                f" (the newest {self.history_shown:,} of {self.history_total:,} runs)"
                if self.history_total > self.history_shown
                else ""
            )
            item.setTitle(
                f"history of {project}/{kernel}: median per backend × device{older}", color=TEXT, size="10pt"
            )
        ordered = sorted(self.history_series.items())
        while len(self._pool) < len(ordered):
            self._pool.append(self._new_slot(len(self._pool)))
        self._items = {}
        for (key, series), (curve, bars) in zip(ordered, self._pool, strict=False):
            curve.setData(series["x"], series["median"], name=f"{key[0]} · {key[1]}")
            bars.setData(
                x=series["x"], y=series["median"], top=series["q3"] - series["median"],
                bottom=series["median"] - series["q1"],
            )  # fmt: skip
            curve.setVisible(True)
            bars.setVisible(True)
            self._items[key] = (curve, bars)
        for curve, bars in self._pool[len(ordered) :]:
            curve.setData([], [])
            curve.setVisible(False)
            bars.setVisible(False)
        names = [f"{key[0]} · {key[1]}" for key, _ in ordered]
        if names != self._legend_names:  # the legend only changes with the series
            self._legend.clear()
            for name, (curve, _bars) in zip(names, self._pool, strict=False):
                self._legend.addItem(curve, name)
            self._legend_names = names
        edits = max((int(s["x"].max()) for s in self.history_series.values() if len(s["x"])), default=0)
        item.getAxis("bottom").setTickSpacing(*((1, 1) if edits <= 20 else (None, None)))
        item.enableAutoRange()

    def _new_slot(self, index: int) -> tuple[pg.PlotDataItem, pg.ErrorBarItem]:
        color = PALETTE[index % len(PALETTE)]
        curve = pg.PlotDataItem(
            pen=pg.mkPen(color, width=1.5),
            symbol="o",
            symbolSize=8,
            symbolBrush=color,
            symbolPen=pg.mkPen(color),
        )
        curve.sigPointsClicked.connect(self._point_clicked)
        bars = pg.ErrorBarItem(x=np.zeros(0), y=np.zeros(0), beam=0.12, pen=pg.mkPen(color, width=1))
        item = self.plot.getPlotItem()
        item.addItem(bars)
        item.addItem(curve)
        return curve, bars

    def history_items(self) -> dict[tuple[str, str], tuple[pg.PlotDataItem, pg.ErrorBarItem]]:
        return dict(self._items)

    def _point_clicked(self, curve: Any, points: Any, *_args: Any) -> None:
        key = next((k for k, (c, _b) in self._items.items() if c is curve), None)
        if len(points) and key is not None and self._store is not None:
            self.show_diff(self._store, int(self.history_series[key]["ids"][points[0].index()]))

    def show_diff(self, store: Any, run_id: int) -> None:
        """Show the source diff of one run against the previous recorded run of its kernel."""
        try:
            run = store.get_run(run_id, samples=False)
            diff = store.diff(run_id)
        except WorkbenchError as exc:
            self.failed.emit(str(exc))
            return
        self.diff_label.setText(
            f"{sentence(run_ref(run_id))} ({run['backend']} on {run['device']}, {format_time(run['median_s'], '–')}): its sources "
            "against the previous recorded run of this kernel"
        )
        self.diff_view.setPlainText(diff or "(no source change since the previous recorded run)")
        self.diffShown.emit(run_id)
