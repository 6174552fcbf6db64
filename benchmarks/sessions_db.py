"""A sessions database of many recorded runs, made through the real recorder, cached between runs.

`ensure_db(runs)` returns a database of `runs` rows recorded by `SessionRecorder.record` (the path
every `workbench run` and the window take), one `RunReport` of realistic `RunResult`s per
invocation: a kernel on the cpu reference and three other backends × devices, 64 timing samples
each, the host sometimes busy, sometimes a `--repeat` series, the kernel's sources edited every
few dozen invocations. The file is kept in the temp folder, keyed by the run count, the schema
version and `VERSION` (bump it when the shape changes), so a second benchmark run reuses it.

    python benchmarks/sessions_db.py [--runs 100000]    # make (or find) it and print its path
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

#: Bump when what `fill` records changes: a cached file of another version is not reused.
VERSION = 1
KERNELS = ["saxpy", "reduction", "matmul", "bitonic", "scan", "softmax", "stencil2d", "warp_reduce"]
#: (backend, device spec, device name), the reference first.
LANES = [
    ("cpu", "cpu", "Intel Xeon Platinum 8480+"),
    ("nvptx", "cuda:0", "NVIDIA H200"),
    ("cuda-c", "cuda:0", "NVIDIA H200"),
    ("rust-cuda", "cuda:0", "NVIDIA H200"),
    ("wgsl", "wgpu:0", "NVIDIA H200 (Vulkan)"),
    ("rust-gpu", "wgpu:0", "NVIDIA H200 (Vulkan)"),
]
RESULTS_PER_RUN = 4
SAMPLES = 64


def db_path(runs: int) -> Path:
    from workbench.profile.sessions.schema import SCHEMA_VERSION

    folder = Path(tempfile.gettempdir()) / "wb-sessions-window-db"
    return folder / f"runs{runs}-schema{SCHEMA_VERSION}-v{VERSION}.db"


def report(index: int, rng: np.random.Generator, stamp: str):
    """Invocation `index`: one kernel on the reference and three other lanes."""
    from workbench.records import CheckRecord, RunResult, TimingStats
    from workbench.run.service import RunReport

    kernel = KERNELS[index % len(KERNELS)]
    lanes = [LANES[0], *(LANES[1 + (index // len(KERNELS) + k) % (len(LANES) - 1)] for k in range(3))]
    base = 1e-4 * (1 + KERNELS.index(kernel))
    results = []
    for backend, spec, name in lanes:
        samples = np.sort(rng.lognormal(np.log(base * (4 if backend == "cpu" else 1)), 0.04, SAMPLES))
        q1, median, q3 = (float(v) for v in np.percentile(samples, [25, 50, 75]))
        reference = backend == "cpu"
        failed = not reference and rng.random() < 0.03
        results.append(
            RunResult(
                backend=backend,
                device={"spec": spec, "name": name, "runtime": spec.split(":")[0]},
                status="ok",
                verified=None if reference else not failed,
                check=CheckRecord(
                    role="reference" if reference else "compared",
                    reference="cpu",
                    rtol=1e-5,
                    atol=1e-6,
                    is_reference=reference,
                    passed=None if reference else not failed,
                    max_abs_err=None if reference else float(rng.random() * 1e-7),
                    bad=int(failed) * 17,
                ),  # fmt: skip
                timing=TimingStats(
                    median_s=median,
                    iqr_s=q3 - q1,
                    min_s=float(samples[0]),
                    max_s=float(samples[-1]),
                    n=SAMPLES,
                    samples_s=samples.tolist(),
                    method="wall-clock" if reference else "cuda-events",
                    resolution_s=1e-9,
                    q1_s=q1,
                    q3_s=q3,
                ),  # fmt: skip
                throughput={"gbps": 12.0 / median * 1e-6, "gflops": None},
                provenance={
                    "project": kernel,
                    "kernel": kernel,
                    "time": stamp,
                    "source_hash": f"{index // 40:064x}",
                    "build_key": f"{index // 40:063x}{LANES.index((backend, spec, name))}",
                    "toolchain": {"version": "rustc 1.96.0"},
                    "flags": ["--release"],
                    "sizes": {"n": 1 << 20},
                    "tunables": {},
                    "seed": 0,
                },  # fmt: skip
            )
        )
    busy = rng.random() < 0.1
    return RunReport(
        project=kernel, kernel=kernel, results=results, reference="cpu", sizes={"n": 1 << 20},
        host_conditions={"source": "/proc", "cpus": 16, "other_cpu_cores": 6.0 if busy else 0.1, "wall_s": 1.0},
    )  # fmt: skip


def fill(path: Path, runs: int) -> float:
    """Record invocations through `SessionRecorder.record` until the file holds `runs` rows."""
    from workbench.profile.sessions.recorder import SessionRecorder
    from workbench.profile.sessions.sources import snapshot_hash

    rng = np.random.default_rng(0)
    recorder = SessionRecorder(path)
    start = time.perf_counter()
    invocations = runs // RESULTS_PER_RUN
    t0 = time.time() - invocations * 30  # one invocation every 30 s, up to now
    try:
        for index in range(invocations):
            kernel = KERNELS[index % len(KERNELS)]
            edit = index // (len(KERNELS) * 40)  # each kernel's sources change every 40 of its runs
            files = {"src/lib.rs": f"// {kernel}, edit {edit}\npub fn {kernel}() {{}}\n"}
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t0 + index * 30))
            options = (
                {"series": {"id": f"s{index // 3}", "index": index % 3 + 1, "of": 3}}
                if index % 50 < 3
                else {}
            )
            recorder.record(report(index, rng, stamp), (snapshot_hash(files), files), **options)
            if index % 2500 == 0:
                print(f"  {index * RESULTS_PER_RUN} of {runs} runs recorded", file=sys.stderr, flush=True)
    finally:
        recorder.close()
    return time.perf_counter() - start


def ensure_db(runs: int) -> tuple[Path, float]:
    """The cached database of `runs` rows (made now if missing: then the seconds it took, else 0)."""
    path = db_path(runs)
    if path.exists():
        return path, 0.0
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    for leftover in path.parent.glob(partial.name + "*"):
        leftover.unlink()
    seconds = fill(partial, runs)
    import sqlite3

    db = sqlite3.connect(partial)  # fold the log into the file before it takes its final name
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    partial.rename(path)
    return path, seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=100_000)
    args = parser.parse_args()
    path, seconds = ensure_db(args.runs)
    print(
        f"{path} ({path.stat().st_size / 1e6:.0f} MB{f', recorded in {seconds:.0f} s' if seconds else ', cached'})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
