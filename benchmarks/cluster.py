"""Tuning on a Dask cluster: configurations per minute with `--cluster local:1` and `local:2` against
a local tune (no `--cluster`), and the overhead per configuration the cluster adds.

Each side is `workbench tune` as a user runs it (a child process) on saxpy's `threads`, cpu + wgsl,
with one warm build cache (a first untimed tune builds every configuration) and a fresh sessions
database each, so every side runs every round and nothing is resumed. Reported per side: the
sweep's seconds (the runner's own clock: from its first configuration to its last, cluster
start-up excluded), the process's wall time (start-up included), the runs made (rounds ×
configurations), configurations per minute (runs / sweep seconds × 60), the overhead per run
against the local tune ((sweep seconds - local sweep seconds) / runs), the speed-up of 2 workers
over 1, and each backend × device's verdict and best configuration (the same on every side is the
point: a cluster must not change what wins).

The sweep seconds of a cluster side exclude its workers' runtime start-up (their devices are
probed when the workers are admitted, before the first configuration), while the local tune's
include its own (its runtime workers start with its first configuration); the wall time covers
both. Builds are cache hits here, overlapped with measuring on a cluster, in series locally.

On this VM (2 shared cores, llvmpipe: the "devices" are the same cores) two workers cannot run
faster than one; the goal of >= 1.8x applies to two workers each owning a real GPU.

    python benchmarks/cluster.py [--n 65536] [--values 64,128,256,512] [--rounds 2] [--json] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.bench_output import OUT_HELP, machine, write_json  # noqa: E402

GOAL_SPEEDUP = 1.8  # two workers over one, each owning its own GPU (not measurable on this VM)
SIDES = [("local tune", None), ("cluster local:1", "local:1"), ("cluster local:2", "local:2")]


def tune(project: Path, db: Path, cache: Path, args, cluster: str | None) -> tuple[dict, float]:
    command = [sys.executable, "-m", "workbench", "tune", str(project), "--backend", "cpu,wgsl",
               "--size", f"n={args.n}", "--param", f"threads={args.values}", "--rounds", str(args.rounds),
               "--confirm", "0", "--db", str(db), "--cache-dir", str(cache), "--json"]  # fmt: skip
    if cluster:
        command += ["--cluster", cluster]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=REPO, check=False)
    wall = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"workbench tune failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout), wall


def best_of(data: dict) -> dict:
    def key(config):
        return json.dumps(config, sort_keys=True)

    return {slot: {"verdict": b["verdict"], "winner": b.get("winner"),
                   "ties": sorted(b.get("ties") or [], key=key)}
            for slot, b in data["best"].items()}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=65536, help="saxpy's n (default 65536)")
    parser.add_argument("--values", default="64,128,256,512", help="threads values (default 64,128,256,512)")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds (default 2)")
    parser.add_argument("--json", action="store_true", help="print the JSON too")
    parser.add_argument("--out", help=OUT_HELP)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="wb-bench-cluster-"))
    try:
        project = work / "saxpy"
        shutil.copytree(
            REPO / "resources" / "examples" / "saxpy", project, ignore=shutil.ignore_patterns("target")
        )
        cache = work / "cache"
        tune(project, work / "warm.db", cache, args, None)  # builds every configuration once, untimed
        rows = []
        for name, cluster in SIDES:
            data, wall = tune(
                project, work / f"{name.replace(' ', '-').replace(':', '-')}.db", cache, args, cluster
            )
            runs = sum(len(e.get("rounds") or []) for e in data["configs"]) // max(
                1, len({e["backend"] for e in data["configs"]})
            )
            rows.append({"side": name, "cluster": cluster, "sweep_s": data["seconds"], "wall_s": wall, "runs": runs,
                         "configs_per_min": runs / data["seconds"] * 60 if data["seconds"] else None,
                         "workers": len((data.get("cluster") or {}).get("workers") or []) or None,
                         "best": best_of(data)})  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)
    local = rows[0]
    for row in rows[1:]:
        row["overhead_per_run_s"] = (row["sweep_s"] - local["sweep_s"]) / row["runs"]
    one, two = rows[1], rows[2]
    speedup = two["configs_per_min"] / one["configs_per_min"]
    same_best = all(r["best"] == local["best"] for r in rows)

    print(f"saxpy n={args.n}, threads={args.values}, cpu + wgsl, {args.rounds} rounds, no side-by-side "
          f"({os.cpu_count()} cores here)")  # fmt: skip
    print(f"{'side':<18} {'workers':>7} {'runs':>5} {'sweep s':>9} {'wall s':>8} {'configs/min':>12} "
          f"{'overhead/run':>13}")  # fmt: skip
    for r in rows:
        overhead = f"{r['overhead_per_run_s'] * 1e3:+.0f} ms" if "overhead_per_run_s" in r else "-"
        print(f"{r['side']:<18} {r['workers'] or '-':>7} {r['runs']:>5} {r['sweep_s']:>9.2f} {r['wall_s']:>8.2f} "
              f"{r['configs_per_min']:>12.1f} {overhead:>13}")  # fmt: skip
    print(
        f"2 workers / 1 worker: {speedup:.2f}x configurations per minute (goal on two GPUs: >= {GOAL_SPEEDUP}x)"
    )
    for r in rows:
        print(f"  {r['side']:<18} " + "; ".join(f"{slot} {b['verdict']} {b['winner'] or b['ties']}"
                                                for slot, b in r["best"].items()))  # fmt: skip
    print(f"same verdicts and best configurations on every side: {same_best}")
    data = {"benchmark": "cluster", "machine": machine(), "settings": vars(args) | {"out": None}, "rows": rows,
            "speedup_2_over_1": speedup, "goal_speedup_two_gpus": GOAL_SPEEDUP, "same_best": same_best}  # fmt: skip
    path = write_json(args.out, "cluster.json", data)
    print(f"wrote {path}")
    if args.json:
        print(json.dumps(data, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
