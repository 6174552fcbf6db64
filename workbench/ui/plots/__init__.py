"""Plots: timing comparison, spread and history; outputs, errors and scatter; a roofline with
measured roofs. One module per tab (`timing_tab`, `outputs_tab`, `roofline_tab`) behind
`panel.PlotsPanel`, which lists them; `base` holds what the tabs share.

Readability rules: every axis names its unit and scales it (ns … s, FLOP/s with SI prefixes); a
log axis is used where values span more than ~8×, so no series is flattened; series are named by
row labels or a legend line under the plot, never a legend box over the data.
`plots_data()` returns what each plot shows, in base units (`workbench gui --plots-json`).
"""

from workbench.ui.plot_model.outputs import MAX_POINTS
from workbench.ui.plots.axes import AXIS, BACKGROUND, TEXT, OpaqueGridAxis
from workbench.ui.plots.base import PALETTE
from workbench.ui.plots.panel import PARTS, TABS, PlotsPanel

# The colours and the grid axis are shared with the sessions and tuning panels.
__all__ = [
    "AXIS",
    "BACKGROUND",
    "MAX_POINTS",
    "PALETTE",
    "PARTS",
    "TABS",
    "TEXT",
    "OpaqueGridAxis",
    "PlotsPanel",
]
