"""BuildService behaviour with real cargo: events, cancel (newer submit wins), timeout, watching."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import wait_until
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
        results = job.wait(timeout=300)
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
    with BuildService(cache_dir=cache, timeout_s=120) as service:
        first = service.submit(project, ["cpu"])
        assert wait_until(lambda: processes_with(marker)), "build.rs never started its child"
        second = service.submit(project, ["cpu"])
        assert first.wait(timeout=60)["cpu"].status == "cancelled"
        service.cancel("cpu")
        assert second.wait(timeout=60)["cpu"].status == "cancelled"
    assert wait_until(lambda: not processes_with(marker), 10), "a build child survived the cancel"


def test_hanging_compiler_stops_at_timeout_with_no_child_left(hanging_project, cache):
    root, marker = hanging_project
    seen_child = threading.Event()

    def on_event(event):
        if event.kind == "output" and processes_with(marker):
            seen_child.set()

    with BuildService(cache_dir=cache, timeout_s=15) as service:
        service.subscribe(on_event)
        result = service.submit(Project.open(root), ["cpu"]).wait(timeout=120)["cpu"]
    assert result.status == "error"
    assert "timeout" in result.diagnostics[0]["message"]
    assert "timeout" in result.log
    assert wait_until(lambda: not processes_with(marker), 10), "a build child survived the timeout"


def test_watcher_debounces_a_burst_into_one_build(example_copy, cache):
    root = example_copy("saxpy", unique=True)
    project = Project.open(root)
    calls, builds = [], []
    with BuildService(cache_dir=cache) as service:

        def on_change(paths):
            calls.append(paths)
            builds.append(service.submit(project, ["cpu"]))

        with ProjectWatcher(root, on_change, debounce_s=0.3):
            time.sleep(0.2)  # let the observer settle
            (root / "target").mkdir(exist_ok=True)
            (root / "target" / "ignored.rs").write_text("// build output\n")
            (root / "src" / ".lib.rs.swp").write_text("editor temp\n")
            (root / "src" / "lib.rs~").write_text("backup\n")
            time.sleep(0.8)
            assert calls == [], f"ignored files triggered a build: {calls}"
            lib = root / "src" / "lib.rs"
            for i in range(5):
                with open(lib, "a") as f:
                    f.write(f"// save {i}\n")
                time.sleep(0.03)
            assert wait_until(lambda: len(calls) >= 1, 10)
            time.sleep(0.8)
        assert len(calls) == 1
        assert root / "src" / "lib.rs" in [p.resolve() for p in calls[0]]
        (result,) = builds[0].wait(timeout=300).values()
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
            lambda: processes_with("build-script-build") or processes_with("build_script_build"), 300
        )
        service.lower_priority(["cpu"])
        gates["host"].touch()
        result = job.wait()["cpu"]
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
        assert job.wait_any(["wgsl"], timeout=300) == "wgsl"
        held = service._active["cpu"]
        assert ("finished", "wgsl") in events and ("started", "cpu") not in events
        assert not job.done and not processes_with(str(cache))  # no compiler under this cache
        started_before = held.budget.started
        job.release_background()
        result = job.wait(timeout=300)["cpu"]
        assert result.status == "ok", result.log
        assert events.index(("started", "cpu")) > events.index(("finished", "wgsl"))
        assert held.budget.started > started_before  # the limit's clock started again at the release
        assert held.budget.counts == "share"  # a niced build's limit pauses while the machine is busy

        again = service.submit(project, ["cpu"], background=["cpu"], hold_background=True)
        service.cancel("cpu")
        assert again.wait(timeout=60)["cpu"].status == "cancelled"
