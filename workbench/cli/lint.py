"""`workbench lint PROJECT [--json]`: clippy on the kernel crate, as the window's lints.

Each lint is printed at its line with its name and documentation link (`build/clippy.py` says
which clippy, features and target dir); the last line counts them, or says the crate does not
compile (its errors are printed at their lines too, but counted apart: no lint was checked). Exit status, as `cargo clippy`'s: 0 when the crate
compiles and no lint is an error (warnings are printed, `-D`-style errors are not allowed), 1
otherwise, 2 when clippy is missing (one line saying how to install it).
"""

from __future__ import annotations

import json
import sys

from workbench.project import Project

EXIT_OK, EXIT_FAILED, EXIT_MISSING = 0, 1, 2


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "lint",
        help="clippy on the kernel crate (host target, plain and gpu_kernel/sim features)",
        description="Run clippy on the project's crate for the host, with the features the cpu and "
        "cpu-sim backends build with; print each lint at its line with its documentation link.",
    )
    parser.add_argument("path", nargs="?", default=".", help="project folder or workbench.toml")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--cache-dir", metavar="DIR", help="where clippy's target dir lives (default: the build cache)"
    )
    parser.set_defaults(func=run)


def summary(outcome) -> str:
    """The last line: how many lints, or that the crate does not compile (a compile error is no
    lint: "1 error (the crate does not compile): no lints checked")."""
    from workbench.build.clippy import is_lint

    lints = sum(1 for d in outcome.diagnostics if is_lint(d))
    errors = len(outcome.diagnostics) - lints
    if errors:
        found = f"{lints} lint(s) found before it stopped" if lints else "no lints checked"
        return f"{errors} error{'s' if errors != 1 else ''} (the crate does not compile): {found}"
    if outcome.ok or lints:  # a denied lint fails cargo too: the crate compiled
        return f"{lints} lint(s)"
    return "clippy failed (its output above): no lints checked"


def run(args) -> int:
    from workbench.build.clippy import ClippyMissing, lint_crate, lint_url

    project = Project.open(args.path)
    try:
        outcome = lint_crate(project.manifest.crate_dir, project.root, cache_dir=args.cache_dir)
    except ClippyMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_MISSING
    except TimeoutError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    if args.json:
        print(json.dumps({"project": project.name, **outcome.to_dict()}))
    else:
        for d in outcome.diagnostics:
            where = f"{d.file}:{d.line}:{d.column}"
            name = f"[{d.code}] " if d.code else ""
            print(f"{where}: {d.severity}: {d.message.splitlines()[0]}")
            url = lint_url(d)
            if url:
                print(f"    {name}{url}")
        if not outcome.ok and not outcome.diagnostics:
            print("\n".join(outcome.log[-40:]), file=sys.stderr)
        print(f"{summary(outcome)} in {outcome.seconds:.1f} s")
    errors = [d for d in outcome.diagnostics if d.severity == "error"]
    return EXIT_OK if outcome.ok and not errors else EXIT_FAILED
