"""One backend's run on one device: the conversation with its worker (prepare, upload, the
verification launch, download, check, timing, close) and the `RunResult` made of it.

A fault ends this backend's result as "error" (the worker is restarted when its state is
unknown) and the run goes on with the others; a fault after the verification launch keeps what
the check found. `RunContext` is what the run (`service.py`) hands every backend: the kernel
evaluated once at the run's sizes (`values`), the inputs, the timing options, where to report.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from workbench.errors import WorkbenchError
from workbench.manifest import Kernel, Values
from workbench.project import Project
from workbench.provenance import provenance
from workbench.records import CheckRecord, RunResult, TimingStats
from workbench.run import sim_findings, sim_trace, sim_writers
from workbench.run import timing as timing_mod
from workbench.run.buffers import BackendBuffers
from workbench.run.build_stage import StagedBuild
from workbench.run.ceilings import memory_roof
from workbench.run.ceilings_roof import roof_fields
from workbench.run.device_catalog import DeviceCatalog
from workbench.run.events import RunEvent, RunPhase, RunProgress, RunVerified
from workbench.run.inputs import InputCache, output_names
from workbench.run.pool import SETUP_TIMEOUT_S, RequestFailed, WorkerError, WorkerProcess
from workbench.run.reference import ReferencePolicy
from workbench.run.selection import DeviceChoice
from workbench.run.spec import make_launch_spec
from workbench.units import format_bytes

#: Outputs at least this many elements are compared while the GPU is timed (below, the comparison
#: takes milliseconds and overlapping it gains nothing).
VERIFY_OVERLAP_MIN_ELEMENTS = 1 << 22


class RunCancelled(Exception):
    """Internal: the caller cancelled the run."""


@dataclass
class RunContext:
    """What every backend of one run reads: the kernel evaluated once at the run's sizes, the
    inputs, the run's timing options, its devices and workers, and where events go."""

    project: Project
    kernel: Kernel
    #: Sizes and tunables (`Kernel.symbols`): what the launch spec's pipeline constants read.
    symbols: dict[str, int | float]
    #: The kernel evaluated at `symbols` (`Kernel.evaluate`), once per run: lengths, scalars,
    #: launch geometry and metrics every backend's spec, buffers and throughput read.
    values: Values
    sizes: dict[str, int]
    tunables: dict[str, int | float]
    seed: int
    timeout_s: float
    timing: timing_mod.TimingOptions
    catalog: DeviceCatalog
    input_cache: InputCache
    cancelled: threading.Event
    emit: Callable[[RunEvent], None]
    inputs: dict[str, np.ndarray] = field(default_factory=dict)
    #: Backends whose outputs the report keeps (the reference's always): the others' `receive`
    #: segments pass to the next backend (`BackendBuffers.recycle`).
    keeps_outputs: Callable[[str], bool] = lambda backend: True
    spare: dict = field(default_factory=dict)
    #: The worker in conversation now: `RunService.cancel` kills it (from another thread).
    active: WorkerProcess | None = None
    #: The invocation cpu-sim traces (`sim_trace.TracePoint`; None: none).
    trace: Any = None
    #: cpu-sim records writers: the elements named besides the mismatches (None: no writers).
    writers: list[tuple[str, int]] | None = None

    @cached_property
    def source_hash(self) -> str | None:
        """The project's source hash for results without a build record (read once per run)."""
        try:
            return self.project.source_hash()
        except OSError:
            return None


