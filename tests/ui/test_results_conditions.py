"""The window's results caption says when a run was measured on a busy machine: the conditions
come with the report from the run service (`RunReport.host_conditions`), read by the one rule
(`run.host_load.flags`), measured for real around CPU burners that are not the run's own."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import psutil

from tests.waits import HANG_GUARD_MS, HANG_GUARD_S, WORK_GUARD_MS
from workbench.run.host_load import HostLoad, busy_threshold, flags
from workbench.ui.plots import PlotsPanel
from workbench.ui.results.table import ResultsTable

RUN_TIMEOUT_MS = WORK_GUARD_MS
BURN = "import time\nwhile time.process_time() < {s}: pass\n"


def _orphan_burner(seconds: float) -> int:
    """A CPU burner that is not this process's descendant (its shell parent exits at once)."""
    shell = subprocess.run(
        ["sh", "-c", f'{sys.executable} -c "$0" </dev/null >/dev/null 2>&1 & echo $!', BURN.format(s=seconds)],
        capture_output=True, text=True, check=True, timeout=HANG_GUARD_S,
    )  # fmt: skip
    return int(shell.stdout.strip())


def test_the_results_caption_flags_a_run_measured_on_a_busy_machine(qtbot, make_widget, bridge, example_copy):
    root = example_copy("saxpy")
    bridge.set_project(root)
    bridge.set_backends(["cpu", "wgsl"])
    bridge.set_devices(["cpu", "wgpu:llvmpipe"])
    table = make_widget(ResultsTable, bridge, show=True)
    plots = make_widget(PlotsPanel, bridge, show=True)
    with qtbot.waitSignal(bridge.runFinished, timeout=RUN_TIMEOUT_MS):
        bridge.run()
    qtbot.waitUntil(lambda: not bridge.busy, timeout=RUN_TIMEOUT_MS)
    qtbot.waitUntil(lambda: table.report is not None and bool(table.report.results), timeout=HANG_GUARD_MS)
    report = table.report
    # The window's run measured its host: what it shows follows what was measured.
    assert report.host_conditions is not None and report.host_conditions["source"] == "/proc"
    assert ("busy" in table.conditions) == ("busy" in flags(report.host_conditions))
    assert ("busy" in table.caption.text()) == ("busy" in table.conditions)
    plots.draw_now()
    timing = plots.plots_data()["timing"]
    assert timing["conditions"] == table.conditions
    # The timing plot says which way a ratio goes ("48.5× ref" did not).
    (wgsl,) = [row for row in timing["rows"] if row["backend"] == "wgsl"]
    way = "slower" if wgsl["ratio_to_reference"] >= 1 else "faster"
    assert any(f"× {way} than ref" in label.toPlainText() for label in plots.tab("timing").compare_labels)

    # The same results, measured while two other processes burned 1.2 s of CPU.
    load = HostLoad().start()
    pids = [_orphan_burner(0.6) for _ in range(2)]
    for pid in pids:
        try:
            psutil.Process(pid).wait(timeout=120)
        except psutil.NoSuchProcess:
            pass
    busy = load.stop()
    assert busy["other_cpu_cores"] * busy["wall_s"] >= 1.1  # the burners' 1.2 s count as others'
    # How many cores that was depends on what else shares the machine (0.48 of 2 in one CI run, just
    # under the line): the rule's own line, where a run counts as busy, is what the view is shown.
    busy["other_cpu_cores"] = max(busy["other_cpu_cores"], busy_threshold(busy["cpus"]))
    assert flags(busy) == ["busy"]
    measured_busy = dataclasses.replace(report, host_conditions=busy)
    table.show_report(measured_busy)
    plots.add_report(measured_busy)
    plots.draw_now()
    assert table.conditions == ["busy"] and plots.plots_data()["timing"]["conditions"] == ["busy"]
    assert "measured while busy" in plots.tab("timing").timing_note.text()
    caption = table.caption.text()
    assert "measured while busy" in caption and f"of {os.cpu_count()} cores" in caption
