"""Tuning sweep overhead: a sweep of saxpy's `threads` over 3 values on cpu + wgsl, as `workbench
tune` runs it (interleaved rounds, then the leaders re-timed side by side), against the same
builds and runs done bare (no sweep machinery: no resume lookups, no recording, no baseline check
of the reference, no build digests, no ranking).

Both sides start cold on their own fresh copy of the example (every source gets a unique comment,
so nothing comes from the build cache) and use one RunService each with the same timing protocol.
The bare side builds each configuration and runs it once; its equivalent of the sweep is the builds
plus its mean run times the number of runs the sweep made (rounds × configurations + side-by-side
runs). Reported: the sweep's total time, the bare equivalent (builds and runs apart), their ratio
(goal ≤ 1.2), configurations per minute, each slot's verdict (cpu: "no effect", its builds are
identical), and a second sweep that finds every round recorded (the resume path; the side-by-side
re-timing runs again by design).

    python benchmarks/tune.py [--n 65536] [--values 64,128,256] [--rounds 3] [--confirm 2] [--repeat 1]
                              [--json] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.bench_output import OUT_HELP, write_json  # noqa: E402

GOAL_RATIO = 1.2
BACKENDS = ["cpu", "wgsl"]


def fresh_copy(work: Path, name: str) -> Path:
    dest = work / name
    shutil.copytree(REPO / "resources" / "examples" / "saxpy", dest, ignore=shutil.ignore_patterns("target"))
    token = uuid.uuid4().hex
    for path in [*dest.glob("src/**/*.rs"), *dest.glob("reference/*.wgsl"), *dest.glob("reference/*.cu")]:
        path.write_text(path.read_text() + f"\n// benchmark copy {token}\n")
    return dest


def sweep_once(
    root: Path, values: list[int], n: int, db: Path, cache: Path, timing, rounds: int, confirm: int
) -> dict:
    from workbench.profile.sessions.store import SessionStore
    from workbench.profile.tuning.sweep_space import Point
    from workbench.profile.tuning.tune import SweepRunner
    from workbench.project import Project
    from workbench.run.service import RunService

    project = Project.open(root)
    service = RunService(timing=timing)
    try:
        with SessionStore(db) as store:
            runner = SweepRunner(project, None, BACKENDS, store=store, run_service=service, cache_dir=cache,
                                 rounds=rounds, confirm_rounds=confirm)  # fmt: skip
            start = time.perf_counter()
            result = runner.run([Point({"threads": v}, {"n": n}) for v in values])
            seconds = time.perf_counter() - start
    finally:
        service.close()
    runs = {(json.dumps(r["config"]), r["round"]) for r in result.runs}
    return {
        "seconds": seconds,
        "runs": len(runs),
        "side_by_side_runs": sum(1 for _, rnd in runs if rnd > rounds),
        "resumed_runs": len({(json.dumps(r["config"]), r["round"]) for r in result.runs if r["resumed"]}),
        "verified": all(e["verified"] is True for e in result.entries),
        "verdicts": {slot: best["verdict"] for slot, best in result.best().items()},
    }


def bare(
    root: Path, values: list[int], n: int, cache: Path, timing, rounds: int = 1
) -> tuple[float, float, bool]:
    """(build seconds, seconds a run) of the same configurations: one plain build each, then
    `rounds` plain runs of each (the same interleaving as the sweep's rounds)."""
    from workbench.build import build_project
    from workbench.project import Project
    from workbench.run.service import RunService

    project = Project.open(root)
    service = RunService(timing=timing)
    builds = runs = 0.0
    ok = True
    with tempfile.TemporaryDirectory(prefix="wb-bench-") as tmp:
        folders = {}
        try:
            for value in values:
                start = time.perf_counter()
                results = build_project(project, BACKENDS, cache, tunables={"threads": value})
                builds += time.perf_counter() - start
                folders[value] = Path(tmp) / str(value)
                folders[value].mkdir()
                for r in results:
                    os.symlink(r.artifact_dir, folders[value] / r.backend, target_is_directory=True)
            for round_ in range(rounds):
                for value in values if round_ % 2 == 0 else values[::-1]:
                    start = time.perf_counter()
                    report = service.run(project, None, BACKENDS, None, {"n": n}, artifacts_dir=folders[value],
                                         tunables={"threads": value})  # fmt: skip
                    runs += time.perf_counter() - start
                    ok = ok and all(r.status == "ok" for r in report.results)
        finally:
            service.close()
    return builds, runs / (rounds * len(values)), ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=65536, help="saxpy's n (default 65536)")
    parser.add_argument("--values", default="64,128,256", help="threads values (default 64,128,256)")
    parser.add_argument(
        "--rounds", type=int, default=3, help="interleaved rounds (default 3, as `workbench tune`)"
    )
    parser.add_argument(
        "--confirm", type=int, default=2, help="side-by-side rounds (default 2, as `workbench tune`)"
    )
    parser.add_argument("--repeat", type=int, default=1, help="measure this many times (median reported)")
    parser.add_argument("--json", action="store_true", help="print the JSON too")
    parser.add_argument("--out", help=OUT_HELP)
    args = parser.parse_args()
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from workbench.run.timing import TimingOptions

    values = [int(v) for v in args.values.split(",")]
    # The same short protocol on both sides: the benchmark is about the sweep's own cost.
    timing = TimingOptions(min_n=10, min_time_s=0.05, warmup_max_n=10, warmup_max_s=0.3, max_time_s=2.0)
    rounds = []
    with tempfile.TemporaryDirectory(prefix="wb-tune-bench-") as tmp:
        work = Path(tmp)
        cache = work / "cache"
        # Warm-up, not measured: the first worker start of a process tree loads the wgpu driver
        # from disk; whichever side ran first would pay for it.
        bare(fresh_copy(work, "warm"), values[:1], args.n, cache, timing)
        for i in range(args.repeat):
            # Alternate which side goes first, so neither always finds the machine warmer.
            if i % 2:
                build_s, run_s, bare_ok = bare(fresh_copy(work, f"bare{i}"), values, args.n, cache, timing,
                                               args.rounds)  # fmt: skip
            sweep = sweep_once(fresh_copy(work, f"sweep{i}"), values, args.n, work / f"s{i}.db", cache,
                               timing, args.rounds, args.confirm)  # fmt: skip
            if not i % 2:
                build_s, run_s, bare_ok = bare(fresh_copy(work, f"bare{i}"), values, args.n, cache, timing,
                                               args.rounds)  # fmt: skip
            again = sweep_once(work / f"sweep{i}", values, args.n, work / f"s{i}.db", cache, timing,
                               args.rounds, args.confirm)  # fmt: skip
            # The bare equivalent: the same builds, and as many runs as the sweep made.
            bare_runs_s = run_s * sweep["runs"]
            rounds.append({"sweep_s": sweep["seconds"], "sweep_runs": sweep["runs"],
                           "side_by_side_runs": sweep["side_by_side_runs"], "verdicts": sweep["verdicts"],
                           "bare_build_s": build_s, "bare_run_s": bare_runs_s, "bare_s": build_s + bare_runs_s,
                           "ratio": sweep["seconds"] / (build_s + bare_runs_s),
                           "resumed_sweep_s": again["seconds"], "resumed_runs": again["resumed_runs"],
                           "verified": sweep["verified"] and bare_ok})  # fmt: skip
    rounds.sort(key=lambda r: r["ratio"])
    mid = rounds[len(rounds) // 2]
    configs = len(values)
    data = {
        "benchmark": "tune",
        "backends": BACKENDS,
        "values": values,
        "n": args.n,
        "sweep_rounds": args.rounds,
        "confirm_rounds": args.confirm,
        "rounds": rounds,
        "median": mid,
        "configs_per_minute": configs / mid["sweep_s"] * 60.0,
        "resumed_configs_per_minute": configs / mid["resumed_sweep_s"] * 60.0,
        "goal_ratio": GOAL_RATIO,
        "goal_met": mid["ratio"] <= GOAL_RATIO,
        "host": platform.node(),
        "cpus": os.cpu_count(),
    }
    print(f"{'measure':<38} {'value':>12}")
    rows = [
        (f"sweep of {configs} configurations (cold)", f"{mid['sweep_s']:.2f} s"),
        (
            f"runs: {args.rounds} rounds + side by side",
            f"{mid['sweep_runs'] - mid['side_by_side_runs']} + {mid['side_by_side_runs']}",
        ),  # fmt: skip
        ("bare builds", f"{mid['bare_build_s']:.2f} s"),
        ("bare runs (as many)", f"{mid['bare_run_s']:.2f} s"),
        ("bare total", f"{mid['bare_s']:.2f} s"),
        (f"ratio sweep / bare (goal <= {GOAL_RATIO})", f"{mid['ratio']:.2f}"),
        ("configurations per minute", f"{data['configs_per_minute']:.1f}"),
        ("resumed sweep (rounds recorded)", f"{mid['resumed_sweep_s']:.3f} s"),
        ("every configuration verified", str(mid["verified"])),
        *((f"verdict {slot}", verdict) for slot, verdict in sorted(mid["verdicts"].items())),
    ]
    for name, value in rows:
        print(f"{name:<38} {value:>12}")
    path = write_json(args.out, "tune.json", data)
    print(f"wrote {path}")
    if args.json:
        print(json.dumps(data, indent=2))
    return 0 if data["goal_met"] else 1


if __name__ == "__main__":
    sys.exit(main())
