"""Harness overhead: the median `workbench run` reports vs an independent loop timing the same artifact.

For each backend, in alternating rounds:
- the workbench's median: `RunService.run` (worker process, protocol, warm-up, timing protocol);
- the independent median: `benchmarks/bare_loop.py` in a fresh process that imports nothing from
  `workbench`: it reads the exported build.json with `json`, loads the artifact with the vendor
  library directly (ctypes, pycuda, wgpu), and times single launches with perf_counter, CUDA
  events or wgpu timestamp queries. Only the launch's argument values and geometry are handed to
  it (evaluated from the manifest here), as a small JSON file;
- where Nsight Compute (`ncu`) or Nsight Systems (`nsys`) is installed and the backend runs on
  CUDA, their kernel duration of the same loop: ncu with its defaults (base clocks, caches
  flushed before each kernel) and with `--clock-control none --cache-control none`.

The ratio is the median over rounds of workbench / independent (each round's pair taken back to
back, in alternating order, cancels drift). The goal is 1.00 ± 0.03.

    python benchmarks/harness_overhead.py [--json OUT] [--backend cpu,wgsl] [--artifacts DIR] [--size n=...]

On a GPU host without Rust, pass `--artifacts DIR` (the output of `workbench build --export DIR`).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
BARE_LOOP = Path(__file__).resolve().parent / "bare_loop.py"
sys.path.insert(0, str(REPO))

from benchmarks.bench_output import OUT_HELP, write_json  # noqa: E402
from workbench.backends import parse_backends, runtime_of  # noqa: E402
from workbench.errors import WorkbenchError  # noqa: E402
from workbench.manifest import BufferArg  # noqa: E402
from workbench.project import Project  # noqa: E402
from workbench.run.devices import child_env  # noqa: E402
from workbench.run.selection import choose_devices  # noqa: E402
from workbench.run.service import RunService  # noqa: E402
from workbench.run.timing import TimingOptions  # noqa: E402

GOAL_RATIO, GOAL_TOLERANCE = 1.00, 0.03


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:48] or "device"


def launch_description(kernel, backend: str, folder: Path, sizes: dict, device: dict, seed: int) -> dict:
    """What the independent loop is told: argument values/lengths in launch order and geometry."""
    symbols = kernel.symbols(sizes)
    lengths, scalars = kernel.lengths(symbols), kernel.scalar_values(symbols)
    args = []
    for arg in kernel.args:
        if isinstance(arg, BufferArg):
            args.append({"name": arg.name, "kind": "buffer", "type": arg.type, "length": lengths[arg.name],
                         "binding": arg.binding, **({"views": list(arg.views)} if arg.views else {})})  # fmt: skip
        else:
            args.append({"name": arg.name, "kind": "scalar", "type": arg.type, "value": scalars[arg.name]})
    threads, grid = kernel.geometry(symbols, backend)
    return {
        "backend": backend, "folder": str(folder.resolve()), "kernel": kernel.name, "args": args,
        "threads": list(threads), "grid": list(grid), "params_binding": kernel.wgpu.params_binding,
        "device": device.get("name", ""), "device_index": device.get("index", 0), "seed": seed,
    }  # fmt: skip


def run_bare(launch_file: Path, min_n: int, min_time: float, timeout: float = 300.0) -> dict[str, Any]:
    """One independent measurement in a fresh interpreter (no workbench on its import path)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and Path(p).resolve() != REPO
    )
    done = subprocess.run(
        [sys.executable, "-I" if not env["PYTHONPATH"] else "-s", str(BARE_LOOP), str(launch_file),
         "--min-n", str(min_n), "--min-time", str(min_time)],
        capture_output=True, text=True, timeout=timeout, env=env, cwd=tempfile.gettempdir(),
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"bare loop failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _ncu_seconds(value: str, unit: str) -> float:
    scale = {"nsecond": 1e-9, "ns": 1e-9, "usecond": 1e-6, "us": 1e-6, "msecond": 1e-3, "ms": 1e-3,
             "second": 1.0, "s": 1.0}  # fmt: skip
    return float(value.replace(",", "")) * scale.get(unit.strip().lower(), 1e-9)


def parse_ncu_csv(text: str) -> list[float]:
    """gpu__time_duration.sum of every profiled kernel in `ncu --csv` output, in seconds."""
    lines = [line for line in text.splitlines() if line.startswith('"')]
    if not lines:
        return []
    out = []
    for row in csv.DictReader(io.StringIO("\n".join(lines))):
        if row.get("Metric Name") == "gpu__time_duration.sum":
            out.append(_ncu_seconds(row["Metric Value"], row.get("Metric Unit", "nsecond")))
    return out


def parse_nsys_csv(text: str) -> list[dict[str, str]]:
    """Rows of `nsys stats -r cuda_gpu_kern_sum -f csv`, from its header line on (nsys may print
    notices before it)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if "Med (ns)" in line), None)
    return [] if start is None else list(csv.DictReader(io.StringIO("\n".join(lines[start:]))))


def nsight(launch_file: Path, entry: str, timeout: float = 180.0) -> dict[str, Any]:
    """Nsight Compute's (and Nsight Systems') kernel duration of the independent loop, where installed."""
    out: dict[str, Any] = {}
    loop = [sys.executable, str(BARE_LOOP), str(launch_file), "--launches", "20"]
    ncu = shutil.which("ncu")
    if ncu:
        base = [ncu, "--csv", "--metrics", "gpu__time_duration.sum", "-k", f"regex:^{re.escape(entry)}$",
                "--launch-skip", "5", "--launch-count", "10"]  # fmt: skip
        for label, extra in (("ncu_default", []), ("ncu_no_flush_no_clock_control",
                             ["--cache-control", "none", "--clock-control", "none"])):  # fmt: skip
            try:
                done = subprocess.run([*base, *extra, *loop], capture_output=True, text=True, timeout=timeout)
                times = parse_ncu_csv(done.stdout)
                out[label] = {"median_s": statistics.median(times), "n": len(times)} if times else {
                    "error": (done.stderr or done.stdout).strip()[-600:]}  # fmt: skip
            except (OSError, subprocess.TimeoutExpired) as exc:
                out[label] = {"error": str(exc)}
    nsys = shutil.which("nsys")
    if nsys:
        with tempfile.TemporaryDirectory() as tmp:
            report = Path(tmp) / "loop"
            try:
                subprocess.run([nsys, "profile", "-t", "cuda", "-o", str(report), "--force-overwrite", "true",
                                *loop], capture_output=True, text=True, timeout=timeout, check=True)  # fmt: skip
                stats = subprocess.run(
                    [nsys, "stats", "-q", "-r", "cuda_gpu_kern_sum", "-f", "csv", f"{report}.nsys-rep"],
                    capture_output=True,
                    text=True,
                    timeout=timeout,
                )
                rows = [r for r in parse_nsys_csv(stats.stdout) if entry in r.get("Name", "")]
                out["nsys"] = (
                    {"median_s": float(rows[0]["Med (ns)"].replace(",", "")) * 1e-9, "n": int(rows[0]["Instances"])}
                    if rows else {"error": (stats.stderr or stats.stdout).strip()[-600:]}
                )  # fmt: skip
            except (OSError, subprocess.SubprocessError, KeyError, ValueError) as exc:
                out["nsys"] = {"error": str(exc)[-600:]}
    return out


def measure_backend(args, service, project, kernel, backend, folder: Path) -> dict[str, Any]:
    runtime = runtime_of(backend)
    (choice,) = choose_devices(runtime, service.devices(runtime), [])[:1]
    if not choice.available:
        return {"backend": backend, "skipped": choice.reason}
    sizes = dict(args.size)
    build = json.loads((folder / "build.json").read_text())
    entry = build["kernels"][kernel.name]["entry"]
    workbench_medians, bare_medians, n_workbench, n_bare = [], [], [], []
    verified = method = resolution = bare_method = None
    imported = False
    with tempfile.TemporaryDirectory() as tmp:
        launch_file = Path(tmp) / "launch.json"
        launch_file.write_text(
            json.dumps(launch_description(kernel, backend, folder, sizes, choice.device, args.seed))
        )
        for round_index in range(args.rounds):
            # The order alternates (workbench first, then the independent loop first): whatever
            # drifts between the two halves of a round (clocks, temperature) cancels over rounds.
            for side in ("workbench", "bare") if round_index % 2 == 0 else ("bare", "workbench"):
                if side == "workbench":
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
                    continue
                try:
                    bare = run_bare(launch_file, args.min_n, args.min_time)
                except (RuntimeError, subprocess.TimeoutExpired) as exc:
                    return {"backend": backend, "error": str(exc)}
                bare_medians.append(bare["median_s"])
                n_bare.append(bare["n"])
                bare_method = bare["method"]
                imported = imported or bare["workbench_imported"]
        profilers = nsight(launch_file, entry) if runtime == "cuda" and not args.no_nsight else {}
    workbench = statistics.median(workbench_medians)
    independent = statistics.median(bare_medians)
    ratios = [w / b for w, b in zip(workbench_medians, bare_medians, strict=True) if b > 0]
    ratio = statistics.median(ratios) if ratios else float("nan")
    return {
        "backend": backend,
        "device": choice.device.get("name", choice.spec),
        "device_spec": choice.spec,
        "runtime": runtime,
        "sizes": sizes or dict(kernel.sizes),
        "timer_method": method,
        "independent_timer": bare_method,
        "independent_imported_workbench": imported,
        "resolution_s": resolution,
        "verified": verified,
        "workbench_median_s": workbench,
        "independent_median_s": independent,
        "ratio": ratio,
        "within_goal": abs(ratio - GOAL_RATIO) <= GOAL_TOLERANCE,
        "round_ratios": ratios,
        "workbench_medians_s": workbench_medians,
        "independent_medians_s": bare_medians,
        "workbench_samples": n_workbench,
        "independent_samples": n_bare,
        "profilers": profilers,
    }


def _us(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e6:,.1f} µs"


def print_table(rows: list[dict[str, Any]]) -> None:
    header = ("backend", "device", "size", "timer", "workbench", "independent", "ratio", "goal", "ncu / nsys")
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
            _us(r["independent_median_s"]), f"{r['ratio']:.3f}", "ok" if r["within_goal"] else "MISSED",
            " / ".join(_us(p.get("median_s")) for p in r["profilers"].values()) or "-",
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
    parser.add_argument("--rounds", type=int, default=5, help="alternating workbench / independent rounds")
    parser.add_argument("--min-n", type=int, default=50, help="samples per workbench measurement")
    parser.add_argument("--min-time", type=float, default=1.0, help="seconds per measurement")
    parser.add_argument("--no-nsight", action="store_true", help="skip ncu / nsys even where installed")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--size",
        action="append",
        default=[],
        type=lambda text: (text.split("=")[0], int(text.split("=")[1])),
        metavar="NAME=VALUE",
        help="problem size (default: the manifest's); pick one where a launch takes >= 50 µs",
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
                print(f"measuring {backend} ...", file=sys.stderr)
                rows.append(measure_backend(args, service, project, kernel, backend, folders[backend]))
        finally:
            service.close()
    except WorkbenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    measured = [r for r in rows if "ratio" in r]
    gpu = [r for r in measured if r["runtime"] != "cpu"]
    device = (gpu or measured or [{"device": platform.node()}])[0]["device"]
    data = {
        "benchmark": "harness_overhead",
        "project": project.name,
        "kernel": kernel.name,
        "host": platform.node(),
        "python": platform.python_version(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "goal": {"ratio": GOAL_RATIO, "tolerance": GOAL_TOLERANCE},
        "independent_loop": "benchmarks/bare_loop.py (imports nothing from workbench)",
        "settings": {"rounds": args.rounds, "min_n": args.min_n, "min_time_s": args.min_time},
        "results": rows,
    }
    print_table(rows)
    out = write_json(args.out, f"harness_overhead-{slug(device)}.json", data)
    print(f"wrote {out}")
    return 0 if all(r.get("within_goal", True) for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
