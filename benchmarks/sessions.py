"""Sessions database speed with many recorded runs: listing/filtering, recording one run, comparing.

Fills a database (in a temporary folder unless `--db`) with `--runs` results (default 100,000:
20 kernels x 6 backends x 4 devices, `--samples` raw timing samples each), then times, each
repeated and reported as the median:

- listing the newest 1,000 runs, unfiltered and filtered by kernel, backend, device (spec and part
  of the name), verified, date, and all together — goal <= 100 ms;
- recording one `workbench run` of two results with 10,000 samples each (as the CPU backend times
  saxpy), with its source snapshot — goal <= 5 ms;
- comparing two such runs' invocations per backend x device (`compare_runs(..., invocation=True)`:
  the A/A history read for the noise floor, the verdict, the within-run bootstrap) — goal <= 50 ms;
- the check before a write (`write_check`), measured only, as it adds to recording: on a file as a
  workbench left it (a `stat`, the seal read, the seal written: every record pays it), and a
  record after the file changed outside the workbench (its `PRAGMA quick_check` first: paid once
  per such change); and `PRAGMA quick_check` of the whole file and of the runs table alone.

    .venv/bin/python benchmarks/sessions.py [--runs N] [--samples K] [--db FILE] [--out FILE.json]

The JSON goes outside the repository (bench_output.py) unless `--out` names a file.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.bench_output import write_json  # noqa: E402
from workbench.profile.sessions import write_check  # noqa: E402
from workbench.profile.sessions.compare import compare_runs  # noqa: E402
from workbench.profile.sessions.record import record_report, result_row  # noqa: E402
from workbench.profile.sessions.sources import snapshot_hash  # noqa: E402
from workbench.profile.sessions.store import SessionStore  # noqa: E402

KERNELS = [f"kernel{i:02d}" for i in range(20)]
BACKENDS = ["cpu", "nvptx", "rust-gpu", "rust-cuda", "cuda-c", "wgsl"]
DEVICES = [
    ("cpu", "Intel Xeon"),
    ("cuda:0", "NVIDIA H200"),
    ("cuda:1", "NVIDIA H200"),
    ("wgpu:0", "llvmpipe"),
]
GOALS_MS = {"list": 100.0, "record": 5.0, "compare": 50.0}


def report(kernel: str, results: list[tuple[str, str, str]], n: int, rng, stamp: str) -> dict:
    """A `workbench run --json`-shaped report: one result per (backend, device spec, name)."""
    out = []
    for backend, spec, name in results:
        samples = rng.lognormal(np.log(1e-4), 0.05, n)
        out.append({
            "backend": backend, "device": {"spec": spec, "name": name}, "status": "ok",
            "verified": rng.random() > 0.05, "check": {"is_reference": backend == "cpu"}, "error": None,
            "timing": {"median_s": float(np.median(samples)), "iqr_s": 1e-6, "min_s": float(samples.min()),
                       "max_s": float(samples.max()), "n": n, "samples_s": samples, "method": "cuda-events"},
            "throughput": {"gbps": 100.0}, "provenance": {
                "project": "bench", "kernel": kernel, "source_hash": "0" * 64, "build_key": "1" * 64,
                "toolchain": {"version": "rustc 1.96.0"}, "flags": ["--release"], "sizes": {"n": 1 << 20},
                "tunables": {}, "seed": 0, "time": stamp},
        })  # fmt: skip
    return {"project": "bench", "kernel": kernel, "results": out}


def fill(store: SessionStore, runs: int, samples: int) -> float:
    """Insert `runs` results in batches (one transaction per 2,000); returns seconds taken."""
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    t0 = time.time() - runs * 60  # one run a minute, up to now
    files = {"src/lib.rs": "pub fn k() {}\n"}
    digest = snapshot_hash(files)
    done = 0
    while done < runs:
        with store.transaction() as db:
            db.execute(
                "INSERT OR IGNORE INTO sources (hash, files) VALUES (?, ?)", (digest, json.dumps(files))
            )
            for _ in range(min(2000, runs - done)):
                kernel = KERNELS[done % len(KERNELS)]
                backend = BACKENDS[(done // len(KERNELS)) % len(BACKENDS)]
                spec, name = DEVICES[(done // 7) % len(DEVICES)]
                stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t0 + done * 60))
                data = report(kernel, [(backend, spec, name)], samples, rng, stamp)
                row = result_row(data, data["results"][0], uuid.uuid4().hex, digest)
                store._insert_row(db, row)
                done += 1
    return time.perf_counter() - start


def timed(fn, reps: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(reps):
        start = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=100, help="raw samples per filler run (default 100)")
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--db", help="database file (default: a temporary folder)")
    parser.add_argument("--out", help="JSON result file (default: the system temp folder)")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="wb-sessions-bench-"))
    path = Path(args.db) if args.db else tmp / "sessions.db"
    rows: list[dict] = []
    with SessionStore(path) as store:
        existing = store.count()
        fill_s = fill(store, args.runs - existing, args.samples) if existing < args.runs else 0.0
        total = store.count()
        print(f"{total} runs in {path} ({path.stat().st_size / 1e6:.0f} MB; filled in {fill_s:.1f} s)")
        since = time.time() - 7 * 86400
        lists = {
            "list newest 1000": {},
            "filter kernel": {"kernel": "kernel07"},
            "filter backend": {"backend": "cuda-c"},
            "filter device spec": {"device": "cuda:1"},
            "filter device name part": {"device": "llvmpipe"},
            "filter verified": {"verified": False},
            "filter last 7 days": {"since": since},
            "filter kernel+backend+device": {"kernel": "kernel03", "backend": "nvptx", "device": "cuda:0"},
        }
        for name, filters in lists.items():
            ms, found = timed(lambda f=filters: store.list_runs(limit=1000, **f), args.reps)
            rows.append({"operation": name, "median_ms": ms, "goal_ms": GOALS_MS["list"], "rows": len(found)})
        ms, kernels = timed(lambda: store.distinct("kernel"), args.reps)
        rows.append(
            {
                "operation": "distinct kernels (filter menu)",
                "median_ms": ms,
                "goal_ms": GOALS_MS["list"],
                "rows": len(kernels),
            }
        )

        rng = np.random.default_rng(1)
        pair = [("cpu", "cpu", "Intel Xeon"), ("wgsl", "wgpu:0", "llvmpipe")]
        files = {"src/lib.rs": "pub fn k() {}\n// " + "x" * 2000 + "\n", "workbench.toml": "[project]\n" * 40}
        reports = [
            report("saxpy", pair, 10_000, rng, time.strftime("%Y-%m-%dT%H:%M:%SZ"))
            for _ in range(args.reps * 2)
        ]
        recorded: list[list[int]] = []
        times = []
        for i, data in enumerate(reports):
            files = {**files, "src/lib.rs": files["src/lib.rs"] + f"// edit {i}\n"}
            snap = (snapshot_hash(files), files)
            start = time.perf_counter()
            recorded.append(record_report(store, data, snapshot=snap))
            times.append((time.perf_counter() - start) * 1000)
        rows.append({"operation": "record one run (2 results x 10,000 samples)", "median_ms": statistics.median(times),
                     "goal_ms": GOALS_MS["record"], "rows": 2})  # fmt: skip
        ms, result = timed(
            lambda: compare_runs(store, recorded[0][0], recorded[-1][0], invocation=True), args.reps
        )
        rows.append({"operation": "compare two runs (2 rows, 10,000 samples each)", "median_ms": ms,
                     "goal_ms": GOALS_MS["compare"], "rows": len(result["rows"])})  # fmt: skip
        # The check before a write (issue 35): what every record pays on a sealed file, and what
        # a record pays once after another program changed the file (a quick_check first). A
        # quick_check before *every* first write would cost the latter per `workbench run`.
        ms, _ = timed(lambda: (write_check.unchanged(path), write_check.identity(path)), args.reps * 20)
        rows.append({"operation": "write check per record, file as sealed (2 stats, seal read)", "median_ms": ms,
                     "goal_ms": None, "rows": 0})  # fmt: skip
        changed = []
        for _ in range(3):
            info = path.stat()
            os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000))  # "another program"
            data = report("saxpy", pair, 10_000, rng, time.strftime("%Y-%m-%dT%H:%M:%SZ"))
            start = time.perf_counter()
            record_report(store, data)
            changed.append((time.perf_counter() - start) * 1000)
        rows.append({"operation": "record one run after an outside change (quick_check first)",
                     "median_ms": statistics.median(changed), "goal_ms": None, "rows": 2})  # fmt: skip
        for name, sql in (("quick_check, whole file", "PRAGMA quick_check"),
                          ("quick_check, runs table only", "PRAGMA quick_check(runs)")):  # fmt: skip
            ms, found = timed(lambda sql=sql: store._query(sql), 3)
            rows.append({"operation": f"{name} (measured only)", "median_ms": ms, "goal_ms": None,
                         "rows": len(found)})  # fmt: skip
        integrity = store.integrity_check() if total <= 200_000 else "skipped"

    print("load average (1, 5, 15 min): " + ", ".join(f"{x:.1f}" for x in os.getloadavg()))
    width = max(len(r["operation"]) for r in rows)
    print(f"{'operation'.ljust(width)}  median ms  goal ms  rows  ok")
    for r in rows:
        r["ok"] = None if r["goal_ms"] is None else r["median_ms"] <= r["goal_ms"]
        goal = "-" if r["goal_ms"] is None else f"{r['goal_ms']:.0f}"
        ok = {None: "-", True: "yes", False: "NO"}[r["ok"]]
        print(f"{r['operation'].ljust(width)}  {r['median_ms']:9.2f}  {goal:>7}  {r['rows']:4d}  {ok}")
    result = {
        "benchmark": "sessions", "runs": total, "samples_per_filler_run": args.samples, "reps": args.reps,
        "db_bytes": path.stat().st_size, "fill_s": fill_s, "integrity_check": integrity,
        "host": socket.gethostname(), "python": platform.python_version(), "cpus": os.cpu_count(),
        "load_average_1_5_15": os.getloadavg(),  # a loaded machine slows every row, not the goals
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "results": rows,
        "all_ok": all(r["ok"] is not False for r in rows),
    }  # fmt: skip
    out = write_json(args.out, "workbench-sessions-benchmark.json", result)
    print(f"wrote {out}")
    if not args.db:
        for f in tmp.iterdir():
            f.unlink()
        tmp.rmdir()
    return 0 if result["all_ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
