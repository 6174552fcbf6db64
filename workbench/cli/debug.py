"""`workbench debug PROJECT --invocation WG/LOCAL [--break FILE:LINE] [--watch BUF[I]]
[--commands FILE] [--json]`: one launch of the kernel's cpu-sim debug build under gdb, stopping in
one invocation at a Rust line or at any write of one element; each stop's line, locals and
arguments (gdb's Rust values), call stack and invocation (workbench.debug; docs/debugging.md).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from workbench.errors import WorkbenchError
from workbench.project import Project
from workbench.run.sim_trace import parse_point
from workbench.size_values import parse_sizes


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "debug",
        help="stop one invocation of the kernel at a Rust line (or any write of an element) under gdb",
        description="Run the kernel once on its cpu-sim debug build under gdb (built once per source, "
        "cached), stopping in one invocation at a line, or wherever any invocation writes one element; "
        "print each stop: line, locals and arguments, call stack, invocation (docs/debugging.md).",
    )
    parser.add_argument("path", nargs="?", default=".", help="project folder (default: .)")
    parser.add_argument("--kernel", help="kernel name (default: the manifest's first)")
    parser.add_argument("--invocation", metavar="GX,GY:LX,LY",
                        help="the invocation to stop in: its workgroup, then its local id (also WG/LOCAL)")  # fmt: skip
    parser.add_argument("--break", dest="break_at", metavar="FILE:LINE",
                        help="stop at this line of the project (e.g. src/lib.rs:42) in --invocation only")  # fmt: skip
    parser.add_argument("--watch", metavar="BUF[I]", help="stop wherever any invocation writes this element")
    parser.add_argument("--commands", metavar="FILE",
                        help="what to do at each stop, one a line: next, step, finish, continue, print EXPR; "
                        "without it the session ends at the first stop")  # fmt: skip
    parser.add_argument("--size", action="append", default=[], metavar="NAME=VALUE",
                        help="problem size (small ones: the debug build is unoptimised)")  # fmt: skip
    parser.add_argument("--seed", type=int, help="input seed (default: the run's)")
    parser.add_argument("--timeout", type=float, default=60.0, metavar="S",
                        help="seconds to wait for each stop before the kernel is killed (default 60)")  # fmt: skip
    parser.add_argument("--cache-dir", help="build cache folder")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(func=run)


def _break(text: str) -> tuple[str, int]:
    file, sep, line = text.rpartition(":")
    if not sep or not file or not line.isdigit() or int(line) < 1:
        raise WorkbenchError(f"--break {text!r}: expected FILE:LINE, e.g. src/lib.rs:42")
    return file, int(line)


def _element(text: str) -> tuple[str, int]:
    match = re.fullmatch(r"\s*([A-Za-z_]\w*)\s*\[\s*(\d+)\s*\]\s*", text)
    if match is None:
        raise WorkbenchError(f"--watch {text!r}: expected BUF[I], e.g. y[1234]")
    return match.group(1), int(match.group(2))


def stop_lines(stop: dict) -> list[str]:
    """One stop as text: where, which invocation, the watch's values, locals, the workgroup's
    states, stack."""
    from workbench.debug.session import states_summary, stop_headline

    out = [stop_headline(stop)]
    if stop.get("detail"):
        out.append(f"  {stop['detail']}")
    out += [f"  {v['name']} = {v['value']}" for v in stop.get("locals", [])]
    out += [f"  print {p['expression']} = {p['value']}" for p in stop.get("prints", [])]
    if stop.get("workgroup"):
        out += [f"  {line}" for line in states_summary(stop["workgroup"])]
    out += [f"  #{k} {f.get('function')} {_frame_place(f)}" for k, f in enumerate(stop.get("stack", [])[:12])]
    return out


def _frame_place(frame: dict) -> str:
    """`file:line`; a frame without line information (the fiber's trampoline, a library built
    without debug info) is its file or library alone, not `lib.so:` with nothing after it."""
    where = frame.get("file") or frame.get("from") or ""
    return f"{where}:{frame['line']}" if frame.get("line") else where


def run(args: argparse.Namespace) -> int:
    from workbench.debug.gdb_mi import parse_commands
    from workbench.debug.job import debug_kernel

    project = Project.open(args.path)
    kernel = project.manifest.kernel(args.kernel)
    point = parse_point(args.invocation.replace("/", ":")) if args.invocation else None
    commands = parse_commands(Path(args.commands).read_text()) if args.commands else []
    report = debug_kernel(
        project, kernel.name, parse_sizes(args.size, kernel), args.seed, point,
        _break(args.break_at) if args.break_at else None, _element(args.watch) if args.watch else None,
        commands, args.cache_dir, args.timeout,
    )  # fmt: skip
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for stop in report["stops"]:
            print("\n".join(stop_lines(stop)))
    # A panic, a signal or a stop that never came: the kernel did not run as asked.
    return 1 if any(s["reason"] in ("panic", "signal", "timeout") for s in report["stops"]) else 0
