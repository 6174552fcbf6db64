"""How many invocations `sessions compare` needs on this machine to call a 5% change.

Method (docs/compare.md): real A/A invocations first — `workbench run --repeat R` of the saxpy
example (cpu + wgsl: this machine's CPU and llvmpipe, or whatever wgpu finds), each repetition in
fresh worker processes, recorded in a temporary sessions database. A change of `--effect` is then
simulated by scaling one side's recorded per-invocation medians by (1 + effect): the spread between
invocations is the real one, only the shift is made up. For k = 1 … R // 2 invocations a side,
`--trials` random disjoint draws of k baseline and k changed invocations go through the verdict
(`workbench.profile.sessions.noise.between_invocations`):

- power: the fraction called "slower" (the change is real);
- false verdicts: the same draws unscaled (A/A), the fraction called "faster" or "slower";
- each twice: without a noise floor, and with the floor learned from the R − 2k invocations not
  drawn (`noise_floor`, as `sessions compare` learns it from earlier runs, except that busy runs
  count here), when there are ≥ 3.

"needed" is the smallest k whose power reaches 80%; beyond R // 2 it is extrapolated from the
measured spread σ of the log medians with the normal approximation
k ≈ 2 · ((1.96 + 0.84) · σ / (ln(1 + effect) − ln(1 + min effect)))².

    .venv/bin/python benchmarks/verdict_power.py [--repeat 20] [--size n=65536] [--effect 0.05]
        [--trials 400] [--backend cpu,wgsl] [--out FILE.json]

`--aa-splits 1:1,3:1,3:2,3:3,5:5` measures false verdicts instead, end to end: for each split
k_A:k_B, two real `workbench run --repeat k` of identical saxpy code are recorded (one database per
condition, so later splits learn a noise floor from earlier ones, as a user's history does) and
compared as `sessions compare --invocation` does (`compare_runs`), once on the machine as it is
and once with `--burners` CPU burners (`python -c 'while 1: pass'`) running throughout. Any
faster / slower there is a false verdict (docs/compare.md, "A/A").

The JSON goes outside the repository (bench_output.py) unless `--out` names a file.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.bench_output import OUT_HELP, machine, write_json  # noqa: E402
from workbench.profile.sessions.compare import compare_runs  # noqa: E402
from workbench.profile.sessions.noise import (  # noqa: E402
    MIN_EFFECT,
    MIN_INVOCATIONS,
    between_invocations,
    is_busy,
    noise_floor,
)
from workbench.profile.sessions.store import SessionStore  # noqa: E402

POWER = 0.8
Z_CONFIDENCE, Z_POWER = 1.959964, 0.841621


def record_aa(
    db: Path, repeat: int, size: str, backends: str, cache_dir: str | None, artifacts: str | None = None
) -> float:
    """`workbench run --repeat` of a saxpy copy into `db` (prebuilt `artifacts` on a host without
    Rust, as the GPU host is); the wall time it took."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "saxpy"
        shutil.copytree(
            REPO / "resources" / "examples" / "saxpy", root, ignore=shutil.ignore_patterns("target")
        )
        cmd = [sys.executable, "-m", "workbench", "run", str(root), "--backend", backends, "--size", size]
        cmd += ["--repeat", str(repeat), "--db", str(db)] + (["--cache-dir", cache_dir] if cache_dir else [])
        cmd += ["--artifacts", str(Path(artifacts).resolve())] if artifacts else []
        start = time.monotonic()
        done = subprocess.run(
            cmd, cwd=REPO, capture_output=True, text=True, env=dict(os.environ), check=False
        )
        if done.returncode != 0:
            sys.exit(f"workbench run failed ({done.returncode}):\n{done.stderr[-3000:]}")
        return time.monotonic() - start


