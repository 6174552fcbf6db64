"""The run service: build, run on every backend and device, verify against the reference, time.

    service = RunService()
    report = service.run("resources/examples/saxpy", backends=["cpu", "wgsl"], sizes={"n": 65536})
    print(report.to_json())
    service.close()

Kernels execute in worker processes (`pool.py`), one per runtime, so a crash, a device loss or an
endless loop ends that backend's result as "error" and the others go on. Every backend gets the
same inputs (`inputs.py`); the build stage is `build_stage.py`; outputs are compared with the
reference backend's under the reference policy (`reference.py`, `verify.py`) and launches timed
with the timing protocol (`timing.py`); each result carries its provenance (`workbench.provenance`).

The rooms: `request.py` (what is asked: `RunRequest`), `device_catalog.py` (the devices and
workers here and on GPU hosts), `backend_run.py` (one backend on one device: the worker
conversation and its `RunResult`); this module is the order of a run (`RunService`): evaluate the
kernel once at the run's sizes, refuse what cannot fit, draw the inputs while the builds run, the
reference first, then each backend as its build ends.

Devices written `HOST/cpu`, `HOST/wgpu:0` are on a configured GPU host (`workbench.remote`):
the build stays here, the artifact folder goes to the host's cache once per build key, and the
host's workers (one pool per host, started over ssh) run the kernel; the reference may run here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from workbench.backends import BACKENDS, parse_backends, runtime_of
from workbench.project import Project
from workbench.records import RunResult
from workbench.run import timing as timing_mod
from workbench.run.backend_run import RunContext, run_backend, skipped
from workbench.run.buffers import host_memory_bytes, memory_plan
from workbench.run.build_stage import BuildStream, StagedBuild
from workbench.run.device_catalog import DeviceCatalog
from workbench.run.events import RunDone, RunEvent, RunFinished, RunPhase, RunStarted
from workbench.run.host_load import HostLoad
from workbench.run.inputs import DEFAULT_SEED, InputCache
from workbench.run.pool import WorkerPool
from workbench.run.reference import ReferencePolicy
from workbench.run.request import RunError, RunRequest

__all__ = ["BACKGROUND_BUILD_NOTE", "RunError", "RunReport", "RunRequest", "RunService"]

#: What a skipped row says of a backend whose runtime is unavailable while the caller (the
#: window) builds it anyway, for its artifacts: the run does not wait for that build.
BACKGROUND_BUILD_NOTE = "built in the background for inspection, not run"


@dataclass
class RunReport:
    """Everything one `RunService.run` produced; `outputs` holds the arrays (not in the JSON)."""

    project: str
    kernel: str
    results: list[RunResult] = field(default_factory=list)
    outputs: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    reference: str = ""
    seed: int = DEFAULT_SEED
    sizes: dict[str, int] = field(default_factory=dict)
    cancelled: bool = False
    #: What the host was doing meanwhile (`host_load.HostLoad`): measured here, so the window's,
    #: the command line's and a sweep's recorded runs all carry it and can be flagged busy.
    host_conditions: dict[str, Any] | None = None
    #: The reference produced nothing to compare with (`ReferencePolicy.failed`): the other
    #: results are "not verified (reference failed)" (`RunResult.reference_failed`).
    reference_failed: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "kernel": self.kernel,
            "results": [r.to_json() for r in self.results],
            "reference_failed": self.reference_failed,
        }

    @property
    def ok(self) -> bool:
        """True when every result verified (or is the reference) or was skipped."""
        return all(
            r.status == "skipped" or (r.status == "ok" and r.verified is not False and not _unverifiable(r))
            for r in self.results
        )

    def __repr__(self) -> str:
        """A compact summary (the console prints reports; the arrays stay out of it)."""
        rows = ", ".join(
            f"{r.backend}@{r.device.get('spec', '?')}: {r.status}/{r.verdict}" for r in self.results
        )
        return (
            f"RunReport({self.project}/{self.kernel}, reference {self.reference}, sizes {self.sizes}: {rows})"
        )


def _unverifiable(result: RunResult) -> bool:
    return result.verified is None and not result.check.is_reference


class RunService:
    """Runs kernels in worker processes; one run at a time, cancellable from another thread."""

    def __init__(
        self,
        timing: timing_mod.TimingOptions | None = None,
        pool: WorkerPool | None = None,
        on_stderr: Callable[[str, str], None] | None = None,
    ):
        self.timing = timing or timing_mod.TimingOptions()
        self.pool = pool or WorkerPool(on_stderr=on_stderr)
        self.catalog = DeviceCatalog(self.pool, on_stderr=on_stderr)
        # Inputs made once per (initializer, seed, size, type): shared by every backend of a run
        # and by the next runs of a sweep or a tuning session in this process.
        self.inputs = InputCache()
        self._cancel = threading.Event()
        self._run_lock = threading.Lock()
        self._context: RunContext | None = None  # the run in progress (its worker is killed by cancel)
        self._builds: BuildStream | None = None  # the run's builds in flight (cancelled with it)

    # ------------------------------------------------------------------ public

    def cancel(self) -> None:
        """Stop the run in progress (safe from any thread): the launch in flight is killed."""
        self._cancel.set()
        context = self._context
        worker = context.active if context is not None else None
        if worker is not None:
            worker.kill()
        stream = self._builds
        if stream is not None:
            stream.cancel()

    def close(self) -> None:
        """Shut every worker down."""
        self.cancel()
        with self._run_lock:
            self.pool.close()
            self.catalog.close_remote()

    def devices(self, runtime: str, refresh: bool = False) -> dict[str, Any]:
        """{"available", "reason", "devices"} of one runtime, as its worker sees it (cached)."""
        return self.catalog.devices(runtime, refresh)

    def cannot_run_here(self, backends: list[str], devices: list[str] | None = None) -> list[str]:
        """Those of `backends` a run would not wait for: their runtime was found unavailable here
        (from the cache: no probe) and no GPU host is among `devices` (a `host/…` spec)."""
        if any("/" in spec for spec in devices or ()):
            return []
        return [b for b in backends if self.catalog.known_unavailable(runtime_of(b))]

    def host_devices(self, name: str, refresh: bool = False) -> dict[str, dict[str, Any]]:
        """A configured host's devices by runtime (specs `NAME/cpu` …), probed over ssh (cached)."""
        return self.catalog.host_devices(name, refresh)

    def all_devices(self) -> dict[str, dict[str, Any]]:
        """Every runtime's devices, in the shape of `workbench.run.devices.list_devices()`."""
        return self.catalog.all_devices()

    def default_backends(
        self,
        project: Project,
        artifacts_dir: str | Path | None = None,
        host_runtimes: frozenset[str] = frozenset(),
    ) -> list[str]:
        """cpu, plus every backend whose toolchain is installed (or whose artifacts are in
        `artifacts_dir`) and whose runtime is available here or asked for on a GPU host."""
        return self.catalog.default_backends(project, artifacts_dir, host_runtimes)

    def run(
        self,
        project: Project | str | Path,
        kernel: str | None = None,
        backends: list[str] | str | None = None,
        devices: list[str] | None = None,
        sizes: dict[str, int] | None = None,
        timeout_s: float = 10.0,
        artifacts_dir: str | Path | None = None,
        build_service: Any = None,
        on_event: Callable[[RunEvent], None] | None = None,
        seed: int | None = None,
        cache_dir: str | Path | None = None,
        tunables: dict[str, int | float] | None = None,
        reference: str | None = None,
        keep_outputs: bool = True,
        build_job: Any = None,
        trace: Any = None,
        writers: list[tuple[str, int]] | None = None,
    ) -> RunReport:
        """Build (unless `artifacts_dir`), run, verify and time `kernel` on `backends`.

        `reference` overrides the kernel's `[kernel.check] reference` for this run (the user's
        explicit choice); the reference never changes otherwise (see `reference.py`).

        `keep_outputs=False` keeps only the reference's outputs in `report.outputs`: each other
        backend's arrays are let go once verified, so a large run holds one backend's outputs at a
        time (the command line; the window keeps them for its plots).

        Each backend runs as soon as its own build is done (the reference first): the first
        result never waits for the slowest build. `build_job` is a `BuildJob` the caller started
        (the live loop): the run takes its builds as they finish and never waits for those whose
        runtime is unavailable (they go on building, for inspection; their rows say so).

        `trace` (a `sim_trace.TracePoint`): the invocation whose `ctx.trace` values a cpu-sim
        result carries (`RunResult.trace`). `writers` (a list of (buffer, index), maybe empty): a
        cpu-sim result carries the writers of its mismatches and those elements (`RunResult.writers`).

        `on_event(event)` is called from this thread with the run's events (`events.py`, one
        record per kind): `RunBuilding`, `RunBuildEvent`, `RunBuilt`, `RunStarted`, `RunPhase`,
        `RunProgress`, `RunFinished` (with the `RunResult`) and `RunDone` (with the report)."""
        request = RunRequest.of(
            project, backends, devices, kernel=kernel, sizes=sizes, timeout_s=timeout_s,
            artifacts_dir=artifacts_dir, build_service=build_service, seed=seed, cache_dir=cache_dir,
            tunables=tunables, reference=reference, keep_outputs=keep_outputs, build_job=build_job,
            trace=trace, writers=writers,
        )  # fmt: skip
        return self.execute(request, on_event)

    def execute(self, request: RunRequest, on_event: Callable[[RunEvent], None] | None = None) -> RunReport:
        """Run `request` (see `run`), measuring what the host did meanwhile."""
        with self._run_lock:
            self._cancel.clear()
            load = HostLoad().start()
            report = self._run(request, on_event)
            report.host_conditions = load.stop()
            return report

    # ------------------------------------------------------------------ the run

    def _run(self, request: RunRequest, on_event: Callable[[RunEvent], None] | None) -> RunReport:
        project = request.project
        k = project.manifest.kernel(request.kernel)
        try:
            symbols = k.symbols(request.sizes, request.tunables)
        except ValueError as exc:
            raise RunError(str(exc)) from None
        # Every length and value at these sizes, located in workbench.toml when wrong; evaluated
        # once here, the memory plan, the inputs, every launch spec and the throughput read it.
        values = k.evaluate(symbols, memory_bytes=host_memory_bytes())
        # What the whole run holds at once (inputs, a backend's working buffers, the reference's
        # outputs): refused here, before anything is allocated, when it cannot fit.
        plan = memory_plan(k, values)
        if plan.problem:
            raise RunError(f"kernel {k.name!r}: {plan.problem}")
        device_indices = self.catalog.split_specs(list(request.devices))
        remote_indices = device_indices[1]
        if request.backends:
            requested = parse_backends(",".join(request.backends))
        else:
            on_hosts = frozenset(r for idx in remote_indices.values() for r in idx)
            requested = self.default_backends(project, request.artifacts_dir, on_hosts)
        artifacts_dir = request.artifacts_dir
        if artifacts_dir is not None and not Path(artifacts_dir).is_dir():
            what = "is not a folder" if Path(artifacts_dir).exists() else "does not exist"
            raise RunError(
                f"artifact folder {artifacts_dir} {what} (--artifacts names a `build --export` folder)"
            )

        def emit(event: RunEvent) -> None:
            if on_event is not None:
                on_event(event)

        run_seed = DEFAULT_SEED if request.seed is None else int(request.seed)
        ctx = RunContext(
            project=project, kernel=k, symbols=symbols, values=values,
            sizes={name: int(symbols[name]) for name in k.sizes},
            tunables={name: symbols[name] for name in k.tunables},
            seed=run_seed, timeout_s=float(request.timeout_s), timing=self.timing,
            catalog=self.catalog, input_cache=self.inputs, cancelled=self._cancel, emit=emit,
            trace=request.trace, writers=request.writers,
        )  # fmt: skip
        reference_choice = request.reference
        if reference_choice is not None and reference_choice not in BACKENDS:
            raise RunError(f"unknown reference backend {reference_choice!r}; valid: {', '.join(BACKENDS)}")
        policy = ReferencePolicy.for_run(k, reference_choice)
        ref_backend = policy.backend
        keep_outputs = request.keep_outputs
        ctx.keeps_outputs = lambda backend: keep_outputs or backend == ref_backend
        needed = list(requested) + ([ref_backend] if ref_backend not in requested else [])
        report = RunReport(project=project.name, kernel=k.name, seed=run_seed, sizes=ctx.sizes)
        on_hosts = {r for idx in remote_indices.values() for r in idx}
        # The inputs are drawn while the workers start and the builds run (all of it untimed):
        # at 2^28 elements either takes about a second on a GPU host.
        with ThreadPoolExecutor(1, thread_name_prefix="wb-run-inputs") as background:
            inputs = background.submit(self.inputs.make, k, values, run_seed, project.root)
            self.catalog.probe({runtime_of(b) for b in needed if runtime_of(b) not in on_hosts})
            # A backend whose runtime cannot run here (nor on a chosen host) is not worth building
            # for the run: it never stands between the user and the first result.
            runnable = [
                b for b in needed
                if any(runtime_of(b) in idx for idx in remote_indices.values())
                or self.devices(runtime_of(b)).get("available")
            ]  # fmt: skip
            if artifacts_dir is not None:
                stream = BuildStream.prebuilt(runnable, artifacts_dir)
            else:
                stream = BuildStream.start(
                    project, runnable, emit, build_service=request.build_service, job=request.build_job,
                    cache_dir=request.cache_dir, tunables=request.tunables,
                )  # fmt: skip
            self._builds = stream
            try:
                emit(RunPhase(None, "inputs"))
                try:
                    ctx.inputs = inputs.result()
                except ValueError as exc:  # an initializer that cannot fill its buffer (npy length)
                    raise RunError(f"kernel {k.name!r}: {exc}") from None
            except BaseException:
                self._builds = None
                stream.close()
                raise
        build_job = request.build_job
        in_background = set(build_job.backends) if build_job is not None else set()

        def build_of(backend: str) -> StagedBuild:
            if backend in runnable:
                return stream.get(backend)
            note = f"; {BACKGROUND_BUILD_NOTE}" if backend in in_background else ""
            return StagedBuild(backend, "skipped", message=f"its runtime is unavailable{note}")

        def run_one(backend: str) -> None:
            timed = backend in requested
            build = build_of(backend)
            for choice in self.catalog.choices(backend, device_indices):
                if self._cancel.is_set():
                    report.cancelled = True
                    result = skipped(ctx, backend, choice, "cancelled", build)
                else:
                    if not choice.available and backend in in_background:
                        choice = replace(choice, reason=f"{choice.reason}; {BACKGROUND_BUILD_NOTE}")
                    emit(RunStarted(backend, choice.device))
                    result, outputs = run_backend(ctx, backend, choice, build, timed, policy)
                    if outputs is not None:  # None too once verified and let go (keep_outputs)
                        key = backend if backend not in report.outputs else f"{backend}@{choice.spec}"
                        report.outputs[key] = outputs
                policy.after_attempt(backend, result)
                if timed:
                    report.results.append(result)
                    emit(RunFinished(backend, result.device, result))

        # The reference first (its outputs are what the others are compared with), then each
        # other backend as soon as its own build is done; those that cannot run here last.
        order = [ref_backend] + [b for b in requested if b != ref_backend]
        self._context = ctx
        try:
            run_one(ref_backend)
            policy.no_attempt()
            waiting = [b for b in order[1:] if b in runnable]
            while waiting:
                backend = stream.next_done(waiting)
                waiting.remove(backend)
                run_one(backend)
            for backend in order[1:]:
                if backend not in runnable:
                    run_one(backend)
        finally:
            self._context = None
            self._builds = None
            stream.close()
        # The report lists results in the order asked (reference first), however they finished.
        rank = {backend: i for i, backend in enumerate(order)}
        report.results.sort(key=lambda r: rank[r.backend])
        self.pool.forget_inputs()  # the workers kept this run's input mappings between backends
        report.reference = ref_backend
        report.reference_failed = policy.failed
        policy.settle(report.results)  # a mismatch the reference itself may explain is "disputed"
        emit(RunDone(report))
        return report
