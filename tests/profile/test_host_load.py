"""A run's host conditions from /proc: other processes' CPU is told apart from the run's own tree,
with real processes burning CPU on either side."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from workbench.run.host_load import HostLoad, busy_threshold, describe, flags

BURN = "import time\nend = time.monotonic() + {s}\nwhile time.monotonic() < end: pass\n"


def orphan_burner(seconds: float) -> int:
    """A CPU burner that is not this process's descendant: its parent exits at once."""
    shell = subprocess.run(
        [
            "sh", "-c",
            f'{sys.executable} -c "$0" </dev/null >/dev/null 2>&1 & echo $!',
            BURN.format(s=seconds),
        ],
        capture_output=True, text=True, check=True, timeout=30,
    )  # fmt: skip
    pid = int(shell.stdout.strip())
    assert psutil.Process(pid).ppid() != os.getpid()
    return pid


@pytest.fixture
def orphans():
    pids: list[int] = []
    yield pids
    for pid in pids:  # only the burners this test started, by their ids
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_other_processes_count_as_others_and_the_runs_own_children_as_its_own(orphans):
    load = HostLoad().start()
    orphans += [orphan_burner(1.5) for _ in range(2)]
    own = subprocess.Popen([sys.executable, "-c", BURN.format(s=1.0)])  # this run's own work
    own.wait(timeout=60)
    time.sleep(0.5)
    host = load.stop()
    assert host["source"] == "/proc" and host["wall_s"] >= 1.0
    assert host["cpus"] == os.cpu_count() and len(host["loadavg_after"]) == 3
    # The child burned about a core for a second: counted as the run's own, reaped or not.
    assert host["own_cpu_cores"] >= 0.3
    # Two burners outside the tree for most of the interval: at least half a core of others.
    assert host["other_cpu_cores"] >= busy_threshold(host["cpus"])
    assert flags(host) == ["busy"]
    assert "other processes" in describe(host)


def test_flags_read_busy_and_throttled_from_the_recorded_conditions():
    quiet = {"cpus": 8, "other_cpu_cores": 1.0}
    assert flags(quiet) == [] and flags(None) == [] and flags({"other_cpu_cores": None}) == []
    assert flags({"cpus": 8, "other_cpu_cores": 2.5}) == ["busy"]  # a quarter of 8 cores is 2
    thermal = {
        "clocks_before": {"reasons": ["gpu_idle"]},
        "clocks_after": {"reasons": ["sw_thermal_slowdown"]},
    }
    assert flags(quiet, thermal) == ["throttled"]
    assert flags(quiet, {"clocks_before": {"reasons": ["applications_clocks_setting"]}}) == []
    assert describe(None) == "conditions unknown"
