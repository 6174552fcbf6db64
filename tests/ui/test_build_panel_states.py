"""The build panel's rows say what a build is doing: a niced build's "still working" line."""

from __future__ import annotations

import sys

from workbench.build.process import Budget, run_command
from workbench.build.service import BACKGROUND_NICENESS, BuildEvent
from workbench.ui.build_panel import COL_STATE, BuildPanel


def test_a_niced_build_row_shows_it_is_still_working(qtbot, make_widget, bridge):
    """The progress a real niced child's budget reports lands in its row: state text and tooltip."""
    budget = Budget.with_timeout(300, niceness=BACKGROUND_NICENESS)
    run_command([sys.executable, "-c", "import time\nt = time.time()\nwhile time.time() - t < 1.2: pass"],
                budget=budget)  # fmt: skip
    progress = budget.progress()
    assert progress is not None and progress["cpu_s"] > 0
    bridge.set_backends(["cpu"])
    panel = make_widget(BuildPanel, bridge)
    bridge.buildEvent.emit(BuildEvent("started", "saxpy", "cpu"))
    for paused in (False, True):
        bridge.buildEvent.emit(
            BuildEvent("progress", "saxpy", "cpu", progress={**progress, "paused": paused})
        )
        item = panel._rows["cpu"].item
        assert panel.state("cpu") == "building"
        assert item.text(COL_STATE) == ("building… (machine busy)" if paused else "building…")
        tooltip = item.toolTip(COL_STATE)
        assert tooltip.startswith("still working: ") and "of its 300 s limit counted" in tooltip
        assert ("the machine is busy" in tooltip) == paused
