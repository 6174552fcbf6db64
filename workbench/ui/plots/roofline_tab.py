"""The roofline tab: each backend × device's FLOP/s against its arithmetic intensity, under the
roofs of its device (measured ceilings, datasheet peaks only when nothing was measured); hovering
a point shows its numbers."""

from __future__ import annotations

import html
import math
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout

from workbench.run.ceilings_roof import read_roof, roof_line, roof_lines
from workbench.ui.plot_model.roofline import Roof, RoofPoint, roofline_model, roofline_ranges
from workbench.ui.plot_model.timing import series_name
from workbench.ui.plot_model.units import format_si
from workbench.ui.plots.axes import AXIS, TEXT
from workbench.ui.plots.base import PlotTab, count, legend_label, make_plot, view_range
from workbench.ui.theme import CHECK_FAILED as FAILED_COLOR
from workbench.ui.theme import STALE_ALPHA, STALE_TEXT

#: Roofs are drawn in greys (dashed), apart from the series' colours.
ROOF_COLORS = ("#cfd2d6", "#9aa0a8", "#e0c9a6", "#a8c5e0")
X_INTENSITY = "arithmetic intensity (FLOP/byte)"
Y_PERFORMANCE = "performance (FLOP/s)"


class RooflineTab(PlotTab):
    """Points and roofs on log-log axes, a legend line with the roofs' figures, and a note."""

    name = "roofline"
    title = "Roofline"
    parts = ("roofline",)

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.ceilings = self.context.ceilings
        self._roof_points: list[RoofPoint] = []
        #: Each series' reading against the roof its intensity selects (`ceilings_roof.read_roof`).
        self._readings: dict[str, dict[str, Any] | None] = {}
        self.roofline_plot = make_plot("roofline_plot", "Roofline", Y_PERFORMANCE, X_INTENSITY)
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
        self.roofline_legend = legend_label()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.roofline_plot, 1)
        layout.addWidget(self.roofline_legend)
        layout.addWidget(self.roofline_note)

    def ensure_ceilings(self, report: Any) -> None:
        """Measure the ceilings of the report's devices that have none yet (in the background).

        Called when the roofline is drawn, not on every run: measuring keeps both cores of a small
        machine busy for a few seconds, which a hot-reload loop on the timing tab should not pay."""
        if report is not None:
            self.ceilings.ensure([r.device for r in report.results if r.status == "ok" and r.device])

    def draw(self, part: str, report: Any, wait: bool = False) -> None:
        self._draw_roofline(report)

    def clear(self) -> None:
        super().clear()
        self._roof_points = []
        for store in (self.roof_curves, self.roof_labels, self.roofline_points, self.point_labels):
            for item in store.values():
                self.roofline_plot.removeItem(item)
            store.clear()
        self.roofline_legend.setText("")
        self.roofline_note.setText("")

    def curve_data(self) -> dict[str, Any]:
        return {
            "roofline": {name: item.getData() for name, item in self.roofline_points.items()},
            "roofs": {name: curve.getData() for name, curve in self.roof_curves.items()},
        }

    def _draw_roofline(self, report: Any) -> None:
        self.ensure_ceilings(report)
        points, roofs = roofline_model(report, self.ceilings.get)
        self._readings = {
            series_name(r): read_roof(r.throughput, r.device, self.ceilings.get(r.device or {}))
            for r in getattr(report, "results", None) or ()
            if r.status == "ok"
        }
        plot = self.roofline_plot
        self._roof_points = points
        (x_lo, x_hi), (y_lo, y_hi) = roofline_ranges(points, roofs)
        seen_roofs = set()
        for roof in roofs:
            color = ROOF_COLORS[len(self.roof_curves) % len(ROOF_COLORS)]
            curve = self.roof_curves.get(roof.key)
            if curve is None:
                curve = self.roof_curves[roof.key] = pg.PlotDataItem(
                    pen=pg.mkPen(color, width=2, style=Qt.PenStyle.DashLine)
                )
                plot.addItem(curve)
                label = self.roof_labels[roof.key] = pg.TextItem("", color=color, anchor=(1, 1.1))
                plot.addItem(label, ignoreBounds=True)
            xs = np.logspace(math.log10(x_lo), math.log10(x_hi), 96)
            ys = np.array([roof.attainable(x) for x in xs], dtype=np.float64)
            curve.setData(np.log10(xs), np.log10(ys))
            self.roof_labels[roof.key].setText(roof.key)  # the figures are in the legend below
            self.roof_labels[roof.key].setPos(math.log10(x_hi), math.log10(roof.attainable(x_hi)))
            seen_roofs.add(roof.key)
        for device, curve in self.roof_curves.items():
            if device not in seen_roofs:
                curve.setData([], [])
                self.roof_labels[device].setText("")
        seen = set()
        for point in points:
            color = self.colors(point.series)
            item = self.roofline_points.get(point.series)
            if item is None:
                item = self.roofline_points[point.series] = pg.ScatterPlotItem(
                    size=12, pen=pg.mkPen(TEXT), brush=pg.mkBrush(color)
                )
                plot.addItem(item)
                label = self.point_labels[point.series] = pg.TextItem("", color=color, anchor=(-0.1, 0.5))
                plot.addItem(label, ignoreBounds=True)
            x, y = math.log10(point.intensity), math.log10(point.flops_per_s)
            # Stale: dimmed; a failed check: a red ring (the throughput of a wrong result).
            fill = pg.mkColor(color)
            if point.marks.stale:
                fill.setAlpha(STALE_ALPHA)
            ring = pg.mkPen(FAILED_COLOR, width=2.5) if point.marks.check_failed else pg.mkPen(TEXT)
            item.setData(
                [x], [y], brush=pg.mkBrush(fill), pen=ring, size=14 if point.marks.check_failed else 12
            )
            label = self.point_labels[point.series]
            label.setColor(
                STALE_TEXT if point.marks.stale else FAILED_COLOR if point.marks.check_failed else color
            )
            label.setText(point.series + point.marks.suffix())
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
            color = self.roof_curves[roof.key].opts["pen"].color().name()
            figures = f"{format_si(roof.bytes_per_s, 'B/s')} {roof.memory} · {format_si(roof.flops_per_s, 'FLOP/s')} f32"
            roof_lines.append(
                f'<span style="color:{color}">╌</span>&nbsp;{html.escape(roof.key)} roof: {figures} ({roof.source})'
            )
        self.roofline_legend.setText(
            self.colors.legend_html([p.series for p in points])
            + ("<br>" + "&nbsp;&nbsp; ".join(roof_lines) if roof_lines else "")
        )
        self.roofline_note.setText(self._roofline_note(report, points, roofs))
        (vx0, vx1), (vy0, vy1) = view_range(plot)
        self.model = {
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
                    "memory": r.memory,
                    "drawn": r.key in seen_roofs and count(self.roof_curves[r.key].getData()[0]) > 1,
                }
                for r in roofs
            ],
        }

    def _plotted_points(self) -> list[dict[str, Any]]:
        """The roofline points as drawn (read back from the plot items, in base units)."""
        out = []
        for point in self._roof_points:
            x, y = self.roofline_points[point.series].getData()
            if not count(x):
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
                    "roof_memory": point.roof_memory or None,
                    "stale": point.marks.stale,
                    "check_failed": point.marks.check_failed,
                }
            )
        return out

    def _roofline_note(self, report: Any, points: list[RoofPoint], roofs: list[Roof]) -> str:
        notes = []
        for point in points:
            # The roof its intensity selects, named (a stream's, "update" ..., or FMA f32), a suspect one flagged.
            line = roof_line(self._readings.get(point.series))
            if line:
                notes.append(f"{point.series}: {line}")
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
        for point in self._roof_points:
            item = self.roofline_points.get(point.series)
            if item is None or not count(item.getData()[0]):
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
        lines += roof_lines(self._readings.get(point.series))  # short lines: the box stays narrow
        if point.marks.check_failed:
            lines.append("✗ check failed: the throughput of a wrong result")
        elif point.marks.disputed:
            lines.append(f"⚠ {point.marks.disputed}")
        if point.marks.stale:
            lines.append(f"stale: {point.marks.stale_reason or 'kept from an earlier run'}")
        self.hover_text = "\n".join(lines)
        self.hover_label.setText(self.hover_text)
        x, y = math.log10(point.intensity), math.log10(point.flops_per_s)
        (x0, x1), (y0, y1) = self.roofline_plot.getPlotItem().getViewBox().viewRange()
        self.hover_label.setAnchor((1 if x > (x0 + x1) / 2 else 0, 0 if y > (y0 + y1) / 2 else 1))
        self.hover_label.setPos(x, y)
        self.hover_label.show()
