"""cpu-sim's findings in the real window (issue 23): a reduction whose first barrier was deleted,
built and run for real on cpu and cpu-sim; the race is a row in the build panel's Diagnostics at
its Rust line and a marker in the editor's gutter there, like a compiler's error. Screenshot in
test-output/ui/."""

from __future__ import annotations

import pytest

from tests.waits import WORK_GUARD_MS
from workbench.run.sim_findings import RUN_SOURCE
from workbench.ui.screenshot import save_screenshot

TIMEOUT_MS = WORK_GUARD_MS
STORE = "        scratch.set(tid, sum);\n    }\n"


@pytest.mark.slow
def test_a_race_found_by_cpu_sim_is_a_diagnostic_at_its_line(
    make_window, example_copy, qtbot, test_output_dir
):
    root = example_copy("reduction")
    lib = root / "src" / "lib.rs"
    text = lib.read_text()
    assert text.count(STORE + "    ctx.barrier();\n") == 1
    lib.write_text(text.replace(STORE + "    ctx.barrier();\n", STORE))
    line = next(i for i, t in enumerate(lib.read_text().splitlines(), 1) if "scratch.set(tid, sum);" in t)

    window = make_window(root, panels=("build", "results"))
    window.hot_reload_action.setChecked(False)
    window.bridge.set_backends(["cpu", "cpu-sim"])
    window.bridge.set_devices(["cpu"])
    window.bridge.set_sizes({"n": 8192})
    with qtbot.waitSignal(window.bridge.runFinished, timeout=TIMEOUT_MS) as finished:
        window.bridge.run()
    qtbot.waitUntil(lambda: not window.bridge.busy, timeout=TIMEOUT_MS)
    sim = next(r for r in finished.args[0].results if r.backend == "cpu-sim")
    assert sim.status == "ok" and sim.findings["findings"], sim.error

    rows = [r for r in window.panels["build"].diagnostic_rows() if r["backend"] == RUN_SOURCE]
    race = [r for r in rows if "data race on workgroup memory" in r["message"]]
    assert race and race[0]["severity"] == "error", rows
    assert race[0]["location"].startswith(f"src/lib.rs:{line}")
    assert "local id (128, 0, 0)" in race[0]["message"] and "no barrier between them" in race[0]["message"]

    editor = window.editor_tabs.open_file(lib, line=line)
    assert [d["line"] for d in editor.diagnostics_at_line(line) if d.get("code") == "shared-race"] == [line]
    save_screenshot(window, test_output_dir / "cpu-sim-race.png")