def run_backend(
    ctx: RunContext,
    backend: str,
    choice: DeviceChoice,
    build: StagedBuild,
    timed: bool,
    policy: ReferencePolicy,
) -> tuple[RunResult, dict[str, np.ndarray] | None]:
    """`backend` on `choice`: its result and its outputs (None when it did not run, or once
    verified and let go because the report does not keep them)."""
    if not choice.available:
        return skipped(ctx, backend, choice, choice.reason, build), None
    memory = choice.device.get("total_memory_bytes")
    need = ctx.values.buffer_bytes
    if memory and need > memory:
        message = (
            f"the buffers need {format_bytes(need)}, more than the {format_bytes(memory)} of {choice.spec}"
        )
        return error(ctx, backend, choice, build, message), None
    if build.status != "ok":
        if build.status == "skipped":
            return skipped(ctx, backend, choice, build.message, build), None
        return error(ctx, backend, choice, build, f"build failed: {build.message}"), None
    kernels = build.info.get("kernels", {})
    if ctx.kernel.name not in kernels:
        names = ", ".join(kernels) or "none"
        message = f"the {backend} build has no kernel {ctx.kernel.name!r} (it has: {names})"
        return error(ctx, backend, choice, build, message), None
    try:
        spec = make_launch_spec(
            ctx.kernel, backend, kernels[ctx.kernel.name], ctx.symbols, choice.index, build.folder,
            values=ctx.values, trace=ctx.trace, writers=ctx.writers is not None,
        )  # fmt: skip
    except (ValueError, WorkbenchError) as exc:
        return error(ctx, backend, choice, build, str(exc)), None

    if choice.host is not None:
        try:
            spec = _remote_spec(ctx, choice.host, backend, build, spec)
        except WorkbenchError as exc:
            return error(ctx, backend, choice, build, str(exc)), None

    worker: WorkerProcess | None = None
    stats = None
    verified, check = None, CheckRecord()
    try:
        worker = ctx.catalog.pool_for(choice.host).get(spec["runtime"])
        ctx.active = worker
        if ctx.cancelled.is_set():
            raise RunCancelled()
        prepared = worker.request(
            {"op": "prepare", "spec": spec, "device_index": choice.index}, timeout_s=SETUP_TIMEOUT_S
        )[0]
        resolution = float(prepared["timer_resolution_s"])
        ctx.emit(RunPhase(backend, "upload"))
        buffers = BackendBuffers(
            ctx.kernel, ctx.inputs, ctx.input_cache, shared=worker.shared, spare=ctx.spare
        )
        header, arrays, fds = buffers.upload_request(
            restore=ctx.kernel.fresh_inputs, binds=bool(prepared.get("binds", True))
        )
        worker.request(header, arrays, timeout_s=SETUP_TIMEOUT_S, fds=fds)
        ctx.emit(RunPhase(backend, "launch"))
        launched, writer_arrays = worker.request(
            {"op": "launch", "count": 1}, timeout_s=ctx.timeout_s, phase="the verification launch"
        )
        locations = (launched.get("findings") or {}).pop("locations", None)
        trace = _trace(ctx, launched)
        findings = _findings(ctx, launched, backend)
        names = output_names(ctx.kernel)
        ctx.emit(RunPhase(backend, "download"))
        reply, received = worker.request(
            {"op": "download", "names": names, "into_shared": buffers.shared, "timing_follows": timed},
            timeout_s=SETUP_TIMEOUT_S,
        )
        outputs = buffers.outputs(names, reply, received)
        ctx.emit(RunPhase(backend, "verify"))
        pending = None
        if timed and verify_while_timing(choice.device, outputs):
            # The host's cores compare while the GPU is timed (see verify_while_timing).
            checker = ThreadPoolExecutor(1, thread_name_prefix="wb-run-verify")
            pending = checker.submit(policy.check, backend, outputs, ctx.kernel)
        else:
            verified, check = policy.check(backend, outputs, ctx.kernel)
            findings = _writers(ctx, findings, writer_arrays, locations, spec, outputs, policy)
            if timed:  # the verdict now, the timing after its samples
                early = _result(ctx, backend, choice, build, spec, verified, check, None, findings, trace)
                ctx.emit(RunVerified(backend, choice.device, early))
        try:
            if timed:
                ctx.emit(RunPhase(backend, "timing"))

                # The worker runs the timing protocol itself, launches back to back like a
                # bare loop; its heartbeats keep the per-launch deadline.
                reply = worker.request(
                    {
                        "op": "measure",
                        "options": timing_mod.options_to_dict(ctx.timing),
                        "resolution_s": resolution,
                        # [kernel.timing] fresh_inputs: in-place buffers restored before every sample
                        "restore": ctx.kernel.fresh_inputs,
                    },
                    timeout_s=ctx.timeout_s,
                    phase="a timed launch",
                    on_progress=lambda p: ctx.emit(RunProgress(backend, p.get("phase", ""), p.get("done"))),
                )[0]
                stats = TimingStats.from_dict(reply["stats"])
                stats.conditions = reply.get("conditions")  # cache policy, clocks, energy (worker.py)
        finally:
            if pending is not None:
                try:
                    verified, check = pending.result()  # before an error is reported: it keeps them
                    findings = _writers(ctx, findings, writer_arrays, locations, spec, outputs, policy)
                finally:
                    checker.shutdown()
        if not ctx.keeps_outputs(backend):
            outputs = None  # verified and let go: its segments serve the next backend
            buffers.recycle(ctx.spare)
        worker.request({"op": "close"}, timeout_s=SETUP_TIMEOUT_S)
    except (WorkerError, timing_mod.Cancelled, RunCancelled) as exc:
        cancelled = ctx.cancelled.is_set()
        if worker is not None and (cancelled or getattr(exc, "fatal", True)):
            worker.shutdown()  # device state unknown: the next request gets a fresh worker
        elif worker is not None and isinstance(exc, RequestFailed):
            try:
                worker.request({"op": "close"}, timeout_s=SETUP_TIMEOUT_S)
            except WorkerError:
                worker.shutdown()
        if cancelled:
            return skipped(ctx, backend, choice, "cancelled", build), None
        # A fault after the verification launch keeps what the check found.
        return error(ctx, backend, choice, build, str(exc), spec, verified, check), None
    finally:
        ctx.active = None

    return _result(ctx, backend, choice, build, spec, verified, check, stats, findings, trace), outputs


