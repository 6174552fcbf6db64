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

Devices written `HOST/cpu`, `HOST/wgpu:0` are on a configured GPU host (`workbench.remote`):
the build stays here, the artifact folder goes to the host's cache once per build key, and the
host's workers (one pool per host, started over ssh) run the kernel; the reference may run here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import cached_property, partial
from pathlib import Path
from typing import Any

import numpy as np

from workbench.backends import BACKENDS, RUNTIMES, parse_backends, runtime_of
from workbench.errors import WorkbenchError
from workbench.manifest import Kernel, format_bytes, host_memory_bytes
from workbench.project import Project
from workbench.provenance import provenance
from workbench.records import CheckRecord, RunResult, TimingStats
from workbench.run import sim_findings
from workbench.run import timing as timing_mod
from workbench.run.buffers import BackendBuffers, memory_plan
from workbench.run.build_stage import BuildStream, StagedBuild
from workbench.run.host_load import HostLoad
from workbench.run.inputs import DEFAULT_SEED, InputCache, output_names
from workbench.run.pool import RequestFailed, WorkerError, WorkerPool, WorkerProcess, side_by_side
from workbench.run.reference import ReferencePolicy
from workbench.run.selection import DeviceChoice, choose_devices, default_backends, resolve_specs
from workbench.run.spec import make_launch_spec

#: Seconds allowed for steps other than launches (loading a module, compiling a shader, copies).
SETUP_TIMEOUT_S = 120.0
TIMING_KEYS = TimingStats.JSON_KEYS
#: What a skipped row says of a backend whose runtime is unavailable while the caller (the
#: window) builds it anyway, for its artifacts: the run does not wait for that build.
BACKGROUND_BUILD_NOTE = "built in the background for inspection, not run"


class RunError(WorkbenchError):
    """A run cannot start: unknown size, backend or device, or a missing artifact folder."""


