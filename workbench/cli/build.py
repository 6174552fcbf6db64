"""`workbench build PATH`: build a kernel project for some or all backends."""

from __future__ import annotations

import argparse
import json
import sys
import threading

from workbench.backends import parse_backends
from workbench.cli import EXIT_FAILED, EXIT_OK
from workbench.errors import WorkbenchError
from workbench.project import Project
from workbench.records import BuildResult


def register(subparsers) -> None:
    p = subparsers.add_parser("build", help="build a kernel project for each backend",
                              description="Build a kernel project for each backend (cached by content).")  # fmt: skip
    p.add_argument("path", metavar="PATH", help="project folder or its workbench.toml")
    p.add_argument("--backend", metavar="LIST", help="comma-separated backends (default: all)")
    p.add_argument("--json", action="store_true", help="print one JSON object per build")
    p.add_argument("--watch", action="store_true", help="rebuild when a source changes (Ctrl+C stops)")
    p.add_argument(
        "--cache-dir",
        metavar="DIR",
        help="build cache (default: $WB_CACHE_DIR or ~/.cache/rust-gpu-workbench)",
    )
    p.add_argument("--export", metavar="DIR", help="copy each successful artifact folder to DIR/<backend>/")
    p.add_argument(
        "--timeout", metavar="S", type=float, default=300.0, help="stop a build after S seconds (default 300)"
    )
    p.add_argument(
        "--target", metavar="CC", help="CUDA compute capability for PTX backends, e.g. 9.0 (default sm_90)"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    backends = parse_backends(args.backend)
    project = Project.open(args.path)
    if not args.watch:
        return _build_once(project, backends, args)
    return _watch(project, backends, args)


def _build_once(project: Project, backends: list[str], args) -> int:
    from workbench.build import build_project, export

    results = build_project(project, backends, cache_dir=args.cache_dir, target=args.target,
                            timeout_s=args.timeout)  # fmt: skip
    if args.export:
        try:
            export(results, args.export)
        except OSError as exc:
            raise WorkbenchError(f"--export {args.export}: cannot copy the artifact folders: {exc}") from None
    if args.json:
        from workbench.build.occupancy import result_occupancy

        rows = [{**r.to_json(), "occupancy": result_occupancy(project, r)} for r in results]
        print(json.dumps({"project": project.name, "results": rows}), flush=True)
    else:
        print_results(project, results)
    return EXIT_FAILED if any(r.status in ("error", "cancelled") for r in results) else EXIT_OK


def _watch(project: Project, backends: list[str], args) -> int:
    from workbench.build import ProjectWatcher

    changed = threading.Event()
    # Watch before the first build, so a save made while it runs is not missed.
    watcher = ProjectWatcher(project.root, lambda paths: changed.set()).start()
    if not args.json:
        print(f"watching {project.root} (Ctrl+C stops)", flush=True)
    _build_once(project, backends, args)
    try:
        while True:
            if changed.wait(0.5):
                changed.clear()
                try:
                    project = Project.open(project.root)  # the manifest may have changed too
                except Exception as exc:  # noqa: BLE001  a broken save: report and keep watching
                    print(f"error: {exc}", file=sys.stderr, flush=True)
                    continue
                _build_once(project, backends, args)
    except KeyboardInterrupt:
        return EXIT_OK
    finally:
        watcher.stop()


def print_results(project: Project, results: list[BuildResult]) -> None:
    from workbench.build.occupancy import result_occupancy

    print(f"{project.name} ({project.root})")
    print(f"  {'backend':<10} {'status':<10} {'time':>8}  artifact / note")
    for r in results:
        note = r.artifacts[0] if r.artifacts else (r.hint or "")
        if r.status == "error":
            errors = [d for d in r.diagnostics if d.get("severity") == "error"]
            note = f"{len(errors)} error(s)"
        when = "cached" if r.cached else f"{r.seconds:.2f}s"
        print(f"  {r.backend:<10} {r.status:<10} {when:>8}  {note}")
    for r in results:
        for d in r.diagnostics:
            print()
            print(f"[{r.backend}] " + (d.get("rendered") or _format(d)).rstrip())
        if r.status == "error" and not r.diagnostics and r.log:
            print(f"\n[{r.backend}] output:\n{r.log[-4000:]}")
        for name, res in r.resources.items():
            if res.get("registers") is not None:
                print(f"  {r.backend}: {name}: {res['registers']} registers, {res['spills']} bytes spilled, "
                      f"{res['shared_bytes']} B shared, {res['stack_bytes']} B stack")  # fmt: skip
        for name, occ in result_occupancy(project, r).items():
            print(f"  {r.backend}: {name}: occupancy {occ.get('text') or occ.get('error')}")


def _format(d: dict) -> str:
    where = d.get("file") or ""
    if d.get("line"):
        where += f":{d['line']}" + (f":{d['column']}" if d.get("column") else "")
    return f"{d['severity']}: {where + ': ' if where else ''}{d['message']}"