def _result(ctx, backend, choice, build, spec, verified, check, stats, findings, trace) -> RunResult:
    """The result of a backend that ran: its verdict, and its timing when `stats` (the early
    result of `RunVerified` has none)."""
    result = RunResult(
        backend=backend, device=choice.device, status="ok", verified=verified, check=check,
        timing=stats, throughput=_no_throughput(), error=None,
        provenance=_provenance(ctx, backend, choice, build, spec, stats), findings=findings, trace=trace,
    )  # fmt: skip
    if findings is not None and "writers" in findings:  # carried beside the findings (`_writers`)
        result.findings = {k: v for k, v in findings.items() if k != "writers"}
        result.writers = findings["writers"]
    if stats is not None:
        result.throughput = timing_mod.throughput(
            stats.median_s, ctx.values.metrics.get("bytes"), ctx.values.metrics.get("flops"), choice.device
        )
        # Which measured memory ceiling the roofline holds this kernel against (copy or read).
        result.throughput["memory_roof"] = memory_roof(ctx.kernel, ctx.values)
        # The roof its arithmetic intensity selects, and the % of it (`ceilings_roof`).
        result.throughput.update(roof_fields(result.throughput, choice.device))
    return result


def skipped(ctx: RunContext, backend: str, choice: DeviceChoice, reason: str, build) -> RunResult:
    """The result of a backend that did not run here: its runtime, its build or a cancel."""
    return RunResult(
        backend=backend, device=choice.device, status="skipped", verified=None,
        check=CheckRecord(), timing=None, throughput=_no_throughput(), error=reason,
        provenance=_provenance(ctx, backend, choice, build, None),
    )  # fmt: skip


def error(ctx, backend, choice, build, message, spec=None, verified=None, check=None) -> RunResult:
    """The result of a backend that failed: build, launch spec, worker or device."""
    return RunResult(
        backend=backend, device=choice.device, status="error", verified=verified,
        check=check or CheckRecord(),
        timing=None, throughput=_no_throughput(), error=message,
        provenance=_provenance(ctx, backend, choice, build, spec),
    )  # fmt: skip


def _remote_spec(
    ctx: RunContext, host: str, backend: str, build: StagedBuild, spec: dict[str, Any]
) -> dict[str, Any]:
    """The launch spec with its artifact path on `host` (the build folder sent there once)."""
    from workbench.remote.artifacts import stage

    remote_dir = stage(ctx.catalog.host(host), backend, build.folder, build.info)
    local = Path(spec["artifact"]["path"])
    relative = local.relative_to(Path(build.folder).resolve())
    return dict(spec, artifact=dict(spec["artifact"], path=f"{remote_dir}/{relative.as_posix()}"))


def _provenance(ctx: RunContext, backend, choice: DeviceChoice, build, spec, stats=None) -> dict:
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
        timing_options=timing_mod.options_to_dict(ctx.timing),
        fresh_inputs=ctx.kernel.fresh_inputs,
        stats=stats,
    )
    if choice.host:
        record["host"] = ctx.catalog.host_record(choice.host)
    return record


def verify_while_timing(device: dict[str, Any], outputs: dict[str, np.ndarray]) -> bool:
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


def _trace(ctx: RunContext, reply: dict[str, Any]) -> dict[str, Any] | None:
    """The traced invocation's values from the verification launch (taken out of the report the
    findings come in), located in the project; None when nothing was traced."""
    report = reply.get("findings")
    if report is None or ctx.trace is None or "trace" not in report:
        return None
    records, dropped = report.pop("trace") or [], report.pop("trace_dropped", 0)
    return sim_trace.located(records, dropped, ctx.trace, ctx.project.manifest.crate_dir, ctx.project.root)


def _writers(ctx, findings, arrays, locations, spec, outputs, policy) -> dict[str, Any] | None:
    """The findings with cpu-sim's writers beside them (`"writers"`, `sim_writers.located_writers`:
    the mismatches' and the named elements'), when the run asked for writers."""
    if findings is None or ctx.writers is None or not arrays or locations is None:
        return findings
    from workbench.run.verify import Tolerance

    k = ctx.kernel.check
    writers = sim_writers.located_writers(
        arrays, locations, spec, outputs, policy.outputs if policy.outputs is not outputs else None,
        Tolerance(k.rtol, k.atol, k.max_ulp), ctx.writers, ctx.project.manifest.crate_dir, ctx.project.root,
    )  # fmt: skip
    return {**findings, "writers": writers}


def _findings(ctx: RunContext, reply: dict[str, Any], backend: str) -> dict[str, Any] | None:
    """cpu-sim's findings from the verification launch, located in the project (None: no checks)."""
    report = reply.get("findings")
    if report is None:
        return None
    return sim_findings.located(report, ctx.project.manifest.crate_dir, ctx.project.root, backend)
