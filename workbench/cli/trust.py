"""`workbench trust PATH…` / `--untrust PATH…` / `--list`: the trust list, from the command line.

Building a project runs its code (build.rs, proc macros), so the window and `gui --run` build only
trusted projects. This is the same list the window's Trust bar writes (`workbench.trust_store`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from workbench.errors import WorkbenchError
from workbench.manifest import MANIFEST_NAME
from workbench.trust_store import (
    READ_ONLY,
    TRUSTED,
    is_bundled,
    project_key,
    read_list,
    set_decision,
    trust_file,
)


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "trust",
        help="trust a project (allow building it), --untrust it, or --list the trusted ones",
        description="Trust kernel projects, so the window and `gui --run` may build them (building "
        "runs the project's own code: build.rs, proc macros). The window's Trust bar uses the same list.",
    )
    parser.add_argument("paths", nargs="*", metavar="PATH", help="project folder or its workbench.toml")
    parser.add_argument("--untrust", action="store_true", help="forget these projects: the window asks again")
    parser.add_argument("--list", action="store_true", help="list the projects trusted or kept read-only")
    parser.add_argument("--json", action="store_true", help="with --list: print one JSON object")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.list:
        if args.paths or args.untrust:
            raise WorkbenchError("--list takes no PATH and no --untrust")
        return list_projects(args.json)
    if not args.paths:
        raise WorkbenchError("name the project to trust: workbench trust PATH (or --list)")
    for path in args.paths:
        if args.untrust:
            untrust(path)
        else:
            trust(path)
    return 0


def trust(path: str) -> None:
    key = project_key(path)
    if not (Path(key) / MANIFEST_NAME).is_file():
        raise WorkbenchError(f"{path}: not a kernel project (no {MANIFEST_NAME} in {key})")
    if is_bundled(key):
        print(f"{key} is a bundled example: always trusted")
        return
    before = set_decision(key, TRUSTED)
    print(f"{key} was already trusted" if before == TRUSTED else f"trusted {key}")


def untrust(path: str) -> None:
    key = project_key(path)
    if is_bundled(key):
        raise WorkbenchError(f"{key} is a bundled example: always trusted (the window opens your copy of it)")
    before = set_decision(key, None)
    print(f"{key} was not trusted" if before is None else f"untrusted {key}: the window will ask again")


def list_projects(as_json: bool) -> int:
    projects = read_list()
    if as_json:
        print(json.dumps({"file": str(trust_file()), "projects": projects}, indent=2))
        return 0
    if not projects:
        print(f"no project is trusted yet (the list: {trust_file()}); bundled examples always are")
        return 0
    for key, value in sorted(projects.items(), key=lambda item: (item[1] != TRUSTED, item[0])):
        missing = "" if (Path(key) / MANIFEST_NAME).is_file() else "  (missing)"
        print(f"{'trusted' if value == TRUSTED else READ_ONLY:<10} {key}{missing}")
    return 0
