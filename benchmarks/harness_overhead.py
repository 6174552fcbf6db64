"""Harness overhead: the median `workbench run` reports vs a bare loop timing the same launch.

For each backend, in one process run:
- the workbench's median: `RunService.run` (worker process, protocol, warm-up, timing protocol);
- the bare median: the same kernel prepared in this process through the same runtime, launched
  one at a time in a plain loop with the same timer (perf_counter on cpu, wgpu timestamps, CUDA
  events), after a short warm-up;
- the worker's round trip: wall time of one `launch` request minus the kernel time it reports.

Kernels are sized so one launch takes at least `--min-kernel-us` (default 50 µs). Rounds of
workbench and bare measurements alternate so drifts (clocks, other load) hit both alike; the ratio
is the median over rounds of workbench / bare. The goal is 1.00 ± 0.03.

    python benchmarks/harness_overhead.py [--json OUT] [--backend cpu,wgsl] [--artifacts DIR]

On a GPU host without Rust, pass `--artifacts DIR` (the output of `workbench build --export DIR`).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.bench_output import OUT_HELP, output_path  # noqa: E402
from workbench.backends import parse_backends, runtime_of  # noqa: E402
from workbench.build.artifacts import read_build  # noqa: E402
from workbench.errors import WorkbenchError  # noqa: E402
from workbench.project import Project  # noqa: E402
from workbench.run.devices import child_env  # noqa: E402
from workbench.run.inputs import make_inputs, verification_inputs  # noqa: E402
from workbench.run.pool import WorkerProcess  # noqa: E402
from workbench.run.runtimes import get_runtime  # noqa: E402
from workbench.run.selection import choose_devices  # noqa: E402
from workbench.run.service import RunService  # noqa: E402
from workbench.run.spec import make_launch_spec  # noqa: E402
from workbench.run.timing import TimingOptions, settled  # noqa: E402

GOAL_RATIO, GOAL_TOLERANCE = 1.00, 0.03
MAX_ELEMENTS = 1 << 28


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:48] or "device"


def bare_median(prepared: Any, samples: int, min_time_s: float) -> tuple[float, int]:
    """Median of single launches in a plain loop, after warming up until times settle."""
    warm: list[float] = []
    while len(warm) < 20 and not settled(warm, 0.10, prepared.timer_resolution_s):
        warm.append(prepared.launch(1))
    times: list[float] = []
    started = time.perf_counter()
    while len(times) < samples or time.perf_counter() - started < min_time_s:
        times.append(prepared.launch(1))
    return statistics.median(times), len(times)


def prepare_in_process(project, kernel, backend, build, folder, sizes, device_index, seed):
    runtime = get_runtime(runtime_of(backend))
    symbols = kernel.symbols(sizes)
    spec = make_launch_spec(kernel, backend, build["kernels"][kernel.name], symbols, device_index, folder)
    prepared = runtime.prepare(spec, device_index)
    prepared.upload(verification_inputs(kernel, make_inputs(kernel, symbols, seed, project.root)))
    return spec, prepared


def pick_sizes(project, kernel, backend, build, folder, device_index, min_kernel_s, seed) -> dict[str, int]:
    """Grow the kernel's first size until one launch takes at least twice `min_kernel_s`."""
    if not kernel.sizes:
        return {}
    name = next(iter(kernel.sizes))
    n = 1 << 14
    while True:
        _, prepared = prepare_in_process(
            project, kernel, backend, build, folder, {name: n}, device_index, seed
        )
        try:
            for _ in range(3):
                prepared.launch(1)
            single = statistics.median(prepared.launch(1) for _ in range(5))
        finally:
            prepared.close()
        if single >= 2 * min_kernel_s or n >= MAX_ELEMENTS:
            return {name: n}
        grow = 2 * min_kernel_s / max(single, 1e-9)
        n = min(MAX_ELEMENTS, n << max(1, math.ceil(math.log2(grow))))


