"""BuildService behaviour with real cargo: events, cancel (newer submit wins), timeout, watching."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.waits import HANG_GUARD_S, WORK_GUARD_S, wait_until
from workbench.build import BuildService, ProjectWatcher
from workbench.build.toolchains import detect
from workbench.project import Project

from .conftest import processes_with

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _cargo():
    if not detect("cpu").found:
        pytest.skip(f"cpu toolchain missing: {detect('cpu').hint}")


def test_events_and_non_blocking_submit(example_copy, cache):
    root = example_copy("saxpy", unique=True)  # a copy of a project built before is a cache hit
    project = Project.open(root)
    events = []
    with BuildService(cache_dir=cache) as service:
        service.subscribe(events.append)
        job = service.submit(project, ["cpu", "wgsl"])
        results = job.wait(timeout=WORK_GUARD_S)
        assert job.done
    assert results["cpu"].status == "ok" and results["wgsl"].status == "ok"
    kinds = [(e.kind, e.backend) for e in events]
    assert ("started", "cpu") in kinds and ("finished", "cpu") in kinds
    assert any(e.kind == "output" and e.backend == "cpu" for e in events)
    finished = next(e for e in events if e.kind == "finished" and e.backend == "cpu")
    assert finished.result is results["cpu"] and finished.project == "saxpy"


def test_newer_submit_cancels_older_and_kills_its_tree(hanging_project, cache):
    root, marker = hanging_project
    project = Project.open(root)
    with BuildService(cache_dir=cache, timeout_s=WORK_GUARD_S) as service:
        first = service.submit(project, ["cpu"])
        assert wait_until(lambda: processes_with(marker), WORK_GUARD_S), "build.rs never started its child"
        second = service.submit(project, ["cpu"])
        assert first.wait(timeout=HANG_GUARD_S)["cpu"].status == "cancelled"
        service.cancel("cpu")
        assert second.wait(timeout=HANG_GUARD_S)["cpu"].status == "cancelled"
    assert wait_until(lambda: not processes_with(marker)), "a build child survived the cancel"


def test_hanging_compiler_stops_at_timeout_with_no_child_left(hanging_project, cache):
    root, marker = hanging_project
    project = Project.open(root)
    # First the build script is compiled, with no limit in reach (a loaded machine takes what it
    # takes), and reached; then stopped: cargo keeps the compiled script for the timed build.
    with BuildService(cache_dir=cache, timeout_s=WORK_GUARD_S) as service:
        job = service.submit(project, ["cpu"])
        assert wait_until(lambda: processes_with(marker), WORK_GUARD_S), "build.rs never started its child"
        service.cancel("cpu")
        assert job.wait(timeout=HANG_GUARD_S)["cpu"].status == "cancelled"
    assert wait_until(lambda: not processes_with(marker)), "a build child survived the cancel"

    seen_child: list[bool] = []  # the limit must have a hung child to stop, or the test proves nothing

    def child_or_done(job) -> bool:
        if processes_with(marker):
            seen_child.append(True)
        return bool(seen_child) or job.done

    with BuildService(cache_dir=cache, timeout_s=15) as service:
        job = service.submit(project, ["cpu"])
        wait_until(lambda: child_or_done(job), WORK_GUARD_S)
        result = job.wait(timeout=WORK_GUARD_S)["cpu"]
    assert seen_child, f"the build ended before its build script ran: {result.log[-2000:]}"
    assert result.status == "error"
    assert "timeout" in result.diagnostics[0]["message"]
    assert "timeout" in result.log
    assert wait_until(lambda: not processes_with(marker)), "a build child survived the timeout"


def test_watcher_debounces_a_burst_into_one_build(example_copy, cache):
    """Ignored files (build outputs, editor temp files) call nothing; a burst of saves is one call.
    Both are read off the order of the calls, not off pauses: the watcher reports its events in
    the order they happened, so a later change's call shows what came before it."""
    root = example_copy("saxpy", unique=True)
    project = Project.open(root)
    lib, witness = root / "src" / "lib.rs", root / "src" / "witness.rs"
    calls, builds = [], []
    with BuildService(cache_dir=cache) as service:

        def on_change(paths):
            calls.append(sorted(p.resolve() for p in paths))
            if not builds:  # the burst's call builds; the witness's needs no build
                builds.append(service.submit(project, ["cpu"]))

        # A debounce far above the pauses in the burst (30 ms), so a loaded machine cannot split it.
        with ProjectWatcher(root, on_change, debounce_s=2.0):
            (root / "target").mkdir(exist_ok=True)
            (root / "target" / "ignored.rs").write_text("// build output\n")
            (root / "src" / ".lib.rs.swp").write_text("editor temp\n")
            (root / "src" / "lib.rs~").write_text("backup\n")
            for i in range(5):
                with open(lib, "a") as f:
                    f.write(f"// save {i}\n")
                time.sleep(0.03)
            assert wait_until(lambda: len(calls) >= 1), "the saves never called back"
            # The ignored files came first: had they counted, they would be in this call or before it.
            assert calls == [[lib.resolve()]], f"ignored files triggered a build: {calls}"
            # A later change is a call of its own: no part of the burst was left for a second call.
            witness.write_text("// a later change\n")
            assert wait_until(lambda: len(calls) >= 2), "the later change never called back"
            assert calls == [[lib.resolve()], [witness.resolve()]], calls
        (result,) = builds[0].wait(timeout=WORK_GUARD_S).values()
        assert result.status == "ok" and not result.cached


