"""`workbench new NAME [--template T] [DIR]`: a new kernel project made from a template, renamed.

Like `cargo new`: DIR defaults to ./NAME and must not exist or be empty; NAME becomes the project,
kernel, crate and entry-point names (`workbench.templates.create_project`, which the window's
File > New kernel project calls too). The project is trusted: it holds only our template.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from workbench.templates import DEFAULT_TEMPLATE, create_project, template_names


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "new",
        help="make a new kernel project from a template (like cargo new)",
        description="Make a new kernel project NAME in DIR (default ./NAME) from a template, with the "
        "project, kernel, crate, entry points and reference files renamed to NAME.",
    )
    parser.add_argument(
        "name", metavar="NAME", help="project name: a Rust identifier in snake case, e.g. vadd"
    )
    parser.add_argument("dir", nargs="?", metavar="DIR", help="folder to create (default: ./NAME)")
    parser.add_argument(
        "--template",
        default=DEFAULT_TEMPLATE,
        choices=template_names(),
        help=f"what to start from (default {DEFAULT_TEMPLATE}: one buffer, one trivial kernel)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    root = create_project(args.name, args.template, Path(args.dir) if args.dir else None)
    if args.json:
        print(
            json.dumps({"project": args.name, "template": args.template, "path": str(root), "trusted": True})
        )
    else:
        print(f"created {args.name} (from the {args.template} template) in {root}")
        print(f"next: workbench check {root}   ·   workbench run {root} --backend cpu,wgsl")
    return 0
