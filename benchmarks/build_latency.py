"""Build latency: the bare compiler command vs the build service, per example and backend.

For (a) a one-line edit (a comment appended to the backend's source) and (b) no change, it times
the compiler command the adapter runs, alone, and `BuildService` (hashing, cache, process group,
output parsing, artifact folder, resource report), in one run.
Goals: service overhead <= 50 ms for an edit (paired: service edit - bare edit); a cache hit <= 20 ms.

The machine is noisy, so each (example, backend) repeats until the 95 % confidence interval of
the mean of both measures lies on one side of its goal (met / missed), at least --min-reps and at
most --max-reps times; an interval that still straddles a goal is reported as "cannot decide".
The JSON goes outside the repository unless --out names a path (bench_output.py).

    .venv/bin/python benchmarks/build_latency.py [--out PATH] [--min-reps N] [--max-reps N] [--backends cpu,nvptx]
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.bench_output import OUT_HELP, write_json  # noqa: E402
from workbench.build import BuildService  # noqa: E402
from workbench.build.cache import target_dir  # noqa: E402
from workbench.build.toolchains import detect  # noqa: E402
from workbench.project import Project  # noqa: E402

BACKENDS = ("cpu", "nvptx", "cuda-c", "wgsl")
GOALS = {"overhead_edit": 0.050, "cache_hit": 0.020}
#: Two-sided 95 % Student t quantiles for 1..30 degrees of freedom (then about 2.0 / 1.96).
T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
       2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
       2.045, 2.042)  # fmt: skip


def interval(samples: list[float]) -> tuple[float, float, float]:
    """(mean, low, high): the 95 % confidence interval of the mean."""
    n = len(samples)
    mean = statistics.fmean(samples)
    if n < 2:
        return mean, float("-inf"), float("inf")
    t = T95[n - 2] if n - 1 <= len(T95) else (2.0 if n < 60 else 1.96)
    half = t * statistics.stdev(samples) / n**0.5
    return mean, mean - half, mean + half


def verdict(samples: list[float], goal: float) -> dict:
    """met / missed when the interval lies below / above the goal, else undecided."""
    mean, low, high = interval(samples)
    state = "met" if high <= goal else "missed" if low > goal else "undecided"
    return {"goal_s": goal, "mean_s": mean, "ci95_s": [low, high], "verdict": state, "n": len(samples)}


def bare_command(
    project: Project, backend: str, cache: Path, out: Path
) -> tuple[list[str], dict, Path] | None:
    """The compiler command the adapter runs (same flags, same target dir), or None."""
    tc = detect(backend)
    crate = project.manifest.crate_dir
    env = dict(os.environ)
    if backend == "cpu":
        env["RUSTC"] = tc.path
        return ([tc.details["cargo"], "build", "--release", "--lib", "--offline", "--message-format=json",
                 "--target-dir", str(target_dir(cache, "cpu"))], env, crate)  # fmt: skip
    if backend == "nvptx" and tc.details.get("route") == "debian":
        env.update({"RUSTC": tc.path, "RUSTC_BOOTSTRAP": "1"})
        return ([tc.details["cargo"], "rustc", "--release", "--lib", "--target", "nvptx64-nvidia-cuda",
                 "-Zbuild-std=core", "--message-format=json", "--target-dir", str(target_dir(cache, "nvptx")),
                 "--crate-type", "rlib", "--offline", "--config", 'source.crates-io.replace-with="vendored"',
                 "--config", f'source.vendored.directory="{tc.details["vendor"]}"',
                 "--", "-C", "target-cpu=sm_90", "--emit", "asm"], env, crate)  # fmt: skip
    kernel = project.manifest.kernels[0]
    if backend == "cuda-c" and "cuda-c" in kernel.reference:
        return ([tc.path, "-ptx", "-arch=sm_90", kernel.reference["cuda-c"], "-o", str(out / "k.ptx")],
                env, project.root)  # fmt: skip
    if backend == "wgsl" and "wgsl" in kernel.reference:
        return (["cp", kernel.reference["wgsl"], str(out / "k.wgsl")], env, project.root)
    return None


def edited_file(project: Project, backend: str) -> Path:
    kernel = project.manifest.kernels[0]
    if backend in ("cuda-c", "wgsl"):
        return project.root / kernel.reference[backend]
    return project.main_source()


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def bench(
    example: Path, backend: str, service: BuildService, cache: Path, reps: tuple[int, int], scratch: Path
) -> dict | None:
    if not detect(backend).found:
        return None
    root = scratch / f"{example.name}-{backend}"
    shutil.copytree(example, root, ignore=shutil.ignore_patterns("target"))
    project = Project.open(root)
    cmd = bare_command(project, backend, cache, scratch)
    if cmd is None:
        return None
    argv, env, cwd = cmd

    def bare() -> None:
        proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True)
        if proc.returncode:
            raise RuntimeError(f"{' '.join(argv)} failed:\n{proc.stderr.decode()[-2000:]}")

    def service_build(expect_cached: bool | None) -> None:
        result = service.submit(project, [backend]).wait()[backend]
        if result.status != "ok" or expect_cached not in (None, result.cached):
            raise RuntimeError(f"{backend}: {result.status} cached={result.cached}\n{result.log[-2000:]}")

    source = edited_file(project, backend)
    service_build(None)  # warm: dependencies (core) and detection (a copy built before is a hit)
    rows = {"bare_edit": [], "service_edit": [], "bare_nochange": [], "service_hit": []}
    min_reps, max_reps = reps
    verdicts: dict = {}
    for i in range(max_reps):
        with open(source, "a") as f:
            f.write(f"// bare edit {i}\n")
        rows["bare_edit"].append(timed(bare))
        rows["bare_nochange"].append(timed(bare))
        with open(source, "a") as f:
            f.write(f"// service edit {i}\n")
        rows["service_edit"].append(timed(lambda: service_build(False)))
        rows["service_hit"].append(timed(lambda: service_build(True)))
        overhead = [s - b for s, b in zip(rows["service_edit"], rows["bare_edit"], strict=True)]
        verdicts = {
            "overhead_edit": verdict(overhead, GOALS["overhead_edit"]),
            "cache_hit": verdict(rows["service_hit"], GOALS["cache_hit"]),
        }
        if i + 1 >= min_reps and all(v["verdict"] != "undecided" for v in verdicts.values()):
            break
    med = {k: statistics.median(v) for k, v in rows.items()}
    return {
        "example": example.name, "backend": backend, "reps": len(rows["bare_edit"]),
        "median_s": med, "samples_s": rows, "verdicts": verdicts,
        "overhead_edit_s": med["service_edit"] - med["bare_edit"],
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", "--json", dest="out", metavar="PATH", help=OUT_HELP)
    parser.add_argument("--min-reps", type=int, default=5)
    parser.add_argument("--max-reps", type=int, default=40, help="then: cannot decide")
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--cache-dir", help="build cache (default: a fresh temporary one)")
    args = parser.parse_args(argv)
    examples = sorted(
        p for p in (REPO / "resources" / "examples").iterdir() if (p / "workbench.toml").is_file()
    )
    rows = []
    with tempfile.TemporaryDirectory(prefix="wb-bench-") as tmp:
        scratch = Path(tmp)
        cache = Path(args.cache_dir) if args.cache_dir else scratch / "cache"
        with BuildService(cache_dir=cache) as service:
            for example in examples:
                for backend in args.backends.split(","):
                    row = bench(example, backend, service, cache, (args.min_reps, args.max_reps), scratch)
                    if row:
                        rows.append(row)
                        print_row(row, header=len(rows) == 1)
    goals = {"service_overhead_edit_s": GOALS["overhead_edit"], "cache_hit_s": GOALS["cache_hit"]}
    data = {"host": socket.gethostname(), "goals": goals, "rows": rows}
    out = write_json(args.out, f"build_latency-{socket.gethostname()}.json", data)
    print(f"\nwritten {out}")
    states = [v["verdict"] for row in rows for v in row["verdicts"].values()]
    return 1 if "missed" in states else 3 if "undecided" in states else 0


def print_row(row: dict, header: bool) -> None:
    if header:
        print(f"{'example':<12}{'backend':<9}{'reps':>5}{'bare edit':>11}{'service edit':>14}{'overhead':>10}"
              f"{'bare no-op':>12}{'cache hit':>11}   (medians, ms)   verdicts (mean, 95% CI, ms)")  # fmt: skip
    m = {k: v * 1000 for k, v in row["median_s"].items()}
    verdicts = "  ".join(
        f"{name} {v['verdict'] if v['verdict'] != 'undecided' else 'cannot decide'} "
        f"({v['mean_s'] * 1000:.1f}, [{v['ci95_s'][0] * 1000:.1f}, {v['ci95_s'][1] * 1000:.1f}] vs {v['goal_s'] * 1000:g})"
        for name, v in row["verdicts"].items()
    )
    print(f"{row['example']:<12}{row['backend']:<9}{row['reps']:>5}{m['bare_edit']:>11.1f}{m['service_edit']:>14.1f}"
          f"{row['overhead_edit_s'] * 1000:>10.1f}{m['bare_nochange']:>12.1f}{m['service_hit']:>11.1f}   {verdicts}",
          flush=True)  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
