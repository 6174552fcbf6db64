"""What every plot tab shares: the `PlotTab` contract the panel drives, the dark fitted plot, the
legend line under a plot, and one colour per series across all tabs."""

from __future__ import annotations

import html
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget

from workbench.ui import theme
from workbench.ui.plots.axes import AXIS, BACKGROUND, TEXT, RowAxis, UnitAxis

PALETTE = theme.SERIES  # one colour per series, the theme's


class SeriesColors:
    """A series keeps the colour it was first given, in every tab (the panel holds one)."""

    def __init__(self) -> None:
        self._colors: dict[str, str] = {}

    def __call__(self, name: str) -> str:
        if name not in self._colors:
            self._colors[name] = PALETTE[len(self._colors) % len(PALETTE)]
        return self._colors[name]

    def legend_html(self, names: list[str], extra: str = "", suffixes: dict[str, str] | None = None) -> str:
        """The legend line under a plot: a coloured square and the name of each series (and its
        `suffixes`, e.g. " (stale)")."""
        suffixes = suffixes or {}
        parts = [
            f'<span style="color:{self(n)}">■</span>&nbsp;{html.escape(n + suffixes.get(n, ""))}'
            for n in names
        ]
        return "&nbsp;&nbsp; ".join(parts) + (f"&nbsp;&nbsp; {extra}" if extra else "")


@dataclass(frozen=True)
class TabContext:
    """What the panel shares with its tabs."""

    colors: SeriesColors
    #: Ask the panel to redraw these parts (when their tab is on screen).
    mark_dirty: Callable[[tuple[str, ...]], None]
    #: The name of the tab on screen.
    current_tab: Callable[[], str]
    #: The measured ceilings of the devices (`ceilings_store.CeilingsStore`).
    ceilings: Any
    #: The builds of the latest report's run ({backend: BuildResult}): a failed one has no result.
    builds: Callable[[], dict[str, Any]] = dict
    #: The open project (`workbench.project.Project` or None): its manifest shapes 2-D outputs.
    project: Callable[[], Any] = lambda: None


class PlotTab(QWidget):
    """One tab of the plots panel: its widgets, and its plots drawn from the latest report.

    `parts` are what the panel redraws, one per timer tick; `model` is what `plots_data()` reports
    under `name`."""

    name = ""
    title = ""
    parts: tuple[str, ...] = ()

    def __init__(self, context: TabContext, parent: QWidget | None = None):
        super().__init__(parent)
        self.context = context
        self.colors = context.colors
        self.model: dict[str, Any] = {}

    def mark_dirty(self) -> None:
        """Have every part of this tab redrawn."""
        self.context.mark_dirty(self.parts)

    def is_current(self) -> bool:
        return self.context.current_tab() == self.name

    def add_report(self, report: Any) -> None:
        """A new report arrived (drawn later, by `draw`)."""

    def draw(self, part: str, report: Any, wait: bool = False) -> None:
        """Draw `part` from `report`; `wait`: nothing left for later (screenshots, --plots-json)."""
        raise NotImplementedError

    def clear(self) -> None:
        """Forget everything drawn (another project)."""
        self.model = {}

    def curve_data(self) -> dict[str, Any]:
        """What this tab's plots draw: {plot: {series: (x, y)}} in plotted units."""
        return {}

    def panel_resized(self, width: int) -> None:
        """The panel is now `width` pixels wide."""

    def shutdown(self) -> None:
        """Stop what runs in the background."""


class FittedPlot(pg.PlotWidget):
    """A plot whose minimum size is what its axes and title need, so a layout never squeezes it
    below that (pyqtgraph would then draw past the widget's edge: clipped labels)."""

    def minimumSizeHint(self):  # noqa: N802 (Qt override)
        hint = self.getPlotItem().effectiveSizeHint(Qt.SizeHint.MinimumSize)
        return QSize(int(math.ceil(hint.width())) + 4, max(int(math.ceil(hint.height())) + 4, 110))

    def sizeHint(self):  # noqa: N802
        return QSize(320, 220)


def make_plot(name: str, title: str, left: str, bottom: str, rows: str | None = None) -> FittedPlot:
    """A dark plot named `name`; `rows` ("left") makes that axis a named-rows axis, the others
    are unit axes."""
    axes = {side: (RowAxis if side == rows else UnitAxis)(side) for side in ("left", "bottom")}
    widget = FittedPlot(axisItems=axes)
    widget.setObjectName(name)
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


def legend_label() -> QLabel:
    label = QLabel("")
    label.setWordWrap(True)
    label.setTextFormat(Qt.TextFormat.RichText)
    label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
    return label


def count(values: Any) -> int:
    return 0 if values is None else len(values)


def view_range(plot: pg.PlotWidget) -> tuple[list[float], list[float]]:
    """The plot's settled view range [[x0, x1], [y0, y1]] (in its plotted units)."""
    vb = plot.getPlotItem().getViewBox()
    vb.prepareForPaint()
    return [list(map(float, r)) for r in vb.viewRange()]


def settle_range(plot: pg.PlotWidget) -> None:
    """Apply the auto-range now: inside the paint it would re-lay the axes and paint twice.
    The axes' tick labels may have widened: the layouts learn the plot's new minimum size."""
    plot.getPlotItem().getViewBox().prepareForPaint()
    plot.updateGeometry()
