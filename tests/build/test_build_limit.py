"""A niced background build's time limit counts the machine's share left to it (`Budget`'s share
clock), with real slow children under real load (CPU burners at normal priority)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from tests.waits import HANG_GUARD_S, WORK_GUARD_S, wait_until
from workbench.build import BuildService
from workbench.build.process import Budget, BuildTimeout, progress_text, run_command, share_rate
from workbench.build.service import BACKGROUND_NICENESS
from workbench.build.toolchains import detect
from workbench.childproc import children_of
from workbench.project import Project

#: A child that needs `seconds` of its own CPU time, however long the machine makes it wait.
CPU_WORK = (
    "import time, sys\n"
    "need = float(sys.argv[1])\n"
    "while time.process_time() < need:\n"
    "    sum(range(1000))\n"
    "print('done', round(time.process_time(), 2))\n"
)


@pytest.fixture
def burners():
    """One busy loop per core at normal priority: the machine is saturated while they run."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)]
    yield procs
    for proc in procs:
        proc.kill()
        proc.wait(HANG_GUARD_S)


def test_share_rate_is_the_part_of_the_machine_free_or_the_builds():
    assert share_rate(idle_s=2.0, own_s=0.0, cores=2, elapsed_s=1.0) == 1.0  # quiet: the wall clock
    assert share_rate(idle_s=0.0, own_s=0.1, cores=2, elapsed_s=1.0) == pytest.approx(0.05)  # starved
    assert share_rate(idle_s=0.0, own_s=2.0, cores=2, elapsed_s=1.0) == 1.0  # the build has every core
    assert share_rate(idle_s=1.0, own_s=0.0, cores=2, elapsed_s=1.0) == pytest.approx(0.5)
    assert share_rate(idle_s=-1.0, own_s=-1.0, cores=2, elapsed_s=1.0) == 0.0  # clamped
    assert Budget.with_timeout(300, niceness=BACKGROUND_NICENESS).counts == "share"
    assert Budget.with_timeout(300).counts == "wall"


def test_a_niced_slow_child_under_load_is_not_stopped_by_its_limit(burners):
    """The child needs 0.8 s of CPU; at niceness +10 beside a burner per core it takes far longer
    than its 2 s limit on the clock, and finishes: the limit counted the share the machine left it."""
    budget = Budget.with_timeout(2.0, niceness=BACKGROUND_NICENESS)
    samples: list[dict] = []
    budget.on_sample = lambda: samples.append(budget.progress())
    start = time.monotonic()
    result = run_command([sys.executable, "-c", CPU_WORK, "0.8"], budget=budget)
    wall = time.monotonic() - start
    assert result.returncode == 0 and result.stdout[0].startswith("done"), result
    assert wall > 2.0, f"the child took only {wall:.1f} s: the load did not slow it, nothing was shown"
    assert budget.counted_s() < 2.0
    progress = budget.progress()
    assert progress["cpu_s"] >= 0.5  # the child's own CPU time was seen
    assert any(s["paused"] for s in samples), samples
    assert "still working" in progress_text(progress)


def test_the_share_clock_still_stops_a_child_that_never_ends():
    """A child spinning forever uses its share itself: the share clock runs and stops it."""
    budget = Budget.with_timeout(0.5, counts="share")
    start = time.monotonic()
    with pytest.raises(BuildTimeout, match="counted"):
        run_command([sys.executable, "-c", "while True: pass"], budget=budget)
    # At least its own share counts: on a machine loaded n-fold, about n times the limit.
    assert time.monotonic() - start < 300
    assert not budget.running


@pytest.mark.slow
def test_a_niced_build_held_under_load_reports_progress_with_its_limit_paused(gated_saxpy, burners, cache):
    """A real background cargo build, waiting in its build script while the burners hold every
    core: past its wall limit it is still running and says so ("progress" events), then is cancelled."""
    if not detect("cpu").found:
        pytest.skip(f"cpu toolchain missing: {detect('cpu').hint}")
    root, _gates = gated_saxpy
    events = []
    got = threading.Event()

    def on_event(event):
        events.append(event)
        if event.kind == "progress" and event.progress["wall_s"] > 4.0:
            got.set()

    before = {p.pid for p in children_of()}  # the burners, and the session's long-lived workers
    with BuildService(cache_dir=cache, timeout_s=3.0) as service:
        service.subscribe(on_event)
        job = service.submit(Project.open(root), ["cpu"], background=["cpu"])
        assert got.wait(WORK_GUARD_S), [e.kind for e in events]
        assert not job.done
        last = [e for e in events if e.kind == "progress"][-1].progress
        assert last["counted_s"] < 3.0 < last["wall_s"]
        service.cancel("cpu")
        assert job.wait(HANG_GUARD_S)["cpu"].status == "cancelled"
    assert wait_until(lambda: not {p.pid for p in children_of()} - before), "a build child survived"
