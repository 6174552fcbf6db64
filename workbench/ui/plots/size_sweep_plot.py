"""`SizeSweepPlot`: a size sweep's throughput (or median time) against the size, one curve per
backend × device (the Tuning panel's "Size sweep" tab).

What it says and how:
- the size axis is log10 with our own ticks (`axes.UnitAxis`: decades as "1k", "10k", "1M",
  as many labels as fit the axis' width), never pyqtgraph's log labels that ran into each other;
- the value axis is log when the curves span more than `log_scale_wanted`'s 8× (llvmpipe next to
  a cpu would be a flat line at the bottom otherwise), else linear in one unit;
- each device's measured copy ceiling is one dashed line, named with its figure in the legend
  line under the plot: no label inside the data can print on another or on a curve;
- the legend (under the plot, outside the data) lists only series that have a point;
- a size whose build, run or check failed has no value: it is a ✗ in the failure lane under the
  plot, at its size, with the reason in `data()`.
"""

from __future__ import annotations

import html
import math
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QVBoxLayout, QWidget

from workbench.ui.plot_model.marks import slot_order_key
from workbench.ui.plot_model.timing import log_scale_wanted
from workbench.ui.plot_model.units import si_scale
from workbench.ui.plots.axes import TEXT, UnitAxis
from workbench.ui.plots.base import PALETTE, legend_label, make_plot, settle_range
from workbench.ui.plots.lanes import FailureLane, lane_legend

#: Ceiling lines in greys, apart from the series' colours (as the roofline's roofs).
CEILING_COLORS = ("#cfd2d6", "#9aa0a8", "#e0c9a6", "#a8c5e0")
METRICS = {"gbps": "throughput", "median_s": "median time"}


def _device(slot: str) -> str:
    return slot.partition("@")[2]


