"""Live plots: time per backend × device over runs, sample distributions, outputs and errors, roofline.

Reports arrive through the bridge's queued `runFinished` signal and are only buffered; a GUI-thread
QTimer redraws at a fixed rate when something changed, with one curve item per series updated by
`setData` (pyqtgraph `examples/PlotSpeedTest.py`). The timer runs only while there is something to
draw and is stopped on close and in `shutdown()`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QTabWidget, QVBoxLayout, QWidget

#: Most points drawn per output curve; longer arrays are decimated (min/max per bucket).
MAX_POINTS = 4000
#: Runs kept per series in the history plot.
HISTORY = 200
REDRAW_MS = 150
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


def decimate(values: np.ndarray, max_points: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) with at most ~max_points points keeping each bucket's min and max (peaks stay visible)."""
    values = np.asarray(values).ravel()
    n = values.size
    if n <= max_points:
        return np.arange(n), values.astype(np.float64, copy=False)
    buckets = max_points // 2
    step = int(math.ceil(n / buckets))
    usable = (n // step) * step
    body = values[:usable].astype(np.float64).reshape(-1, step)
    starts = np.arange(0, usable, step)
    lo, hi = body.argmin(axis=1), body.argmax(axis=1)
    first, second = np.minimum(lo, hi), np.maximum(lo, hi)
    x = np.empty(2 * len(starts), dtype=np.int64)
    x[0::2], x[1::2] = starts + first, starts + second
    return x, values[x].astype(np.float64)


def _series_name(result: Any) -> str:
    device = result.device or {}
    return f"{result.backend} @ {device.get('spec') or device.get('runtime') or '?'}"


#: The panel's tabs, in order; each is redrawn on its own timer tick.
TABS = ("timing", "outputs", "roofline")

#: Plot colours matching the window's dark editor palette.
BACKGROUND, TEXT, AXIS = "#1e1f22", "#d7dae0", "#6b6f78"


def _plot(title: str, left: str, bottom: str) -> pg.PlotWidget:
    widget = pg.PlotWidget()
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
        self._stale: list[str] = []  # tabs to redraw, one per timer tick
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
            if median is not None:
                series = self.history.setdefault(_series_name(result), [])
                series.append((self.runs, median * 1e6))
                del series[:-HISTORY]
        self._report = report
        self._mark_dirty()

    def clear(self, *_: Any) -> None:
        self.history.clear()
        self.runs = 0
        self._report = None
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

    def _mark_dirty(self) -> None:
        self._stale = list(TABS)
        if not self.timer.isActive():
            self.timer.start()

    def shutdown(self) -> None:
        self.timer.stop()
        self._stale = []

    def closeEvent(self, event) -> None:
        self.shutdown()
        super().closeEvent(event)

    # ------------------------------------------------------------------ drawing (timer)
    def _redraw(self) -> None:
        """Redraw one stale tab per tick, the visible one first, so no tick holds the GUI long."""
        if not self._stale:
            self.timer.stop()  # idle: nothing buffered
            return
        current = TABS[self.tabs.currentIndex()] if 0 <= self.tabs.currentIndex() < len(TABS) else ""
        tab = current if current in self._stale else self._stale[0]
        self._stale.remove(tab)
        report = self._report
        if tab == "timing":
            self._draw_history()
            if report is not None:
                self._draw_samples(report)
        elif report is not None and tab == "outputs":
            self._refresh_args(report)
            self._draw_outputs(report)
        elif report is not None and tab == "roofline":
            self._draw_roofline(report)

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
        for result in report.results:
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
        for arrays in (report.outputs or {}).values():
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
        self._mark_dirty()

    def _draw_outputs(self, report: Any) -> None:
        arg = self.arg_box.currentText()
        outputs = report.outputs or {}
        reference_name = getattr(report, "reference", "") or ""
        reference = (outputs.get(reference_name) or {}).get(arg)
        check = self._check_settings(report)
        seen = set()
        mismatch_x: list[np.ndarray] = []
        mismatch_y: list[np.ndarray] = []
        size = 0
        for backend, arrays in outputs.items():
            values = arrays.get(arg)
            if values is None:
                continue
            values = np.asarray(values).ravel()
            size = max(size, values.size)
            x, y = decimate(values)
            self._curve(self.output_curves, self.output_plot, backend).setData(x, y)
            seen.add(backend)
            if (
                reference is None
                or backend == reference_name
                or values.shape != np.asarray(reference).ravel().shape
            ):
                continue
            ref = np.asarray(reference).ravel()
            err = np.abs(values.astype(np.float64) - ref.astype(np.float64))
            ex, ey = decimate(err)
            self._curve(self.error_curves, self.error_plot, backend).setData(ex, ey)
            bad = np.flatnonzero(~np.isclose(values, ref, rtol=check[0], atol=check[1], equal_nan=False))
            if bad.size:
                bad = bad[:: max(1, bad.size // 500)]  # marks for at most ~500 mismatches
                mismatch_x.append(bad)
                mismatch_y.append(err[bad])
        for store in (self.output_curves, self.error_curves):
            for name, curve in store.items():
                if name not in seen:
                    curve.setData([], [])
        if mismatch_x:
            xs, ys = np.concatenate(mismatch_x), np.concatenate(mismatch_y)
            self.mismatch_marks.setData(xs.astype(float), ys)
        else:
            self.mismatch_marks.setData([], [])
        count = sum(len(x) for x in mismatch_x)
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
