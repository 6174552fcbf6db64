"""Search strategies scored on real brute-forced Kernel Tuner caches, beside Kernel Tuner's own.

Every workbench strategy (`workbench/profile/tuning/strategies.py`) replays each cache under
benchmarks/strategies_caches/ (`replay.py`: no device) for `--seeds` seeds within `--budget`
evaluations; Kernel Tuner's strategies run on the same caches in its simulation mode
(`strategies_kt.py`, in Kernel Tuner's own environment: `--kt-python`, e.g. a venv made with
`python -m venv /tmp/kt-venv && /tmp/kt-venv/bin/pip install kernel_tuner`). Scored as the
autotuning methodology scores a strategy:

- the target: 95 % of the way from the space's median time to its optimum ("p95"), and a second
  one, within 5 % of the optimum ("within5");
- per strategy and target: the evaluations to reach it, median over the seeds (a seed that did
  not reach it within the budget counts as beyond it), and the fraction of seeds that reached it;
- random search's expectation without repeats, (N + 1) / (k + 1) when k of the N recorded
  configurations reach the target;
- the goal for the default strategy: on every space, its median evaluations to the p95 target
  at most 50 % of random search's expectation and no more than Kernel Tuner's best strategy's;
  where missed, by how much (the ratio).

    python benchmarks/strategies.py [--seeds 20] [--budget 100] [--kt-python /tmp/kt-venv/bin/python] \
        [--out benchmarks/results/strategies-vm]

Writes OUT.json (per space and strategy: the evaluations each seed needed, the medians, the
fractions, the goal) and OUT.md (the table); OUT.traces.jsonl keeps every run's trace as it
finishes, so a run stopped part-way resumes (it is not committed: ~2 MB).
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from bench_output import OUT_HELP, machine, output_path  # noqa: E402

from workbench.profile.tuning import replay, strategies  # noqa: E402

CACHES = HERE / "strategies_caches"
KT_STRATEGIES = ("random_sample", "genetic_algorithm", "diff_evo", "simulated_annealing", "dual_annealing",
                 "greedy_ils", "mls", "pso", "firefly_algorithm", "bayes_opt")  # fmt: skip
TARGETS = ("p95", "within5")
#: The strategies whose runs take longest (model fits): started first.
SLOW = ("tpe", "cmaes", "bayes_opt", "diff_evo")


def best_so_far(values: list[float | None]) -> list[float | None]:
    out, best = [], None
    for v in values:
        if v is not None and (best is None or v < best):
            best = v
        out.append(best)
    return out


def score(traces: list[list[float | None]], goal: dict[str, float], budget: int) -> dict[str, dict]:
    """Per target: the evaluations each seed needed (None: not within the budget), their median
    (math.inf when half or more did not reach it) and the fraction reached."""
    out = {}
    for name in TARGETS:
        hits = [strategies.reached(best_so_far(t), goal[name]) for t in traces]
        ranked = [h if h is not None else math.inf for h in hits]
        out[name] = {"median": statistics.median(ranked) if ranked else math.inf,
                     "reached": sum(h is not None for h in hits) / len(hits) if hits else 0.0,
                     "evaluations": hits}  # fmt: skip
    return out


def ours(path: str, name: str, seeds: int, budget: int) -> tuple[list, float]:
    cache = replay.read(path)
    traces, seconds = [], 0.0
    for seed in range(seeds):
        started = time.perf_counter()
        trace = strategies.search(cache.space, cache.objective, name, budget=budget, seed=seed)
        seconds += time.perf_counter() - started
        traces.append([e.value for e in trace.evaluations])
    return traces, seconds


def kernel_tuner(kt_python: str, path: str, name: str, seeds: int, budget: int) -> tuple[list, float]:
    proc = subprocess.run([kt_python, str(HERE / "strategies_kt.py"), path, name, str(seeds), str(budget)],
                          capture_output=True, text=True, check=False)  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"Kernel Tuner {name} on {path}: {proc.stderr.strip()[-2000:]}")
    runs = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return [r["values"] for r in runs], sum(r["seconds"] for r in runs)


def task(kind: str, kt_python: str, path: str, name: str, seeds: int, budget: int) -> dict:
    """One strategy's seeds on one cache (a process of the pool): its traces, or its error."""
    try:
        if kind == "workbench":
            traces, seconds = ours(path, name, seeds, budget)
        else:
            traces, seconds = kernel_tuner(kt_python, path, name, seeds, budget)
    except Exception as exc:  # noqa: BLE001 - one strategy's failure is a row of the table
        return {"error": str(exc)}
    return {"traces": traces, "seconds": seconds}


