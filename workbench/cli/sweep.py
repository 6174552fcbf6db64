"""`workbench sweep PATH --size n=2^16..2^24`: time and GB/s against a size, one curve per
backend × device, every point verified and recorded, with each device's measured copy ceiling.

Exit status: 0 when every point that ran verified, 1 when one failed, 2 on bad input.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from workbench.cli import arg_types
from workbench.errors import WorkbenchError
from workbench.project import Project
from workbench.units import format_rate, format_time


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "sweep",
        help="sweep a problem size: time and GB/s against n per backend and device",
        description="Run the kernel at each size of one size symbol (powers of two between two bounds, "
        "or a list) on each backend and device: every point built, verified, timed and recorded (a rerun "
        "resumes); one curve per backend × device with the device's measured copy bandwidth.",
    )
    parser.add_argument("path", nargs="?", default=".", help="project folder or workbench.toml")
    parser.add_argument(
        "--size", action="append", required=True, metavar="NAME=2^16..2^24",
        help="the swept size (NAME=LOW..HIGH, powers of two, or NAME=V1,V2,...); other --size NAME=VALUE fix the rest",
    )  # fmt: skip
    parser.add_argument("--kernel", help="kernel name (default: the first in workbench.toml)")
    parser.add_argument("--backend", help="comma-separated backends (default: as `workbench run`)")
    parser.add_argument(
        "--device", action="append", default=[], metavar="SPEC", help="device(s), as `workbench run`"
    )
    parser.add_argument("--seed", type=arg_types.seed, default=0, help="seed of the inputs (default 0)")
    parser.add_argument(
        "--timeout",
        type=arg_types.positive_seconds,
        default=10.0,
        metavar="S",
        help="per-launch timeout (default 10)",
    )
    parser.add_argument("--db", metavar="FILE", help="sessions database (default: the user data folder)")
    parser.add_argument("--cache-dir", metavar="DIR", help="build cache folder")
    parser.add_argument("--no-resume", action="store_true", help="run every point again")
    parser.add_argument(
        "--measure-ceilings", action="store_true", help="measure devices' copy bandwidth now when not cached"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(func=run)


def table(data: dict[str, Any]) -> str:
    name = data["symbol"]
    lines = []
    for slot, curve in data["curves"].items():
        ceiling = curve.get("copy_gbps")
        lines.append(f"{slot}  copy ceiling: {f'{format_rate(ceiling)} GB/s' if ceiling else 'not measured'}")
        lines.append(f"  {name:>12} {'median':>12} {'GB/s':>10} {'verified':>8}  note")
        for p in curve["points"]:
            verified = {True: "yes", False: "NO", None: "-"}[p["verified"]]
            gbps = format_rate(p.get("gbps"), "-")
            note = p.get("error") or ("resumed" if p.get("resumed") else "")
            lines.append(f"  {p[name]:>12} {format_time(p['median_s']):>12} {gbps:>10} {verified:>8}  {note}")
    return "\n".join(lines)


def run(args) -> int:
    from workbench.cli.tune import run_points
    from workbench.profile.tuning.events import SweepEntries, SweepEvent
    from workbench.profile.tuning.size_sweep import copy_ceilings, curves, parse_size_range, size_points
    from workbench.size_values import parse_sizes

    try:
        project = Project.open(args.path)
        kernel = project.manifest.kernel(args.kernel)
        swept = [s for s in args.size if ".." in s or "," in s.partition("=")[2]]
        if len(swept) != 1:
            raise WorkbenchError("give exactly one swept --size (NAME=LOW..HIGH or NAME=V1,V2,...)")
        name, values = parse_size_range(swept[0])
        fixed = parse_sizes([s for s in args.size if s not in swept], kernel)
        points = size_points(kernel, name, values, fixed)
    except (WorkbenchError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    backends = [b.strip() for b in args.backend.split(",") if b.strip()] if args.backend else None
    devices = [d.strip() for spec in args.device for d in spec.split(",") if d.strip()]

    def progress(event: SweepEvent) -> None:
        if isinstance(event, SweepEntries) and not args.json:
            how = "resumed" if event.resumed else "ran"
            print(f"[{event.index + 1}/{event.total}] {how} {name}={values[event.index]}", file=sys.stderr)

    result = run_points(args, project, kernel, backends, devices, points, progress, "points")
    if isinstance(result, int):
        return result
    ceilings = copy_ceilings({e["device"] for e in result.entries}, measure=args.measure_ceilings)
    data = {"project": project.name, "kernel": kernel.name, "values": values, **curves(result, name, ceilings),
            "seconds": result.seconds}  # fmt: skip
    if args.json:
        print(json.dumps(data, indent=2, default=str))
    else:
        print(table(data))
    failed = any(e["status"] == "error" or e["verified"] is False for e in result.entries)
    return 1 if failed else 0
