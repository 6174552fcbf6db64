"""The build panel says what a build is doing: a niced build's "still working" line, and the
selected backend's log, cached or not (never "select a backend" with one selected)."""

from __future__ import annotations

import sys

import pytest

from tests.waits import WORK_GUARD_MS
from workbench.build.process import Budget, run_command
from workbench.build.service import BACKGROUND_NICENESS, BuildEvent, build_project
from workbench.ui.build.panel import COL_STATE, EMPTY_LOGS, NO_SELECTION, NOT_BUILT, BuildPanel


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


def _log_state(panel) -> tuple[str, str]:
    return panel.log_view.toPlainText(), panel.log_view.placeholderText()


@pytest.mark.slow
def test_build_log_shows_the_selected_backends_cached_build_before_any_build_here(
    qtbot, make_widget, bridge, example_copy, shared_cache_dir
):
    """A build made before the window opened (here: by the core, as the CLI does) is the log of
    the selected backend's idle row; nothing is built for it."""
    root = example_copy("saxpy", unique=True)
    (built,) = build_project(root, ["cpu"], cache_dir=shared_cache_dir)
    assert built.status == "ok" and not built.cached
    bridge.set_project(root)
    bridge.set_backends(["cpu"])
    panel = make_widget(BuildPanel, bridge, show=True)
    assert panel._selected_backend() == "cpu" and panel.state("cpu") == "idle"
    # Looked up once the Log is in view, not while the Diagnostics tab is (the look-up is Python
    # on a background thread, holding the GIL the GUI thread needs).
    assert panel.tabs.currentWidget() is not panel.log_view
    qtbot.wait(200)
    assert not panel._lookups and panel.log_view.toPlainText() == ""
    panel.tabs.setCurrentWidget(panel.log_view)
    qtbot.waitUntil(
        lambda: _log_state(panel)[0].startswith("served from the build cache"), timeout=WORK_GUARD_MS
    )
    text = panel.log_view.toPlainText()
    assert f"key {built.key}" in text and built.log.strip().splitlines()[-1] in text
    assert panel.state("cpu") == "idle" and bridge.last_build is None  # looked up, not built


def test_build_log_says_what_the_selected_backend_is_doing_never_select_one(
    qtbot, make_widget, bridge, example_copy
):
    root = example_copy("saxpy", unique=True)  # sources no cache has seen
    bridge.set_project(root)
    bridge.set_backends(["cpu", "wgsl"])
    panel = make_widget(BuildPanel, bridge, show=True)
    panel.tabs.setCurrentWidget(panel.log_view)
    assert panel._selected_backend() == "cpu"
    qtbot.waitUntil(lambda: _log_state(panel) == ("", NOT_BUILT.format(backend="cpu")), timeout=WORK_GUARD_MS)
    bridge.buildEvent.emit(BuildEvent("queued", "saxpy", "cpu"))
    assert _log_state(panel) == ("", EMPTY_LOGS["waiting"].format(backend="cpu"))
    bridge.buildEvent.emit(BuildEvent("started", "saxpy", "cpu"))
    assert _log_state(panel) == ("", "cpu is building: no output yet.")
    panel.table.setCurrentItem(panel.table.topLevelItem(1))  # wgsl: idle, looked up
    qtbot.waitUntil(
        lambda: _log_state(panel) == ("", NOT_BUILT.format(backend="wgsl")), timeout=WORK_GUARD_MS
    )
    panel.table.setCurrentItem(None)
    assert _log_state(panel) == ("", NO_SELECTION)
