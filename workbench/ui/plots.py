"""Plots: timing comparison, spread and history; outputs, errors and scatter; a roofline with
measured roofs. Reports arrive through the bridge's queued `runFinished` signal and are only
buffered; a GUI-thread QTimer redraws at a fixed rate when something changed.

Keeping the event loop turning during hot reload (benchmarks/hot_reload.py) shapes the drawing:

- only what is on screen is drawn: the panel's current tab, while the panel is visible (a dock
  tabified behind another one counts as hidden); a tab drawn late is drawn when it is shown;
- one plot per timer tick, and the plot's auto-range is settled right after its data changes, so
  each repaint paints one plot once (pyqtgraph otherwise re-ranges inside the paint);
- the outputs tab decimates million-element arrays over the visible index range (min/max per
  bucket, so peaks stay) and compares them with the reference on a one-thread executor; the GUI
  thread only calls `setData` with a few thousand points. Unchanged arrays reuse their points.

Readability rules: every axis names its unit and scales it (ns … s, FLOP/s with SI prefixes); a
log axis is used where values span more than ~8×, so no series is flattened; series are named by
row labels or a legend line under the plot, never a legend box over the data.
`plots_data()` returns what each plot shows, in base units (`workbench gui --plots-json`).
"""

from __future__ import annotations

