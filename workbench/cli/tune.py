"""`workbench tune PATH`: sweep a kernel's tunables; every configuration built, run, verified,
timed and recorded; the best per backend × device with a confidence interval and its ties.

Exit status: 0 when every configuration that ran verified, 1 when one failed (it is listed,
flagged, and never ranked), 2 on bad input (unknown tunable, size, backend; no configuration).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from workbench.errors import WorkbenchError
from workbench.project import Project
from workbench.units import format_time


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "tune",
        help="sweep a kernel's tunables, verify every configuration, rank with confidence intervals",
        description="Build, run, verify and time every configuration of the kernel's [kernel.tunables] "
        "(less those breaking its constraints) on each backend and device; record each in the sessions "
        "database as it finishes (a rerun resumes from what is recorded); report the best configuration "
        "per backend × device with a bootstrap confidence interval of its median, and the configurations "
        "tied with it.",
    )
    parser.add_argument("path", nargs="?", default=".", help="project folder or workbench.toml")
    parser.add_argument("--kernel", help="kernel name (default: the first in workbench.toml)")
    parser.add_argument(
        "--param", action="append", default=[], metavar="NAME=V1,V2,...",
        help="values of one tunable (default: its values in workbench.toml); repeatable",
    )  # fmt: skip
    parser.add_argument(
        "--strategy", choices=("grid", "random"), default="grid", help="grid (default) or random"
    )
    parser.add_argument("--budget", type=int, metavar="N", help="at most N configurations")
    parser.add_argument("--backend", help="comma-separated backends (default: as `workbench run`)")
    parser.add_argument(
        "--device", action="append", default=[], metavar="SPEC", help="device(s), as `workbench run`"
    )
    parser.add_argument(
        "--size", action="append", default=[], metavar="NAME=VALUE", help="problem size; repeatable"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the random strategy and of the inputs (default 0)"
    )
    parser.add_argument(
        "--timeout", type=float, default=10.0, metavar="S", help="per-launch timeout (default 10)"
    )
    parser.add_argument("--db", metavar="FILE", help="sessions database (default: the user data folder)")
    parser.add_argument("--cache-dir", metavar="DIR", help="build cache folder")
    parser.add_argument("--no-resume", action="store_true", help="run every configuration again")
    parser.add_argument(
        "--apply", metavar="BACKEND@DEVICE", nargs="?", const="",
        help="write the best configuration into workbench.toml as the defaults (of BACKEND@DEVICE; "
        "default: the only one swept)",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(func=run)


def _config_text(config: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in config.items()) or "(no tunables)"


def table(data: dict[str, Any]) -> str:
    lines = [f"{'configuration':<24} {'backend':<9} {'device':<10} {'verified':<8} {'median':>12}  note"]
    for e in data["configs"]:
        verified = {True: "yes", False: "NO", None: "-"}[e["verified"]]
        median = (e.get("timing") or {}).get("median_s")
        note = e.get("error") or ("resumed" if e.get("resumed") else "")
        if e["status"] != "ok":
            note = f"{e['status']}: {note}"
        elif e["verified"] is not True:
            note = "not ranked (not verified)" + (f"; {note}" if note else "")
        lines.append(
            f"{_config_text(e['config']):<24} {e['backend']:<9} {e['device']:<10} {verified:<8} "
            f"{format_time(median):>12}  {note}"
        )
    for p in data.get("pruned", []):
        lines.append(f"{_config_text(p['config']):<24} pruned by constraint {p['constraint']!r}")
    lines.append("")
    lines.append(f"best ({data['ranking']}):")
    for slot, best in data["best"].items():
        lo, hi = best["ci_s"]
        tied = ", ".join(_config_text(t["config"]) for t in best["tied_with"])
        lines.append(
            f"  {slot:<22} {_config_text(best['config']):<20} {format_time(best['median_s'])} "
            f"[{format_time(lo)}, {format_time(hi)}]" + (f"  tied with: {tied}" if tied else "")
        )
    if not data["best"]:
        lines.append("  (no verified configuration)")
    return "\n".join(lines)


def run_points(args, project, kernel, backends, devices, points, progress, what: str):
    """Run `points` with a recording SweepRunner (`tune` and `sweep` alike): the result, or the exit
    status when the sweep could not finish (2 on bad input, 130 when interrupted)."""
    from workbench.profile.store import SessionStore
    from workbench.profile.tune import SweepRunner

    store = SessionStore(args.db)
    runner = None
    try:
        runner = SweepRunner(
            project, kernel.name, backends, devices or None, store=store, resume=not args.no_resume,
            seed=args.seed, timeout_s=args.timeout, cache_dir=args.cache_dir,
        )  # fmt: skip
        return runner.run(points, on_event=progress)
    except (WorkbenchError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"interrupted: the finished {what} are recorded; rerun to resume", file=sys.stderr)
        return 130
    finally:
        if runner is not None:
            runner.close()
        store.close()


def run(args) -> int:
    from workbench.cli.run import parse_sizes
    from workbench.profile.tune import Point, parse_param, space

    try:
        project = Project.open(args.path)
        kernel = project.manifest.kernel(args.kernel)
        sizes = parse_sizes(args.size, kernel)
        params = dict(parse_param(p) for p in args.param)
        sp = space(kernel, params, sizes, args.strategy, args.budget, args.seed)
    except (WorkbenchError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    backends = [b.strip() for b in args.backend.split(",") if b.strip()] if args.backend else None
    devices = [d.strip() for spec in args.device for d in spec.split(",") if d.strip()]
    points = [Point(config, sizes) for config in sp.configs]

    def progress(event: dict[str, Any]) -> None:
        if event["kind"] == "entries" and not args.json:
            done = event["index"] + 1
            how = "resumed" if event["resumed"] else "ran"
            config = _config_text(event["entries"][0]["config"]) if event["entries"] else ""
            print(f"[{done}/{event['total']}] {how} {config}", file=sys.stderr)

    result = run_points(args, project, kernel, backends, devices, points, progress, "configurations")
    if isinstance(result, int):
        return result
    data = result.to_json()
    data["pruned"] = sp.pruned
    data["space"] = {"tunables": sp.names, "grid": sp.total, "strategy": args.strategy, "budget": args.budget}
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
    failed = any(e["status"] == "error" or e["verified"] is False for e in data["configs"])
    return 1 if failed else 0


def apply_best(project: Project, kernel: str, best: dict[str, Any], slot: str) -> dict[str, Any]:
    """Write the best configuration of `slot` (or the only slot) into workbench.toml."""
    from workbench.profile.apply import apply_config

    if not best:
        raise WorkbenchError("no verified configuration to apply")
    if not slot:
        if len(best) > 1:
            raise WorkbenchError(f"several backends × devices were swept; name one: {', '.join(best)}")
        slot = next(iter(best))
    if slot not in best:
        raise WorkbenchError(f"no ranked configuration for {slot!r}; ranked: {', '.join(best)}")
    path = project.manifest.path
    apply_config(path, kernel, best[slot]["config"])
    return {"slot": slot, "config": best[slot]["config"], "file": str(path)}