class SizeSweepPlot(QWidget):
    """The plot, its failure lane and its legend line; `set_data(size_data, metric)` draws."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.plot = make_plot("size_plot", "", "throughput", "size")
        self.lane = FailureLane("size_lane", self.plot)
        self.legend = legend_label()
        self.legend.setObjectName("size_legend")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.lane)
        layout.addWidget(self.legend)
        self.curves: dict[str, pg.PlotDataItem] = {}
        self.ceiling_lines: dict[str, pg.InfiniteLine] = {}
        self._model: dict[str, Any] = {}
        self._series: dict[str, list[tuple[int, float]]] = {}

    def set_data(self, size_data: dict[str, Any], metric: str) -> None:
        """Draw `size_data` ({"symbol", "curves": {slot: {"x", "gbps", "median_s", "failed",
        "failed_why"}}, "ceilings": {device: GB/s}}) for `metric` ("gbps" or "median_s")."""
        plot, item = self.plot, self.plot.getPlotItem()
        for curve in self.curves.values():
            plot.removeItem(curve)
        for line in self.ceiling_lines.values():
            plot.removeItem(line)
        self.curves, self.ceiling_lines = {}, {}
        symbol = size_data.get("symbol", "")
        slots = sorted(size_data.get("curves", {}), key=slot_order_key)
        series = {}
        for slot in slots:
            curve = size_data["curves"][slot]
            pairs = sorted((x, y) for x, y in zip(curve["x"], curve[metric], strict=True) if y and y > 0)
            if pairs:
                series[slot] = pairs
        ceilings: dict[str, float] = {}
        if metric == "gbps":
            devices = {_device(s) for s in slots}
            for device, gbps in sorted((size_data.get("ceilings") or {}).items()):
                if device in devices and gbps and math.isfinite(gbps):
                    ceilings[device] = float(gbps)

        # The size axis: log10 of the size, labelled with decades that fit.
        bottom: UnitAxis = item.getAxis("bottom")
        bottom.set_log(True, "")
        item.setLabel("bottom", f"{symbol} (elements, log scale)" if symbol else "size", color=TEXT)
        self._series = series
        values = [y for pairs in series.values() for _, y in pairs] + list(ceilings.values())
        to_y, y_axis = self._value_axis(item, metric, values)
        for i, slot in enumerate(series):
            color = PALETTE[slots.index(slot) % len(PALETTE)]
            xs, ys = zip(*series[slot], strict=True)
            self.curves[slot] = plot.plot(
                np.log10(np.asarray(xs, dtype=np.float64)),
                to_y(ys),
                pen=pg.mkPen(color, width=2),
                symbol="o",
                symbolBrush=color,
                symbolPen=color,
            )
            self.curves[slot].setZValue(len(series) - i)
        for i, (device, gbps) in enumerate(ceilings.items()):
            color = CEILING_COLORS[i % len(CEILING_COLORS)]
            line = pg.InfiniteLine(
                pos=float(to_y(gbps)), angle=0, pen=pg.mkPen(color, width=1.5, style=Qt.PenStyle.DashLine)
            )
            plot.addItem(line)
            self.ceiling_lines[device] = line

        failures = {}
        for slot in slots:
            curve = size_data["curves"][slot]
            whys = curve.get("failed_why") or [""] * len(curve.get("failed", ()))
            points = [
                (math.log10(x), why or "failed")
                for x, why in zip(curve.get("failed", ()), whys, strict=True)
                if x > 0
            ]
            if points:
                failures[slot] = points
        self.lane.set_failures(failures)

        xs = [math.log10(x) for pairs in series.values() for x, _ in pairs]
        xs += [x for points in failures.values() for x, _ in points]
        vb = item.getViewBox()
        if xs:
            lo, hi = min(xs), max(xs)
            pad = max(0.08 * (hi - lo), 0.15)
            vb.setXRange(lo - pad, hi + pad, padding=0)
        if values:
            plotted = [float(to_y(v)) for v in values]
            lo, hi = min(plotted), max(plotted)
            pad = max(0.08 * (hi - lo), 0.05 if y_axis["scale"] == "log" else 0.05 * abs(hi) or 1.0)
            vb.setYRange(lo - pad if y_axis["scale"] == "log" else min(0.0, lo - pad), hi + pad, padding=0)
        settle_range(plot)

        legend = [self._swatch(PALETTE[slots.index(s) % len(PALETTE)], "■", s) for s in series]
        legend += [
            self._swatch(CEILING_COLORS[i % len(CEILING_COLORS)], "┅", f"{d} copy ceiling {gbps:.3g} GB/s")
            for i, (d, gbps) in enumerate(ceilings.items())
        ]
        lane = lane_legend(sum(len(p) for p in failures.values()))
        self.legend.setText("&nbsp;&nbsp; ".join(legend + ([lane] if lane else [])))
        self._model = {
            "metric": metric,
            "symbol": symbol,
            "legend": list(series) + [f"{d} copy ceiling" for d in ceilings],
            "x_axis": {"scale": "log", "label": item.getAxis("bottom").labelText},
            "y_axis": y_axis,
            "ceiling_lines": ceilings,
            "failed": {s: [{"x": round(10**x), "why": why} for x, why in p] for s, p in failures.items()},
        }

    def _value_axis(self, item: Any, metric: str, values: list[float]):
        """Log or linear for the values, the axis' unit and label; returns (fn(value) -> plotted
        value, {"scale", "unit", "label"})."""
        axis: UnitAxis = item.getAxis("left")
        name = METRICS[metric]
        # Base units on a log axis: GB/s become B/s so the ticks read "10 GB/s", "100 MB/s".
        base, unit = (1e9, "B/s") if metric == "gbps" else (1.0, "s")
        if log_scale_wanted(values):
            axis.set_log(True, unit)
            label = f"{name} (log scale)"
            item.setLabel("left", label, color=TEXT)
            return (
                lambda v: np.log10(np.maximum(np.asarray(v, dtype=np.float64) * base, 1e-30)),
                {"scale": "log", "unit": unit, "label": label},
            )
        axis.set_log(False)
        if metric == "gbps":
            scale, shown = 1.0, "GB/s"
        else:
            scale, prefix = si_scale(max(values) if values else 1.0)
            shown = f"{prefix}s"
        label = f"{name} ({shown})"
        item.setLabel("left", label, color=TEXT)
        return (lambda v: np.asarray(v, dtype=np.float64) / scale), {
            "scale": "linear",
            "unit": shown,
            "label": label,
        }

    @staticmethod
    def _swatch(color: str, mark: str, text: str) -> str:
        return f'<span style="color:{color}">{mark}</span>&nbsp;{html.escape(text)}'

    def data(self) -> dict[str, Any]:
        """What the plot shows: {"curves": {slot: {"x", metric}}} in base units (sizes, GB/s or s)
        for each drawn curve, "ceilings" per slot (GB/s) and the axes, legend and lane."""
        metric = self._model.get("metric", "gbps")
        curves = {
            slot: {"x": [int(x) for x, _ in pairs], metric: [float(y) for _, y in pairs]}
            for slot, pairs in self._series.items()
            if slot in self.curves
        }
        ceilings = self._model.get("ceiling_lines", {})
        by_slot = {s: ceilings[_device(s)] for s in curves if _device(s) in ceilings}
        return {
            "curves": curves,
            "ceilings": by_slot,
            **{k: v for k, v in self._model.items() if k != "metric"},
        }
