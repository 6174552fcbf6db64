"""A run's phases reach the window's status bar (issue 15: long runs say where they are)."""

from __future__ import annotations

from tests.waits import WORK_GUARD_MS

TIMEOUT_MS = WORK_GUARD_MS


def test_run_phases_are_shown_in_the_status_bar(qtbot, bridge, example_copy):
    bridge.set_backends(["cpu"])  # chosen first: no default-backends probe runs beside the test
    bridge.set_project(example_copy("saxpy"))
    messages: list[str] = []
    bridge.statusMessage.connect(messages.append)
    with qtbot.waitSignal(bridge.runFinished, timeout=TIMEOUT_MS):
        bridge.start_run()
    phases = [m for m in messages if m.startswith("run: ")]
    assert phases[:2] == ["run: inputs", "run: cpu upload"], messages
    for later in ("run: cpu launch", "run: cpu verify", "run: cpu timing"):
        assert later in phases
    assert phases.index("run: cpu verify") < phases.index("run: cpu timing")
    assert messages[-1] == "run finished"
