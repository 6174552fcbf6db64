"""Live plots: time per backend × device over runs, sample distributions, outputs and errors, roofline.

Reports arrive through the bridge's queued `runFinished` signal and are only buffered; a GUI-thread
QTimer redraws at a fixed rate when something changed, with one curve item per series updated by
`setData` (pyqtgraph `examples/PlotSpeedTest.py`). The timer runs only while there is something to
draw and is stopped on close and in `shutdown()`.

Keeping the event loop turning during hot reload (benchmarks/hot_reload.py) shapes the rest:

- only what is on screen is drawn: the panel's current tab, while the panel is visible (a dock
  tabified behind another one counts as hidden); a tab drawn late is drawn when it is shown;
- one plot per timer tick, and the plot's auto-range is settled right after its data changes, so
  each repaint paints one plot once (pyqtgraph otherwise re-ranges inside the paint and paints
  the view a second time);
- the outputs tab decimates million-element arrays and diffs them against the reference: that
  numpy work runs on a one-thread executor and comes back through a queued signal; the GUI thread
  only calls `setData` with the few thousand points. Arrays equal to the previous run's reuse its
  result, and curves whose points did not change are not touched (no repaint).
"""

from __future__ import annotations

import math
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QPen
from PySide6.QtWidgets import (
    QComboBox,
    QDockWidget,
    QHBoxLayout,
    QLabel,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from workbench.ui.plot_data import MAX_POINTS, OutputsCache, OutputsDrawing, compute_outputs
from workbench.ui.visibility import follow_dock, on_screen

#: Runs kept per series in the history plot.
HISTORY = 200
#: Timer interval: one plot per tick, so a run's timing tab is drawn ~50 and ~100 ms after it arrives
#: (before the next save of a typing user, whose build then has both cores to itself).
REDRAW_MS = 50
PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)


class _Relay(QObject):
    """Carries a finished outputs computation from the worker thread to the GUI thread."""

    ready = Signal(object)


def _series_name(result: Any) -> str:
    device = result.device or {}
    return f"{result.backend} @ {device.get('spec') or device.get('runtime') or '?'}"


#: The panel's tabs, in order, and the plots each holds; one plot is redrawn per timer tick.
TABS = ("timing", "outputs", "roofline")
PARTS = {"timing": ("history", "samples"), "outputs": ("outputs",), "roofline": ("roofline",)}

#: Plot colours matching the window's dark editor palette.
BACKGROUND, TEXT, AXIS = "#1e1f22", "#d7dae0", "#6b6f78"


