"""Build latency: the bare compiler command vs the build service, per example and backend.

For (a) a one-line edit (a comment appended to the backend's source) and (b) no change, it times
the compiler command the adapter runs, alone, and `BuildService` (hashing, cache, process group,
output parsing, artifact folder, resource report), in one run, several repetitions, medians.
Goals: service overhead <= 50 ms median for an edit; a cache hit <= 20 ms.

    .venv/bin/python benchmarks/build_latency.py [--json OUT] [--reps N] [--backends cpu,nvptx]
"""

from __future__ import annotations

import argparse
import json
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

from workbench.build import BuildService  # noqa: E402
from workbench.build.cache import target_dir  # noqa: E402
from workbench.build.toolchains import detect  # noqa: E402
from workbench.project import Project  # noqa: E402

BACKENDS = ("cpu", "nvptx", "cuda-c", "wgsl")


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
    example: Path, backend: str, service: BuildService, cache: Path, reps: int, scratch: Path
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

    def service_build(expect_cached: bool) -> None:
        result = service.submit(project, [backend]).wait()[backend]
        if result.status != "ok" or result.cached != expect_cached:
            raise RuntimeError(f"{backend}: {result.status} cached={result.cached}\n{result.log[-2000:]}")

    source = edited_file(project, backend)
    service_build(False)  # warm: dependencies (core) and detection
    rows = {"bare_edit": [], "service_edit": [], "bare_nochange": [], "service_hit": []}
    for i in range(reps):
        with open(source, "a") as f:
            f.write(f"// bare edit {i}\n")
        rows["bare_edit"].append(timed(bare))
        rows["bare_nochange"].append(timed(bare))
        with open(source, "a") as f:
            f.write(f"// service edit {i}\n")
        rows["service_edit"].append(timed(lambda: service_build(False)))
        rows["service_hit"].append(timed(lambda: service_build(True)))
    med = {k: statistics.median(v) for k, v in rows.items()}
    return {
        "example": example.name, "backend": backend, "reps": reps,
        "median_s": med, "samples_s": rows,
        "overhead_edit_s": med["service_edit"] - med["bare_edit"],
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="OUT", help="default: benchmarks/results/build_latency-<host>.json")
    parser.add_argument("--reps", type=int, default=5)
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
                    row = bench(example, backend, service, cache, args.reps, scratch)
                    if row:
                        rows.append(row)
                        print_row(row, header=len(rows) == 1)
    out = (
        Path(args.json)
        if args.json
        else REPO / "benchmarks" / "results" / f"build_latency-{socket.gethostname()}.json"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    goals = {"service_overhead_edit_s": 0.050, "cache_hit_s": 0.020}
    out.write_text(json.dumps({"host": socket.gethostname(), "goals": goals, "rows": rows}, indent=2) + "\n")
    print(f"\nwritten {out}")
    return 0


def print_row(row: dict, header: bool) -> None:
    if header:
        print(f"{'example':<12}{'backend':<9}{'bare edit':>11}{'service edit':>14}{'overhead':>10}"
              f"{'bare no-op':>12}{'cache hit':>11}   (medians, ms)")  # fmt: skip
    m = {k: v * 1000 for k, v in row["median_s"].items()}
    print(f"{row['example']:<12}{row['backend']:<9}{m['bare_edit']:>11.1f}{m['service_edit']:>14.1f}"
          f"{row['overhead_edit_s'] * 1000:>10.1f}{m['bare_nochange']:>12.1f}{m['service_hit']:>11.1f}", flush=True)  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