def power_table(runs: list[dict], effect: float, trials: int, min_effect: float, rng) -> list[dict]:
    """Per k: power and false-verdict rates, without and with a learned floor."""
    medians = np.array([r["median_s"] for r in runs])
    out = []
    for k in range(1, len(runs) // 2 + 1):
        counts = {"slower": 0, "false": 0, "slower_floor": 0, "false_floor": 0, "floor_trials": 0}
        for _ in range(trials):
            order = rng.permutation(len(runs))
            a, b, rest = order[:k], order[k : 2 * k], order[2 * k :]
            # Busy runs count here: on a shared machine every run may be busy, and compare would
            # then learn no floor at all (the table's "busy" column says how many were).
            floor = noise_floor([runs[i] for i in rest], include_busy=True) if len(rest) >= 3 else None
            for suffix, used in (("", None), ("_floor", floor)):
                if suffix and floor is None:
                    continue
                changed = between_invocations(medians[a], medians[b] * (1 + effect), used, min_effect)
                same = between_invocations(medians[a], medians[b], used, min_effect)
                counts["slower" + suffix] += changed["outcome"] == "slower"
                counts["false" + suffix] += same["outcome"] in {"faster", "slower"}
            counts["floor_trials"] += floor is not None
        row = {"k": k, "power": counts["slower"] / trials, "false_rate": counts["false"] / trials}
        n = counts["floor_trials"]
        row["power_floor"] = counts["slower_floor"] / n if n else None
        row["false_rate_floor"] = counts["false_floor"] / n if n else None
        out.append(row)
    return out


def new_ids(db: Path, before: set[int]) -> list[int]:
    with SessionStore(db) as store:
        return sorted(r["id"] for r in store.records() if r["id"] not in before)


def aa_splits(args, splits: list[tuple[int, int]], tmp: Path) -> list[dict]:
    """Record each split of identical code quiet and under burners; compare; one row per
    condition × round × split × backend."""
    rows = []
    for burners in (0, args.burners):
        db = tmp / f"aa-{burners}.db"
        procs = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(burners)]
        try:
            for round_ in range(args.rounds):
                for ka, kb in splits:
                    sides = []
                    for k in (ka, kb):
                        before = set(new_ids(db, set())) if db.exists() else set()
                        record_aa(db, k, args.size, args.backend, args.cache_dir, args.artifacts)
                        sides.append(new_ids(db, before))
                    with SessionStore(db) as store:
                        result = compare_runs(store, sides[0][0], sides[1][0], invocation=True)
                    for row in result["rows"]:
                        rows.append({
                            "burners": burners, "round": round_ + 1, "split": f"{ka}:{kb}",
                            **{k: row.get(k) for k in (
                                "backend", "invocations", "ratio", "ci", "outcome", "verdict", "busy_runs", "load",
                            )},
                            "noise_floor": (row.get("noise_floor") or {}).get("rel"),
                            "false": row.get("outcome") in {"faster", "slower"},
                        })  # fmt: skip
                        print(
                            f"  burners {burners} round {round_ + 1} split {ka}:{kb} {row['backend']:5} "
                            f"{row['verdict']}",
                            flush=True,
                        )
        finally:
            for proc in procs:
                proc.kill()
                proc.wait()
    return rows


def print_aa(rows: list[dict]) -> None:
    print(f"{'burners':>7} {'split':>5} {'backend':7} {'inv':>5} {'busy':>4} {'change':>7} "
          f"{'95% CI of change':>17} {'load':>6}  verdict")  # fmt: skip
    for r in rows:
        ci = f"{(r['ci'][0] - 1) * 100:+.1f}…{(r['ci'][1] - 1) * 100:+.1f}%" if r["ci"] else "-"
        load = max((x if x is not None else math.inf) for x in r["load"]) if r["load"] else 1.0
        print(
            f"{r['burners']:>7} {r['split']:>5} {r['backend']:7} {r['invocations'][0]}:{r['invocations'][1]:<3} "
            f"{len(r['busy_runs'] or []):>4} {(r['ratio'] - 1) * 100:>+6.1f}% {ci:>17} {load:>5.2g}×  "
            f"{r['verdict']}"
        )
    for burners in sorted({r["burners"] for r in rows}):
        some = [r for r in rows if r["burners"] == burners]
        print(f"burners {burners}: {sum(r['false'] for r in some)} false verdicts in {len(some)} rows")