class OpaqueGridAxis(pg.AxisItem):
    """An axis whose grid lines are drawn opaque, in the colour they would have over the background.

    pyqtgraph draws grid lines as translucent ticks; blending them costs ~20 ms per repaint of a
    wide plot here, while opaque lines of the pre-blended colour cost ~1 ms and look the same. The
    axis is stacked behind the data (z below the view box) so that curves stay on top of the grid.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._opaque: dict[int, QPen] = {}

    def generateDrawSpecs(self, p):  # noqa: N802 (pyqtgraph override)
        specs = super().generateDrawSpecs(p)
        if specs is None or self.grid is False:
            return specs
        axis_spec, tick_specs, text_specs = specs
        return axis_spec, [(self._opaque_pen(pen), a, b) for pen, a, b in tick_specs], text_specs

    def _opaque_pen(self, pen: QPen) -> QPen:
        color = pen.color()
        if color.alpha() == 255:
            return pen
        key = color.rgba()
        opaque = self._opaque.get(key)
        if opaque is None:
            alpha, back = color.alphaF(), QColor(BACKGROUND)
            blended = QColor.fromRgbF(
                alpha * color.redF() + (1 - alpha) * back.redF(),
                alpha * color.greenF() + (1 - alpha) * back.greenF(),
                alpha * color.blueF() + (1 - alpha) * back.blueF(),
            )
            opaque = self._opaque[key] = QPen(pen)
            opaque.setColor(blended)
        return opaque


def _plot(title: str, left: str, bottom: str) -> pg.PlotWidget:
    widget = pg.PlotWidget(axisItems={side: OpaqueGridAxis(side) for side in ("left", "bottom")})
    widget.setBackground(BACKGROUND)
    item = widget.getPlotItem()
    item.setTitle(title, color=TEXT, size="10pt")
    item.setLabel("left", left, color=TEXT)
    item.setLabel("bottom", bottom, color=TEXT)
    item.showGrid(x=True, y=True, alpha=0.2)
    item.addLegend(offset=(-10, 10), labelTextColor=TEXT)
    for axis in ("left", "bottom"):
        item.getAxis(axis).setTextPen(TEXT)
        item.getAxis(axis).setPen(AXIS)
        item.getAxis(axis).setZValue(-1)  # the grid behind the data (see OpaqueGridAxis)
    return widget


class PlotsPanel(QWidget):
    """Timing history and distribution, outputs and errors, and a roofline, fed by run reports."""

    def __init__(self, bridge, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("PlotsPanel")
        self.bridge = bridge
        self.history: dict[str, list[tuple[int, float]]] = {}  # series -> [(run, median µs)]
        self.runs = 0
        self._report: Any = None
        self._stale: set[str] = set()  # parts (PARTS) to redraw, one per timer tick, when shown
        # The outputs computation: one job in flight at most, the latest request waiting behind it.
        self._executor: ThreadPoolExecutor | None = None
        self._outputs_cache = OutputsCache()
        self._outputs_job: Future | None = None
        self._outputs_pending: tuple | None = None
        self._outputs_generation = 0  # results of older generations are dropped
        self._drawn: dict[tuple[str, str], Any] = {}  # (store, series) -> points object on screen
        self._dock: QDockWidget | None = None
        self._relay = _Relay(self)
        self._relay.ready.connect(self._outputs_ready, Qt.ConnectionType.QueuedConnection)
        self._colors: dict[str, str] = {}
        self.time_curves: dict[str, pg.PlotDataItem] = {}
        self.sample_curves: dict[str, pg.PlotDataItem] = {}
        self.output_curves: dict[str, pg.PlotDataItem] = {}
        self.error_curves: dict[str, pg.PlotDataItem] = {}
        self.roofline_points: dict[str, pg.ScatterPlotItem] = {}

        self.time_plot = _plot("Median time per run", "time (µs)", "run")
        self.samples_plot = _plot("Samples of the current run", "count", "time (µs)")
        self.output_plot = _plot("Outputs", "value", "index")
        self.error_plot = _plot("Error against the reference", "|error|", "index")
        self.roofline_plot = _plot("Achieved throughput", "GFLOP/s", "arithmetic intensity (FLOP/byte)")
        self.roofline_plot.getPlotItem().setLogMode(x=True, y=True)
        self.mismatch_marks = pg.ScatterPlotItem(
            symbol="x", size=9, pen=pg.mkPen("#c62828", width=2), brush=None, name="mismatch"
        )
        self.error_plot.addItem(self.mismatch_marks)
        self.roof_curve = pg.PlotDataItem(pen=pg.mkPen("#555", width=2, style=pg.QtCore.Qt.PenStyle.DashLine))
        self.roofline_plot.addItem(self.roof_curve)

        self.arg_box = QComboBox()
        self.arg_box.setToolTip("Output buffer to compare")
        self.arg_box.currentTextChanged.connect(self._arg_changed)
        self.output_note = QLabel("")
        self.roofline_note = QLabel("")
        self.roofline_note.setWordWrap(True)

        timing = QWidget()
        tl = QHBoxLayout(timing)
        tl.addWidget(self.time_plot, 3)
        tl.addWidget(self.samples_plot, 2)
        outputs = QWidget()
        ol = QVBoxLayout(outputs)
        bar = QHBoxLayout()
        bar.addWidget(QLabel("Buffer:"))
        bar.addWidget(self.arg_box)
        bar.addWidget(self.output_note, 1)
        ol.addLayout(bar)
        ol.addWidget(self.output_plot, 1)
        ol.addWidget(self.error_plot, 1)
        self.error_plot.setXLink(self.output_plot)
        roofline = QWidget()
        rl = QVBoxLayout(roofline)
        rl.addWidget(self.roofline_plot, 1)
        rl.addWidget(self.roofline_note)
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(timing, "Timing")
        self.tabs.addTab(outputs, "Outputs")
        self.tabs.addTab(roofline, "Roofline")
        self.tabs.currentChanged.connect(self._wake)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.tabs)

        self.timer = QTimer(self)
        self.timer.setObjectName("plotsRedraw")
        self.timer.setInterval(REDRAW_MS)
        self.timer.timeout.connect(self._redraw)
        bridge.runFinished.connect(self.add_report)
        bridge.projectChanged.connect(self.clear)

    # ------------------------------------------------------------------ data in (GUI thread, cheap)
    def add_report(self, report: Any) -> None:
        """Buffer a RunReport; the timer draws it."""
        self.runs += 1
        for result in report.results:
            median = (result.timing or {}).get("median_s")
            if median is not None and not (result.provenance or {}).get("stale"):  # kept, drawn already
                series = self.history.setdefault(_series_name(result), [])
                series.append((self.runs, median * 1e6))
                del series[:-HISTORY]
        self._report = report
        self._mark_dirty()

    def clear(self, *_: Any) -> None:
        self.history.clear()
        self.runs = 0
        self._report = None
        self._outputs_generation += 1  # a computation in flight is for the old project
        self._outputs_pending = None
        self._outputs_cache = OutputsCache()  # the worker may still hold the old one
        self._drawn.clear()
        for curves, plot in (
            (self.time_curves, self.time_plot),
            (self.sample_curves, self.samples_plot),
            (self.output_curves, self.output_plot),
            (self.error_curves, self.error_plot),
        ):
            for curve in curves.values():
                plot.removeItem(curve)
            curves.clear()
        for item in self.roofline_points.values():
            self.roofline_plot.removeItem(item)
        self.roofline_points.clear()
        for plot in (
            self.time_plot,
            self.samples_plot,
            self.output_plot,
            self.error_plot,
            self.roofline_plot,
        ):
            legend = plot.getPlotItem().legend
            if legend is not None:
                legend.clear()
        self.mismatch_marks.setData([], [])
        self.roof_curve.setData([], [])
        self.arg_box.clear()
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
        """Stop the timer and the outputs worker (waiting for a computation in flight)."""
        self.timer.stop()
        self._stale = set()
        self._outputs_generation += 1
        self._outputs_pending = None
        self._outputs_job = None
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)

    def closeEvent(self, event) -> None:
        self.shutdown()
        super().closeEvent(event)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._dock is None:
            self._dock = follow_dock(self, self._dock_visibility)  # redraw what went stale while hidden
        self._wake()

    def _dock_visibility(self, visible: bool) -> None:
        if visible:
            # The dock's geometry is applied after this signal: look again from the event loop.
            QTimer.singleShot(0, self, self._wake)

    # ------------------------------------------------------------------ drawing (timer)
    def _redraw(self) -> None:
        """Redraw one stale plot of the tab on screen per tick, so no tick holds the GUI long."""
        parts = [p for p in PARTS.get(self._current_tab(), ()) if p in self._stale]
        if not parts or not on_screen(self):
            self.timer.stop()  # idle, or hidden: a hidden tab is drawn when it is shown
            return
        part = parts[0]
        self._stale.discard(part)
        report = self._report
        if part == "history":
            self._draw_history()
            self._settle_range(self.time_plot)
        elif part == "samples":
            self._draw_samples(report)
            self._settle_range(self.samples_plot)
        elif part == "outputs":
            self._refresh_args(report)
            self._request_outputs(report)
        elif part == "roofline" and report is not None:
            self._draw_roofline(report)
            self._settle_range(self.roofline_plot)

    @staticmethod
    def _settle_range(plot: pg.PlotWidget) -> None:
        """Apply the auto-range now: inside the paint it would re-lay the axes and paint twice."""
        plot.getPlotItem().getViewBox().prepareForPaint()

    def _color(self, name: str) -> str:
        if name not in self._colors:
            self._colors[name] = PALETTE[len(self._colors) % len(PALETTE)]
        return self._colors[name]

    def _curve(self, store: dict, plot: pg.PlotWidget, name: str, **style) -> pg.PlotDataItem:
        curve = store.get(name)
        if curve is None:
            color = self._color(name)
            style.setdefault("pen", pg.mkPen(color, width=2))
            curve = store[name] = plot.plot(name=name, **style)
        return curve

    def _draw_history(self) -> None:
        for name, points in self.history.items():
            color = self._color(name)
            curve = self._curve(
                self.time_curves,
                self.time_plot,
                name,
                symbol="o",
                symbolSize=6,
                symbolBrush=color,
                symbolPen=color,
            )
            runs, times = zip(*points, strict=True)
            curve.setData(np.asarray(runs, float), np.asarray(times, float))

    def _draw_samples(self, report: Any) -> None:
        seen = set()
        samples_by_series = {}
        for result in report.results if report is not None else ():
            samples = (result.timing or {}).get("samples_s") or []
            if samples:
                samples_by_series[_series_name(result)] = np.asarray(samples, float) * 1e6
        if samples_by_series:
            everything = np.concatenate(list(samples_by_series.values()))
            lo, hi = float(everything.min()), float(everything.max())
            if hi <= lo:
                hi = lo + max(abs(lo) * 1e-3, 1e-3)
            edges = np.linspace(lo, hi, 41)
        for name, samples in samples_by_series.items():
            counts, _ = np.histogram(samples, bins=edges)
            color = self._color(name)
            curve = self._curve(
                self.sample_curves,
                self.samples_plot,
                name,
                stepMode="center",
                fillLevel=0,
                fillOutline=True,
                brush=pg.mkColor(color).lighter(170),
            )
            curve.setData(edges, counts.astype(float))
            seen.add(name)
        for name, curve in self.sample_curves.items():
            if name not in seen:
                curve.setData([], [])

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

    def _arg_changed(self, _: str) -> None:
        self._mark_dirty(("outputs",))

    def _request_outputs(self, report: Any) -> None:
        """Compute the outputs tab's curves on the worker; a request made while one is in flight
        waits and replaces any older waiting one."""
        if report is None:
            return
        request = (
            dict(report.outputs or {}),
            self.arg_box.currentText(),
            getattr(report, "reference", "") or "",
            self._check_settings(report),
        )
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
        job = self._executor.submit(compute_outputs, *request, self._outputs_cache)
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

    def _set_points(self, store_name: str, store: dict, plot: pg.PlotWidget, name: str, points) -> None:
        """setData unless these very points are already drawn (an unchanged output: no repaint)."""
        # Width 1: thousands of min/max points form a band; wide lines take twice as long to paint.
        curve = self._curve(store, plot, name, pen=pg.mkPen(self._color(name), width=1))
        if self._drawn.get((store_name, name)) is points:
            return
        self._drawn[(store_name, name)] = points
        curve.setData(*points)

    def _draw_outputs(self, drawing: OutputsDrawing) -> None:
        if drawing.arg != self.arg_box.currentText():
            self._mark_dirty(("outputs",))  # the buffer was switched meanwhile
            return
        for backend, points in drawing.curves.items():
            self._set_points("outputs", self.output_curves, self.output_plot, backend, points)
        for backend, points in drawing.errors.items():
            self._set_points("errors", self.error_curves, self.error_plot, backend, points)
        for store_name, store, seen in (
            ("outputs", self.output_curves, drawing.curves),
            ("errors", self.error_curves, drawing.errors),
        ):
            for name, curve in store.items():
                if name not in seen and self._drawn.get((store_name, name)) is not None:
                    self._drawn[(store_name, name)] = None
                    curve.setData([], [])
        if self._drawn.get(("marks", "")) is not drawing.marks:
            self._drawn[("marks", "")] = drawing.marks
            if drawing.marks is not None:
                self.mismatch_marks.setData(*drawing.marks)
            else:
                self.mismatch_marks.setData([], [])
        self._settle_range(self.output_plot)
        self._settle_range(self.error_plot)
        size, count, reference_name = drawing.size, drawing.mark_count, drawing.reference
        note = f"{size:,} elements" + (" (decimated: min/max per bucket)" if size > MAX_POINTS else "")
        note += f" · reference {reference_name}" if reference_name else ""
        note += f" · {count} mismatch marks" if count else " · no mismatches"
        self.output_note.setText(note)

    def _check_settings(self, report: Any) -> tuple[float, float]:
        for result in report.results:
            check = result.check or {}
            if "rtol" in check:
                return float(check.get("rtol") or 0.0), float(check.get("atol") or 0.0)
        return 1e-5, 1e-6

    def _draw_roofline(self, report: Any) -> None:
        peaks = []
        intensities = []
        notes = []
        seen = set()
        for result in report.results:
            throughput = result.throughput or {}
            median = (result.timing or {}).get("median_s")
            flops, bytes_moved = self._metrics(result)
            gflops = throughput.get("gflops")
            if gflops is None and flops and median:
                gflops = flops / median / 1e9
            if not gflops or not flops or not bytes_moved:
                continue
            intensity = flops / bytes_moved
            name = _series_name(result)
            color = self._color(name)
            item = self.roofline_points.get(name)
            if item is None:
                item = self.roofline_points[name] = pg.ScatterPlotItem(
                    size=11, pen=pg.mkPen(TEXT), brush=pg.mkBrush(color), name=name
                )
                self.roofline_plot.addItem(item)
            item.setData([intensity], [gflops])
            seen.add(name)
            intensities.append(intensity)
            device = result.device or {}
            peak_bw = device.get("peak_gbps")
            if peak_bw:
                peaks.append((peak_bw, device.get("peak_gflops")))
                fraction = throughput.get("fraction_of_peak")
                if fraction is not None:
                    notes.append(f"{name}: {100 * fraction:.1f} % of peak")
        for name, item in self.roofline_points.items():
            if name not in seen:
                item.setData([], [])
        if peaks and intensities:
            peak_bw, peak_flops = max(peaks)
            x = np.logspace(math.log10(min(intensities) / 10), math.log10(max(intensities) * 100), 64)
            roof = peak_bw * x
            if peak_flops:
                roof = np.minimum(roof, peak_flops)
            self.roof_curve.setData(x, roof)
            notes.insert(0, f"roof: {peak_bw:g} GB/s" + (f", {peak_flops:g} GFLOP/s" if peak_flops else ""))
        else:
            self.roof_curve.setData([], [])
            if intensities:
                notes.insert(0, "device peak unknown: no roof drawn")
        self.roofline_note.setText(" · ".join(notes))

    def _metrics(self, result: Any) -> tuple[float | None, float | None]:
        """(flops, bytes) per launch from the manifest metrics at the run's sizes."""
        project = self.bridge.project
        if project is None:
            return None, None
        provenance = result.provenance or {}
        try:
            kernel = project.manifest.kernel(provenance.get("kernel"))
            symbols = kernel.symbols(provenance.get("sizes") or None, provenance.get("tunables") or None)
            return kernel.metric("flops", symbols), kernel.metric("bytes", symbols)
        except Exception:  # metrics are optional; a missing one means no point, not an error
            return None, None

    # ------------------------------------------------------------------ for tests and screenshots
    def curve_data(self) -> dict[str, dict[str, tuple[np.ndarray, np.ndarray]]]:
        """What each plot currently draws: {plot: {series: (x, y)}}."""
        out = {}
        for plot, store in (
            ("time", self.time_curves),
            ("samples", self.sample_curves),
            ("outputs", self.output_curves),
            ("errors", self.error_curves),
        ):
            out[plot] = {name: curve.getData() for name, curve in store.items()}
        out["roofline"] = {name: item.getData() for name, item in self.roofline_points.items()}
        return out