def kt_version(kt_python: str) -> str | None:
    proc = subprocess.run([kt_python, "-c", "import kernel_tuner; print(kernel_tuner.__version__)"],
                          capture_output=True, text=True, check=False)  # fmt: skip
    return proc.stdout.strip() or None


def fmt(value: float) -> str:
    return "> budget" if math.isinf(value) else f"{value:g}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--budget", type=int, default=100)
    parser.add_argument("--kt-python", default="/tmp/kt-venv/bin/python")
    parser.add_argument("--ours", default=",".join(strategies.NAMES))
    parser.add_argument("--kt", default=",".join(KT_STRATEGIES), help="Kernel Tuner's strategies ('' : none)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--caches", nargs="*", help="cache files (default: benchmarks/strategies_caches/*)")
    parser.add_argument("--out", help="the output files' stem; " + OUT_HELP)
    parser.add_argument(
        "--rescore",
        action="store_true",
        help="no runs: recompute the goal and the table of --out's JSON for today's default",
    )
    args = parser.parse_args()
    args.out = str(output_path(args.out, "strategies"))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    if args.rescore:
        out = Path(args.out)
        report = json.loads(out.with_suffix(".json").read_text(), parse_constant=float)
        _restore_inf(report)
        report["default"] = strategies.DEFAULT
        for space in report["spaces"].values():
            space["goal"] = goal_check(space, strategies.DEFAULT)
        out.with_suffix(".json").write_text(
            json.dumps(_finite(report), indent=1, default=_json_default) + "\n"
        )
        out.with_suffix(".md").write_text(markdown(report) + "\n")
        print(markdown(report))
        return 0
    names = [n for n in args.ours.split(",") if n]
    kt_names = [n for n in args.kt.split(",") if n]
    files = [Path(p) for p in args.caches] if args.caches else sorted(CACHES.glob("*.json*"))
    report: dict = {"budget": args.budget, "seeds": args.seeds, "default": strategies.DEFAULT,
                    "machine": machine(), "kernel_tuner": kt_version(args.kt_python) if kt_names else None,
                    "spaces": {}}  # fmt: skip
    # Each strategy's traces as they finish, one JSON line each: a run stopped part-way resumes.
    done_path = Path(args.out).with_suffix(".traces.jsonl")
    done: dict[tuple, dict] = {}
    if done_path.exists():
        for line in done_path.read_text().splitlines():
            row = json.loads(line)
            if (row["budget"], row["seeds"]) == (args.budget, args.seeds):
                done[(row["file"], row["kind"], row["strategy"])] = row
    with tempfile.TemporaryDirectory() as tmp, ProcessPoolExecutor(args.jobs) as pool:
        plains, futures = {}, {}
        for file in files:
            plain = Path(tmp) / file.name.removesuffix(".gz")
            data = gzip.decompress(file.read_bytes()) if file.suffix == ".gz" else file.read_bytes()
            plain.write_bytes(data)  # Kernel Tuner reads plain JSON
            plains[file.name] = plain
        todo = [(file.name, kind, n) for file in files
                for kind, group in (("workbench", names), ("kernel_tuner", kt_names)) for n in group
                if (file.name, kind, n) not in done]  # fmt: skip
        todo.sort(key=lambda t: t[2] not in SLOW)  # the long poles first
        for name, kind, n in todo:
            future = pool.submit(task, kind, args.kt_python, str(plains[name]), n, args.seeds, args.budget)
            futures[future] = (name, kind, n)
        for future in as_completed(futures):
            name, kind, n = futures[future]
            row = {"file": name, "kind": kind, "strategy": n, "budget": args.budget, "seeds": args.seeds,
                   **future.result()}  # fmt: skip
            done[(name, kind, n)] = row
            with done_path.open("a") as handle:
                handle.write(json.dumps(row) + "\n")
            print(
                f"{name} {kind} {n}: " + (row.get("error", "")[:200] or f"{row['seconds']:.1f} s"), flush=True
            )
        for file in files:
            cache = replay.read(plains[file.name])
            values = cache.values()
            goal = strategies.targets(values)
            space = {
                "file": file.name, "kernel": cache.kernel, "device": cache.device,
                "configurations": len(cache.times), "failed": sum(t is None for t in cache.times.values()),
                "targets": goal,
                "random_expected": {t: strategies.random_expectation(values, goal[t], len(cache.times))
                                    for t in TARGETS},
                "workbench": {}, "kernel_tuner": {},
            }  # fmt: skip
            for kind, group in (("workbench", names), ("kernel_tuner", kt_names)):
                for n in group:
                    row = done[(file.name, kind, n)]
                    space[kind][n] = ({"error": row["error"]} if "error" in row else
                                      {**score(row["traces"], goal, args.budget), "seconds": row["seconds"]})  # fmt: skip
            space["goal"] = goal_check(space, strategies.DEFAULT)
            report["spaces"][file.name] = space
    out = Path(args.out)
    out.with_suffix(".json").write_text(json.dumps(_finite(report), indent=1, default=_json_default) + "\n")
    out.with_suffix(".md").write_text(markdown(report) + "\n")
    print(markdown(report))
    return 0


