"""cpu-sim's trace in the window (issue 23, item 4): a saxpy copy whose body calls `ctx.trace`,
built and run for real on cpu and cpu-sim; the cpu-sim result's details have a Trace tab where
the user names an invocation, runs, and reads the values it traced at their lines."""

from __future__ import annotations

import numpy as np
import pytest

from tests.waits import WORK_GUARD_MS
from workbench.ui.results.details import ResultDetails

TIMEOUT_MS = WORK_GUARD_MS
BODY = "        y[i] = a * x[i] + y[i];\n"
TRACED = (
    "        let before = y[i];\n"
    "        y[i] = a * x[i] + before;\n"
    '        ctx.trace("x", x[i]);\n'
    '        ctx.trace("before", before);\n'
    '        ctx.trace("after", y[i]);\n'
)


@pytest.mark.slow
def test_the_trace_tab_traces_the_invocation_the_user_names(make_window, example_copy, qtbot):
    root = example_copy("saxpy")
    lib = root / "src" / "lib.rs"
    lib.write_text(lib.read_text().replace(BODY, TRACED))
    line = next(i for i, t in enumerate(lib.read_text().splitlines(), 1) if 'ctx.trace("after"' in t)

    window = make_window(root, panels=("results",))
    window.hot_reload_action.setChecked(False)
    bridge = window.bridge
    bridge.set_backends(["cpu", "cpu-sim"])
    bridge.set_devices(["cpu"])
    bridge.set_sizes({"n": 4096})
    with qtbot.waitSignal(bridge.runFinished, timeout=TIMEOUT_MS) as finished:
        bridge.run()
    qtbot.waitUntil(lambda: not bridge.busy, timeout=TIMEOUT_MS)
    report = finished.args[0]
    sim = next(r for r in report.results if r.backend == "cpu-sim")
    assert sim.status == "ok" and sim.trace is None  # nobody asked for a trace yet

    dialog = ResultDetails(report, sim, bridge)
    qtbot.addWidget(dialog)
    tab = dialog.trace
    assert tab is not None and dialog.tabs.tabText(dialog.tabs.indexOf(tab)) == "Trace"
    assert tab.rows() == [] and "No invocation was traced" in tab.message.text()

    tab.field.setText("2,x:9")  # refused, named; nothing runs
    tab.button.click()
    assert "'x' in the workgroup is not a whole number" in tab.message.text() and not bridge.busy

    tab.field.setText("2:9")
    with qtbot.waitSignal(bridge.runFinished, timeout=TIMEOUT_MS):
        tab.button.click()
    qtbot.waitUntil(lambda: not bridge.busy, timeout=TIMEOUT_MS)
    assert bridge.trace().group == (2, 0, 0) and bridge.trace().local == (9, 0, 0)
    rows = tab.rows()
    assert [r[1] for r in rows] == ["x", "before", "after"]
    assert rows[2][0].startswith(f"src/lib.rs:{line}:") and {r[3] for r in rows} == {"f32"}
    assert {r[4] for r in rows} == {"0"}  # no barrier passed
    x, before, after = (np.float32(r[2]) for r in rows)
    assert after == np.float32(2.5) * x + before  # what the kernel computed for that invocation
    assert tab.message.text() == "Trace of workgroup (2, 0, 0) local id (9, 0, 0): 3 values"
