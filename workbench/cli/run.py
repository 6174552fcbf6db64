"""`workbench run PATH`: build, run, verify and time a kernel on every backend; a table or JSON.

Exit status: 0 when every backend that ran verified (or is the reference) or was skipped, 1 on any
error or failed check, 2 on bad input (unknown size, backend or device).
"""

from __future__ import annotations

import json
import sys
import uuid
from typing import Any

from workbench.backends import parse_backends
from workbench.cli import arg_types
from workbench.cli.progress import ProgressLine
from workbench.errors import WorkbenchError
from workbench.project import Project
from workbench.records import RunResult
from workbench.result_text import check_line, format_time, verdict_cell
from workbench.run.ceilings_roof import rate_cell, roof_cell, roof_line
from workbench.run.events import RunBuilding, RunEvent, RunStarted
from workbench.run.request import RunRequest
from workbench.run.sim_findings import summary
from workbench.run.sim_trace import lines as trace_lines
from workbench.run.sim_trace import parse_point
from workbench.run.sim_writers import lines as writer_lines
from workbench.run.sim_writers import parse_elements as parse_writers
from workbench.run.sim_writers import unknown_buffer
from workbench.size_values import parse_sizes


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run, verify and time a kernel on every backend",
        description="Build the kernel for each backend (or take prebuilt artifacts), run it on each "
        "device in a worker process, compare every output element with the reference backend and "
        "time it.",
    )
    parser.add_argument("path", nargs="?", default=".", help="project folder or workbench.toml")
    parser.add_argument("--kernel", help="kernel name (default: the first in workbench.toml)")
    parser.add_argument(
        "--backend",
        help="comma-separated backends (default: cpu plus every backend whose toolchain is "
        "installed and whose runtime is available)",
    )
    parser.add_argument(
        "--device",
        action="append",
        default=[],
        metavar="SPEC",
        help="device to run on: cpu, cuda:0, wgpu:0, wgpu:<part of the adapter name>, or one of a "
        "GPU host's as NAME/cuda:0, NAME/wgpu:0, NAME/cpu (`workbench hosts`); repeat or separate "
        "with commas (default: one per runtime, here)",
    )
    parser.add_argument(
        "--size",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="problem size, e.g. n=65536; repeatable",
    )
    parser.add_argument(
        "--timeout",
        type=arg_types.positive_seconds,
        default=10.0,
        metavar="S",
        help="per-launch timeout in seconds (default 10)",
    )
    parser.add_argument(
        "--artifacts", metavar="DIR", help="run prebuilt artifacts (DIR/<backend>/build.json)"
    )
    parser.add_argument(
        "--reference",
        metavar="BACKEND",
        help="check the others against this backend (default: the kernel's [kernel.check] "
        "reference). The reference never changes by itself: when it fails, the others are "
        "'not verified (reference failed)'",
    )
    parser.add_argument("--cache-dir", metavar="DIR", help="build cache folder")
    parser.add_argument(
        "--seed", type=arg_types.seed, help="seed of random inputs (default 0; recorded in provenance)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--l2", choices=("warm", "cold", "both"), default="warm",
        help="cache policy between timed samples: warm (default), cold (GPU caches flushed, untimed, "
        "before every sample) or both (warm, then cold in timing.conditions.l2_cold)",
    )  # fmt: skip
    record = parser.add_mutually_exclusive_group()
    record.add_argument(
        "--db",
        metavar="FILE",
        help="record the run in this sessions database (default: the user data folder)",
    )
    record.add_argument("--no-record", action="store_true", help="do not record the run")
    parser.add_argument(
        "--keep-outputs", action="store_true", help="also keep the output arrays (.npz beside the database)"
    )
    parser.add_argument(
        "--counters", action="store_true",
        help="after the run, profile each CUDA result's launch once under Nsight Compute (ncu) and "
        "record its counters with the run (docs: workbench/run/counters/metrics.py)",
    )  # fmt: skip
    parser.add_argument(
        "--repeat", type=arg_types.count(1, 1000), default=1, metavar="N",
        help="run the whole set of backends N times, interleaved (all backends, then all again), each "
        "repetition in fresh worker processes and recorded as its own invocation of one series: "
        "the independent measurements `sessions compare` rests a verdict on (default 1)",
    )  # fmt: skip
    parser.add_argument(
        "--trace", metavar="GX,GY:LX,LY",
        help="cpu-sim: record the ctx.trace(name, value) calls of one invocation (its workgroup, then "
        "its local id; y and z default to 0) and print them under the table (--json: results[].trace)",
    )  # fmt: skip
    parser.add_argument(
        "--writers", metavar="BUF[I],...", nargs="?", const="",
        help="cpu-sim: record which invocation and Rust line last wrote each output element, and print "
        "it for the check's mismatches and the elements named (--json: results[].writers)",
    )  # fmt: skip
    parser.set_defaults(func=run)


