"""`workbench tune PATH`: sweep a kernel's tunables; every configuration built, run, verified,
timed in interleaved rounds and recorded; per backend × device the configurations that build the
same code are one point, and the best is a winner only beyond noise, else the tie set.

Exit status: 0 when every configuration that ran verified, 1 when one failed (it is listed,
flagged, and never ranked; skipped and not-verified ones are not failures), 2 on bad input
(unknown tunable, size, backend; no configuration; an `--apply` the sweep cannot back).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from workbench.cli import arg_types
from workbench.errors import WorkbenchError
from workbench.profile.tuning.ranking import MIN_EFFECT, outcome
from workbench.profile.tuning.strategies import DEFAULT, DESCRIPTIONS
from workbench.profile.tuning.strategies import NAMES as STRATEGY_NAMES
from workbench.project import Project
from workbench.units import format_time


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "tune",
        help="sweep a kernel's tunables, verify every configuration, rank with confidence intervals",
        description="Build, run, verify and time every configuration of the kernel's [kernel.tunables] "
        "(less those breaking its constraints) on each backend and device in interleaved rounds; record "
        "each in the sessions database as it finishes (a rerun resumes from what is recorded, and reruns "
        "failures whose settings changed); configurations whose build is identical are one point; the "
        "leaders are re-timed side by side, and the best per backend × device is a winner only when it "
        "is faster beyond the between-round noise by more than --min-effect, else the tie set.",
    )
    parser.add_argument("path", nargs="?", default=".", help="project folder or workbench.toml")
    parser.add_argument("--kernel", help="kernel name (default: the first in workbench.toml)")
    parser.add_argument(
        "--param", action="append", default=[], metavar="NAME[=V1,V2,...]",
        help="sweep this tunable (over these values; NAME alone: over its workbench.toml values); repeatable. "
        "With --param only the tunables named are swept, the others stay at their defaults (the first "
        "value in workbench.toml); without --param every tunable is swept",
    )  # fmt: skip
    parser.add_argument(
        "--strategy", choices=STRATEGY_NAMES, metavar="NAME",
        help="how configurations are chosen: " + "; ".join(f"{k}: {v}" for k, v in DESCRIPTIONS.items())
        + f". Default: {DEFAULT} with --budget or --budget-time (chosen by benchmarks/strategies.py), "
        "else grid (every configuration)",
    )  # fmt: skip
    parser.add_argument(
        "--budget",
        type=arg_types.count(1, 1_000_000),
        metavar="N",
        help="at most N configurations (evaluations)",
    )
    parser.add_argument(
        "--budget-time", type=arg_types.positive_seconds, metavar="S",
        help="a search strategy stops choosing configurations after S seconds (of the first round)",
    )  # fmt: skip
    parser.add_argument(
        "--replay", metavar="CACHE.json",
        help="no device: run the strategy against a Kernel Tuner cache file (its cache JSON or T4 results, "
        "gzipped or not; every configuration's recorded time) and print its trace; PATH is not read",
    )  # fmt: skip
    parser.add_argument("--backend", help="comma-separated backends (default: as `workbench run`)")
    parser.add_argument(
        "--device", action="append", default=[], metavar="SPEC", help="device(s), as `workbench run`"
    )
    parser.add_argument(
        "--size", action="append", default=[], metavar="NAME=VALUE", help="problem size; repeatable"
    )
    parser.add_argument(
        "--seed",
        type=arg_types.seed,
        default=0,
        help="seed of the random strategy and of the inputs (default 0)",
    )
    parser.add_argument(
        "--timeout",
        type=arg_types.positive_seconds,
        default=10.0,
        metavar="S",
        help="per-launch timeout (default 10)",
    )
    parser.add_argument(
        "--rounds", type=arg_types.count(1, 1000), default=3, metavar="N",
        help="interleaved rounds: every configuration measured once per round (default 3)",
    )  # fmt: skip
    parser.add_argument(
        "--confirm", type=arg_types.count(0, 1000), default=2, metavar="N",
        help="rounds re-timing a would-be winner side by side with the runner-up (default 2; 0: none)",
    )  # fmt: skip
    parser.add_argument(
        "--min-effect", type=arg_types.fraction, default=MIN_EFFECT, metavar="F",
        help=f"a winner is faster than every other point by more than this fraction (default {MIN_EFFECT})",
    )  # fmt: skip
    parser.add_argument("--db", metavar="FILE", help="sessions database (default: the user data folder)")
    parser.add_argument("--cache-dir", metavar="DIR", help="build cache folder")
    parser.add_argument("--no-resume", action="store_true", help="run every configuration again")
    parser.add_argument(
        "--apply", metavar="BACKEND@DEVICE", nargs="?", const="",
        help="write the winner into workbench.toml as the defaults (of BACKEND@DEVICE; default: the one "
        "backend × device the tunables affect); refused where they have no effect or there is no winner",
    )  # fmt: skip
    parser.add_argument(
        "--cluster", metavar="SPEC",
        help="run the configurations on a Dask cluster: local (one worker per local device), local:N (N "
        "workers here), tcp://HOST:PORT (a running scheduler) or hosts:NAME[,NAME...] (one worker per device "
        "of each registered host, started over ssh); builds stay here, results are recorded here",
    )  # fmt: skip
    parser.add_argument(
        "--export-kt", metavar="FILE",
        help="also write the results as Kernel Tuner's cache JSON (one backend x device: FILE; several: "
        "FILE's stem.<backend>@<device>.json each)",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(func=run)


def _config_text(config: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in config.items()) or "(no tunables)"


def _verified_text(entry: dict[str, Any]) -> str:
    return {True: "yes", False: "NO"}.get(entry["verified"], "-")


def _note(entry: dict[str, Any]) -> str:
    note = entry.get("error") or ("resumed" if entry.get("resumed") else "")
    kind = outcome(entry)
    if kind == "skipped":
        return f"skipped: {note}"
    if entry["status"] != "ok":
        return f"{entry['status']}: {note}"
    if kind != "ok":
        return f"not ranked ({entry.get('verdict') or 'not verified'})" + (f"; {note}" if note else "")
    return note


def table(data: dict[str, Any]) -> str:
    rounds = data.get("rounds") or {}
    lines = [f"{'configuration':<24} {'backend':<9} {'device':<10} {'verified':<8} {'median':>12} "
             f"{'rounds':>6}  note"]  # fmt: skip
    for e in data["configs"]:
        median = (e.get("timing") or {}).get("median_s")
        lines.append(
            f"{_config_text(e['config']):<24} {e['backend']:<9} {e['device']:<10} {_verified_text(e):<8} "
            f"{format_time(median):>12} {len(e.get('rounds') or []):>6}  {_note(e)}"
        )
    for p in data.get("pruned", []):
        lines.append(f"{_config_text(p['config']):<24} pruned by constraint {p['constraint']!r}")
    counts = data.get("counts") or {}
    if counts:
        lines.append(", ".join(f"{n} {k}" for k, n in counts.items() if n or k in ("ok", "failed")))
    search = data.get("search")
    if search:
        found = search.get("best") or {}
        lines.append(
            f"search {search['strategy']} (seed {search['seed']}): {search['evaluations']} evaluations "
            f"({search['failed']} failed; stopped: {search['stopped']})"
            + (f"; its best at evaluation {found['n']}: {_config_text(found['config'])}" if found else "")
        )
    lines.append("")
    lines.append(f"best ({data['ranking']}; {rounds.get('sweep', 1)} round(s), "
                 f"{rounds.get('confirm', 0)} side-by-side):")  # fmt: skip
    for slot, best in data["best"].items():
        ci = best.get("ci_s")
        spread = f" [{format_time(ci[0])}, {format_time(ci[1])}]" if ci else ""
        if best["verdict"] in ("winner", "single"):
            head = f"{_config_text(best['winner']):<20} {format_time(best['median_s'])}{spread}"
        elif best["verdict"] == "tie":
            head = "tie: " + ", ".join(_config_text(c) for c in best["ties"])
        else:
            head = "no best: " + ", ".join(_config_text(c) for c in best["ties"]) + " are one build"
        lines.append(f"  {slot:<22} {head}  ({best['note']})")
        runner = best.get("runner_up")
        if runner and runner.get("ratio_ci"):
            lo, hi = runner["ratio_ci"]
            lines.append(
                f"  {'':<22} vs {_config_text(runner['config'])}: ratio {runner['ratio']:.3f} "
                f"[{lo:.3f}, {hi:.3f}] over {runner['common_rounds']} round(s)"
            )
    if not data["best"]:
        lines.append("  (no verified configuration)")
    return "\n".join(lines)


def run_points(args, project, kernel, backends, devices, points, progress, what: str, search=None):
    """Run `points` with a recording SweepRunner (`tune` and `sweep` alike): the result, or the exit
    status when the sweep could not finish (2 on bad input, 130 when interrupted)."""
    from workbench.profile.sessions.store import SessionStore
    from workbench.profile.tuning.tune import SweepRunner

    store = SessionStore(args.db)
    runner = dispatcher = None
    try:
        runner = SweepRunner(
            project, kernel.name, backends, devices or None, store=store, resume=not args.no_resume,
            seed=args.seed, timeout_s=args.timeout, cache_dir=args.cache_dir,
            rounds=getattr(args, "rounds", 1), confirm_rounds=getattr(args, "confirm", 0),
            min_effect=getattr(args, "min_effect", MIN_EFFECT),
        )  # fmt: skip
        if getattr(args, "cluster", None):
            dispatcher = runner.dispatcher = open_cluster(args.cluster, project, kernel.name, runner)
        result = runner.run(points, on_event=progress, search=search)
        if dispatcher is not None:
            result.cluster = dispatcher.describe()
        return result
    except (WorkbenchError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"interrupted: the finished {what} are recorded; rerun to resume", file=sys.stderr)
        return 130
    finally:
        if runner is not None:
            runner.close()
        if dispatcher is not None:
            dispatcher.close()
        store.close()


def open_cluster(text: str, project, kernel: str, runner):
    """The `--cluster` dispatcher of a sweep (`cluster.dispatch.open_dispatcher`, as the Tuning
    panel's); its notes (refused workers, the admitted ones) go to stderr."""
    from workbench.profile.tuning.cluster.dispatch import open_dispatcher

    return open_dispatcher(
        text, project, kernel, runner, on_note=lambda text: print(f"cluster: {text}", file=sys.stderr)
    )


def strategy_of(args) -> str:
    """The strategy asked for, else the default: the measured one under a budget, else grid."""
    if args.strategy:
        return args.strategy
    return DEFAULT if (args.budget is not None or args.budget_time is not None) else "grid"


def run_replay(args) -> int:
    """`--replay CACHE.json`: a strategy against a Kernel Tuner cache, no device."""
    from workbench.profile.tuning.replay import read, replay
    from workbench.profile.tuning.strategies import StrategyError

    try:
        cache = read(args.replay)
        data = replay(cache, strategy_of(args), budget=args.budget, budget_s=args.budget_time, seed=args.seed)
    except (WorkbenchError, StrategyError) as exc:
        print(f"error: --replay: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(data, indent=2, default=str))
        return 0
    print(replay_table(data))
    return 0


def replay_table(data: dict[str, Any]) -> str:
    space, goal, best = data["space"], data["targets"], data["best"]
    lines = [
        f"{data['kernel'] or 'kernel'} on {data['device'] or 'device'} ({data['cache']}): {space['recorded']} "
        f"configurations recorded ({space['failed']} failed) of a grid of {space['grid']}",
        f"strategy {data['strategy']}, seed {data['seed']}: {data['evaluations']} evaluations "
        f"({data['failed']} failed; {data['invalid']} invalid and {data['repeats']} repeated proposals not "
        f"counted; stopped: {data['stopped']})",
        f"best: {_config_text(best['config'])} {best['value']:.6g} ms at evaluation {best['n']} "
        f"(optimum {goal['optimum']:.6g} ms, median {goal['median']:.6g} ms)"
        if best
        else "best: none",
    ]
    for name, label in (
        ("p95", "95% of the way from median to optimum"),
        ("within5", "within 5% of the optimum"),
    ):
        at, expect = data["reached"][name], data["random_expected"][name]
        lines.append(f"{label} ({goal[name]:.6g} ms): " + (f"reached at evaluation {at}" if at else "not reached")
                     + f"; random search's expectation {expect:.1f}")  # fmt: skip
    lines.append("")
    lines.append(f"{'eval':>5} {'time (ms)':>12} {'best (ms)':>12}  configuration")
    for e in data["trace"]:
        value = f"{e['value']:.6g}" if e["value"] is not None else "failed"
        lines.append(
            f"{e['n']:>5} {value:>12} {e['best'] or float('nan'):>12.6g}  {_config_text(e['config'])}"
        )
    return "\n".join(lines)


def run(args) -> int:
    from workbench.profile.tuning.events import SweepEntries, SweepEvent, SweepSearched
    from workbench.profile.tuning.sweep_space import parse_param, plan
    from workbench.size_values import parse_sizes

    if args.replay:
        return run_replay(args)
    strategy = strategy_of(args)
    try:
        project = Project.open(args.path)
        kernel = project.manifest.kernel(args.kernel)
        sizes = parse_sizes(args.size, kernel)
        params = dict(parse_param(p) for p in args.param)
        sweep = plan(kernel, params, sizes, strategy, args.budget, args.budget_time, args.seed)
    except (WorkbenchError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    sp, search, points = sweep.space, sweep.search, sweep.points
    backends = [b.strip() for b in args.backend.split(",") if b.strip()] if args.backend else None
    devices = [d.strip() for spec in args.device for d in spec.split(",") if d.strip()]

    def progress(event: SweepEvent) -> None:
        if isinstance(event, SweepSearched) and not args.json:
            e = event.evaluation
            best = format_time(e.best) if e.best is not None else "none yet"
            print(
                f"  search {strategy}: evaluation {e.n}/{event.budget}, best so far {best}", file=sys.stderr
            )
        if isinstance(event, SweepEntries) and not args.json:
            how = "resumed" if event.resumed else "ran"
            config = _config_text(event.entries[0]["config"]) if event.entries else ""
            stage = "side by side" if event.confirm else "round"
            print(f"[{event.index + 1}/{event.total}] {stage} {event.round}: {how} {config}", file=sys.stderr)

    result = run_points(args, project, kernel, backends, devices, points, progress, "configurations", search)
    if isinstance(result, int):
        return result
    data = result.to_json()
    if getattr(result, "cluster", None):
        data["cluster"] = result.cluster
    data["pruned"] = sp.pruned
    data["space"] = {"tunables": sp.names, "grid": sp.total, "valid": len(sp.configs), "strategy": strategy,
                     "budget": args.budget, "budget_s": args.budget_time}  # fmt: skip
    if args.export_kt:
        from datetime import UTC, datetime

        from workbench.profile.tuning.kernel_tuner import export

        try:
            stamp = datetime.now(UTC).isoformat()
            data["kernel_tuner"] = [str(p) for p in export(data, args.export_kt, sp.names, stamp)]
        except WorkbenchError as exc:
            print(f"error: --export-kt: {exc}", file=sys.stderr)
            return 2
        print("Kernel Tuner cache: " + ", ".join(data["kernel_tuner"]), file=sys.stderr)
    if args.apply is not None:
        try:
            data["applied"] = apply_best(project, kernel.name, data["best"], args.apply)
        except WorkbenchError as exc:
            print(f"error: --apply: {exc}", file=sys.stderr)
            return 2
    if args.json:
        print(json.dumps(data, indent=2, default=str))
    else:
        print(table(data))
        if data.get("applied"):
            print(f"applied {_config_text(data['applied']['config'])} to {data['applied']['file']}")
    return 1 if data["counts"]["failed"] else 0


def apply_best(project: Project, kernel: str, best: dict[str, Any], slot: str) -> dict[str, Any]:
    """Write the winner of `slot` (or of the one slot the tunables affect) into workbench.toml."""
    from workbench.profile.tuning.apply import apply_config, choose_slot, winner_config

    slot = choose_slot(best, slot)
    config = winner_config(best[slot])
    path = project.manifest.path
    apply_config(path, kernel, config)
    return {"slot": slot, "config": config, "file": str(path)}
