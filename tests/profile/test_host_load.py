"""A run's host conditions from /proc: other processes' CPU is told apart from the run's own tree,
with real processes burning CPU on either side."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import psutil
import pytest

from tests.waits import HANG_GUARD_S
from workbench.run.host_load import HostLoad, describe, flags

#: Burn `s` seconds of CPU time (not wall time: on a loaded machine a burner gets what it gets).
BURN = "import time\nwhile time.process_time() < {s}: pass\n"


def orphan_burner(seconds: float) -> int:
    """A CPU burner that is not this process's descendant: its parent exits at once."""
    shell = subprocess.run(
        [
            "sh", "-c",
            f'{sys.executable} -c "$0" </dev/null >/dev/null 2>&1 & echo $!',
            BURN.format(s=seconds),
        ],
        capture_output=True, text=True, check=True, timeout=HANG_GUARD_S,
    )  # fmt: skip
    pid = int(shell.stdout.strip())
    assert psutil.Process(pid).ppid() != os.getpid()
    return pid


def wait_gone(pid: int, timeout_s: float = 120.0) -> None:
    try:
        psutil.Process(pid).wait(timeout=timeout_s)  # init reaps the orphan
    except psutil.NoSuchProcess:
        pass


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
    orphans += [orphan_burner(0.6) for _ in range(2)]
    own = subprocess.Popen([sys.executable, "-c", BURN.format(s=0.5)])  # this run's own work
    own.wait(timeout=120)
    for pid in orphans:
        wait_gone(pid)
    host = load.stop()
    assert host["source"] == "/proc" and host["wall_s"] > 0
    assert host["cpus"] == os.cpu_count() and len(host["loadavg_after"]) == 3
    own_s, others_s = host["own_cpu_cores"] * host["wall_s"], host["other_cpu_cores"] * host["wall_s"]
    # The reaped child's 0.5 s are the run's own (its start-up adds a little); the burners' 1.2 s
    # are others' (other users of the machine may add more, never less).
    assert own_s >= 0.45
    assert others_s >= 1.1
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


def test_the_run_service_measures_the_host_so_every_recorder_stores_it(
    example_copy, shared_cache_dir, tmp_path
):
    """The window, sweeps and the command line all record through `RunService.run`: the report
    carries the host's conditions, and the window's recorder (a `SessionRecorder`, handed the
    report object itself) stores them, so a busy window run is flagged like a CLI one."""
    from workbench.profile.sessions.recorder import SessionRecorder
    from workbench.profile.sessions.store import SessionStore
    from workbench.run.service import RunService

    project = example_copy("saxpy")
    service = RunService()
    try:
        report = service.run(project, backends="cpu", sizes={"n": 4096}, cache_dir=shared_cache_dir)
    finally:
        service.close()
    host = report.host_conditions
    assert host is not None and host["source"] == "/proc"
    assert host["wall_s"] > 0 and host["own_cpu_cores"] is not None and host["other_cpu_cores"] >= 0

    db = tmp_path / "window.db"
    outcomes = []
    recorder = SessionRecorder(db, on_done=outcomes.append)
    recorder.submit(report)
    recorder.close()
    assert "ids" in outcomes[0], outcomes
    with SessionStore(db) as store:
        run = store.get_run(outcomes[0]["ids"][0], samples=False)
    assert run["detail"]["host"] == host
    assert set(flags(run["detail"]["host"], None)) <= {"busy"}