def test_lower_priority_reaches_a_build_already_running_and_what_it_starts(gated_saxpy, cache):
    """A build found to be unneeded for the run (its runtime is unavailable) goes on at the
    background priority: the cargo tree already running (here held in its build script) is reniced."""
    from tests.conftest import niceness_of_stat
    from workbench.build.service import BACKGROUND_NICENESS

    root, gates = gated_saxpy
    base = os.getpriority(os.PRIO_PROCESS, 0)
    with BuildService(cache_dir=cache) as service:
        job = service.submit(Project.open(root), ["cpu"])
        # The build script is running (waiting at its gate) before the priority is lowered.
        assert wait_until(
            lambda: processes_with("build-script-build") or processes_with("build_script_build"), WORK_GUARD_S
        )
        service.lower_priority(["cpu"])
        gates["host"].touch()
        result = job.wait(timeout=WORK_GUARD_S)["cpu"]
    assert result.status == "ok", result.log
    assert niceness_of_stat(Path(f"{gates['host']}.stat").read_text()) == min(19, base + BACKGROUND_NICENESS)


def test_a_held_background_build_starts_only_when_released(example_copy, cache):
    """`hold_background`: a build nobody waits for starts (no event, no process) only once the
    caller releases it; the job is not done before; its timeout counts from the release; a
    cancel while held ends it as cancelled without starting a compiler."""
    project = Project.open(example_copy("saxpy", unique=True))
    events: list[tuple[str, str]] = []
    with BuildService(cache_dir=cache) as service:
        service.subscribe(lambda e: events.append((e.kind, e.backend)))
        job = service.submit(project, ["wgsl", "cpu"], background=["cpu"], hold_background=True)
        assert job.wait_any(["wgsl"], timeout=WORK_GUARD_S) == "wgsl"
        held = service._active["cpu"]
        assert ("finished", "wgsl") in events and ("started", "cpu") not in events
        assert not job.done and not processes_with(str(cache))  # no compiler under this cache
        started_before = held.budget.started
        job.release_background()
        result = job.wait(timeout=WORK_GUARD_S)["cpu"]
        assert result.status == "ok", result.log
        assert events.index(("started", "cpu")) > events.index(("finished", "wgsl"))
        assert held.budget.started > started_before  # the limit's clock started again at the release
        assert held.budget.counts == "share"  # a niced build's limit pauses while the machine is busy

        again = service.submit(project, ["cpu"], background=["cpu"], hold_background=True)
        service.cancel("cpu")
        assert again.wait(timeout=HANG_GUARD_S)["cpu"].status == "cancelled"