class RunCancelled(Exception):
    """Internal: the caller cancelled the run."""


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

    def to_json(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "kernel": self.kernel,
            "results": [r.to_json() for r in self.results],
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


def result_json(result: RunResult) -> dict[str, Any]:
    """The JSON shape of one result (`workbench run --json`); see `RunResult.to_json`."""
    return result.to_json()


@dataclass
class _Context:
    project: Project
    kernel: Kernel
    symbols: dict[str, int | float]
    sizes: dict[str, int]
    tunables: dict[str, int | float]
    seed: int
    inputs: dict[str, np.ndarray]
    timeout_s: float
    emit: Callable[[dict[str, Any]], None]
    #: Backends whose outputs the report keeps (the reference's always): the others' `receive`
    #: segments pass to the next backend (`BackendBuffers.recycle`).
    keeps_outputs: Callable[[str], bool] = lambda backend: True
    spare: dict = field(default_factory=dict)

    @cached_property
    def source_hash(self) -> str | None:
        """The project's source hash for results without a build record (read once per run)."""
        try:
            return self.project.source_hash()
        except OSError:
            return None


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
        # Inputs made once per (initializer, seed, size, type): shared by every backend of a run
        # and by the next runs of a sweep or a tuning session in this process.
        self.inputs = InputCache()
        self._cancel = threading.Event()
        self._run_lock = threading.Lock()
        self._active: WorkerProcess | None = None
        self._builds: BuildStream | None = None  # the run's builds in flight (cancelled with it)
        self._devices: dict[str, dict[str, Any]] = {}
        self._devices_lock = threading.Lock()
        self._runtime_locks: dict[str, threading.Lock] = {}
        self._on_stderr = on_stderr
        self._remote_pools: dict[str, WorkerPool] = {}  # host name → its workers (over ssh)
        self._hosts: dict[str, Any] = {}  # host name → workbench.remote.hosts.Host

    # ------------------------------------------------------------------ public

    def cancel(self) -> None:
        """Stop the run in progress (safe from any thread): the launch in flight is killed."""
        self._cancel.set()
        worker = self._active
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
            pools, self._remote_pools = list(self._remote_pools.values()), {}
            for pool in pools:
                pool.close()

    def devices(self, runtime: str, refresh: bool = False) -> dict[str, Any]:
        """{"available", "reason", "devices"} of one runtime, as its worker sees it (cached).

        The worker is the child process that will run the kernels anyway, so asking it costs no
        extra probe, and a driver that crashes while probing takes down only that worker."""
        with self._devices_lock:
            lock = self._runtime_locks.setdefault(runtime, threading.Lock())
        with lock:  # one probe per runtime at a time; runtimes probe side by side (`_probe`)
            if refresh or runtime not in self._devices:
                try:
                    worker = self.pool.get(runtime)
                    info = worker.request({"op": "devices"}, timeout_s=SETUP_TIMEOUT_S)[0]
                except WorkerError as exc:
                    info = {"available": False, "reason": str(exc), "devices": []}
                if not info.get("available"):
                    self.pool.stop(runtime)  # nothing will run there
                self._devices[runtime] = info
            return self._devices[runtime]

    def _probe(self, runtimes: set[str]) -> None:
        """Ask every runtime not probed yet for its devices, side by side: each probe starts a
        worker (importing pycuda and creating a context, or enumerating Vulkan adapters takes a
        second or more on a GPU host), and one after the other they added up."""
        missing = sorted(r for r in runtimes if r not in self._devices)
        side_by_side([partial(self.devices, r) for r in missing], "wb-probe")

    # ------------------------------------------------------------------ GPU hosts (workbench.remote)

    def _host(self, name: str):
        if name not in self._hosts:
            from workbench.remote.hosts import HostStore

            self._hosts[name] = HostStore().get(name)
        return self._hosts[name]

    def host_devices(self, name: str, refresh: bool = False) -> dict[str, dict[str, Any]]:
        """A configured host's devices by runtime (specs `NAME/cpu` …), probed over ssh (cached)."""
        from workbench.remote.probe import host_devices

        return host_devices(self._host(name), refresh=refresh)

    def _pool_for(self, host: str | None) -> WorkerPool:
        if host is None:
            return self.pool
        if host not in self._remote_pools:
            from workbench.remote.launcher import RemoteLauncher

            launcher = RemoteLauncher(self._host(host))
            self._remote_pools[host] = WorkerPool(on_stderr=self._on_stderr, launcher=launcher)
        return self._remote_pools[host]

    def _split_device_specs(
        self, specs: list[str]
    ) -> tuple[dict[str, list[int]], dict[str, dict[str, list[int]]]]:
        """--device specs → (local {runtime: [index]}, {host: {runtime: [index]}})."""
        local = [s for s in specs if "/" not in s]
        remote: dict[str, list[str]] = {}
        if len(local) < len(specs):
            from workbench.remote.hosts import HostError, HostStore, split_spec

            names = HostStore().names()
            for spec in specs:
                if "/" in spec:
                    try:
                        name, rest = split_spec(spec, names)
                    except HostError as exc:
                        raise RunError(str(exc)) from None
                    remote.setdefault(name, []).append(rest)
        local_indices = resolve_specs(local, self.all_devices()) if local else {}
        remote_indices = {name: resolve_specs(s, self.host_devices(name)) for name, s in remote.items()}
        return local_indices, remote_indices

    def all_devices(self) -> dict[str, dict[str, Any]]:
        """Every runtime's devices, in the shape of `workbench.run.devices.list_devices()`."""
        return {runtime: self.devices(runtime) for runtime in RUNTIMES}

    def default_backends(
        self,
        project: Project,
        artifacts_dir: str | Path | None = None,
        host_runtimes: frozenset[str] = frozenset(),
    ) -> list[str]:
        """cpu, plus every backend whose toolchain is installed (or whose artifacts are in
        `artifacts_dir`) and whose runtime is available here or asked for on a GPU host
        (`selection.default_backends`, the rule the window follows too)."""
        if artifacts_dir is not None:
            have = [b for b in BACKENDS if (Path(artifacts_dir) / b / "build.json").is_file()]
        else:
            from workbench.build.toolchains import detect_toolchains

            have = ["cpu"] + [t.backend for t in detect_toolchains() if t.found and t.backend != "cpu"]
        kernel_refs = set().union(*(k.reference for k in project.manifest.kernels))
        return default_backends(
            have, kernel_refs, lambda runtime: runtime in host_runtimes or self.devices(runtime)["available"]
        )

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
        on_event: Callable[[dict[str, Any]], None] | None = None,
        seed: int | None = None,
        cache_dir: str | Path | None = None,
        tunables: dict[str, int | float] | None = None,
        reference: str | None = None,
        keep_outputs: bool = True,
        build_job: Any = None,
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

        `on_event(dict)` is called from this thread with {"kind": ...}: "building" (backends),
        "build-event" (a BuildEvent), "built" (backend, status), "started" (backend, device),
        "phase" (backend, phase: verify | timing), "progress" (backend, phase, done),
        "finished" (backend, device, result: RunResult) and "done" (report)."""
        with self._run_lock:
            self._cancel.clear()
            load = HostLoad().start()
            report = self._run(
                project, kernel, backends, devices, sizes, timeout_s, artifacts_dir,
                build_service, on_event, seed, cache_dir, tunables, reference, keep_outputs,
                build_job,
            )  # fmt: skip
            report.host_conditions = load.stop()
            return report

    # ------------------------------------------------------------------ the run

    def _run(self, project, kernel, backends, devices, sizes, timeout_s, artifacts_dir,
             build_service, on_event, seed, cache_dir, tunables, reference_choice,
             keep_outputs=True, build_job=None) -> RunReport:  # fmt: skip
        if not isinstance(project, Project):
            project = Project.open(project)
        k = project.manifest.kernel(kernel)
        try:
            symbols = k.symbols(sizes, tunables)
        except ValueError as exc:
            raise RunError(str(exc)) from None
        # Every length and value at these sizes, located in workbench.toml when wrong.
        k.evaluate(symbols, memory_bytes=host_memory_bytes())
        # What the whole run holds at once (inputs, a backend's working buffers, the reference's
        # outputs): refused here, before anything is allocated, when it cannot fit.
        plan = memory_plan(k, symbols)
        if plan.problem:
            raise RunError(f"kernel {k.name!r}: {plan.problem}")
        if isinstance(backends, str):
            backends = [b for b in backends.split(",") if b.strip()]
        device_indices, remote_indices = self._split_device_specs(list(devices or []))
        if backends:
            requested = parse_backends(",".join(backends))
        else:
            on_hosts = frozenset(r for idx in remote_indices.values() for r in idx)
            requested = self.default_backends(project, artifacts_dir, on_hosts)
        if artifacts_dir is not None and not Path(artifacts_dir).is_dir():
            raise RunError(f"artifact folder {artifacts_dir} does not exist")

        def emit(event: dict[str, Any]) -> None:
            if on_event is not None:
                on_event(event)

        run_seed = DEFAULT_SEED if seed is None else int(seed)
        ctx = _Context(
            project=project, kernel=k, symbols=symbols,
            sizes={name: int(symbols[name]) for name in k.sizes},
            tunables={name: symbols[name] for name in k.tunables},
            seed=run_seed, inputs={}, timeout_s=float(timeout_s), emit=emit,
        )  # fmt: skip
        if reference_choice is not None and reference_choice not in BACKENDS:
            raise RunError(f"unknown reference backend {reference_choice!r}; valid: {', '.join(BACKENDS)}")
        policy = ReferencePolicy.for_run(k, reference_choice)
        ref_backend = policy.backend
        ctx.keeps_outputs = lambda backend: keep_outputs or backend == ref_backend
        needed = list(requested) + ([ref_backend] if ref_backend not in requested else [])
        report = RunReport(project=project.name, kernel=k.name, seed=run_seed, sizes=ctx.sizes)
        on_hosts = {r for idx in remote_indices.values() for r in idx}
        # The inputs are drawn while the workers start and the builds run (all of it untimed):
        # at 2^28 elements either takes about a second on a GPU host.
        with ThreadPoolExecutor(1, thread_name_prefix="wb-run-inputs") as background:
            inputs = background.submit(self.inputs.make, k, symbols, run_seed, project.root)
            self._probe({runtime_of(b) for b in needed if runtime_of(b) not in on_hosts})
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
                    project, runnable, emit, build_service=build_service, job=build_job,
                    cache_dir=cache_dir, tunables=tunables,
                )  # fmt: skip
            self._builds = stream
            try:
                emit({"kind": "phase", "backend": None, "phase": "inputs"})
                try:
                    ctx.inputs = inputs.result()
                except ValueError as exc:  # an expression that cannot be evaluated for these sizes
                    raise RunError(f"kernel {k.name!r}: {exc}") from None
            except BaseException:
                self._builds = None
                stream.close()
                raise
        in_background = set(build_job.backends) if build_job is not None else set()

        def build_of(backend: str) -> StagedBuild:
            if backend in runnable:
                return stream.get(backend)
            note = f"; {BACKGROUND_BUILD_NOTE}" if backend in in_background else ""
            return StagedBuild(backend, "skipped", message=f"its runtime is unavailable{note}")

        def run_one(backend: str) -> None:
            timed = backend in requested
            build = build_of(backend)
            for choice in self._device_choices(backend, device_indices, remote_indices):
                if self._cancel.is_set():
                    report.cancelled = True
                    result = self._skipped(ctx, backend, choice, "cancelled", build)
                else:
                    if not choice.available and backend in in_background:
                        choice = replace(choice, reason=f"{choice.reason}; {BACKGROUND_BUILD_NOTE}")
                    emit({"kind": "started", "backend": backend, "device": choice.device})
                    result, outputs = self._run_backend(ctx, backend, choice, build, timed, policy)
                    if outputs is not None:  # None too once verified and let go (keep_outputs)
                        key = backend if backend not in report.outputs else f"{backend}@{choice.spec}"
                        report.outputs[key] = outputs
                policy.after_attempt(backend, result)
                if timed:
                    report.results.append(result)
                    emit({"kind": "finished", "backend": backend, "device": result.device, "result": result})

        # The reference first (its outputs are what the others are compared with), then each
        # other backend as soon as its own build is done; those that cannot run here last.
        order = [ref_backend] + [b for b in requested if b != ref_backend]
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
            self._builds = None
            stream.close()
        # The report lists results in the order asked (reference first), however they finished.
        rank = {backend: i for i, backend in enumerate(order)}
        report.results.sort(key=lambda r: rank[r.backend])
        self.pool.forget_inputs()  # the workers kept this run's input mappings between backends
        report.reference = ref_backend
        emit({"kind": "done", "report": report})
        return report

    def _device_choices(
        self,
        backend: str,
        indices: dict[str, list[int]],
        remote: dict[str, dict[str, list[int]]] | None = None,
    ) -> list[DeviceChoice]:
        """The devices asked for (here and on hosts); a runtime asked for nowhere: the default here."""
        runtime = runtime_of(backend)
        remote = remote or {}
        choices: list[DeviceChoice] = []
        if runtime in indices or not any(runtime in idx for idx in remote.values()):
            choices = choose_devices(runtime, self.devices(runtime), indices.get(runtime, []))
        for host, idx in remote.items():
            if runtime in idx:
                found = choose_devices(runtime, self.host_devices(host)[runtime], idx[runtime])
                choices += [replace(c, host=host) for c in found]
        return choices

    # ------------------------------------------------------------------ one backend on one device

    def _skipped(self, ctx: _Context, backend: str, choice: DeviceChoice, reason: str, build) -> RunResult:
        return RunResult(
            backend=backend, device=choice.device, status="skipped", verified=None,
            check=CheckRecord(), timing=None, throughput=_no_throughput(), error=reason,
            provenance=self._provenance(ctx, backend, choice, build, None),
        )  # fmt: skip

    def _run_backend(
        self,
        ctx: _Context,
        backend: str,
        choice: DeviceChoice,
        build: StagedBuild,
        timed: bool,
        policy: ReferencePolicy,
    ) -> tuple[RunResult, dict[str, np.ndarray] | None]:
        if not choice.available:
            return self._skipped(ctx, backend, choice, choice.reason, build), None
        memory = choice.device.get("total_memory_bytes")
        need = sum(array.nbytes for array in ctx.inputs.values())
        if memory and need > memory:
            message = f"the buffers need {format_bytes(need)}, more than the {format_bytes(memory)} of {choice.spec}"
            return self._error(ctx, backend, choice, build, message), None
        if build.status != "ok":
            if build.status == "skipped":
                return self._skipped(ctx, backend, choice, build.message, build), None
            return self._error(ctx, backend, choice, build, f"build failed: {build.message}"), None
        kernels = build.info.get("kernels", {})
        if ctx.kernel.name not in kernels:
            names = ", ".join(kernels) or "none"
            message = f"the {backend} build has no kernel {ctx.kernel.name!r} (it has: {names})"
            return self._error(ctx, backend, choice, build, message), None
        try:
            spec = make_launch_spec(
                ctx.kernel, backend, kernels[ctx.kernel.name], ctx.symbols, choice.index, build.folder
            )
        except (ValueError, WorkbenchError) as exc:
            return self._error(ctx, backend, choice, build, str(exc)), None

        if choice.host is not None:
            try:
                spec = self._remote_spec(choice.host, backend, build, spec)
            except WorkbenchError as exc:
                return self._error(ctx, backend, choice, build, str(exc)), None

        worker: WorkerProcess | None = None
        stats = None
        verified, check = None, CheckRecord()
        try:
            worker = self._pool_for(choice.host).get(spec["runtime"])
            self._active = worker
            self._check_cancel()
            prepared = worker.request(
                {"op": "prepare", "spec": spec, "device_index": choice.index}, timeout_s=SETUP_TIMEOUT_S
            )[0]
            resolution = float(prepared["timer_resolution_s"])
            ctx.emit({"kind": "phase", "backend": backend, "phase": "upload"})
            buffers = BackendBuffers(
                ctx.kernel, ctx.inputs, self.inputs, shared=worker.shared, spare=ctx.spare
            )
            header, arrays, fds = buffers.upload_request(
                restore=ctx.kernel.fresh_inputs, binds=bool(prepared.get("binds", True))
            )
            worker.request(header, arrays, timeout_s=SETUP_TIMEOUT_S, fds=fds)
            ctx.emit({"kind": "phase", "backend": backend, "phase": "launch"})
            launched = worker.request(
                {"op": "launch", "count": 1}, timeout_s=ctx.timeout_s, phase="the verification launch"
            )[0]
            findings = _findings(ctx, launched, backend)
            names = output_names(ctx.kernel)
            ctx.emit({"kind": "phase", "backend": backend, "phase": "download"})
            reply, received = worker.request(
                {"op": "download", "names": names, "into_shared": buffers.shared, "timing_follows": timed},
                timeout_s=SETUP_TIMEOUT_S,
            )
            outputs = buffers.outputs(names, reply, received)
            ctx.emit({"kind": "phase", "backend": backend, "phase": "verify"})
            pending = None
            if timed and _verify_while_timing(choice.device, outputs):
                # The host's cores compare while the GPU is timed (see _verify_while_timing).
                checker = ThreadPoolExecutor(1, thread_name_prefix="wb-run-verify")
                pending = checker.submit(policy.check, backend, outputs, ctx.kernel)
            else:
                verified, check = policy.check(backend, outputs, ctx.kernel)
            try:
                if timed:
                    ctx.emit({"kind": "phase", "backend": backend, "phase": "timing"})

                    # The worker runs the timing protocol itself, launches back to back like a
                    # bare loop; its heartbeats keep the per-launch deadline.
                    reply = worker.request(
                        {
                            "op": "measure",
                            "options": timing_mod.options_to_dict(self.timing),
                            "resolution_s": resolution,
                            # [kernel.timing] fresh_inputs: in-place buffers restored before every sample
                            "restore": ctx.kernel.fresh_inputs,
                        },
                        timeout_s=ctx.timeout_s,
                        phase="a timed launch",
                        on_progress=lambda p: ctx.emit({"kind": "progress", "backend": backend, **p}),
                    )[0]
                    stats = TimingStats.from_dict(reply["stats"])
                    stats.conditions = reply.get("conditions")  # cache policy, clocks, energy (worker.py)
            finally:
                if pending is not None:
                    try:
                        verified, check = pending.result()  # before an error is reported: it keeps them
                    finally:
                        checker.shutdown()
            if not ctx.keeps_outputs(backend):
                outputs = None  # verified and let go: its segments serve the next backend
                buffers.recycle(ctx.spare)
            worker.request({"op": "close"}, timeout_s=SETUP_TIMEOUT_S)
        except (WorkerError, timing_mod.Cancelled, RunCancelled) as exc:
            cancelled = self._cancel.is_set()
            if worker is not None and (cancelled or getattr(exc, "fatal", True)):
                worker.shutdown()  # device state unknown: the next request gets a fresh worker
            elif worker is not None and isinstance(exc, RequestFailed):
                try:
                    worker.request({"op": "close"}, timeout_s=SETUP_TIMEOUT_S)
                except WorkerError:
                    worker.shutdown()
            if cancelled:
                return self._skipped(ctx, backend, choice, "cancelled", build), None
            # A fault after the verification launch keeps what the check found.
            return self._error(ctx, backend, choice, build, str(exc), spec, verified, check), None
        finally:
            self._active = None

        result = RunResult(
            backend=backend, device=choice.device, status="ok", verified=verified, check=check,
            timing=stats, throughput=_no_throughput(), error=None,
            provenance=self._provenance(ctx, backend, choice, build, spec, stats), findings=findings,
        )  # fmt: skip
        if stats is not None:
            result.throughput = timing_mod.throughput(
                stats.median_s,
                ctx.kernel.metric("bytes", ctx.symbols),
                ctx.kernel.metric("flops", ctx.symbols),
                choice.device,
            )
        return result, outputs

    def _remote_spec(
        self, host: str, backend: str, build: StagedBuild, spec: dict[str, Any]
    ) -> dict[str, Any]:
        """The launch spec with its artifact path on `host` (the build folder sent there once)."""
        from workbench.remote.artifacts import stage

        remote_dir = stage(self._host(host), backend, build.folder, build.info)
        local = Path(spec["artifact"]["path"])
        relative = local.relative_to(Path(build.folder).resolve())
        return dict(spec, artifact=dict(spec["artifact"], path=f"{remote_dir}/{relative.as_posix()}"))

    def _check_cancel(self) -> None:
        if self._cancel.is_set():
            raise RunCancelled()

    def _error(self, ctx, backend, choice, build, message, spec=None, verified=None, check=None) -> RunResult:
        return RunResult(
            backend=backend, device=choice.device, status="error", verified=verified,
            check=check or CheckRecord(),
            timing=None, throughput=_no_throughput(), error=message,
            provenance=self._provenance(ctx, backend, choice, build, spec),
        )  # fmt: skip

    def _provenance(self, ctx: _Context, backend, choice: DeviceChoice, build, spec, stats=None) -> dict:
        record = provenance(
            build_info=build.info if build is not None else {},
            source_hash=ctx.source_hash,
            # The launch spec's artifact, less the runtime's hint (`entry_origin`).
            artifact={k: v for k, v in spec["artifact"].items() if k != "entry_origin"} if spec else None,
            project=ctx.project.name,
            project_dir=str(ctx.project.root),
            kernel=ctx.kernel.name,
            sizes=ctx.sizes,
            tunables=ctx.tunables,
            seed=ctx.seed,
            device_spec=choice.spec,
            timing_options=timing_mod.options_to_dict(self.timing),
            fresh_inputs=ctx.kernel.fresh_inputs,
            stats=stats,
        )
        if choice.host:
            record["host"] = self._host_record(choice.host)
        return record

    def _host_record(self, name: str) -> dict[str, Any]:
        host = self._host(name)
        return {"name": host.name, "url": host.url, "python": host.python}


#: Outputs at least this many elements are compared while the GPU is timed (below, the comparison
#: takes milliseconds and overlapping it gains nothing).
VERIFY_OVERLAP_MIN_ELEMENTS = 1 << 22


def _verify_while_timing(device: dict[str, Any], outputs: dict[str, np.ndarray]) -> bool:
    """Whether a backend's outputs may be compared on the host while its kernel is timed.

    Only on a discrete GPU (cuda, or a wgpu adapter of type DiscreteGPU), where the timed work and
    its clock (CUDA events, timestamp queries) are on the device and the launches of a batch are
    queued ahead: host cores busy comparing do not enter the measurement. Never where the kernel
    itself runs on host cores or shares their memory (the cpu runtime, llvmpipe, integrated GPUs).
    At 2^28 elements the comparison takes about a second on the H200 host, as long as the timing."""
    if sum(int(a.size) for a in outputs.values()) < VERIFY_OVERLAP_MIN_ELEMENTS:
        return False
    runtime = device.get("runtime")
    return runtime == "cuda" or (runtime == "wgpu" and device.get("adapter_type") == "DiscreteGPU")


def _no_throughput() -> dict[str, Any]:
    return {"gbps": None, "gflops": None, "fraction_of_peak": None}


def _findings(ctx: _Context, reply: dict[str, Any], backend: str) -> dict[str, Any] | None:
    """cpu-sim's findings from the verification launch, located in the project (None: no checks)."""
    report = reply.get("findings")
    if report is None:
        return None
    return sim_findings.located(report, ctx.project.manifest.crate_dir, ctx.project.root, backend)