def _details(result: RunResult) -> str:
    """The check's line, after cpu-sim's findings counted ("1 race, 1 out-of-bounds; ...")."""
    found = summary(result.findings)
    return f"{found}; {check_line(result)}" if found else check_line(result)


def table(results: list[RunResult], host: dict[str, Any] | None = None) -> str:
    """The readable table of `workbench run`; `host` (the run's `HostLoad` conditions) flags a
    result timed on a busy machine or a throttled GPU in the "conditions" column."""
    from workbench.run.host_load import flags

    header = (
        "backend",
        "device",
        "status",
        "verified",
        "median",
        "IQR",
        "GB/s",
        "% peak",
        "conditions",
        "details",
    )
    rows = []
    for r in results:
        timing = r.timing or {}
        roof = r.throughput.get("roof")  # `ceilings_roof.read_roof`: GFLOP/s where compute binds
        device = r.device.get("spec", "")
        if r.device.get("name"):
            device += f" {r.device['name']}"
        rows.append((
            r.backend, device[:36], r.status, verdict_cell(r), format_time(timing.get("median_s")),
            format_time(timing.get("iqr_s")) if timing else "-", rate_cell(r.throughput, roof) or "-",
            roof_cell(roof) or "-",
            ", ".join(flags(host, timing.get("conditions"))) or "-", _details(r),
        ))  # fmt: skip
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=False)]
    widths[-1] = 0  # the last column is not padded
    lines = [
        "  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    ]
    # A result above its ceiling is a measurement problem: said under the table, whole.
    for r in results:
        roof = r.throughput.get("roof")
        if roof and roof.get("suspect"):
            lines.append(f"{r.backend} on {r.device.get('spec', '')}: {roof_line(roof)}")
    return "\n".join(lines)


def _record(recorder, report, snapshot, args, host=None, series=None) -> None:
    """Record the run in the sessions database; a failure is reported, never fatal to the run."""
    try:
        ids = recorder.record(report, snapshot, host=host, series=series)
    except (WorkbenchError, OSError) as exc:
        print(f"warning: the run was not recorded: {exc}", file=sys.stderr)
        return
    if ids and not args.json:
        print(f"recorded as run(s) #{ids[0]}–#{ids[-1]} in {recorder.database}", file=sys.stderr)


def run(args) -> int:
    project = Project.open(args.path)
    try:
        kernel = project.manifest.kernel(args.kernel)
    except (KeyError, ValueError, WorkbenchError):
        kernel = None  # the run service says what is wrong with the name
    sizes = parse_sizes(args.size, kernel)
    devices = [d.strip() for item in args.device for d in item.split(",") if d.strip()]
    if args.timeout <= 0:
        raise WorkbenchError(f"--timeout must be positive, got {args.timeout}")
    if args.repeat < 1:
        raise WorkbenchError(f"--repeat must be at least 1, got {args.repeat}")
    args.trace_point = parse_point(args.trace) if args.trace else None
    if args.trace_point is not None and "cpu-sim" not in parse_backends(args.backend or ""):
        raise WorkbenchError(
            f"--trace {args.trace}: only cpu-sim traces; add it to --backend (e.g. cpu,cpu-sim)"
        )
    args.writer_elements = parse_writers(args.writers) if args.writers is not None else None
    if args.writer_elements is not None and "cpu-sim" not in parse_backends(args.backend or ""):
        raise WorkbenchError(
            "--writers: only cpu-sim records writers; add it to --backend (e.g. cpu,cpu-sim)"
        )
    if args.writer_elements and kernel is not None:
        problem = unknown_buffer(args.writer_elements, [b.name for b in kernel.buffers if b.is_output])
        if problem:
            raise WorkbenchError(problem)

    from workbench.profile.sessions.findings_history import dispute_from_history
    from workbench.profile.sessions.recorder import SessionRecorder

    recorder = SessionRecorder(args.db, keep_outputs=args.keep_outputs, enabled=not args.no_record)
    snapshot = recorder.begin(project)  # the sources as they are built, before an editor can change them
    series_id = uuid.uuid4().hex if args.repeat > 1 else None
    repetitions = []
    try:
        for index in range(1, args.repeat + 1):
            series = {"id": series_id, "index": index, "of": args.repeat} if series_id else None
            report, host = _run_once(project, args, sizes, devices, series)
            if recorder.enabled:  # cpu-sim findings recorded for the reference's sources
                dispute_from_history(recorder.database, report)
            if args.counters:
                from workbench.cli.run_counters import take

                take(project, report, args)
            if recorder.enabled:
                _record(recorder, report, snapshot, args, host, series)
            repetitions.append((report, host, series))
            _print_repetition(args, report, host, series, index)
    finally:
        recorder.close()
    if args.json:
        print(json.dumps(_json(repetitions), indent=2))
    # cpu-sim's checks found a race, a bad index or divergence: a failure, like a failed check.
    found = any(
        r.findings and r.findings.get("findings") for report, _, _ in repetitions for r in report.results
    )
    return 0 if all(report.ok for report, _, _ in repetitions) and not found else 1


def findings_lines(results: list[RunResult]) -> list[str]:
    """cpu-sim's findings under the table, one compiler-style line each (`FILE:LINE:COL: error[kind]: ...`)."""
    lines = []
    for result in results:
        report = result.findings or {}
        for diag in report.get("diagnostics", []):
            where = f"{diag.get('file')}:{diag.get('line')}:{diag.get('column')}"
            lines.append(f"{where}: {result.backend}: error[{diag.get('code')}]: {diag.get('message')}")
        if report.get("dropped"):
            lines.append(f"{result.backend}: {report['dropped']} more findings not kept")
    return lines


def _print_repetition(args, report, host, series, index: int) -> None:
    if args.json:
        return
    sizes_text = ", ".join(f"{k}={v}" for k, v in report.sizes.items())
    which = f"; repetition {index} of {args.repeat}" if series else ""
    print(
        f"{report.project} / {report.kernel}  ({sizes_text}; seed {report.seed}; reference {report.reference}{which})"
    )
    print(table(report.results, host))
    for line in findings_lines(report.results):
        print(line)
    for result in report.results:
        if result.trace is not None:
            print("\n".join(f"{result.backend}: {line}" for line in trace_lines(result.trace)))
        if result.writers is not None:
            print("\n".join(f"{result.backend}: {line}" for line in writer_lines(result.writers)))


def _run_once(project, args, sizes, devices, series) -> tuple[Any, dict[str, Any]]:
    """One repetition: a fresh `RunService` (its own worker processes); the host's conditions are
    the ones the service measured around the run, while the workers were still alive."""
    from workbench.run.service import RunService
    from workbench.run.timing import TimingOptions

    # A bar with the phases (inputs, upload, launch, verify, timing) once a run takes a while,
    # on a terminal only: pipes and logs get the plain lines.
    bar = ProgressLine(sys.stderr)

    def progress(event: RunEvent) -> None:
        if args.json:
            return
        bar.on_event(event)
        if isinstance(event, RunBuilding):
            bar.print_line(f"building {', '.join(event.backends)} ...")
        elif isinstance(event, RunStarted):
            again = f" (repetition {series['index']} of {series['of']})" if series else ""
            bar.print_line(f"running {event.backend} on {event.device.get('spec', '?')}{again} ...")

    service = RunService(timing=TimingOptions(l2=args.l2))
    try:
        request = RunRequest.of(
            project, args.backend, devices, kernel=args.kernel, sizes=sizes,
            timeout_s=args.timeout, artifacts_dir=args.artifacts, seed=args.seed,
            cache_dir=args.cache_dir, reference=args.reference, trace=args.trace_point,
            writers=args.writer_elements,
            # Only a recording with --keep-outputs reads every backend's arrays: the others are let
            # go once verified, so a run at 2^28 holds one backend's outputs at a time.
            keep_outputs=bool(args.keep_outputs and not args.no_record),
        )  # fmt: skip
        report = service.execute(request, on_event=progress)
        host = report.host_conditions
    finally:
        bar.close()
        service.close()
    return report, host


def _json(repetitions: list[tuple[Any, dict[str, Any], dict[str, Any] | None]]) -> dict[str, Any]:
    """The first repetition's report (the shape `workbench run --json` always had) with its
    `host_conditions`; with --repeat also `series` and every repetition under `repetitions`."""
    from workbench.cli.run_counters import as_json as counters_json

    shown = [
        {**report.to_json(), "host_conditions": host, "series": series, **counters_json(report)}
        for report, host, series in repetitions
    ]
    if len(shown) == 1:
        return shown[0]
    return {**shown[0], "repetitions": shown}
