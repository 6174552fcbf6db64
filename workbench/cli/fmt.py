"""`workbench fmt PROJECT [--check]`: rustfmt on the kernel crate's Rust files.

Without `--check` the files rustfmt changes are rewritten, and each is named. With `--check`
nothing is written: each file that would change is named and the exit status is 1. A file
rustfmt cannot parse is an error at its line (exit status 1 either way); no rustfmt: one line
saying how to install it (exit status 2).
"""

from __future__ import annotations

import json
import sys

from workbench.project import Project

EXIT_OK, EXIT_FAILED, EXIT_MISSING = 0, 1, 2


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "fmt",
        help="format the kernel crate's Rust files with rustfmt (--check: only report)",
        description="Run rustfmt (found as cargo is: $WB_RUSTFMT, /usr/bin, PATH, ~/.cargo/bin) on "
        "every Rust file of the project's crate, with the crate's edition and rustfmt.toml.",
    )
    parser.add_argument("path", nargs="?", default=".", help="project folder or workbench.toml")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a file would change")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(func=run)


def run(args) -> int:
    from workbench.build.rustfmt import RustfmtMissing, format_crate

    project = Project.open(args.path)
    try:
        outcome = format_crate(project.manifest.crate_dir, project.root, write=not args.check)
    except RustfmtMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_MISSING
    changed = [_rel(f.path, project) for f in outcome.changed]
    diagnostics = outcome.diagnostics
    if args.json:
        print(json.dumps({
            "project": project.name, "check": args.check, "files": len(outcome.files),
            "changed": changed, "diagnostics": [d.to_dict() for d in diagnostics],
        }))  # fmt: skip
    else:
        for name in changed:
            print(f"{'would reformat' if args.check else 'formatted'} {name}")
        for d in diagnostics:
            where = ":".join(str(part) for part in (d.file, d.line, d.column) if part is not None)
            print(d.rendered or f"error: {where}: {d.message}", file=sys.stderr)
        if not changed and not diagnostics:
            print(f"{len(outcome.files)} file(s) already formatted")
    if diagnostics or (args.check and changed):
        return EXIT_FAILED
    return EXIT_OK


def _rel(path, project: Project) -> str:
    try:
        return path.resolve().relative_to(project.root.resolve()).as_posix()
    except ValueError:
        return str(path)
