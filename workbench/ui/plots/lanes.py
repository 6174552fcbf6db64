"""`FailureLane`: failed points in a lane of their own, under the plot they belong to.

A point that failed (a run that did not run, a sweep size or configuration whose build, run or
check failed) has no value: drawing it at a made-up height on the value axis reads as a
measurement. The lane is a strip under the plot, its x axis linked to the plot's (the same
plotted units: log10 where the plot is log), one named row per series, a ✗ at the x of each
failure. It is hidden while there is none. The plot's and the lane's left axes are given one
width, so a ✗ sits exactly under the x it names."""

from __future__ import annotations

from typing import Any

import pyqtgraph as pg
from PySide6.QtWidgets import QSizePolicy

from workbench.ui.plots.axes import AXIS, BACKGROUND, RowAxis, UnitAxis
from workbench.ui.theme import CHECK_FAILED as FAILED_COLOR

ROW_PX = 22


class FailureLane(pg.PlotWidget):
    """Rows of ✗ under `plot`, x-linked to it; `set_failures({series: [(x, why), …]})`."""

    def __init__(self, name: str, plot: pg.PlotWidget):
        super().__init__(axisItems={"left": RowAxis("left"), "bottom": UnitAxis("bottom")})
        self.setObjectName(name)
        self.plot = plot
        self.setBackground(BACKGROUND)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        item = self.getPlotItem()
        item.setMenuEnabled(False)
        item.hideAxis("bottom")  # the plot above names the x values
        item.hideButtons()
        item.setTitle(None)  # no title row: the lane is only as tall as its rows
        item.layout.setContentsMargins(0, 2, 10, 2)
        left = item.getAxis("left")
        left.setTextPen(FAILED_COLOR)
        left.setPen(AXIS)
        vb = item.getViewBox()
        vb.invertY(True)
        vb.setMouseEnabled(x=True, y=False)
        self.setXLink(plot)
        self.marks = pg.ScatterPlotItem(symbol="x", size=11, pen=pg.mkPen(FAILED_COLOR, width=2), brush=None)
        self.addItem(self.marks)
        self.failures: dict[str, list[tuple[float, str]]] = {}
        self.hide()

    def set_failures(self, failures: dict[str, list[tuple[float, str]]]) -> None:
        """Draw `failures` (series in the order given; x in the plot's plotted units)."""
        self.failures = {name: list(points) for name, points in failures.items() if points}
        names = list(self.failures)
        axis: RowAxis = self.getPlotItem().getAxis("left")
        axis.set_names(names)
        xs = [x for points in self.failures.values() for x, _ in points]
        ys = [float(i) for i, points in enumerate(self.failures.values()) for _ in points]
        self.marks.setData(xs, ys)
        self.getPlotItem().getViewBox().setYRange(-0.6, max(len(names), 1) - 0.4, padding=0)
        self.setFixedHeight(len(names) * ROW_PX + 8)
        self.setVisible(bool(names))
        self.sync_axes()

    def sync_axes(self) -> None:
        """One width for the plot's left axis and the lane's, so their x pixels agree."""
        main: Any = self.plot.getPlotItem().getAxis("left")
        lane: RowAxis = self.getPlotItem().getAxis("left")
        if not self.failures:
            main.setWidth(None)
            return
        main.setWidth(None)
        main._updateWidth()  # the width its ticks and label need now
        need = max(main.width(), lane.fixed_width())
        main.setWidth(need)
        lane.setWidth(need)

    def model(self) -> dict[str, list[dict[str, Any]]]:
        """What the lane shows: {series: [{"x", "why"}]} (x in plotted units)."""
        return {name: [{"x": x, "why": why} for x, why in points] for name, points in self.failures.items()}


def lane_legend(count: int) -> str:
    """The legend words for the lane: "✗ 2 failed (lane below)"."""
    if not count:
        return ""
    return f'<span style="color:{FAILED_COLOR}">✗</span>&nbsp;{count} failed (lane below, no value)'