def worker_roundtrip(runtime: str, spec: dict, inputs: dict, device_index: int, count: int) -> float:
    """Median (wall time of one launch request) - (kernel time it reports), in seconds."""
    worker = WorkerProcess(runtime)
    try:
        worker.request({"op": "prepare", "spec": spec, "device_index": device_index}, timeout_s=120)
        worker.request({"op": "upload"}, inputs, timeout_s=120)
        overheads = []
        for _ in range(count):
            started = time.perf_counter()
            reply, _ = worker.request({"op": "launch", "count": 1}, timeout_s=60)
            wall = time.perf_counter() - started
            overheads.append(wall - reply["seconds"])
        return statistics.median(overheads)
    finally:
        worker.shutdown()


def measure_backend(args, service, project, kernel, backend, build, folder) -> dict[str, Any]:
    runtime = runtime_of(backend)
    (choice,) = choose_devices(runtime, service.devices(runtime), [])[:1]
    if not choice.available:
        return {"backend": backend, "skipped": choice.reason}
    min_kernel_s = args.min_kernel_us * 1e-6
    sizes = dict(args.size) or pick_sizes(
        project, kernel, backend, build, folder, choice.index, min_kernel_s, args.seed
    )
    workbench_medians, bare_medians, n_workbench, n_bare = [], [], [], []
    verified = None
    method = resolution = None
    for _ in range(args.rounds):
        report = service.run(
            project, kernel=kernel.name, backends=[backend], sizes=sizes, seed=args.seed,
            artifacts_dir=args.artifacts, cache_dir=args.cache_dir,
        )  # fmt: skip
        (result,) = [r for r in report.results if r.backend == backend]
        if result.status != "ok":
            return {"backend": backend, "error": result.error}
        verified = result.verified
        workbench_medians.append(result.timing["median_s"])
        n_workbench.append(result.timing["n"])
        method, resolution = result.timing["method"], result.timing["resolution_s"]
        spec, prepared = prepare_in_process(
            project, kernel, backend, build, folder, sizes, choice.index, args.seed
        )
        try:
            median, n = bare_median(prepared, result.timing["n"], args.min_time)
        finally:
            prepared.close()
        bare_medians.append(median)
        n_bare.append(n)
    symbols = kernel.symbols(sizes)
    inputs = verification_inputs(kernel, make_inputs(kernel, symbols, args.seed, project.root))
    roundtrip = worker_roundtrip(runtime, spec, inputs, choice.index, args.roundtrips)
    workbench = statistics.median(workbench_medians)
    bare = statistics.median(bare_medians)
    # Each round's workbench and bare medians are taken back to back: their ratio cancels the
    # drift between rounds (other load, clocks), and the median over rounds its outliers.
    ratios = [w / b for w, b in zip(workbench_medians, bare_medians, strict=True) if b > 0]
    ratio = statistics.median(ratios) if ratios else float("nan")
    return {
        "backend": backend,
        "device": choice.device.get("name", choice.spec),
        "device_spec": choice.spec,
        "runtime": runtime,
        "sizes": sizes,
        "timer_method": method,
        "resolution_s": resolution,
        "verified": verified,
        "workbench_median_s": workbench,
        "bare_median_s": bare,
        "ratio": ratio,
        "within_goal": abs(ratio - GOAL_RATIO) <= GOAL_TOLERANCE,
        "round_ratios": ratios,
        "workbench_medians_s": workbench_medians,
        "bare_medians_s": bare_medians,
        "workbench_samples": n_workbench,
        "bare_samples": n_bare,
        "worker_roundtrip_s": roundtrip,
    }


def _us(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e6:,.1f} µs"