import html
import math
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QObject, QPointF, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import (
    QComboBox,
    QDockWidget,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from workbench.manifest import Check
from workbench.run.host_load import run_conditions
from workbench.run.verify import Tolerance
from workbench.ui.ceilings_store import store_for
from workbench.ui.plot_axes import AXIS, BACKGROUND, TEXT, OpaqueGridAxis, RowAxis, UnitAxis
from workbench.ui.plot_data import (
    MAX_POINTS,
    OutputsCache,
    OutputsDrawing,
    Roof,
    RoofPoint,
    TimingRow,
    compute_outputs,
    format_si,
    log_scale_wanted,
    roofline_model,
    roofline_ranges,
    series_name,
    si_scale,
    timing_rows,
)
from workbench.ui.visibility import follow_dock, on_screen

# The colours and the grid axis are shared with the sessions panel.
__all__ = ["AXIS", "BACKGROUND", "MAX_POINTS", "PALETTE", "TEXT", "OpaqueGridAxis", "PlotsPanel"]

#: Runs kept per series in the history plot.
HISTORY = 200
#: Timer interval: one plot per tick.
REDRAW_MS = 50
#: Samples drawn per series in the spread view at most.
MAX_SPREAD_POINTS = 1500
#: After the outputs view stops moving, decimate again for the new range.
RANGE_SETTLE_MS = 120
PALETTE = (
    "#4e9fe0",
    "#ff9f43",
    "#5cc96b",
    "#ef5350",
    "#b388ff",
    "#c49a6c",
    "#f48fb1",
    "#b0b0b0",
    "#d4e157",
    "#26c6da",
)
MISMATCH, UNWRITTEN, FASTEST = "#ff5252", "#ffd54f", "#ffd54f"
#: Roofs are drawn in greys (dashed), apart from the series' colours.
ROOF_COLORS = ("#cfd2d6", "#9aa0a8", "#e0c9a6", "#a8c5e0")

#: The panel's tabs, in order, and the plots each holds; one plot is redrawn per timer tick.
TABS = ("timing", "outputs", "roofline")
PARTS = {"timing": ("compare", "spread", "history"), "outputs": ("outputs",), "roofline": ("roofline",)}

X_INTENSITY = "arithmetic intensity (FLOP/byte)"
Y_PERFORMANCE = "performance (FLOP/s)"


class _Relay(QObject):
    """Carries a finished outputs computation from the worker thread to the GUI thread."""

    ready = Signal(object)


class FittedPlot(pg.PlotWidget):
    """A plot whose minimum size is what its axes and title need, so a layout never squeezes it
    below that (pyqtgraph would then draw past the widget's edge: clipped labels)."""

    def minimumSizeHint(self):  # noqa: N802 (Qt override)
        hint = self.getPlotItem().effectiveSizeHint(Qt.SizeHint.MinimumSize)
        return QSize(int(math.ceil(hint.width())) + 4, max(int(math.ceil(hint.height())) + 4, 110))

    def sizeHint(self):  # noqa: N802
        return QSize(320, 220)


def _plot(title: str, left: str, bottom: str, rows: str | None = None) -> FittedPlot:
    """A dark plot; `rows` ("left") makes that axis a named-rows axis, the others are unit axes."""
    axes = {side: (RowAxis if side == rows else UnitAxis)(side) for side in ("left", "bottom")}
    widget = FittedPlot(axisItems=axes)
    widget.setBackground(BACKGROUND)
    widget.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
    item = widget.getPlotItem()
    item.setTitle(title, color=TEXT, size="9pt")
    item.setLabel("left", left, color=TEXT)
    item.setLabel("bottom", bottom, color=TEXT)
    item.showGrid(x=True, y=rows is None, alpha=0.2)
    item.setMenuEnabled(False)
    for axis in ("left", "bottom"):
        item.getAxis(axis).setTextPen(TEXT)
        item.getAxis(axis).setPen(AXIS)
        item.getAxis(axis).setZValue(-1)  # the grid behind the data (see GridAxis)
    return widget


def _legend_label() -> QLabel:
    label = QLabel("")
    label.setWordWrap(True)
    label.setTextFormat(Qt.TextFormat.RichText)
    label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
    return label


def _count(values: Any) -> int:
    return 0 if values is None else len(values)


def _view_range(plot: pg.PlotWidget) -> tuple[list[float], list[float]]:
    """The plot's settled view range [[x0, x1], [y0, y1]] (in its plotted units)."""
    vb = plot.getPlotItem().getViewBox()
    vb.prepareForPaint()
    return [list(map(float, r)) for r in vb.viewRange()]


class PlotsPanel(QWidget):
    """Timing, outputs and roofline views fed by run reports."""

    def __init__(self, bridge, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("PlotsPanel")
        self.bridge = bridge
        self.ceilings = store_for(bridge)
        #: series -> [(run, median s)]; runs where the sources changed (an edit) since the last run.
        self.history: dict[str, list[tuple[int, float]]] = {}
        self.edits: list[int] = []
        self.runs = 0
        self._last_source: str | None = None
        self._report: Any = None
        self._stale: set[str] = set()
        self._colors: dict[str, str] = {}
        self._model: dict[str, Any] = {}  # what each plot shows, for plots_data()
        # The outputs computation: one job in flight at most, the latest request waiting behind it.
        self._executor: ThreadPoolExecutor | None = None
        self._outputs_cache = OutputsCache()
        self._outputs_job: Future | None = None
        self._outputs_pending: tuple | None = None
        self._outputs_generation = 0
        self._outputs_range: tuple[float, float] | None = None
        self._drawing: OutputsDrawing | None = None
        self._drawn: dict[tuple[str, str], Any] = {}
        self._dock: QDockWidget | None = None
        self._relay = _Relay(self)
        self._relay.ready.connect(self._outputs_ready, Qt.ConnectionType.QueuedConnection)

        self._make_timing_tab()
        self._make_outputs_tab()
        self._make_roofline_tab()
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(self.timing_tab, "Timing")
        self.tabs.addTab(self.outputs_tab, "Outputs")
        self.tabs.addTab(self.roofline_tab, "Roofline")
        self.tabs.currentChanged.connect(self._wake)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.tabs)
        self.setMinimumWidth(320)

        self.timer = QTimer(self)
        self.timer.setObjectName("plotsRedraw")
        self.timer.setInterval(REDRAW_MS)
        self.timer.timeout.connect(self._redraw)
        self.range_timer = QTimer(self)
        self.range_timer.setObjectName("plotsOutputsRange")
        self.range_timer.setSingleShot(True)
        self.range_timer.setInterval(RANGE_SETTLE_MS)
        self.range_timer.timeout.connect(self._range_settled)
        bridge.runFinished.connect(self.add_report)
        bridge.projectChanged.connect(self.clear)
        self.ceilings.changed.connect(lambda: self._mark_dirty(("roofline",)))

    # ================================================================ construction
    def _make_timing_tab(self) -> None:
        self.compare_plot = _plot("Median and IQR (★ fastest)", "", "time", rows="left")
        self.compare_plot.getPlotItem().getViewBox().invertY(True)
        self.compare_plot.getPlotItem().getViewBox().setMouseEnabled(x=True, y=False)
        self.compare_plot.getPlotItem().getViewBox().sigResized.connect(self._fit_compare)
        self.whiskers = pg.PlotDataItem(pen=pg.mkPen(TEXT, width=2), connect="pairs")
        self.medians = pg.ScatterPlotItem(size=11, pen=pg.mkPen(BACKGROUND))
        self.compare_plot.addItem(self.whiskers)
        self.compare_plot.addItem(self.medians)
        self.compare_labels: list[pg.TextItem] = []

        self.spread_plot = _plot(
            "Spread around each median", "", "deviation from the median (%)", rows="left"
        )
        self.spread_plot.getPlotItem().getViewBox().invertY(True)
        self.spread_plot.getPlotItem().getViewBox().setMouseEnabled(x=True, y=False)
        self.spread_boxes = pg.PlotDataItem(pen=pg.mkPen("#8a8f98", width=7), connect="pairs")
        self.spread_boxes.setZValue(-1)  # the IQR box under the samples
        self.spread_points = pg.ScatterPlotItem(size=5, pen=None)
        self.spread_outliers = pg.ScatterPlotItem(size=8, pen=None)  # beyond the fences, at the edge
        self.spread_plot.addItem(self.spread_boxes)
        self.spread_plot.addItem(self.spread_points)
        self.spread_plot.addItem(self.spread_outliers)
        self.spread_plot.addItem(pg.InfiniteLine(0, angle=90, pen=pg.mkPen(AXIS, width=1)))

        self.history_plot = _plot("Median per run", "time", "run")
        self.history_curves: dict[str, pg.PlotDataItem] = {}
        self.edit_lines: list[pg.InfiniteLine] = []
        self.history_legend = _legend_label()

        self.timing_note = QLabel("Run a kernel to compare backends.")
        self.timing_note.setWordWrap(True)
        self.timing_tab = QWidget()
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.setChildrenCollapsible(False)
        splitter.addWidget(self.compare_plot)
        splitter.addWidget(self.spread_plot)
        history = QWidget()
        hl = QVBoxLayout(history)
        hl.setContentsMargins(0, 0, 0, 0)
        hl.setSpacing(2)
        hl.addWidget(self.history_plot, 1)
        hl.addWidget(self.history_legend)
        splitter.addWidget(history)
        splitter.setSizes([300, 220, 260])
        layout = QVBoxLayout(self.timing_tab)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.timing_note)
        layout.addWidget(splitter, 1)

    def _make_outputs_tab(self) -> None:
        self.output_plot = _plot("Outputs", "value", "index")
        self.error_plot = _plot("Error vs reference", "|error|", "index")
        self.scatter_plot = _plot("Backend vs reference", "backend", "reference")
        self.error_plot.setXLink(self.output_plot)
        self.output_curves: dict[str, pg.PlotDataItem] = {}
        self.error_curves: dict[str, pg.PlotDataItem] = {}
        self.scatter_items: dict[str, pg.ScatterPlotItem] = {}
        self.mismatch_marks = pg.ScatterPlotItem(
            symbol="x", size=9, pen=pg.mkPen(MISMATCH, width=2), brush=None
        )
        self.mismatch_marks.setZValue(10)
        self.error_plot.addItem(self.mismatch_marks)
        self.unwritten_marks = pg.ScatterPlotItem(symbol="s", size=7, pen=pg.mkPen(UNWRITTEN), brush=None)
        self.unwritten_marks.setZValue(10)
        self.output_plot.addItem(self.unwritten_marks)
        # "exact match" sits in the middle of the error plot's view box (pixels, not data: it stays
        # centred whatever the range).
        error_vb = self.error_plot.getPlotItem().getViewBox()
        self.exact_text = pg.TextItem("", color="#8bc34a", anchor=(0.5, 0.5))
        self.exact_text.setZValue(20)
        self.exact_text.setParentItem(error_vb)
        error_vb.sigResized.connect(self._center_exact_text)
        self.identity_line = pg.PlotDataItem(pen=pg.mkPen(AXIS, width=1, style=Qt.PenStyle.DashLine))
        self.scatter_plot.addItem(self.identity_line)
        self.output_plot.getPlotItem().getViewBox().sigXRangeChanged.connect(self._outputs_range_changed)

        self.arg_box = QComboBox()
        self.arg_box.setToolTip("Output buffer to compare")
        self.arg_box.currentTextChanged.connect(lambda _: self._mark_dirty(("outputs",)))
        self.error_mode = QComboBox()
        self.error_mode.addItems(["absolute", "ULP"])
        self.error_mode.setToolTip("Error in absolute terms, or in units of the last place")
        self.error_mode.currentTextChanged.connect(lambda _: self._redraw_outputs())
        self.first_bad_button = QPushButton("First bad")
        self.first_bad_button.setEnabled(False)
        self.first_bad_button.setToolTip("Zoom to the first mismatching or never-written element")
        self.first_bad_button.clicked.connect(self.show_first_bad)
        self.output_note = QLabel("")
        self.output_note.setWordWrap(True)
        self.output_legend = _legend_label()

        self.outputs_tab = QWidget()
        layout = QVBoxLayout(self.outputs_tab)
        layout.setContentsMargins(2, 2, 2, 2)
        bar = QHBoxLayout()
        bar.addWidget(QLabel("Buffer:"))
        bar.addWidget(self.arg_box, 1)
        bar.addWidget(QLabel("Error:"))
        bar.addWidget(self.error_mode)
        bar.addWidget(self.first_bad_button)
        layout.addLayout(bar)
        layout.addWidget(self.output_note)
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.setChildrenCollapsible(False)
        splitter.addWidget(self.output_plot)
        lower = self.outputs_lower = QSplitter(Qt.Orientation.Horizontal)
        lower.setChildrenCollapsible(False)
        lower.addWidget(self.error_plot)
        lower.addWidget(self.scatter_plot)
        lower.setSizes([300, 200])
        splitter.addWidget(lower)
        splitter.setSizes([320, 280])
        layout.addWidget(splitter, 1)
        layout.addWidget(self.output_legend)

    def _make_roofline_tab(self) -> None:
        self.roofline_plot = _plot("Roofline", Y_PERFORMANCE, X_INTENSITY)
        item = self.roofline_plot.getPlotItem()
        for side, unit in (("left", "FLOP/s"), ("bottom", "")):
            item.getAxis(side).set_log(True, unit)
        self.roof_curves: dict[str, pg.PlotDataItem] = {}
        self.roof_labels: dict[str, pg.TextItem] = {}
        self.roofline_points: dict[str, pg.ScatterPlotItem] = {}
        self.point_labels: dict[str, pg.TextItem] = {}
        self.hover_label = pg.TextItem(
            "", color=TEXT, fill=pg.mkBrush(40, 42, 46, 235), border=AXIS, anchor=(0, 1)
        )
        self.hover_label.setZValue(50)
        self.hover_label.hide()
        self.roofline_plot.addItem(self.hover_label, ignoreBounds=True)
        self.hover_text = ""
        self.roofline_plot.scene().sigMouseMoved.connect(self._roofline_hover)
        self.roofline_note = QLabel("")
        self.roofline_note.setWordWrap(True)
        self.roofline_legend = _legend_label()
        self.roofline_tab = QWidget()
        layout = QVBoxLayout(self.roofline_tab)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.roofline_plot, 1)
        layout.addWidget(self.roofline_legend)
        layout.addWidget(self.roofline_note)

    # ================================================================ data in (GUI thread, cheap)
    def add_report(self, report: Any) -> None:
        """Buffer a RunReport; the timer draws it."""
        self.runs += 1
        source = next(
            (
                r.provenance.get("source_hash")
                for r in report.results
                if (r.provenance or {}).get("source_hash") and not r.provenance.get("stale")
            ),
            None,
        )
        if source and self._last_source and source != self._last_source:
            self.edits.append(self.runs)
        self._last_source = source or self._last_source
        for result in report.results:
            median = (result.timing or {}).get("median_s")
            stale = (result.provenance or {}).get("stale")  # a row kept from an earlier run: drawn then
            if median is not None and result.status == "ok" and not stale:
                series = self.history.setdefault(series_name(result), [])
                series.append((self.runs, float(median)))
                del series[:-HISTORY]
        del self.edits[: max(0, len(self.edits) - HISTORY)]
        self._report = report
        self._outputs_range = None  # a new run starts from the whole buffer
        self._mark_dirty()

    def ensure_ceilings(self) -> None:
        """Measure the ceilings of the last run's devices that have none yet (in the background).

        Called when the roofline is drawn, not on every run: measuring keeps both cores of a small
        machine busy for a few seconds, which a hot-reload loop on the timing tab should not pay."""
        report = self._report
        if report is not None:
            self.ceilings.ensure([r.device for r in report.results if r.status == "ok" and r.device])

    def clear(self, *_: Any) -> None:
        self.history.clear()
        self.edits.clear()
        self.runs = 0
        self._last_source = None
        self._report = None
        self._model.clear()
        self._outputs_generation += 1  # a computation in flight is for the old project
        self._outputs_pending = None
        self._outputs_cache = OutputsCache()  # the worker may still hold the old one
        self._outputs_range = None
        self._drawing = None
        self._drawn.clear()
        for store, plot in (
            (self.history_curves, self.history_plot),
            (self.output_curves, self.output_plot),
            (self.error_curves, self.error_plot),
            (self.scatter_items, self.scatter_plot),
            (self.roof_curves, self.roofline_plot),
            (self.roof_labels, self.roofline_plot),
            (self.roofline_points, self.roofline_plot),
            (self.point_labels, self.roofline_plot),
        ):
            for item in store.values():
                plot.removeItem(item)
            store.clear()
        for line in self.edit_lines:
            self.history_plot.removeItem(line)
        self.edit_lines.clear()
        for label in self.compare_labels:
            self.compare_plot.removeItem(label)
        self.compare_labels.clear()
        for item in (self.whiskers, self.spread_boxes, self.identity_line):
            item.setData([], [])
        for item in (
            self.medians,
            self.spread_points,
            self.spread_outliers,
            self.mismatch_marks,
            self.unwritten_marks,
        ):
            item.setData([], [])
        self.exact_text.setText("")
        self.arg_box.clear()
        self.first_bad_button.setEnabled(False)
        for label in (self.history_legend, self.output_legend, self.roofline_legend, self.roofline_note):
            label.setText("")
        self.output_note.setText("")
        self.timing_note.setText("Run a kernel to compare backends.")
        self._mark_dirty()

    def _mark_dirty(self, parts: tuple[str, ...] | None = None) -> None:
        self._stale.update(parts if parts is not None else (p for tab in TABS for p in PARTS[tab]))
        self._wake()

    def _current_tab(self) -> str:
        index = self.tabs.currentIndex()
        return TABS[index] if 0 <= index < len(TABS) else ""

    def _wake(self, *_: Any) -> None:
        """Start the timer when the tab on screen has something to redraw."""
        if not self.timer.isActive() and self._stale.intersection(PARTS.get(self._current_tab(), ())):
            if on_screen(self):
                self.timer.start()

    def shutdown(self) -> None:
        """Stop the timers, the outputs worker and any ceilings measurement."""
        self.timer.stop()
        self.range_timer.stop()
        self._stale = set()
        self._outputs_generation += 1
        self._outputs_pending = None
        self._outputs_job = None
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)
        self.ceilings.shutdown()

    def closeEvent(self, event) -> None:
        self.shutdown()
        super().closeEvent(event)

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        # Error and scatter side by side when there is room, else one above the other.
        wide = event.size().width() >= 700  # well above both plots' minimum widths side by side
        wanted = Qt.Orientation.Horizontal if wide else Qt.Orientation.Vertical
        if self.outputs_lower.orientation() != wanted:
            self.outputs_lower.setOrientation(wanted)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._dock is None:
            self._dock = follow_dock(self, self._dock_visibility)
        self._wake()

    def _dock_visibility(self, visible: bool) -> None:
        if visible:
            QTimer.singleShot(0, self, self._wake)  # the dock's geometry lands after this signal

    # ================================================================ drawing (timer)
    def _redraw(self) -> None:
        """Redraw one stale plot of the tab on screen per tick, so no tick holds the GUI long."""
        parts = [p for p in PARTS.get(self._current_tab(), ()) if p in self._stale]
        if not parts or not on_screen(self):
            self.timer.stop()
            return
        self._draw_part(parts[0])

    def _draw_part(self, part: str, wait: bool = False) -> None:
        self._stale.discard(part)
        report = self._report
        if part == "compare":
            self._draw_compare(report)
        elif part == "spread":
            self._draw_spread(report)
        elif part == "history":
            self._draw_history()
        elif part == "outputs":
            self._refresh_args(report)
            self._request_outputs(report, wait=wait)
        elif part == "roofline":
            self._draw_roofline(report)

    def draw_now(self) -> None:
        """Draw every plot now, hidden tabs included (screenshots and `--plots-json`)."""
        for tab in TABS:
            for part in PARTS[tab]:
                self._draw_part(part, wait=True)

    @staticmethod
    def _settle_range(plot: pg.PlotWidget) -> None:
        """Apply the auto-range now: inside the paint it would re-lay the axes and paint twice.
        The axes' tick labels may have widened: the layouts learn the plot's new minimum size."""
        plot.getPlotItem().getViewBox().prepareForPaint()
        plot.updateGeometry()

    def _color(self, name: str) -> str:
        if name not in self._colors:
            self._colors[name] = PALETTE[len(self._colors) % len(PALETTE)]
        return self._colors[name]

    def _legend_html(self, names: list[str], extra: str = "") -> str:
        parts = [f'<span style="color:{self._color(n)}">■</span>&nbsp;{html.escape(n)}' for n in names]
        return "&nbsp;&nbsp; ".join(parts) + (f"&nbsp;&nbsp; {extra}" if extra else "")

    # ---------------------------------------------------------------- timing
    def _time_axis(self, axis: UnitAxis, values: list[float], label: str, plot: pg.PlotWidget):
        """Pick log or linear and the unit for time values (s); returns fn(seconds) -> plotted value."""
        item = plot.getPlotItem()
        side = "bottom" if axis is item.getAxis("bottom") else "left"
        if log_scale_wanted(values):
            axis.set_log(True, "s")
            item.setLabel(side, f"{label} (log scale)", color=TEXT)
            self._time_unit = ("s", "log")
            return lambda s: np.log10(np.maximum(np.asarray(s, dtype=np.float64), 1e-15))
        scale, prefix = si_scale(max(values) if values else 1.0)
        axis.set_log(False)
        item.setLabel(side, f"{label} ({prefix}s)", color=TEXT)
        self._time_unit = (f"{prefix}s", "linear")
        return lambda s: np.asarray(s, dtype=np.float64) / scale

    def _draw_compare(self, report: Any) -> None:
        rows = timing_rows(report)
        plot = self.compare_plot
        item = plot.getPlotItem()
        axis: UnitAxis = item.getAxis("bottom")
        item.getAxis("left").set_names([r.series for r in rows])
        for label in self.compare_labels:
            plot.removeItem(label)
        self.compare_labels = []
        if not rows:
            self.whiskers.setData([], [])
            self.medians.setData([], [])
            self._model["timing"] = {"y_unit": "s", "scale": "linear", "rows": []}
            failed = [r for r in getattr(report, "results", None) or () if r.status != "ok"]
            self.timing_note.setText(
                f"No timing: {', '.join(series_name(r) for r in failed)} did not run."
                if failed
                else "Run a kernel to compare backends."
            )
            return
        to_x = self._time_axis(axis, [v for r in rows for v in (r.q1_s, r.q3_s, r.median_s)], "time", plot)
        xs, ys = [], []
        for i, row in enumerate(rows):
            lo, hi = float(to_x(row.q1_s)), float(to_x(row.q3_s))
            xs += [lo, hi, lo, lo, hi, hi]
            ys += [i, i, i - 0.18, i + 0.18, i - 0.18, i + 0.18]
        self.whiskers.setData(xs, ys)
        self.medians.setData(
            [
                {
                    "pos": (float(to_x(r.median_s)), i),
                    "brush": pg.mkBrush(self._color(r.series)),
                    "symbol": "star" if r.fastest else "o",
                    "size": 18 if r.fastest else 11,
                }
                for i, r in enumerate(rows)
            ]
        )
        for i, row in enumerate(rows):
            label = pg.TextItem(self._row_text(row), color=FASTEST if row.fastest else TEXT, anchor=(0, 0.5))
            label.setPos(float(to_x(row.q3_s)), i)
            plot.addItem(label, ignoreBounds=True)
            self.compare_labels.append(label)
        item.getViewBox().setYRange(-0.6, len(rows) - 0.4, padding=0)
        self._compare_rows = rows
        self._fit_compare()
        unit, scale = self._time_unit
        self._model["timing"] = {
            "y_unit": unit,
            "scale": scale,
            "rows": [
                {
                    "backend": r.backend,
                    "device": r.device,
                    "median_s": r.median_s,
                    "iqr_s": r.iqr_s,
                    "q1_s": r.q1_s,
                    "q3_s": r.q3_s,
                    "ratio_to_reference": r.ratio,
                    "fastest": r.fastest,
                    "reference": r.reference,
                }
                for r in rows
            ],
        }
        reference = getattr(report, "reference", "") or ""
        fastest = next(r for r in rows if r.fastest)
        # A busy host or a throttled GPU is said here as in the results caption (one rule).
        conditions = run_conditions(report)
        self._model["timing"]["conditions"] = conditions
        self.timing_note.setText(
            f"{len(rows)} backend × device pairs · fastest: {fastest.series} ({format_si(fastest.median_s, 's')})"
            + (f" · ratios against the reference backend {reference}" if reference else "")
            + (f" · ⚠ measured while {' and '.join(conditions)}" if conditions else "")
        )

    @staticmethod
    def _row_text(row: TimingRow) -> str:
        text = format_si(row.median_s, "s")
        if row.reference:
            text += " · reference"
        elif row.ratio:
            # Say which way: "48.5× ref" read as faster as often as slower.
            if row.ratio >= 1:
                text += f" · {row.ratio:.3g}× slower than ref"
            else:
                text += f" · {1 / row.ratio:.3g}× faster than ref"
        return text + (" ★" if row.fastest else "")

    def _fit_compare(self, *_: Any) -> None:
        """Leave room right of the whiskers for the labels (their width in pixels is known only now)."""
        rows = getattr(self, "_compare_rows", None)
        if not rows or not self.compare_labels:
            return
        vb = self.compare_plot.getPlotItem().getViewBox()
        metrics = QFontMetrics(self.font())
        label_px = max(metrics.horizontalAdvance(self._row_text(r)) for r in rows) + 16
        width_px = max(vb.width(), 80.0)
        xs = [lab.pos().x() for lab in self.compare_labels]
        data = self.whiskers.getData()[0]
        lo, hi = float(np.min(data)), float(np.max(xs))
        span = max(hi - lo, abs(hi) * 0.05, 1e-9)
        lo -= span * 0.08
        fraction = min(label_px / width_px, 0.7)
        vb.setXRange(lo, lo + (hi - lo) / (1 - fraction), padding=0)

    def _draw_spread(self, report: Any) -> None:
        """Each series' samples as % deviation from its own median (so every backend is readable
        whatever its scale), jittered in its row, with its IQR as a bar. The view holds every row's
        far-out fences (3 IQR past the quartiles); outliers beyond sit at its edge as triangles."""
        rows = timing_rows(report)
        self.spread_plot.getPlotItem().getAxis("left").set_names([r.series for r in rows])
        deviations = [(r.samples_s / r.median_s - 1.0) * 100.0 for r in rows]
        if not rows:
            self.spread_points.setData([], [])
            self.spread_outliers.setData([], [])
            self.spread_boxes.setData([], [])
            return
        # Tukey's far-out fences (3 IQR past the quartiles) of every row bound the view; the
        # quartiles in % of the median are the timing's own (a deviation is linear in the time).
        fences = []
        for row, deviation in zip(rows, deviations, strict=True):
            q1, q3 = (row.q1_s / row.median_s - 1) * 100, (row.q3_s / row.median_s - 1) * 100
            iqr = max(q3 - q1, 0.5)
            fences.append(
                (max(q1 - 3 * iqr, float(deviation.min())), min(q3 + 3 * iqr, float(deviation.max())))
            )
        lo, hi = min(f[0] for f in fences), max(f[1] for f in fences)
        lo, hi = min(lo, -1.0), max(hi, 1.0)  # 0 % always in view
        pad = 0.08 * (hi - lo)
        edge_lo, edge_hi = lo - pad / 2, hi + pad / 2  # where outliers are drawn, inside the view
        lo, hi = lo - pad, hi + pad
        rng = np.random.default_rng(0)  # a fixed jitter: the same run draws the same picture
        xs, ys, brushes, edge_x, edge_y, edge_symbols, edge_brushes = [], [], [], [], [], [], []
        boxes_x, boxes_y = [], []
        for i, (row, deviation) in enumerate(zip(rows, deviations, strict=True)):
            if deviation.size > MAX_SPREAD_POINTS:  # thousands of samples of a fast kernel: a sample of them
                deviation = rng.choice(deviation, MAX_SPREAD_POINTS, replace=False)
            brush = pg.mkBrush(self._color(row.series))
            jitter = i + rng.uniform(-0.28, 0.28, deviation.size)
            inside = (deviation >= edge_lo) & (deviation <= edge_hi)
            xs.append(deviation[inside])
            ys.append(jitter[inside])
            brushes += [brush] * int(inside.sum())
            out = ~inside
            edge_x.append(np.clip(deviation[out], edge_lo, edge_hi))
            edge_y.append(jitter[out])
            edge_symbols += ["t3" if v < edge_lo else "t2" for v in deviation[out]]
            edge_brushes += [brush] * int(out.sum())
            boxes_x += [(row.q1_s / row.median_s - 1) * 100, (row.q3_s / row.median_s - 1) * 100]
            boxes_y += [i, i]
        self.spread_points.setData(np.concatenate(xs), np.concatenate(ys), brush=brushes, symbol="o")
        self.spread_outliers.setData(np.concatenate(edge_x), np.concatenate(edge_y), brush=edge_brushes,
                                     symbol=edge_symbols or "o")  # fmt: skip
        self.spread_boxes.setData(boxes_x, boxes_y)
        vb = self.spread_plot.getPlotItem().getViewBox()
        vb.setRange(xRange=(lo, hi), yRange=(-0.6, len(rows) - 0.4), padding=0)
        self._settle_range(self.spread_plot)

    def _draw_history(self) -> None:
        plot = self.history_plot
        axis: UnitAxis = plot.getPlotItem().getAxis("left")
        values = [t for points in self.history.values() for _, t in points]
        to_y = self._time_axis(axis, values, "median", plot)
        for name, points in self.history.items():
            color = self._color(name)
            curve = self.history_curves.get(name)
            if curve is None:
                curve = self.history_curves[name] = plot.plot(
                    pen=pg.mkPen(color, width=2), symbol="o", symbolSize=6, symbolBrush=color, symbolPen=color
                )
            runs, times = zip(*points, strict=True)
            curve.setData(np.asarray(runs, float), to_y(times))
        for line in self.edit_lines:
            plot.removeItem(line)
        self.edit_lines = []
        for run in self.edits:
            line = pg.InfiniteLine(
                run - 0.5, angle=90, pen=pg.mkPen("#9e9e9e", width=1, style=Qt.PenStyle.DashLine)
            )
            plot.addItem(line)
            self.edit_lines.append(line)
        bottom = plot.getPlotItem().getAxis("bottom")
        major = next(m for m in (1, 2, 5, 10, 20, 50, 100, 200) if self.runs / m <= 8)
        bottom.setTickSpacing(major, major)
        if self.runs:
            plot.getPlotItem().getViewBox().setXRange(0.5, self.runs + 0.5, padding=0.02)
        self.history_legend.setText(
            self._legend_html(
                list(self.history), "<span style='color:#9e9e9e'>┆</span>&nbsp;edit" if self.edits else ""
            )
        )
        self._settle_range(plot)
        self._model.setdefault("timing", {})["history"] = {
            "runs": self.runs,
            "edits": list(self.edits),
            "series": {n: [{"run": r, "median_s": t} for r, t in p] for n, p in self.history.items()},
            "y_unit": self._time_unit[0],
            "scale": self._time_unit[1],
        }

    # ---------------------------------------------------------------- outputs
    def _refresh_args(self, report: Any) -> None:
        names = []
        for arrays in (getattr(report, "outputs", None) or {}).values():
            for name in arrays:
                if name not in names:
                    names.append(name)
        current = [self.arg_box.itemText(i) for i in range(self.arg_box.count())]
        if names != current:
            keep = self.arg_box.currentText()
            self.arg_box.blockSignals(True)
            self.arg_box.clear()
            self.arg_box.addItems(names)
            if keep in names:
                self.arg_box.setCurrentText(keep)
            self.arg_box.blockSignals(False)

    def _outputs_range_changed(self, *_: Any) -> None:
        if self._drawing is not None and self._current_tab() == "outputs":
            self.range_timer.start()

    def _range_settled(self) -> None:
        """The view stopped moving: decimate again over what is visible (zooming reveals detail)."""
        if self._drawing is None or self._report is None:
            return
        (x0, x1), _ = self.output_plot.getPlotItem().getViewBox().viewRange()
        size = self._drawing.size
        lo, hi = max(0.0, x0), min(float(size), x1)
        full = lo <= 0 and hi >= size - 1
        wanted = None if full else (lo, hi)
        if wanted == self._outputs_range:
            return
        self._outputs_range = wanted
        self._request_outputs(self._report)

    def _request_outputs(self, report: Any, wait: bool = False) -> None:
        """Compute the outputs tab's curves on the worker; a request made while one is in flight
        waits and replaces any older waiting one. `wait`: compute here and draw now."""
        if report is None:
            return
        request = (
            dict(report.outputs or {}),
            self.arg_box.currentText(),
            getattr(report, "reference", "") or "",
            self._check_settings(report),
        )
        if wait:
            self._draw_outputs(compute_outputs(*request, self._outputs_cache, self._outputs_range))
            return
        self._outputs_generation += 1
        if self._outputs_job is not None:
            self._outputs_pending = request
            return
        self._submit_outputs(request)

    def _submit_outputs(self, request: tuple) -> None:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="plots-outputs")
        generation = self._outputs_generation
        relay = self._relay
        job = self._executor.submit(compute_outputs, *request, self._outputs_cache, self._outputs_range)
        self._outputs_job = job
        job.add_done_callback(lambda done: relay.ready.emit((generation, done)))

    def _outputs_ready(self, item: tuple[int, Future]) -> None:
        """GUI thread: a computation finished; draw it unless a newer one was asked for."""
        generation, job = item
        if job is not self._outputs_job:
            return  # dropped by clear() or shutdown()
        self._outputs_job = None
        if self._outputs_pending is not None:
            request, self._outputs_pending = self._outputs_pending, None
            self._submit_outputs(request)
            return
        if generation != self._outputs_generation or job.cancelled():
            return
        try:
            drawing = job.result()
        except Exception as exc:  # bad arrays must not break the window: say so on the tab
            self.output_note.setText(f"cannot draw the outputs: {type(exc).__name__}: {exc}")
            return
        self._draw_outputs(drawing)

    def _set_points(self, store_name: str, store: dict, plot: pg.PlotWidget, name: str, points, width=1):
        """setData unless these very points are already drawn (an unchanged output: no repaint)."""
        curve = store.get(name)
        if curve is None:
            # Width 1: thousands of min/max points form a band; wide lines take twice as long to paint.
            curve = store[name] = plot.plot(pen=pg.mkPen(self._color(name), width=width), connect="finite")
        if self._drawn.get((store_name, name)) is points:
            return
        self._drawn[(store_name, name)] = points
        curve.setData(*points)

    def _draw_outputs(self, drawing: OutputsDrawing) -> None:
        if drawing.arg != self.arg_box.currentText():
            self._mark_dirty(("outputs",))  # the buffer was switched meanwhile
            return
        self._drawing = drawing
        reference = drawing.reference
        # The reference first and wider, underneath: a backend that matches it stays visible on top.
        order = sorted(drawing.curves, key=lambda b: b != reference)
        for z, backend in enumerate(order):
            self._set_points("outputs", self.output_curves, self.output_plot, backend, drawing.curves[backend],
                             width=3 if backend == reference else 1)  # fmt: skip
            self.output_curves[backend].setZValue(z)
        for name, curve in self.output_curves.items():
            if name not in drawing.curves and self._drawn.get(("outputs", name)) is not None:
                self._drawn[("outputs", name)] = None
                curve.setData([], [])
        if drawing.unwritten is not None:
            self.unwritten_marks.setData(*drawing.unwritten)
        else:
            self.unwritten_marks.setData([], [])
        self._redraw_outputs()
        self._settle_range(self.output_plot)
        self.first_bad_button.setEnabled(drawing.first_bad is not None)
        self.first_bad_button.setText(
            f"First bad: [{drawing.first_bad:,}]" if drawing.first_bad is not None else "First bad"
        )
        lo, hi = drawing.x_range
        note = f"{drawing.size:,} elements"
        if (lo, hi) != (0, drawing.size):
            note += f" · showing [{lo:,}, {hi:,})"
        if drawing.decimated:
            note += " · min/max envelope per bucket (zoom in for every element)"
        note += f" · reference {reference}" if reference else " · no reference"
        if drawing.mark_count:
            note += f" · {drawing.mark_count:,} mismatches (✕)"
        if drawing.unwritten_count:
            note += f" · {drawing.unwritten_count:,} never written (□)"
        exact = [b for b, same in drawing.exact.items() if same]
        if exact:
            note += f" · {', '.join(exact)} = {reference} exactly (the curves overlap)"
        elif drawing.errors and not drawing.mark_count and not drawing.unwritten_count:
            note += " · all within tolerance"
        self.output_note.setText(note)
        self.output_legend.setText(
            self._legend_html(order, f"(reference: {reference}, wide)" if reference else "")
        )
        self._model["outputs"] = self._outputs_model(drawing)

    def _redraw_outputs(self) -> None:
        """The error and scatter plots of the current drawing, in the chosen error mode."""
        drawing = self._drawing
        if drawing is None:
            return
        ulp = self.error_mode.currentText() == "ULP"
        self.error_plot.getPlotItem().setLabel("left", "error (ULP)" if ulp else "|error|", color=TEXT)
        errors = drawing.ulps if ulp else drawing.errors
        for backend, points in errors.items():
            self._set_points("errors", self.error_curves, self.error_plot, backend, points)
        for name, curve in self.error_curves.items():
            if name not in errors:
                self._drawn[("errors", name)] = None
                curve.setData([], [])
        marks = drawing.ulp_marks if ulp else drawing.marks
        if marks is not None:
            self.mismatch_marks.setData(*marks)
        else:
            self.mismatch_marks.setData([], [])
        exact = bool(drawing.exact) and all(drawing.exact.values())
        vb = self.error_plot.getPlotItem().getViewBox()
        if exact:
            others = ", ".join(drawing.exact)
            self.exact_text.setText(f"exact match\n{others} = {drawing.reference}")
            vb.enableAutoRange(y=False)
            vb.setYRange(0, 1, padding=0.05)
        elif not errors:
            self.exact_text.setText("no reference to compare with")
            vb.setYRange(0, 1, padding=0.05)
        else:
            self.exact_text.setText("")
            vb.enableAutoRange(y=True)
        for backend, (ref_values, values) in drawing.scatter.items():
            item = self.scatter_items.get(backend)
            if item is None:
                item = self.scatter_items[backend] = pg.ScatterPlotItem(
                    size=4, pen=None, brush=pg.mkBrush(self._color(backend))
                )
                self.scatter_plot.addItem(item)
            if self._drawn.get(("scatter", backend)) is not drawing.scatter[backend]:
                self._drawn[("scatter", backend)] = drawing.scatter[backend]
                item.setData(ref_values, values)
        for name, item in self.scatter_items.items():
            if name not in drawing.scatter:
                self._drawn[("scatter", name)] = None
                item.setData([], [])
        finite = [v[np.isfinite(v)] for pair in drawing.scatter.values() for v in pair]
        finite = [f for f in finite if f.size]
        if finite:
            lo = min(float(f.min()) for f in finite)
            hi = max(float(f.max()) for f in finite)
            self.identity_line.setData([lo, hi], [lo, hi])
        else:
            self.identity_line.setData([], [])
        self.scatter_plot.getPlotItem().setTitle(
            f"Backend vs {drawing.reference}" if drawing.scatter else "Backend vs reference",
            color=TEXT,
            size="9pt",
        )
        self._settle_range(self.error_plot)
        self._settle_range(self.scatter_plot)

    def _center_exact_text(self, *_: Any) -> None:
        vb = self.error_plot.getPlotItem().getViewBox()
        self.exact_text.setPos(vb.width() / 2, vb.height() / 2)

    def show_first_bad(self) -> None:
        """Zoom the outputs and error plots to the first bad (or never-written) element."""
        drawing = self._drawing
        if drawing is None or drawing.first_bad is None:
            return
        index = drawing.first_bad
        vb = self.output_plot.getPlotItem().getViewBox()
        vb.setXRange(max(0, index - 32), min(drawing.size, index + 32), padding=0)
        self.error_plot.getPlotItem().getViewBox().enableAutoRange(y=True)

    def _outputs_model(self, drawing: OutputsDrawing) -> dict[str, Any]:
        (x0, x1), (y0, y1) = _view_range(self.output_plot)
        return {
            "buffer": drawing.arg,
            "reference": drawing.reference,
            "size": drawing.size,
            "x_label": "index",
            "y_label": "value",
            "x_range": [x0, x1],
            "y_range": [y0, y1],
            "decimated": drawing.decimated,
            "series": {
                backend: {
                    "points": int(len(points[0])),
                    "max_abs_err": drawing.max_abs.get(backend),
                    "max_ulp_err": drawing.max_ulp.get(backend),
                    "exact": drawing.exact.get(backend),
                }
                for backend, points in drawing.curves.items()
            },
            "mismatches": drawing.mark_count,
            "unwritten": drawing.unwritten_count,
            "first_bad_index": drawing.first_bad,
            "error_label": self.exact_text.toPlainText() or None,
        }

    def _check_settings(self, report: Any) -> Tolerance:
        """The tolerance the run's check judged with (max_ulp included): the plot marks what the
        check counted; a report without a check gets the manifest's default `[kernel.check]`."""
        for result in report.results:
            check = result.check or {}
            if "rtol" in check:
                return Tolerance.of(check)
        default = Check()
        return Tolerance(default.rtol, default.atol, default.max_ulp)

    # ---------------------------------------------------------------- roofline
    def _draw_roofline(self, report: Any) -> None:
        self.ensure_ceilings()
        points, roofs = roofline_model(report, self.ceilings.get)
        plot = self.roofline_plot
        self._roof_points = points
        (x_lo, x_hi), (y_lo, y_hi) = roofline_ranges(points, roofs)
        seen_roofs = set()
        for roof in roofs:
            color = ROOF_COLORS[len(self.roof_curves) % len(ROOF_COLORS)]
            curve = self.roof_curves.get(roof.device)
            if curve is None:
                curve = self.roof_curves[roof.device] = pg.PlotDataItem(
                    pen=pg.mkPen(color, width=2, style=Qt.PenStyle.DashLine)
                )
                plot.addItem(curve)
                label = self.roof_labels[roof.device] = pg.TextItem("", color=color, anchor=(1, 1.1))
                plot.addItem(label, ignoreBounds=True)
            xs = np.logspace(math.log10(x_lo), math.log10(x_hi), 96)
            ys = np.array([roof.attainable(x) for x in xs], dtype=np.float64)
            curve.setData(np.log10(xs), np.log10(ys))
            self.roof_labels[roof.device].setText(roof.device)  # the figures are in the legend below
            self.roof_labels[roof.device].setPos(math.log10(x_hi), math.log10(roof.attainable(x_hi)))
            seen_roofs.add(roof.device)
        for device, curve in self.roof_curves.items():
            if device not in seen_roofs:
                curve.setData([], [])
                self.roof_labels[device].setText("")
        seen = set()
        for point in points:
            color = self._color(point.series)
            item = self.roofline_points.get(point.series)
            if item is None:
                item = self.roofline_points[point.series] = pg.ScatterPlotItem(
                    size=12, pen=pg.mkPen(TEXT), brush=pg.mkBrush(color)
                )
                plot.addItem(item)
                label = self.point_labels[point.series] = pg.TextItem("", color=color, anchor=(-0.1, 0.5))
                plot.addItem(label, ignoreBounds=True)
            x, y = math.log10(point.intensity), math.log10(point.flops_per_s)
            item.setData([x], [y])
            label = self.point_labels[point.series]
            label.setText(point.series)
            # Labels point inwards: right of a point in the left half, left of it in the right half.
            right_half = x > (math.log10(x_lo) + math.log10(x_hi)) / 2
            label.setAnchor((1.1, 0.5) if right_half else (-0.1, 0.5))
            label.setPos(x, y)
            seen.add(point.series)
        for name, item in self.roofline_points.items():
            if name not in seen:
                item.setData([], [])
                self.point_labels[name].setText("")
        vb = plot.getPlotItem().getViewBox()
        if points or roofs:
            vb.setRange(
                xRange=(math.log10(x_lo), math.log10(x_hi)),
                yRange=(math.log10(y_lo), math.log10(y_hi)),
                padding=0,
            )
        roof_lines = []
        for roof in roofs:
            color = self.roof_curves[roof.device].opts["pen"].color().name()
            figures = f"{format_si(roof.bytes_per_s, 'B/s')} · {format_si(roof.flops_per_s, 'FLOP/s')} f32"
            roof_lines.append(
                f'<span style="color:{color}">╌</span>&nbsp;{html.escape(roof.device)} roof: {figures} ({roof.source})'
            )
        self.roofline_legend.setText(
            self._legend_html([p.series for p in points])
            + ("<br>" + "&nbsp;&nbsp; ".join(roof_lines) if roof_lines else "")
        )
        self.roofline_note.setText(self._roofline_note(report, points, roofs))
        (vx0, vx1), (vy0, vy1) = _view_range(plot)
        self._model["roofline"] = {
            "x_label": X_INTENSITY,
            "y_label": Y_PERFORMANCE,
            "x_range": [10**vx0, 10**vx1],
            "y_range": [10**vy0, 10**vy1],
            "points": self._plotted_points(),
            "roofs": [
                {
                    "device": r.device,
                    "name": r.name,
                    "bytes_per_s": r.bytes_per_s,
                    "flops_per_s": r.flops_per_s,
                    "ridge_intensity": r.ridge,
                    "source": r.source,
                    "drawn": r.device in seen_roofs and _count(self.roof_curves[r.device].getData()[0]) > 1,
                }
                for r in roofs
            ],
        }

    def _plotted_points(self) -> list[dict[str, Any]]:
        """The roofline points as drawn (read back from the plot items, in base units)."""
        out = []
        for point in getattr(self, "_roof_points", []):
            x, y = self.roofline_points[point.series].getData()
            if not _count(x):
                continue
            intensity, flops = 10 ** float(x[0]), 10 ** float(y[0])
            out.append(
                {
                    "backend": point.backend,
                    "device": point.device,
                    "series": point.series,
                    "intensity": intensity,
                    "flops_per_s": flops,
                    "bytes_per_s": flops / intensity,
                    "gbps": flops / intensity / 1e9,
                    "fraction_of_roof": point.fraction_of_roof,
                    "roof_source": point.roof_source or None,
                }
            )
        return out

    def _roofline_note(self, report: Any, points: list[RoofPoint], roofs: list[Roof]) -> str:
        notes = []
        sources = {r.device: r.source for r in roofs}
        for point in points:
            if point.fraction_of_roof is not None:
                source = sources.get(point.device, "")
                text = f"{point.series}: {100 * point.fraction_of_roof:.1f} % of the {source} roof"
                if point.fraction_of_roof > 1.05:
                    text += " (above the copy roof: its data fits in a cache)"
                notes.append(text)
        roofed = {r.device for r in roofs}
        for result in getattr(report, "results", None) or ():
            device = result.device or {}
            spec = str(device.get("spec") or "")
            if result.status != "ok" or spec in roofed:
                continue
            roofed.add(spec)
            if self.ceilings.is_measuring(device):
                notes.append(f"measuring the ceilings of {spec}…")
            else:
                from workbench.run.ceilings import device_key

                error = self.ceilings.errors.get(device_key(device))
                notes.append(f"no roof for {spec}" + (f": {error}" if error else ""))
        if not points and report is not None:
            notes.append("no point: the kernel's manifest gives no flops/bytes metrics, or nothing ran")
        source = (
            "measured ceilings (workbench ceilings)" if any(r.source == "measured" for r in roofs) else ""
        )
        if source:
            notes.append(f"roofs: {source}; hover a point for its numbers")
        return " · ".join(notes)

    def _roofline_hover(self, scene_pos: QPointF) -> None:
        """Show the numbers of the point under the mouse (intensity, FLOP/s, GB/s, % of roof)."""
        plot = self.roofline_plot
        vb = plot.getPlotItem().getViewBox()
        if not vb.sceneBoundingRect().contains(scene_pos):
            self.hover_label.hide()
            return
        best, best_d = None, 14.0
        for point in getattr(self, "_roof_points", []):
            item = self.roofline_points.get(point.series)
            if item is None or not _count(item.getData()[0]):
                continue
            x, y = item.getData()
            spot = vb.mapViewToScene(QPointF(float(x[0]), float(y[0])))
            d = math.hypot(spot.x() - scene_pos.x(), spot.y() - scene_pos.y())
            if d < best_d:
                best, best_d = point, d
        if best is None:
            self.hover_label.hide()
            self.hover_text = ""
            return
        self.show_point_details(best)

    def show_point_details(self, point: RoofPoint) -> None:
        """The hover box of one roofline point."""
        lines = [
            point.series,
            f"intensity {point.intensity:.3g} FLOP/byte",
            f"{format_si(point.flops_per_s, 'FLOP/s')} · {format_si(point.bytes_per_s, 'B/s')}",
        ]
        if point.fraction_of_roof is not None:
            lines.append(
                f"{100 * point.fraction_of_roof:.1f} % of the {point.roof_source} roof "
                f"({format_si(point.roof_flops_per_s, 'FLOP/s')} at this intensity)"
            )
        self.hover_text = "\n".join(lines)
        self.hover_label.setText(self.hover_text)
        x, y = math.log10(point.intensity), math.log10(point.flops_per_s)
        (x0, x1), (y0, y1) = self.roofline_plot.getPlotItem().getViewBox().viewRange()
        self.hover_label.setAnchor((1 if x > (x0 + x1) / 2 else 0, 0 if y > (y0 + y1) / 2 else 1))
        self.hover_label.setPos(x, y)
        self.hover_label.show()

    # ================================================================ for tests, screenshots, --plots-json
    def plots_data(self) -> dict[str, Any]:
        """What each plot shows, in base units (s, FLOP/s, bytes/s): `workbench gui --plots-json`."""
        return {key: self._model.get(key, {}) for key in ("roofline", "timing", "outputs")}

    def curve_data(self) -> dict[str, dict[str, tuple[np.ndarray, np.ndarray]]]:
        """What each plot currently draws: {plot: {series: (x, y)}} in plotted units."""
        return {
            "time": {name: curve.getData() for name, curve in self.history_curves.items()},
            "outputs": {name: curve.getData() for name, curve in self.output_curves.items()},
            "errors": {name: curve.getData() for name, curve in self.error_curves.items()},
            "scatter": {name: item.getData() for name, item in self.scatter_items.items()},
            "roofline": {name: item.getData() for name, item in self.roofline_points.items()},
            "roofs": {name: curve.getData() for name, curve in self.roof_curves.items()},
            "compare": {"medians": self.medians.getData(), "whiskers": self.whiskers.getData()},
            "spread": {"points": self.spread_points.getData(), "outliers": self.spread_outliers.getData()},
        }