def _json_default(value):
    return str(value)


def _restore_inf(node) -> None:
    """JSON has no infinity: "> budget" medians are written as null; read back as math.inf."""
    if isinstance(node, dict):
        for key, value in node.items():
            if value is None and key in ("median", "kt_best", "half_random"):
                node[key] = math.inf
            else:
                _restore_inf(value)
    elif isinstance(node, list):
        for item in node:
            _restore_inf(item)


def _finite(node):
    if isinstance(node, float) and math.isinf(node):
        return None
    if isinstance(node, dict):
        return {k: _finite(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_finite(v) for v in node]
    return node


def goal_check(space: dict, default: str) -> dict:
    """The default strategy against the goal on one space (p95 target): its median, half of random
    search's expectation, Kernel Tuner's best median, and the ratios (≤ 1 meets each)."""
    mine = space["workbench"].get(default, {}).get("p95", {}).get("median", math.inf)
    half = space["random_expected"]["p95"] / 2
    kt = [v["p95"]["median"] for v in space["kernel_tuner"].values() if "p95" in v]
    kt_best = min(kt) if kt else math.inf
    return {"default": default, "median": mine, "half_random": half, "kt_best": kt_best,
            "vs_half_random": mine / half,
            "vs_kt_best": None if not kt else mine / kt_best if math.isfinite(kt_best) else (1.0 if math.isinf(mine) else 0.0),
            "met": mine <= half and (not kt or mine <= kt_best)}  # fmt: skip


def markdown(report: dict) -> str:
    lines = [
        "# Search strategies on real Kernel Tuner caches",
        "",
        f"Budget {report['budget']} evaluations, {report['seeds']} seeds per strategy; Kernel Tuner "
        f"{report.get('kernel_tuner') or '(not run)'} in its simulation mode. Evaluations to reach "
        'each target: median over the seeds ("> budget" when half or more did not reach it within the '
        "budget) and the fraction of seeds that reached it. p95: 95 % of the way from the space's median to "
        "its optimum (the autotuning methodology's target); within5: within 5 % of the optimum. Random "
        "search's expectation: (N + 1) / (k + 1). Generated by `python benchmarks/strategies.py`.",
        "",
    ]
    for name, space in report["spaces"].items():
        g, r = space["targets"], space["random_expected"]
        lines += [
            f"## {name}: {space['kernel']} on {space['device'] or '(device not recorded)'}, "
            f"{space['configurations']} configurations",
            "",
            f"optimum {g['optimum']:.4g} ms, median {g['median']:.4g} ms; p95 target {g['p95']:.4g} ms "
            f"(random search expects {r['p95']:.1f} evaluations), within5 {g['within5']:.4g} ms (random: "
            f"{r['within5']:.1f})",
            "",
            "| tool | strategy | p95: median evals | p95: reached | within5: median evals | within5: reached |",
            "|---|---|---:|---:|---:|---:|",
        ]
        for tool, key in (("workbench", "workbench"), ("Kernel Tuner", "kernel_tuner")):
            for n, s in space[key].items():
                if "error" in s:
                    lines.append(f"| {tool} | {n} | error | | | |")
                    continue
                mark = " (default)" if key == "workbench" and n == report["default"] else ""
                lines.append(
                    f"| {tool} | {n}{mark} | {fmt(s['p95']['median'])} | {s['p95']['reached']:.0%} | "
                    f"{fmt(s['within5']['median'])} | {s['within5']['reached']:.0%} |"
                )
        c = space["goal"]
        verdict = "met" if c["met"] else "missed"
        kt = (
            f"Kernel Tuner's best {fmt(c['kt_best'])}"
            if c["vs_kt_best"] is not None
            else "no Kernel Tuner run"
        )
        lines += [
            "",
            f"Goal ({c['default']}, p95): {fmt(c['median'])} evaluations against half of random's "
            f"{c['half_random']:.1f} (ratio {c['vs_half_random']:.2f}) and {kt}"
            + (f" (ratio {c['vs_kt_best']:.2f})" if c["vs_kt_best"] is not None else "")
            + f": **{verdict}**.",
            "",
        ]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