def print_table(rows: list[dict[str, Any]]) -> None:
    header = ("backend", "device", "size", "timer", "workbench", "bare loop", "ratio", "goal", "round trip")
    lines = [header]
    for r in rows:
        if "ratio" not in r:
            lines.append(
                (r["backend"], "-", "-", "-", "-", "-", "-", "-", r.get("skipped") or r.get("error", ""))
            )
            continue
        size = ", ".join(f"{k}={v}" for k, v in r["sizes"].items())
        lines.append((
            r["backend"], r["device"][:30], size, r["timer_method"], _us(r["workbench_median_s"]),
            _us(r["bare_median_s"]), f"{r['ratio']:.3f}", "ok" if r["within_goal"] else "MISSED",
            _us(r["worker_roundtrip_s"]),
        ))  # fmt: skip
    widths = [max(len(str(row[i])) for row in lines) for i in range(len(header))]
    for row in lines:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", default=str(REPO / "resources" / "examples" / "saxpy"))
    parser.add_argument("--kernel")
    parser.add_argument("--backend", help="comma-separated backends (default: every runnable one)")
    parser.add_argument("--artifacts", metavar="DIR", help="prebuilt artifacts (DIR/<backend>/build.json)")
    parser.add_argument("--cache-dir", metavar="DIR")
    parser.add_argument("--out", "--json", dest="out", metavar="PATH", help=OUT_HELP)
    parser.add_argument("--min-kernel-us", type=float, default=50.0)
    parser.add_argument("--rounds", type=int, default=7, help="alternating workbench / bare rounds")
    parser.add_argument("--min-n", type=int, default=50, help="samples per workbench measurement")
    parser.add_argument("--min-time", type=float, default=1.0, help="seconds per measurement")
    parser.add_argument("--roundtrips", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--size",
        action="append",
        default=[],
        type=lambda text: (text.split("=")[0], int(text.split("=")[1])),
        metavar="NAME=VALUE",
        help="fixed problem size instead of growing until one launch takes 2x --min-kernel-us",
    )
    args = parser.parse_args(argv)
    os.environ.update(child_env())  # Mesa wants XDG_RUNTIME_DIR in this process too

    try:
        project = Project.open(args.project)
        kernel = project.manifest.kernel(args.kernel)
        timing = TimingOptions(min_n=args.min_n, min_time_s=args.min_time)
        service = RunService(timing=timing)
        try:
            backends = (
                parse_backends(args.backend)
                if args.backend
                else service.default_backends(project, args.artifacts)
            )
            if args.artifacts:
                folders = {b: Path(args.artifacts) / b for b in backends}
            else:
                from workbench.build import build_project

                results = build_project(project, backends, cache_dir=args.cache_dir)
                folders = {r.backend: Path(r.artifact_dir) for r in results if r.status == "ok"}
            rows = []
            for backend in backends:
                if backend not in folders or not (folders[backend] / "build.json").is_file():
                    rows.append({"backend": backend, "skipped": "not built"})
                    continue
                build = read_build(folders[backend])
                print(f"measuring {backend} ...", file=sys.stderr)
                rows.append(measure_backend(args, service, project, kernel, backend, build, folders[backend]))
        finally:
            service.close()
    except WorkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    measured = [r for r in rows if "ratio" in r]
    gpu = [r for r in measured if r["runtime"] != "cpu"]
    device = (gpu or measured or [{"device": platform.node()}])[0]["device"]
    out = output_path(args.out, f"harness_overhead-{slug(device)}.json")
    data = {
        "benchmark": "harness_overhead",
        "project": project.name,
        "kernel": kernel.name,
        "host": platform.node(),
        "python": platform.python_version(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "goal": {"ratio": GOAL_RATIO, "tolerance": GOAL_TOLERANCE, "min_kernel_us": args.min_kernel_us},
        "settings": {"rounds": args.rounds, "min_n": args.min_n, "min_time_s": args.min_time},
        "results": rows,
    }
    print_table(rows)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=2) + "\n")
    print(f"wrote {out}")
    return 0 if all(r.get("within_goal", True) for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
