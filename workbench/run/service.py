"""The run service: build, run on every backend and device, verify against the reference, time.

    service = RunService()
    report = service.run("resources/examples/saxpy", backends=["cpu", "wgsl"], sizes={"n": 65536})
    print(report.to_json())
    service.close()

Kernels execute in worker processes (`pool.py`), one per runtime, so a crash, a device loss or an
endless loop ends that backend's result as "error" and the others go on. Every backend gets the
same inputs (`inputs.py`); outputs are compared with the reference backend's (`verify.py`) and
launches timed with the timing protocol (`timing.py`).

Devices written `HOST/cpu`, `HOST/wgpu:0` are on a configured GPU host (`workbench.remote`):
the build stays here, the artifact folder goes to the host's cache once per build key, and the
host's workers (one pool per host, started over ssh) run the kernel; the reference may run here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from workbench import __version__
from workbench.backends import BACKENDS, REFERENCE_BACKENDS, RUNTIMES, parse_backends, runtime_of
from workbench.errors import WorkbenchError
from workbench.manifest import Kernel
from workbench.project import Project
from workbench.records import RunResult, TimingStats
from workbench.run import timing as timing_mod
from workbench.run.inputs import DEFAULT_SEED, make_inputs, output_names, verification_inputs
from workbench.run.pool import RequestFailed, WorkerError, WorkerPool, WorkerProcess
from workbench.run.selection import DeviceChoice, choose_devices, resolve_specs
from workbench.run.spec import make_launch_spec
from workbench.run.verify import check_outputs, compare

#: Seconds allowed for steps other than launches (loading a module, compiling a shader, copies).
SETUP_TIMEOUT_S = 120.0
TIMING_KEYS = (
    "median_s",
    "iqr_s",
    "min_s",
    "max_s",
    "n",
    "samples_s",
    "method",
    "resolution_s",
    "conditions",
)


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

    def to_json(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "kernel": self.kernel,
            "results": [result_json(r) for r in self.results],
        }

    @property
    def ok(self) -> bool:
        """True when every result verified (or is the reference) or was skipped."""
        return all(
            r.status == "skipped" or (r.status == "ok" and r.verified is not False and not _unverifiable(r))
            for r in self.results
        )


def _unverifiable(result: RunResult) -> bool:
    return result.verified is None and not result.check.get("is_reference", False)


def result_json(result: RunResult) -> dict[str, Any]:
    """The JSON shape of one result (`workbench run --json`)."""
    timing = None
    if result.timing:
        timing = {key: result.timing.get(key) for key in TIMING_KEYS}
    throughput = {k: result.throughput.get(k) for k in ("gbps", "gflops", "fraction_of_peak")}
    return {
        "backend": result.backend,
        "device": result.device,
        "status": result.status,
        "verified": result.verified,
        "check": result.check,
        "timing": timing,
        "throughput": throughput,
        "error": result.error,
        "provenance": result.provenance,
    }


@dataclass
class _Build:
    """One backend's build outcome as the run needs it."""

    backend: str
    status: str  # ok | error | skipped
    info: dict[str, Any] = field(default_factory=dict)  # build.json
    folder: str = ""
    message: str = ""


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
        self._cancel = threading.Event()
        self._run_lock = threading.Lock()
        self._active: WorkerProcess | None = None
        self._build_service: Any = None
        self._devices: dict[str, dict[str, Any]] = {}
        self._devices_lock = threading.Lock()
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
        build_service = self._build_service
        if build_service is not None:
            build_service.cancel()

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
        `artifacts_dir`) and whose runtime is available here or asked for on a GPU host."""
        if artifacts_dir is not None:
            have = [b for b in BACKENDS if (Path(artifacts_dir) / b / "build.json").is_file()]
        else:
            from workbench.build.toolchains import detect_toolchains

            have = ["cpu"] + [t.backend for t in detect_toolchains() if t.found and t.backend != "cpu"]
        kernel_refs = set().union(*(k.reference for k in project.manifest.kernels))
        chosen = []
        for backend in BACKENDS:
            if backend not in have:
                continue
            if backend in REFERENCE_BACKENDS and backend not in kernel_refs:
                continue  # no reference source to build
            runtime = runtime_of(backend)
            if backend != "cpu" and runtime not in host_runtimes and not self.devices(runtime)["available"]:
                continue
            chosen.append(backend)
        return chosen or ["cpu"]

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
    ) -> RunReport:
        """Build (unless `artifacts_dir`), run, verify and time `kernel` on `backends`.

        `on_event(dict)` is called from this thread with {"kind": ...}: "building" (backends),
        "build-event" (a BuildEvent), "built" (backend, status), "started" (backend, device),
        "phase" (backend, phase: verify | timing), "progress" (backend, phase, done),
        "finished" (backend, device, result: RunResult) and "done" (report)."""
        with self._run_lock:
            self._cancel.clear()
            return self._run(
                project, kernel, backends, devices, sizes, timeout_s, artifacts_dir,
                build_service, on_event, seed, cache_dir, tunables,
            )  # fmt: skip

    # ------------------------------------------------------------------ the run

    def _run(self, project, kernel, backends, devices, sizes, timeout_s, artifacts_dir,
             build_service, on_event, seed, cache_dir, tunables) -> RunReport:  # fmt: skip
        if not isinstance(project, Project):
            project = Project.open(project)
        k = project.manifest.kernel(kernel)
        try:
            symbols = k.symbols(sizes, tunables)
        except ValueError as exc:
            raise RunError(str(exc)) from None
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
        ref_backend = k.check.reference
        needed = list(requested) + ([ref_backend] if ref_backend not in requested else [])
        report = RunReport(project=project.name, kernel=k.name, seed=run_seed, sizes=ctx.sizes)
        # A backend whose runtime cannot run here (nor on a chosen host) is not worth building.
        runnable = [
            b for b in needed
            if any(runtime_of(b) in idx for idx in remote_indices.values())
            or self.devices(runtime_of(b)).get("available")
        ]  # fmt: skip
        builds = self._builds(project, runnable, artifacts_dir, build_service, cache_dir, emit, tunables)
        for backend in needed:
            builds.setdefault(backend, _Build(backend, "skipped", message="its runtime is unavailable"))
        try:
            ctx.inputs = make_inputs(k, symbols, run_seed, project.root)
        except ValueError as exc:  # an expression that cannot be evaluated for these sizes
            raise RunError(f"kernel {k.name!r}: {exc}") from None

        # The reference first (its outputs are what the others are compared with).
        order = [ref_backend] + [b for b in requested if b != ref_backend]
        reference: dict[str, Any] = {"name": ref_backend, "outputs": None, "fallback": False, "note": ""}
        for backend in order:
            timed = backend in requested
            for choice in self._device_choices(backend, device_indices, remote_indices):
                if self._cancel.is_set():
                    report.cancelled = True
                    result = self._skipped(ctx, backend, choice, "cancelled", builds.get(backend))
                else:
                    emit({"kind": "started", "backend": backend, "device": choice.device})
                    result, outputs = self._run_backend(
                        ctx, backend, choice, builds[backend], timed, reference
                    )
                    if outputs is not None:
                        key = backend if backend not in report.outputs else f"{backend}@{choice.spec}"
                        report.outputs[key] = outputs
                self._after_reference_attempt(backend, result, reference, timed)
                if timed:
                    report.results.append(result)
                    emit({"kind": "finished", "backend": backend, "device": result.device, "result": result})
        report.reference = reference["name"]
        emit({"kind": "done", "report": report})
        return report

    def _after_reference_attempt(self, backend, result: RunResult, reference: dict, timed: bool) -> None:
        """After the reference backend ran: keep its outputs, or decide what the others get."""
        if backend != reference["name"] or reference["outputs"] is not None or reference.get("decided"):
            return
        reference["decided"] = True
        if result.status == "ok":
            return  # outputs were stored by _run_backend
        why = result.error or "skipped"
        if result.status == "error" and timed:
            # The requested reference failed: nothing trustworthy to compare with.
            reference["note"] = f"reference {backend} failed ({_first_line(why)}): nothing to compare with"
            reference["unverifiable"] = True
        else:
            reference["fallback"] = True
            reference["note"] = f"reference {backend} did not run ({_first_line(why)})"

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

    # ------------------------------------------------------------------ builds

    def _builds(
        self, project, backends, artifacts_dir, build_service, cache_dir, emit, tunables=None
    ) -> dict[str, _Build]:
        from workbench.build.artifacts import read_build

        out: dict[str, _Build] = {}
        if artifacts_dir is not None:
            for backend in backends:
                folder = Path(artifacts_dir) / backend
                if not (folder / "build.json").is_file():
                    out[backend] = _Build(
                        backend, "skipped", message=f"no build for {backend} in {artifacts_dir}"
                    )
                    continue
                try:
                    out[backend] = _Build(backend, "ok", read_build(folder), str(folder))
                except (OSError, ValueError, WorkbenchError) as exc:
                    out[backend] = _Build(backend, "error", message=f"cannot read {folder}/build.json: {exc}")
            return out
        if not backends:
            return out
        emit({"kind": "building", "backends": list(backends)})
        if build_service is not None:
            self._build_service = build_service
            try:
                results = list(
                    build_service.submit(project, list(backends), tunables=tunables).wait().values()
                )
            finally:
                self._build_service = None
        else:
            from workbench.build import build_project

            results = build_project(
                project, list(backends), cache_dir=cache_dir, tunables=tunables,
                on_event=lambda event: emit({"kind": "build-event", "event": event}),
            )  # fmt: skip
        for result in results:
            if result.status == "ok":
                try:
                    info = read_build(result.artifact_dir)
                except (OSError, ValueError, WorkbenchError) as exc:
                    out[result.backend] = _Build(result.backend, "error", message=f"unreadable build: {exc}")
                    continue
                out[result.backend] = _Build(result.backend, "ok", info, result.artifact_dir)
            elif result.status == "skipped":
                out[result.backend] = _Build(
                    result.backend,
                    "skipped",
                    message=f"not built: {result.hint}" if result.hint else "not built",
                )
            else:
                out[result.backend] = _Build(result.backend, "error", message=_build_error(result))
            emit({"kind": "built", "backend": result.backend, "status": result.status})
        for backend in backends:
            out.setdefault(backend, _Build(backend, "skipped", message="the build service returned nothing"))
        return out

    # ------------------------------------------------------------------ one backend on one device

    def _skipped(self, ctx: _Context, backend: str, choice: DeviceChoice, reason: str, build) -> RunResult:
        return RunResult(
            backend=backend, device=choice.device, status="skipped", verified=None,
            check={}, timing=None, throughput=_no_throughput(), error=reason,
            provenance=self._provenance(ctx, backend, choice, build, None),
        )  # fmt: skip

    def _run_backend(
        self, ctx: _Context, backend: str, choice: DeviceChoice, build: _Build, timed: bool, reference: dict
    ) -> tuple[RunResult, dict[str, np.ndarray] | None]:
        if not choice.available:
            return self._skipped(ctx, backend, choice, choice.reason, build), None
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
        stats = conditions = None
        verified, check = None, {}
        try:
            worker = self._pool_for(choice.host).get(spec["runtime"])
            self._active = worker
            self._check_cancel()
            prepared = worker.request(
                {"op": "prepare", "spec": spec, "device_index": choice.index}, timeout_s=SETUP_TIMEOUT_S
            )[0]
            resolution = float(prepared["timer_resolution_s"])
            ctx.emit({"kind": "phase", "backend": backend, "phase": "verify"})
            worker.request(
                {"op": "upload"}, verification_inputs(ctx.kernel, ctx.inputs), timeout_s=SETUP_TIMEOUT_S
            )
            worker.request(
                {"op": "launch", "count": 1}, timeout_s=ctx.timeout_s, phase="the verification launch"
            )
            names = output_names(ctx.kernel)
            outputs = worker.request({"op": "download", "names": names}, timeout_s=SETUP_TIMEOUT_S)[1]
            verified, check = self._verify(ctx, backend, outputs, reference)
            if timed:
                ctx.emit({"kind": "phase", "backend": backend, "phase": "timing"})

                # The worker runs the timing protocol itself, launches back to back like a bare
                # loop; its heartbeats keep the per-launch deadline.
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
                conditions = reply.get("conditions")  # cache policy, clocks, energy (worker.py)
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
            timing=dict(stats.to_dict(), conditions=conditions) if stats else None,
            throughput=_no_throughput(), error=None,
            provenance=self._provenance(ctx, backend, choice, build, spec, stats),
        )  # fmt: skip
        if stats is not None:
            result.throughput = timing_mod.throughput(
                stats.median_s,
                ctx.kernel.metric("bytes", ctx.symbols),
                ctx.kernel.metric("flops", ctx.symbols),
                choice.device,
            )
        return result, outputs

    def _verify(self, ctx: _Context, backend: str, outputs: dict[str, np.ndarray], reference: dict):
        """(verified, check) of one backend's outputs; becomes the reference when it is one."""
        k = ctx.kernel
        poisoned = tuple(b.name for b in k.buffers if b.direction == "out")
        base = {"rtol": k.check.rtol, "atol": k.check.atol, "max_ulp": k.check.max_ulp}
        is_reference = (
            reference["outputs"] is None
            and (backend == reference["name"] or reference["fallback"])
            and not reference.get("unverifiable")
        )
        if is_reference:
            if backend != reference["name"]:
                reference["note"] += f"; compared with {backend}, the first backend that ran"
                reference["name"] = backend
            reference["outputs"] = outputs
            # The reference's own health: NaNs, infinities, elements it never wrote.
            own = {
                name: compare(out, out, 0.0, 0.0, check_poison=name in poisoned)
                for name, out in outputs.items()
            }
            check = dict(base, reference=backend, is_reference=True,
                         nan_count=sum(c["nan_count"] for c in own.values()),
                         inf_count=sum(c["inf_count"] for c in own.values()),
                         unwritten=sum(c["unwritten"] for c in own.values()))  # fmt: skip
            if reference["note"]:
                check["note"] = reference["note"]
            return None, check
        if reference["outputs"] is None:
            return None, dict(
                base, reference=reference["name"], note=reference["note"] or "no reference outputs"
            )
        verified, check = check_outputs(
            outputs,
            reference["outputs"],
            k.check.rtol,
            k.check.atol,
            k.check.max_ulp,
            poisoned,
            reference["name"],
        )
        if reference["note"]:
            check["note"] = reference["note"]
        return verified, check

    def _remote_spec(self, host: str, backend: str, build: _Build, spec: dict[str, Any]) -> dict[str, Any]:
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
            backend=backend, device=choice.device, status="error", verified=verified, check=check or {},
            timing=None, throughput=_no_throughput(), error=message,
            provenance=self._provenance(ctx, backend, choice, build, spec),
        )  # fmt: skip

    def _provenance(self, ctx: _Context, backend, choice: DeviceChoice, build, spec, stats=None) -> dict:
        info = build.info if build is not None else {}
        return {
            "source_hash": info.get("source_hash") or ctx.source_hash,
            "build_key": info.get("key"),
            "toolchain": info.get("toolchain"),
            "flags": info.get("flags"),
            "target": info.get("target"),
            "artifact": spec["artifact"] if spec else None,
            "project": ctx.project.name,
            "kernel": ctx.kernel.name,
            "sizes": ctx.sizes,
            "tunables": ctx.tunables,
            "seed": ctx.seed,
            "timing_method": stats.method if stats else None,
            "timing_batch": stats.batch if stats else None,
            "timing_warmup": stats.warmup if stats else None,
            "timing_options": timing_mod.options_to_dict(self.timing),
            "timing_fresh_inputs": ctx.kernel.fresh_inputs,
            "device": choice.spec,
            "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "workbench": __version__,
            **({"host": self._host_record(choice.host)} if choice.host else {}),
        }

    def _host_record(self, name: str) -> dict[str, Any]:
        host = self._host(name)
        return {"name": host.name, "url": host.url, "python": host.python}


def _no_throughput() -> dict[str, Any]:
    return {"gbps": None, "gflops": None, "fraction_of_peak": None}


def _first_line(text: str) -> str:
    return (text or "").strip().splitlines()[0] if (text or "").strip() else ""


def _build_error(result: Any) -> str:
    """The first error diagnostic of a failed build, else the tail of its log."""
    for diagnostic in result.diagnostics or []:
        if diagnostic.get("severity") == "error":
            where = ""
            if diagnostic.get("file"):
                where = f"{diagnostic['file']}:{diagnostic.get('line') or '?'}: "
            return where + diagnostic.get("message", "")
    log = (result.log or "").strip().splitlines()
    return " | ".join(log[-3:]) if log else result.hint or "build failed"
