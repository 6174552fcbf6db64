"""The Tuning panel's plots: time against the parameters and a search's convergence.

Time vs parameters (`profile/tuning/tuning_view.py` says what): a line per backend × device for one
tunable, a heatmap of the chosen backend × device for two (ticks that are the tunables' values, a
colour bar in the timing's unit, each cell's value on hover and printed when few, identical builds
labelled ≡A, ≡B…); the lines named in a legend line under the plot (a legend box inside the plot
lay over the points and a line crossed its names at 1280×800); failed configurations in a lane
under it (`plots/lanes.py`). Convergence: a
search's best so far against evaluations beside random search's expectation.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QVBoxLayout, QWidget

from workbench.profile.tuning import ranking, tuning_view
from workbench.ui import theme
from workbench.ui.layout_fit import keep_room_when_hidden
from workbench.ui.plots.base import SeriesColors, legend_label
from workbench.ui.plots.lanes import FailureLane
from workbench.ui.theme import PLOT_BACKGROUND as BACKGROUND
from workbench.ui.theme import SERIES as PALETTE


def parameter_data(entries: list[dict[str, Any]], best: dict[str, dict[str, Any]], names: list[str],
                   slot: str) -> dict[str, Any]:  # fmt: skip
    """What the time-vs-parameters plot shows (the numbers, for tests and scripts): for one
    tunable a line per slot ("scatter": x, y), for more a heatmap of the chosen slot (x, y:
    the axes' values; median_s in seconds, NaN where none ranked), and in both the grid of
    the chosen slot (`tuning_view.grid`: ticks, cells, identical builds) and its verdict."""
    view = tuning_view.grid(entries, slot, names) if names and slot else {}
    verdict = tuning_view.verdict(best.get(slot), slot) if slot else ""
    ok = [e for e in entries if ranking.rankable(e)]
    failed = [e for e in entries if ranking.outcome(e) == "failed"]
    if view.get("mode") == "heatmap":
        x_name, y_name = view["axes"]
        grid = np.array([[np.nan if v is None else v for v in row] for row in view["median_s"]], dtype=float)
        finite = grid[np.isfinite(grid)]
        return {"mode": "heatmap", "slot": slot, "tunables": view["axes"], "x": view["values"][0],
                "y": view["values"][1], "median_s": grid.tolist(), "ticks": view["ticks"],
                "cells": view["cells"], "same_build": view["same_build"], "over": view["over"],
                "print_values": view["print_values"], "verdict": verdict,
                "colorbar": {"label": "median", "units": "s",
                             "levels": [float(finite.min()), float(finite.max())] if finite.size else None},
                "failed": [e["config"] for e in failed if ranking.slot(e) == slot]}  # fmt: skip
    name = (view.get("axes") or names or [None])[0]
    series: dict[str, dict[str, list]] = {}
    for e in sorted(ok, key=lambda e: e["config"].get(name, 0)):
        s = series.setdefault(ranking.slot(e), {"x": [], "y": []})
        s["x"].append(e["config"].get(name))
        s["y"].append(e["timing"]["median_s"])
    return {"mode": "scatter", "tunable": name, "series": series, "slot": slot, "verdict": verdict,
            "ticks": [str(v) for v in (view.get("values") or [[]])[0]],
            "cells": view.get("cells", {}), "same_build": view.get("same_build", []),
            "failed": [{"slot": ranking.slot(e), "config": e["config"]} for e in failed]}  # fmt: skip


class ParameterPlot(QWidget):
    """The Time vs parameters tab: the plot (`plot`), the heatmap or the lines (`heatmap`,
    `colorbar`, `series`, `cell_labels`: a heatmap replaced at each `draw`, the lines updated), the legend line under it
    (`legend`: each line's colour and name, outside the data) and the failed lane."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.plot = pg.PlotWidget(background=BACKGROUND)
        self.plot.setLabel("left", "median time", units="s")
        self.legend = legend_label()
        self.legend.setObjectName("tuningLegend")
        # Its line is kept while it is hidden or empty: the plot above keeps its height when the
        # first result shows it (each change of the plot's geometry re-lays it out and repaints it).
        self.legend.setMinimumHeight(self.legend.fontMetrics().lineSpacing())
        keep_room_when_hidden(self.legend)
        self.heatmap = pg.ImageItem()
        self.colorbar: pg.ColorBarItem | None = None
        self.cell_labels: list[pg.TextItem] = []
        self.grid_data: dict[str, Any] = {}
        self.plot.scene().sigMouseMoved.connect(self._hover)
        # Failed configurations have no time: a lane of their own under the plot (plots/lanes.py).
        self.failed_lane = FailureLane("tuning_failed_lane", self.plot)
        self.series: dict[str, pg.PlotDataItem] = {}
        #: Draws so far (a sweep's results of one turn of the event loop are drawn once).
        self.draws = 0
        self._mode = ""  # what the plot holds: "scatter" (updated in place), "heatmap" or nothing
        self._shown: dict[str, Any] = {}  # the ticks and axis titles set: set again only when changed
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.legend)
        layout.addWidget(self.failed_lane)

    def draw(self, data: dict[str, Any]) -> None:
        """Draw `parameter_data`'s numbers. Lines are updated in place (their items, labels,
        ticks and axis titles kept where unchanged: a sweep draws at each result, and clearing
        and rebuilding the plot re-laid it out and repainted it several times); a heatmap is
        rebuilt."""
        self.draws += 1
        self.grid_data = data
        if data["mode"] == "heatmap" or self._mode != "scatter":
            self._clear()
        self._mode = data["mode"]
        if data["mode"] == "heatmap":
            self.legend.setText("")
            self.legend.hide()  # a heatmap has its colour bar; the lines show it again
            self._draw_heatmap(data)
            return
        self._draw_lines(data)

    def _clear(self) -> None:
        self.plot.clear()
        self.series = {}
        self._remove_labels(0)
        self._shown = {}
        if self.colorbar is not None:
            self.plot.plotItem.layout.removeItem(self.colorbar)
            self.colorbar.setParentItem(None)
            self.colorbar = None

    def _set(self, key: str, value: Any, setter: Any) -> None:
        """Call `setter(*value)` unless `value` is what `key` shows already (each call re-lays out
        the axis, the plot's geometry with it)."""
        if self._shown.get(key, object()) != value:
            self._shown[key] = value
            setter(*value)

    def _remove_labels(self, keep: int) -> None:
        for label in self.cell_labels[keep:]:
            self.plot.removeItem(label)
        self.cell_labels = self.cell_labels[:keep]

    def _draw_lines(self, data: dict[str, Any]) -> None:
        bottom, left = self.plot.getAxis("bottom"), self.plot.getAxis("left")
        # The tunable's values as the manifest writes them ("64", not the axis position's "64.0").
        ticks = [(float(x), label) for x, label in zip(_tick_values(data), data["ticks"], strict=True)]
        self._set("bottom ticks", ([ticks] if ticks else None,), bottom.setTicks)
        self._set("left ticks", (None,), left.setTicks)
        self._set("bottom label", ("bottom", data["tunable"] or ""), self.plot.setLabel)
        self._set("left label", ("left", "median time", "s"), self.plot.setLabel)
        colours = SeriesColors()  # one colour per line, in the slots' order
        slots = sorted(data["series"])
        if slots != list(self.series):  # colours follow the order: the lines are made again
            for item in self.series.values():
                self.plot.removeItem(item)
            self.series = {}
        for slot in slots:
            s = data["series"][slot]
            colour = colours(slot)
            item = self.series.get(slot)
            if item is None:
                item = pg.PlotDataItem(s["x"], s["y"], pen=pg.mkPen(colour, width=1.5), symbol="o", symbolSize=8,
                                       symbolBrush=pg.mkBrush(colour), name=slot)  # fmt: skip
                self.plot.addItem(item)
                self.series[slot] = item
            else:
                item.setData(s["x"], s["y"])
        legend = colours.legend_html(slots)
        if self.legend.text() != legend:
            self.legend.setText(legend)
        self.legend.setVisible(bool(self.series))
        texts: list[tuple[str, float, float, tuple[float, float]]] = []
        if data["cells"] and len(data["cells"]) <= tuning_view.PRINT_CELLS:
            values = [float(v) for v in _tick_values(data)]
            top = max(cell["median_s"] for cell in data["cells"].values())
            # The view spans every line's points, not only the printed slot's: a label leans
            # towards the middle of them all (below a point in the upper half, above one in the
            # lower half), else the slowest's, below its point, fell under a faster slot's line
            # at the view's bottom edge and was cut.
            ys = [float(y) for s in data["series"].values() for y in s["y"] if np.isfinite(y)]
            lo, hi = (min(ys), max(ys)) if ys else (top, top)
            for key, cell in data["cells"].items():
                x = values[int(key)]
                # Labels lean inwards: the end values' sideways; centred, part of them lay outside
                # the plot, which clips them ("1.287 ms" for 61.287 ms at 1280×800).
                side = 0.0 if x == min(values) else 1.0 if x == max(values) else 0.5
                y = cell["median_s"]
                below = y >= (lo + hi) / 2 if hi > lo else y == top
                texts.append((cell["text"], x, y, (side, -0.2 if below else 1.2)))
        self._remove_labels(len(texts))
        for n, (text, x, y, anchor) in enumerate(texts):
            if n < len(self.cell_labels):
                label = self.cell_labels[n]
                if label.toPlainText() != text:
                    label.setText(text)
                label.setAnchor(anchor)
            else:
                label = pg.TextItem(text, color=theme.TEXT, anchor=anchor)
                # Outside the auto range: a label's extent in data units follows the range, which
                # it then moved again (the plot was repainted 7 times per result as they settled);
                # leaning inwards from its point, it lies inside the points' range anyway.
                self.plot.addItem(label, ignoreBounds=True)
                self.cell_labels.append(label)
            label.setPos(x, y)
        failures: dict[str, list[tuple[float, str]]] = {}
        for f in data["failed"]:
            x = f["config"].get(data["tunable"])
            if isinstance(x, int | float):
                failures.setdefault(f["slot"], []).append((float(x), "failed"))
        if failures != self.failed_lane.failures:
            self.failed_lane.set_failures(failures)

    def _draw_heatmap(self, data: dict[str, Any]) -> None:
        grid = np.array(data["median_s"], dtype=float)
        self.heatmap = pg.ImageItem(grid)  # NaN (no ranked result) is left transparent
        # Cell (i, j) spans [i - 0.5, i + 0.5] × [j - 0.5, j + 0.5]: the ticks sit on the cells.
        self.heatmap.setRect(-0.5, -0.5, grid.shape[0], grid.shape[1])
        self.plot.addItem(self.heatmap)
        levels = data["colorbar"]["levels"]
        if levels is not None:
            lo, hi = levels if levels[1] > levels[0] else (levels[0] * 0.99, levels[0] * 1.01 or 1e-9)
            self.colorbar = pg.ColorBarItem(values=(lo, hi), colorMap=pg.colormap.get("viridis"),
                                            interactive=False)  # fmt: skip
            self.colorbar.axis.setLabel("median", units="s")  # SI prefix: the timing's unit
            self.colorbar.setImageItem(self.heatmap, insert_in=self.plot.plotItem)
        x_name, y_name = data["tunables"]
        self.plot.getAxis("bottom").setTicks([list(enumerate(data["ticks"][0]))])
        self.plot.getAxis("left").setTicks([list(enumerate(data["ticks"][1]))])
        over = f" (best over {', '.join(data['over'])})" if data["over"] else ""
        self.plot.setLabel("bottom", x_name + over)
        self.plot.setLabel("left", y_name, units=None)
        if data["print_values"]:
            for key, cell in data["cells"].items():
                i, j = (int(k) for k in key.split(","))
                label = pg.TextItem(cell["text"], color="w", anchor=(0.5, 0.5), fill=pg.mkBrush(0, 0, 0, 110))
                label.setPos(i, j)
                self.plot.addItem(label)
                self.cell_labels.append(label)
        self.failed_lane.set_failures({})

    def hover_text(self, x: float, y: float) -> str:
        """The tooltip at a point of the plot (view coordinates): the cell's configuration and
        value on a heatmap; "" elsewhere."""
        data = self.grid_data
        if data.get("mode") != "heatmap":
            return ""
        i, j = round(x), round(y)
        if not (0 <= i < len(data["x"]) and 0 <= j < len(data["y"])):
            return ""
        view = {"cells": data["cells"], "axes": data["tunables"], "values": [data["x"], data["y"]],
                "over": data["over"], "same_build": data["same_build"]}  # fmt: skip
        return tuning_view.hover_text(view, (i, j))

    def _hover(self, pos: Any) -> None:
        vb = self.plot.plotItem.vb
        if not vb.sceneBoundingRect().contains(pos):
            return
        point = vb.mapSceneToView(pos)
        self.plot.setToolTip(self.hover_text(point.x(), point.y()))


def convergence_plot() -> pg.PlotWidget:
    """The Convergence tab's plot, empty."""
    plot = pg.PlotWidget(background=BACKGROUND)
    plot.setLabel("bottom", "evaluations")
    plot.setLabel("left", "best so far", units="s")
    plot.addLegend(offset=(-10, 10))
    return plot


def draw_convergence(plot: pg.PlotWidget, data: dict[str, list], strategy: str) -> None:
    """`tuning_view.convergence`'s numbers: `strategy`'s best so far, random search's expectation."""
    plot.clear()
    if plot.plotItem.legend is not None:
        plot.plotItem.legend.clear()
    points = [(n, b) for n, b in zip(data["n"], data["best"], strict=True) if b is not None]
    if points:
        xs, ys = zip(*points, strict=True)
        plot.addItem(pg.PlotDataItem(list(xs), list(ys), stepMode=None, pen=pg.mkPen(PALETTE[0], width=2),
                                     symbol="o", symbolSize=5, name=strategy))  # fmt: skip
    if data["random"]:
        plot.addItem(pg.PlotDataItem(list(range(1, len(data["random"]) + 1)), data["random"],
                                     pen=pg.mkPen(PALETTE[1], width=1.5, style=Qt.PenStyle.DashLine),
                                     name="random (expected, from the times measured)"))  # fmt: skip


def _tick_values(data: dict[str, Any]) -> list[Any]:
    return [float(t) if _is_number(t) else i for i, t in enumerate(data["ticks"])]


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
