"""`workbench ir summary|diff PATH`: what each compiler made of the kernel, and how two builds differ.

    workbench ir summary resources/examples/reduction --backend cpu,nvptx,wgsl
    workbench ir diff resources/examples/saxpy --backend nvptx --a threads=64 --b threads=256
    workbench ir diff --folders BUILD_A BUILD_B

The numbers come from `workbench.build.ir_summary` / `ir_diff` (the window's views read the same).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from workbench.backends import parse_backends
from workbench.cli import EXIT_FAILED, EXIT_OK
from workbench.errors import WorkbenchError
from workbench.project import Project


def register(subparsers) -> None:
    p = subparsers.add_parser("ir", help="compare what the compilers made of the kernel (summary, diff)",
                              description="Instruction classes and resources per backend; two builds compared "
                                          "by Rust line.")  # fmt: skip
    sub = p.add_subparsers(dest="ir_command", metavar="{summary,diff}", required=True)
    s = sub.add_parser("summary", help="one table across backends: instructions by class, registers, spills, "
                                       "shared memory")  # fmt: skip
    s.add_argument("path", metavar="PATH", help="project folder or its workbench.toml")
    s.add_argument("--backend", metavar="LIST", help="comma-separated backends (default: all)")
    _common(s)
    s.set_defaults(func=run_summary)
    d = sub.add_parser("diff", help="two builds of one backend: the source lines whose instructions changed")
    d.add_argument("path", metavar="PATH", nargs="?", help="project folder or its workbench.toml")
    d.add_argument(
        "--backend", metavar="NAME", help="the backend both builds are of (cpu, nvptx, rust-gpu, wgsl)"
    )
    d.add_argument(
        "--a", metavar="NAME=VALUE[,...]", default="", help="tunables of build A (default: defaults)"
    )
    d.add_argument(
        "--b", metavar="NAME=VALUE[,...]", default="", help="tunables of build B (default: defaults)"
    )
    d.add_argument(
        "--folders", nargs=2, metavar=("A", "B"), help="compare two artifact folders already built"
    )
    d.add_argument("--kernel", metavar="NAME", help="the kernel to compare (default: the first)")
    _common(d)
    d.set_defaults(func=run_diff)


def _common(p) -> None:
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--cache-dir", metavar="DIR", help="build cache (default: $WB_CACHE_DIR or ~/.cache/…)")
    p.add_argument("--target", metavar="CC", help="CUDA compute capability for PTX backends (default sm_90)")
    p.add_argument("--timeout", metavar="S", type=float, default=300.0, help="stop a build after S seconds")


def parse_tunables(text: str, project: Project, option: str) -> dict[str, Any]:
    """`threads=64,unroll=2` → {threads: 64, unroll: 2}; each name must be a tunable of a kernel."""
    known: dict[str, tuple] = {}
    for kernel in project.manifest.kernels:
        known.update(kernel.tunables)
    out: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise WorkbenchError(f"{option} {part!r}: expected NAME=VALUE, e.g. threads=128")
        name = name.strip()
        if name not in known:
            names = ", ".join(sorted(known)) or "none"
            raise WorkbenchError(
                f"{option} {part!r}: {name!r} is not a tunable of {project.name} (tunables: {names})"
            )
        try:
            out[name] = int(value) if value.strip().lstrip("-").isdigit() else float(value)
        except ValueError:
            raise WorkbenchError(f"{option} {part!r}: {value!r} is not a number") from None
    return out


def _build(project: Project, backends: list[str], args, tunables: dict[str, Any] | None = None):
    from workbench.build import build_project

    results = build_project(project, backends, cache_dir=args.cache_dir, target=args.target,
                            timeout_s=args.timeout, tunables=tunables)  # fmt: skip
    for r in results:
        if r.status == "error":
            print(f"{r.backend}: the build failed (workbench build {project.root} says why)", file=sys.stderr)
    return results


def run_summary(args: argparse.Namespace) -> int:
    from workbench.build.ir_summary import ensure_listings, summarize, table

    project = Project.open(args.path)
    results = _build(project, parse_backends(args.backend), args)
    folders = [r.artifact_dir for r in results if r.status == "ok" and r.artifact_dir]
    problems = ensure_listings(project, folders)
    rows = summarize(folders)
    if args.json:
        print(json.dumps({"project": project.name, "rows": [r.to_json() for r in rows],
                          "missing": problems}))  # fmt: skip
    else:
        headers, cells = table(rows)
        widths = [
            max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(headers)
        ]
        print(
            "  ".join(
                h.ljust(w) if i < 3 else h.rjust(w)
                for i, (h, w) in enumerate(zip(headers, widths, strict=True))
            )
        )
        for c in cells:
            print(
                "  ".join(
                    x.ljust(w) if i < 3 else x.rjust(w)
                    for i, (x, w) in enumerate(zip(c, widths, strict=True))
                )
            )
        for row in rows:
            if row.note:
                print(f"{row.backend}: {row.note} ({row.source or 'no listing'})")
        for folder, why in problems.items():
            print(f"not built: {folder}: {why}")
    return EXIT_FAILED if any(r.status == "error" for r in results) else EXIT_OK


def run_diff(args: argparse.Namespace) -> int:
    from workbench.build.ir_diff import describe, diff_builds, ensure_line_maps

    if args.folders:
        a, b = args.folders
        if args.path:
            ensure_line_maps(Project.open(args.path), [a, b])
    else:
        if not args.path or not args.backend:
            raise WorkbenchError(
                "ir diff: give PATH and --backend (with --a / --b tunables), or --folders A B"
            )
        project = Project.open(args.path)
        chosen = parse_backends(args.backend)
        if len(chosen) != 1:
            raise WorkbenchError(
                f"ir diff --backend {args.backend}: two builds of ONE backend are compared; name one"
            )
        backend = chosen[0]
        ta, tb = parse_tunables(args.a, project, "--a"), parse_tunables(args.b, project, "--b")
        [ra] = _build(project, [backend], args, ta)
        [rb] = _build(project, [backend], args, tb)
        if ra.status != "ok" or rb.status != "ok":
            return EXIT_FAILED
        a, b = ra.artifact_dir, rb.artifact_dir
        ensure_line_maps(project, [a, b])
    diff = diff_builds(a, b, args.kernel)
    if args.json:
        print(json.dumps(diff.to_json()))
    else:
        print("\n".join(describe(diff)))
    return EXIT_OK
