"""The hot-reload loop without Qt: real cargo builds, real runs on the CPU and on llvmpipe."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tests.waits import WORK_GUARD_S, wait_until
from workbench.build import BuildService
from workbench.profile.live.agreement import affected_backends
from workbench.profile.live.live import LiveLoop
from workbench.profile.live.live_events import (
    LiveBuildFinished,
    LiveCycleFinished,
    LiveCycleStarted,
    LiveEvent,
    LiveIdle,
    LiveRunEvent,
)
from workbench.project import Project
from workbench.run.events import RunEvent, RunFinished
from workbench.run.service import RunService

SIZES = {"n": 4096}
DEVICES = ["cpu", "wgpu:llvmpipe"]


class Recorder:
    """Collects the loop's events (called from the loop's thread)."""

    def __init__(self):
        self.events: list[dict] = []
        self.lock = threading.Lock()

    def __call__(self, event: LiveEvent) -> None:
        with self.lock:
            self.events.append(event)

    def of(self, kind: type[LiveEvent], cycle: int | None = None) -> list:
        with self.lock:
            return [e for e in self.events if isinstance(e, kind) and (cycle is None or e.cycle == cycle)]

    def finished(self, cycle: int) -> LiveCycleFinished:
        (event,) = self.of(LiveCycleFinished, cycle)
        return event


@pytest.fixture
def services(shared_cache_dir):
    build_service = BuildService(cache_dir=shared_cache_dir)
    run_service = RunService()
    loops: list[LiveLoop] = []

    def make(**kwargs) -> tuple[LiveLoop, Recorder]:
        kwargs.setdefault("backends", ["cpu", "wgsl"])
        kwargs.setdefault("devices", DEVICES)
        kwargs.setdefault("sizes", SIZES)
        loop = LiveLoop(build_service, run_service, **kwargs)
        recorder = Recorder()
        loop.subscribe(recorder)
        loops.append(loop)
        return loop, recorder

    make.build_service = build_service
    yield make
    for loop in loops:
        loop.close()
    build_service.close()
    run_service.close()


def _edit(path: Path, comment: str) -> None:
    path.write_text(path.read_text() + f"\n// {comment}\n")


@pytest.mark.slow
def test_saves_rebuild_what_changed_rerun_and_measure_latency(services, example_copy):
    root = example_copy("saxpy", unique=True)  # edits the cache has not seen
    project = Project.open(root)
    loop, events = services()

    first = loop.on_saved(project, root / "src" / "lib.rs")
    assert loop.wait_idle(WORK_GUARD_S)
    done = events.finished(first)
    assert done.status == "ok", done.error
    assert done.latency_s is not None and done.latency_s > 0
    assert loop.last_latency_s == done.latency_s
    by_backend = {r.backend: r for r in done.report.results}
    assert set(by_backend) == {"cpu", "wgsl"}
    assert by_backend["wgsl"].verified is True
    assert by_backend["wgsl"].device["spec"].startswith("wgpu")
    assert set(done.report.outputs) >= {"cpu", "wgsl"}
    assert [type(e.event) for e in events.of(LiveRunEvent, first)].count(RunFinished) == 2
    # Typed records, one class per kind; the run's own events pass through as the service made them.
    assert events.events and all(isinstance(e, LiveEvent) for e in events.events)
    assert isinstance(done, LiveCycleFinished) and done.report is loop.last_report
    run_events = [e.event for e in events.events if isinstance(e, LiveRunEvent) and e.cycle == first]
    assert all(isinstance(e, RunEvent) for e in run_events)
    assert sorted(e.result.backend for e in run_events if isinstance(e, RunFinished)) == ["cpu", "wgsl"]

    # Saving without a change: every backend is a cache hit.
    again = loop.on_saved(project, root / "src" / "lib.rs")
    assert loop.wait_idle(WORK_GUARD_S)
    (built,) = events.of(LiveBuildFinished, again)
    assert sorted(built.cached) == ["cpu", "wgsl"] and built.rebuilt == []
    assert events.finished(again).status == "ok"

    # Editing the WGSL reference rebuilds it (and the run checks it again).
    _edit(root / "reference" / "saxpy.wgsl", "edited")
    edited = loop.on_saved(project, root / "reference" / "saxpy.wgsl")
    assert loop.wait_idle(WORK_GUARD_S)
    (built,) = events.of(LiveBuildFinished, edited)
    (started,) = events.of(LiveCycleStarted, edited)
    assert started.affected == ["wgsl"]
    assert "wgsl" in built.rebuilt
    result = {r.backend: r for r in events.finished(edited).report.results}["wgsl"]
    assert result.verified is True


@pytest.mark.slow
def test_a_newer_save_cancels_the_build_in_flight(services, example_copy):
    root = example_copy("saxpy", unique=True)  # edits the cache has not seen
    project = Project.open(root)
    loop, events = services(backends=["cpu"], devices=["cpu"])
    _edit(root / "src" / "lib.rs", "a change the cache has not seen")
    second: list[int] = []

    def on_build(event) -> None:
        # The first build has started (a cache miss: cargo runs): save again right now.
        if event.kind == "started" and not second:
            second.append(loop.on_saved(project, root / "src" / "lib.rs"))

    services.build_service.subscribe(on_build)
    try:
        first = loop.on_saved(project, root / "src" / "lib.rs")
        assert loop.wait_idle(WORK_GUARD_S)
    finally:
        services.build_service.unsubscribe(on_build)
    cancelled = events.finished(first)
    assert cancelled.status == "cancelled"
    assert cancelled.latency_s is None
    assert cancelled.build["cpu"].status == "cancelled"
    done = events.finished(second[0])
    assert done.status == "ok", done.error
    assert done.build["cpu"].status == "ok"
    assert done.latency_s is not None


@pytest.mark.slow
def test_cancelling_a_run_keeps_the_partial_results(services, example_copy):
    root = example_copy("saxpy")
    project = Project.open(root)
    loop, events = services()

    def cancel_after_cpu(event: LiveEvent) -> None:
        if (
            isinstance(event, LiveRunEvent)
            and isinstance(event.event, RunFinished)
            and event.event.backend == "cpu"
        ):
            loop.cancel()

    loop.subscribe(cancel_after_cpu)
    cycle = loop.request_run(project)
    assert loop.wait_idle(WORK_GUARD_S)
    done = events.finished(cycle)
    assert done.status == "cancelled"
    report = done.report
    assert report is not None and report.cancelled
    statuses = {r.backend: (r.status, r.error) for r in report.results}
    assert statuses["cpu"][0] == "ok"
    assert statuses["wgsl"] == ("skipped", "cancelled")
    assert loop.results[("cpu", "cpu")].status == "ok"
    assert done.latency_s is None


def test_a_broken_manifest_is_reported_not_raised(services, example_copy):
    root = example_copy("saxpy")
    project = Project.open(root)
    loop, events = services()
    manifest = root / "workbench.toml"
    manifest.write_text(manifest.read_text().replace("threads = [256]", 'threads = "many"'))
    cycle = loop.on_saved(project, manifest)
    assert loop.wait_idle(WORK_GUARD_S)
    done = events.finished(cycle)
    assert done.status == "error"
    assert "workbench.toml" in done.error and "threads" in done.error


def test_affected_backends_follow_the_saved_file(example_copy):
    root = example_copy("saxpy")
    project = Project.open(root)
    every = ["cpu", "nvptx", "rust-gpu", "cuda-c", "wgsl"]
    assert affected_backends(project, root / "src" / "lib.rs", every) == ["cpu", "nvptx", "rust-gpu"]
    assert affected_backends(project, "reference/saxpy.cu", every) == ["cuda-c"]
    assert affected_backends(project, root / "reference" / "saxpy.wgsl", every) == ["wgsl"]
    assert affected_backends(project, root / "workbench.toml", every) == every
    assert affected_backends(project, root / "Cargo.toml", every) == ["cpu", "nvptx", "rust-gpu"]
    assert affected_backends(project, None, ["cpu"]) == ["cpu"]
    # The same rule as the build cache's keys: a header is read by the crate and by nvcc alike.
    (root / "reference" / "common.h").write_text("#define SCALE 1\n")
    header = affected_backends(project, root / "reference" / "common.h", every)
    assert header == [
        b for b in every if (root / "reference" / "common.h").resolve() in project.backend_sources(b)
    ]
    assert header == ["cpu", "nvptx", "rust-gpu", "cuda-c"]


def test_a_closed_loop_refuses_new_work(services, example_copy):
    from workbench.errors import WorkbenchError

    loop, _ = services()
    loop.close()
    with pytest.raises(WorkbenchError, match="closed"):
        loop.request_build(Project.open(example_copy("saxpy")))


def test_idle_follows_the_last_cycle_once_nothing_is_in_flight(services, example_copy):
    """Listeners clear their busy state on `LiveIdle`: at `LiveCycleFinished` the loop may still count the cycle."""
    root = example_copy("saxpy")
    loop, events = services(backends=["wgsl"], devices=["wgpu:llvmpipe"])
    busy_at_idle: list[bool] = []
    loop.subscribe(lambda event: isinstance(event, LiveIdle) and busy_at_idle.append(loop.busy))
    cycle = loop.on_saved(Project.open(root), root / "reference" / "saxpy.wgsl")
    assert loop.wait_idle(WORK_GUARD_S)
    assert wait_until(lambda: events.of(LiveIdle))  # emitted just after the loop wakes wait_idle
    kinds = [type(e) for e in events.events]
    assert events.finished(cycle).status == "ok"
    assert kinds.index(LiveIdle) > kinds.index(LiveCycleFinished)
    assert busy_at_idle == [False]


@pytest.mark.slow
def test_a_failed_check_names_the_reference_only_when_its_own_source_changed(services, example_copy):
    root = example_copy("saxpy")
    project = Project.open(root)
    loop, events = services()
    lib, shader = root / "src" / "lib.rs", root / "reference" / "saxpy.wgsl"
    body, wgsl_body = "y[i] = a * x[i] + y[i];", "y[i] = params.a * x[i] + y[i];"

    def save(path: Path, old: str, new: str) -> LiveCycleFinished:
        path.write_text(path.read_text().replace(old, new))
        number = loop.on_saved(project, path)
        assert loop.wait_idle(WORK_GUARD_S)
        done = events.finished(number)
        assert done.status == "ok", done.error
        return done

    first = save(lib, body, body)  # every backend agrees: the digests are remembered
    assert first.reference_changed is None and loop.agreement.agreed is not None
    # The WGSL is what changed: the reference (cpu) stands, the blame is wgsl's own.
    broken = save(shader, wgsl_body, "y[i] = params.a * x[i];")
    assert any(r.verified is False for r in broken.report.results)
    assert broken.reference_changed is None
    save(shader, "y[i] = params.a * x[i];", wgsl_body)
    # The reference's own source changed since all agreed: that is what the failure reports.
    edited = save(lib, body, "y[i] = a * x[i] + 2.0 * y[i];")
    changed = edited.reference_changed
    assert changed["message"] == "the reference changed: cpu's source was edited"
    assert changed["failed"] == ["wgsl"] and changed["unchanged"] == ["wgsl"]


@pytest.mark.slow
def test_a_build_that_cannot_run_here_waits_until_the_runs_are_timed(services, example_copy):
    """Once the loop knows a backend cannot run here (nvptx without CUDA), the next cycles build
    it only after their runs: it never shares the cores with the first result or a timing."""
    from workbench.build.toolchains import detect

    if not detect("nvptx").found:
        pytest.skip(f"no nvptx toolchain: {detect('nvptx').hint}")
    loop, events = services(backends=["cpu", "wgsl", "nvptx"])
    if loop.run_service.devices("cuda").get("available"):
        pytest.skip("CUDA is available here: nvptx runs, it is not built in the background")
    project = Project.open(example_copy("saxpy"))
    # nvptx's first build in a cache compiles `core`: many minutes at the background priority on a
    # loaded machine. Built here in the foreground, the background builds below are the crate's.
    built = loop.build_service.submit(project, ["nvptx"]).wait(timeout=WORK_GUARD_S)["nvptx"]
    assert built.status == "ok", built.log
    first = loop.request_run(project)
    assert loop.wait_idle(WORK_GUARD_S) and events.finished(first).status == "ok"
    assert wait_until(lambda: not loop.background, WORK_GUARD_S)

    order: list[tuple[str, str]] = []  # build events and run results of the second cycle, in order
    loop.build_service.subscribe(lambda e: order.append((f"build {e.kind}", e.backend)))
    loop.subscribe(
        lambda e: (
            isinstance(e, LiveRunEvent)
            and isinstance(e.event, RunFinished)
            and order.append(("result", e.event.result.backend))
        )
    )
    second = loop.request_run(project)
    assert loop.wait_idle(WORK_GUARD_S) and events.finished(second).status == "ok"
    assert wait_until(lambda: ("build finished", "nvptx") in order, WORK_GUARD_S)
    results = [i for i, (kind, _) in enumerate(order) if kind == "result"]
    assert {order[i][1] for i in results} == {"cpu", "wgsl", "nvptx"}
    timed = [i for i in results if order[i][1] != "nvptx"]  # nvptx's row: skipped, not run
    assert order.index(("build started", "nvptx")) > max(timed), order
    # The loop says so after the build service does: wait for its event, not for the order above.
    assert wait_until(
        lambda: any(
            e.background and e.results["nvptx"].status == "ok" for e in events.of(LiveBuildFinished, second)
        ),
        WORK_GUARD_S,
    )
