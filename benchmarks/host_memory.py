"""What moving a large run's buffers costs on this host: the pieces of issue 15's host overhead.

    python benchmarks/host_memory.py [--gib 1] [--out FILE.json]

For one buffer of --gib GiB (float32) it times, each in this process:
- `memfd fallocate + map`: a fresh shared segment's pages allocated (fallocate) and mapped
  (MAP_POPULATE) — what a worker pays for a `receive` segment, and what each process pays per
  4 KiB page table entry where shmem has no huge pages;
- `map existing`: the same segment mapped again and read (the main process reading outputs a
  worker wrote);
- `private copy`: `np.copyto` into fresh private memory (transparent huge pages where enabled);
- `compare` (workbench.run.verify.compare, two arrays differing in ~18 % of elements by one
  rounding, as fused against unfused saxpy) with 1, 4, 8 and 16 threads, and the bit-equal case.
Prints a table; writes JSON (default outside the repository, see bench_output.py).
"""

from __future__ import annotations

import argparse
import mmap
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from benchmarks.bench_output import OUT_HELP, machine, write_json  # noqa: E402


def _timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gib", type=float, default=1.0)
    parser.add_argument("--out", default=None, help=OUT_HELP)
    args = parser.parse_args(argv)
    from workbench.run import verify

    nbytes = int(args.gib * (1 << 30)) // 4096 * 4096
    n = nbytes // 4
    rows: dict[str, float] = {}
    shp = Path("/sys/kernel/mm/transparent_hugepage/shmem_enabled")
    fd = os.memfd_create("wb-bench")
    os.ftruncate(fd, nbytes)
    rows["memfd fallocate"] = _timed(lambda: os.posix_fallocate(fd, 0, nbytes))
    holder: dict[str, object] = {}

    def map_populate() -> None:
        holder["m"] = mmap.mmap(fd, nbytes, flags=mmap.MAP_SHARED | mmap.MAP_POPULATE)

    rows["memfd map (populate)"] = _timed(map_populate)
    shared = np.frombuffer(holder["m"], np.float32)
    rng = np.random.default_rng(0)
    rows["fill (random, 1 thread)"] = _timed(lambda: rng.random(out=shared, dtype=np.float32))

    def map_existing() -> None:
        view = np.frombuffer(mmap.mmap(fd, nbytes, prot=mmap.PROT_READ), np.float32)
        holder["sum"] = float(view[::1024].sum()) + float(np.count_nonzero(view > 2))

    rows["map existing + read"] = _timed(map_existing)
    private = np.empty(n, np.float32)
    rows["private copy (fresh pages)"] = _timed(lambda: np.copyto(private, shared))
    rows["private copy (again)"] = _timed(lambda: np.copyto(private, shared))
    # ~18 % of elements one rounding apart, as fused against unfused a*x + y
    flip = rng.random(n, dtype=np.float32) < 0.18
    other = shared.copy()
    other[flip] = np.nextafter(other[flip], np.float32(2))
    for threads in (1, 4, 8, 16):
        verify.THREADS = threads
        rows[f"compare, 18 % differ, {threads} threads"] = _timed(
            lambda: verify.compare(other, shared, 1e-6, 1e-6, 4)
        )
    verify.THREADS = 16
    rows["compare, bit-equal, 16 threads"] = _timed(lambda: verify.compare(shared, shared, 1e-6, 1e-6, 4))
    os.close(fd)
    print(f"{'step':40s} {'seconds':>8} {'ns/element':>11}  ({args.gib:g} GiB, n={n})")
    for name, seconds in rows.items():
        print(f"{name:40s} {seconds:8.3f} {seconds / n * 1e9:11.2f}")
    result = {
        "benchmark": "host_memory",
        "gib": args.gib,
        "n": n,
        "machine": machine(),
        "affinity_cpus": len(os.sched_getaffinity(0)),
        "shmem_enabled": shp.read_text().strip() if shp.exists() else None,
        "seconds": rows,
    }
    out = write_json(args.out, "host_memory.json", result)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
