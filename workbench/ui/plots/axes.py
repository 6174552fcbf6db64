"""Axes for the plots: an opaque grid, one unit per axis (linear in a scaled unit, or log10 with SI
prefixes on each tick), and named category rows."""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPen

from workbench.ui import theme
from workbench.ui.plot_model.units import format_count, format_si, log_ticks

#: Plot colours: the theme's (the window's dark editor palette).
BACKGROUND, TEXT, AXIS = theme.PLOT_BACKGROUND, theme.PLOT_TEXT, theme.PLOT_AXIS


class GridAxis(pg.AxisItem):
    """An axis whose grid lines are drawn opaque, in the colour they would have over the background.

    pyqtgraph draws grid lines as translucent ticks; blending them costs ~20 ms per repaint of a
    wide plot here, while opaque lines of the pre-blended colour cost ~1 ms and look the same. The
    axis is stacked behind the data (z below the view box) so that curves stay on top of the grid.
    Automatic SI prefixes are off: each axis names its unit itself.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._opaque: dict[int, QPen] = {}
        self.enableAutoSIPrefix(False)

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


class OpaqueGridAxis(GridAxis):
    """The opaque grid with pyqtgraph's automatic SI prefixes kept (the sessions panel's axes)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.enableAutoSIPrefix(True)


class UnitAxis(GridAxis):
    """Values in one unit. Linear: the data is already divided by the unit's scale and the label
    names it ("time (ms)"). Log: the data is log10 of base units and each tick reads "2 ms"."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.log = False
        self.unit = ""

    def set_log(self, log: bool, unit: str = "") -> None:
        if (log, unit) != (self.log, self.unit):
            self.log, self.unit = log, unit
            self.picture = None
            self.update()

    def tickValues(self, minVal, maxVal, size):  # noqa: N802, N803 (pyqtgraph override)
        if not self.log:
            return super().tickValues(minVal, maxVal, size)
        lo, hi = min(minVal, maxVal), max(minVal, maxVal)
        # As many labels as fit: measured with this axis' font, a gap of one "M" between them
        # (so "500 µs 1 ms 2 ms" or "1k 10k 100k" never run into each other).
        levels = log_ticks(lo, hi)
        for max_labels in range(12, 1, -1):
            levels = log_ticks(lo, hi, max_labels=max_labels)
            if not levels or self.labels_fit(levels[0][1], size, lo, hi):
                break
        # Only the first level is labelled: the minor ticks (3, 4, 6 … between 1-2-5) stay bare.
        self._labelled = {round(v, 9) for v in levels[0][1]} if levels else set()
        return levels

    def label_text(self, value: float) -> str:
        """The label of the tick at log10 value `value`."""
        if not self.unit:  # a plain number (FLOP/byte, a size): 0.1, 1, 10, 1k rather than "100 m"
            return format_count(10.0**value)
        return format_si(10.0**value, self.unit, 3)

    def labels_fit(self, values: list[float], size: float, lo: float, hi: float) -> bool:
        """Whether labels at these log10 values leave a gap between neighbours on an axis of
        `size` pixels showing [lo, hi]."""
        if len(values) < 2:
            return True
        metrics = QFontMetrics(self.style.get("tickFont") or QFont())
        gap = metrics.horizontalAdvance("M")
        ordered = sorted(values)
        pixels_per_unit = size / max(hi - lo, 1e-12)
        for a, b in zip(ordered, ordered[1:], strict=False):
            if self.orientation in ("top", "bottom"):  # centred labels: half of each one's width
                need = (
                    metrics.horizontalAdvance(self.label_text(a))
                    + metrics.horizontalAdvance(self.label_text(b))
                ) / 2
            else:
                need = metrics.height()
            if (b - a) * pixels_per_unit < need + gap:
                return False
        return True

    def tickStrings(self, values, scale, spacing):  # noqa: N802 (pyqtgraph override)
        if not self.log:
            return super().tickStrings(values, scale, spacing)
        labelled = getattr(self, "_labelled", None)
        return [
            "" if labelled is not None and round(v, 9) not in labelled else self.label_text(v) for v in values
        ]


class RowAxis(GridAxis):
    """Category rows 0, 1, 2 … labelled with names (the comparison and spread views)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.names: list[str] = []
        self._names_width = 54

    def set_names(self, names: list[str]) -> None:
        if names != self.names:
            self.names = list(names)
            width = max((self.fontMetrics().horizontalAdvance(n) for n in names), default=40)
            self._names_width = min(width + 14, 260)
            self.setWidth(self._names_width)
            self.picture = None
            self.update()

    def fixed_width(self) -> int:
        """The width its names need (capped at 260 px)."""
        return self._names_width

    def fontMetrics(self):  # noqa: N802
        from PySide6.QtGui import QFontMetrics

        return QFontMetrics(self.style.get("tickFont") or pg.QtGui.QFont())

    def tickValues(self, minVal, maxVal, size):  # noqa: N802, N803
        lo, hi = min(minVal, maxVal), max(minVal, maxVal)
        return [(1.0, [float(i) for i in range(len(self.names)) if lo - 0.01 <= i <= hi + 0.01])]

    def tickStrings(self, values, scale, spacing):  # noqa: N802
        return [self.names[int(round(v))] if 0 <= int(round(v)) < len(self.names) else "" for v in values]