def extrapolated(sigma: float, effect: float, min_effect: float) -> float | None:
    gap = math.log1p(effect) - math.log1p(min_effect)
    if gap <= 0:
        return None  # the change is within the minimum effect: never called
    return 2 * ((Z_CONFIDENCE + Z_POWER) * sigma / gap) ** 2


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=20, help="A/A invocations to record (default 20)")
    parser.add_argument("--size", default="n=65536", help="saxpy size (default n=65536)")
    parser.add_argument("--backend", default="cpu,wgsl", help="backends (default cpu,wgsl)")
    parser.add_argument("--effect", type=float, default=0.05, help="simulated change (default 0.05 = 5%%)")
    parser.add_argument("--trials", type=int, default=400, help="random draws per k (default 400)")
    parser.add_argument("--min-effect", type=float, default=MIN_EFFECT, help="the verdict's minimum effect")
    parser.add_argument("--cache-dir", help="build cache (default: the user cache)")
    parser.add_argument(
        "--artifacts", metavar="DIR", help="run prebuilt artifacts (workbench run --artifacts)"
    )
    parser.add_argument("--db", help="use the A/A runs already in this database instead of recording")
    parser.add_argument("--out", help=OUT_HELP)
    parser.add_argument(
        "--aa-splits", metavar="A:B,…", help="record these splits of identical code and count false verdicts"
    )
    parser.add_argument("--burners", type=int, default=2, help="CPU burners for the loaded A/A (default 2)")
    parser.add_argument("--rounds", type=int, default=1, help="times each A/A split is recorded (default 1)")
    args = parser.parse_args()
    if args.aa_splits:
        try:
            splits = [tuple(int(x) for x in s.split(":")) for s in args.aa_splits.split(",")]
            assert all(len(s) == 2 and min(s) >= 1 for s in splits)
        except (ValueError, AssertionError):
            parser.error(f"--aa-splits takes A:B pairs of counts ≥ 1, e.g. 1:1,3:1; got {args.aa_splits!r}")
        start = time.monotonic()
        with tempfile.TemporaryDirectory() as tmp:
            rows = aa_splits(args, splits, Path(tmp))
        print_aa(rows)
        data = {
            "benchmark": "verdict_power --aa-splits", "machine": machine(),
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "method": "real A/A: two workbench run --repeat k of identical saxpy per split, compared with "
            "compare_runs(invocation=True); once as the machine is, once with CPU burners",
            "settings": {
                "splits": args.aa_splits, "size": args.size, "backends": args.backend, "burners": args.burners,
                "rounds": args.rounds, "min_invocations": MIN_INVOCATIONS,
            },
            "wall_s": time.monotonic() - start, "rows": rows,
            "false_verdicts": sum(r["false"] for r in rows),
        }  # fmt: skip
        print(f"wrote {write_json(args.out, 'verdict_aa.json', data)}")
        return 0

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(args.db) if args.db else Path(tmp) / "aa.db"
        wall = (
            None
            if args.db
            else record_aa(db, args.repeat, args.size, args.backend, args.cache_dir, args.artifacts)
        )
        with SessionStore(db) as store:
            records = store.records()
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in sorted(records, key=lambda r: r["id"]):
        if r["status"] == "ok" and (r["median_s"] or 0) > 0:
            groups[(r["backend"], r["device"])].append(r)

    rng = np.random.default_rng(0)
    results = []
    for (backend, device), runs in groups.items():
        logs = np.log([r["median_s"] for r in runs])
        sigma = float(np.std(logs, ddof=1)) if len(runs) > 1 else float("nan")
        table = power_table(runs, args.effect, args.trials, args.min_effect, rng)
        needed = next((row["k"] for row in table if row["power"] >= POWER), None)
        needed_floor = next((row["k"] for row in table if (row["power_floor"] or 0) >= POWER), None)
        results.append({
            "backend": backend, "device": device, "device_name": runs[0]["device_name"],
            "invocations": len(runs), "busy_invocations": sum(is_busy(r) for r in runs),
            "median_of_medians_s": float(np.exp(np.median(logs))), "sigma_log": sigma,
            "between_invocation_spread": math.expm1(sigma), "needed": needed, "needed_with_floor": needed_floor,
            "needed_extrapolated": extrapolated(sigma, args.effect, args.min_effect),
            "medians_s": [r["median_s"] for r in runs],
            "other_cpu_cores": [(r["host"] or {}).get("other_cpu_cores") for r in runs], "table": table,
        })  # fmt: skip

    print(
        f"verdict power: a {args.effect:.0%} change simulated on {args.repeat} real A/A invocations "
        f"(saxpy {args.size}), minimum effect {args.min_effect:.0%}, {args.trials} draws per k"
    )
    print(f"{'backend':8} {'device':8} {'inv':>4} {'busy':>4} {'median':>10} {'spread':>7} {'needed':>7} "
          f"{'w/ floor':>8} {'normal approx':>13}")  # fmt: skip
    for r in results:
        approx = r["needed_extrapolated"]
        print(
            f"{r['backend']:8} {r['device']:8} {r['invocations']:>4} {r['busy_invocations']:>4} "
            f"{r['median_of_medians_s'] * 1e6:>8.1f}µs {r['between_invocation_spread']:>6.1%} "
            f"{r['needed'] or '>' + str(len(r['table'])):>7} "
            f"{r['needed_with_floor'] or '>' + str(len(r['table'])):>8} "
            f"{'never' if approx is None else f'{math.ceil(approx)}':>13}"
        )
        for row in r["table"]:
            floor = (
                f"; with floor: power {row['power_floor']:.0%}, false {row['false_rate_floor']:.1%}"
                if row["power_floor"] is not None
                else ""
            )
            print(
                f"    k={row['k']:<3} power {row['power']:.0%}, false verdicts on A/A {row['false_rate']:.1%}{floor}"
            )
    data = {
        "benchmark": "verdict_power", "machine": machine(), "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "method": "real A/A invocations (workbench run --repeat, fresh workers each), a change simulated by "
        "scaling one side's per-invocation medians; verdict = workbench.profile.sessions.noise.between_invocations",
        "settings": {
            "repeat": args.repeat, "size": args.size, "backends": args.backend, "effect": args.effect,
            "trials": args.trials, "min_effect": args.min_effect, "power_goal": POWER,
        },
        "record_wall_s": wall, "results": results,
    }  # fmt: skip
    print(f"wrote {write_json(args.out, 'verdict_power.json', data)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
