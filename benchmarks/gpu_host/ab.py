"""A GPU A/B of example kernels: a base commit's build against this tree's, on one GPU host, alternated.

When an example's algorithm changes (its Rust body, .cu and .wgsl together), the change must not slow
the GPU. This times both versions in one device call, at the evidence run's large sizes, alternating
base and new in separate `workbench run` processes round by round (the first side flips each round).

Here (with Rust), from the repository root:

    python benchmarks/gpu_host/ab.py prepare --base REV --examples scan,scan:scan_add,warp_reduce \
        --out .gpu-artifacts/ab

builds each example at REV (a detached worktree, built by REV's own workbench) and in this tree for
nvptx, cuda-c and wgsl (sm_90), and copies each side's project folder beside its artifacts
(`OUT/<example>/<side>/{project,artifacts}`; `example:kernel` picks a kernel of the example). On the
GPU host (after `source .gpu-bundle/gpu-host-setup.sh .gpu-bundle`):

    python benchmarks/gpu_host/ab.py run .gpu-artifacts/ab --rounds 3 --out $OUT/ab

writes `ab.json` (every run's per-backend median, status and verification) and prints a table.
cuda-c is each run's reference (a CPU reference at these sizes takes minutes).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
#: The backends timed; the first is each run's reference (`AB_BACKENDS=wgsl` for a dry run on llvmpipe).
BACKENDS = os.environ.get("AB_BACKENDS", "cuda-c,nvptx,wgsl")
SIDES = ("base", "new")


def _sizes(small: bool) -> dict[str, dict[str, int]]:
    """The evidence run's large (or small) sizes: one table for both scripts."""
    spec = importlib.util.spec_from_file_location("evidence", Path(__file__).with_name("evidence.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.SMALL if small else module.LARGE


def _split(entry: str) -> tuple[str, str | None]:
    example, _, kernel = entry.partition(":")
    return example, kernel or None


def _slot(entry: str) -> str:
    return entry.replace(":", "-")


def _build(python: str, tree: Path, example: str, dest: Path) -> None:
    project = tree / "resources" / "examples" / example
    env = dict(os.environ, PYTHONPATH=str(tree))
    cmd = [python, "-m", "workbench", "build", str(project), "--backend", BACKENDS, "--target", "9.0",
           "--export", str(dest / "artifacts")]  # fmt: skip
    subprocess.run(cmd, check=True, env=env, cwd=tree)
    # The project folder without its build outputs; `gpu_kernel` stays a (dangling) link: a run of
    # prebuilt artifacts reads only the manifest and the references.
    shutil.copytree(project, dest / "project", symlinks=True, ignore=shutil.ignore_patterns("target"))


def prepare(args: argparse.Namespace) -> None:
    out = Path(args.out).resolve()
    shutil.rmtree(out, ignore_errors=True)
    python = sys.executable
    with tempfile.TemporaryDirectory(prefix="ab-base-") as scratch:
        base = Path(scratch) / "tree"
        subprocess.run(["git", "worktree", "add", "--detach", str(base), args.base], check=True, cwd=REPO)
        try:
            for entry in args.examples.split(","):
                example, _ = _split(entry)
                for side, tree in (("base", base), ("new", REPO)):
                    dest = out / _slot(entry) / side
                    if not (dest / "artifacts").exists():
                        built = out / example / side
                        if built.exists():  # another kernel of an example built already
                            shutil.copytree(built, dest, symlinks=True)
                        else:
                            _build(python, tree, example, dest)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base)], cwd=REPO)
    rev = subprocess.run(
        ["git", "rev-parse", args.base], capture_output=True, text=True, cwd=REPO
    ).stdout.strip()
    new = subprocess.run(
        ["git", "describe", "--always", "--dirty"], capture_output=True, text=True, cwd=REPO
    ).stdout
    (out / "ab.json").write_text(
        json.dumps({"base": rev, "new": new.strip(), "examples": args.examples.split(",")}) + "\n"
    )
    print(f"prepared {out}")


def _summary(report: dict[str, Any] | None) -> dict[str, Any]:
    rows = {}
    for r in (report or {}).get("results", []):
        timing = r.get("timing") or {}
        rows[r["backend"]] = {
            "median_s": timing.get("median_s"),
            "status": r.get("status"),
            "verified": r.get("verified"),
            "is_reference": bool((r.get("check") or {}).get("is_reference")),
            "error": (r.get("error") or "")[:300] or None,
        }
    return rows


def _one(python: str, folder: Path, entry: str, sizes: dict[str, int], log: Path) -> dict[str, Any]:
    example, kernel = _split(entry)
    cmd = [python, "-m", "workbench", "run", str(folder / "project"), "--artifacts", str(folder / "artifacts"),
           "--backend", BACKENDS, "--reference", BACKENDS.split(",")[0], "--json", "--no-record", "--timeout", "60"]  # fmt: skip
    cmd += ["--kernel", kernel] if kernel else []
    cmd += [a for k, v in sizes.items() for a in ("--size", f"{k}={v}")]
    started = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=240)
    with log.open("a") as f:
        f.write(f"$ {' '.join(cmd)}\n{proc.stderr[-4000:]}[exit {proc.returncode}]\n")
    try:
        report = json.loads(proc.stdout)
    except ValueError:
        report = None
    return {
        "exit": proc.returncode,
        "wall_s": round(time.monotonic() - started, 1),
        "backends": _summary(report),
    }


def run(args: argparse.Namespace) -> None:
    folder = Path(args.folder).resolve()
    meta = json.loads((folder / "ab.json").read_text())
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    large = _sizes(args.small)
    deadline = time.monotonic() + args.budget
    results: dict[str, Any] = {"base": meta["base"], "new": meta.get("new"), "rounds": []}
    for round_ in range(args.rounds):
        order = SIDES if round_ % 2 == 0 else SIDES[::-1]
        row: dict[str, Any] = {}
        for entry in meta["examples"]:
            example, _ = _split(entry)
            for side in order:
                if time.monotonic() > deadline:
                    row.setdefault(entry, {})[side] = {"skipped": "out of budget"}
                    continue
                row.setdefault(entry, {})[side] = _one(
                    sys.executable, folder / _slot(entry) / side, entry, large[example], out / "ab.log"
                )
        results["rounds"].append(row)
        (out / "ab.json").write_text(json.dumps(results, indent=1) + "\n")  # partial results as it goes
    print(table(results))


def table(results: dict[str, Any]) -> str:
    """Median per launch over the rounds, µs, per example and backend: base, new, new / base."""
    lines = [f"base {results['base'][:10]} against {results.get('new') or 'this tree'}; medians of the rounds' per-launch medians (µs)",
             "| example | backend | base | new | new/base | every run verified |", "|---|---|---|---|---|---|"]  # fmt: skip
    entries = list(results["rounds"][0]) if results["rounds"] else []
    for entry in entries:
        found = [
            b
            for row in results["rounds"]
            for side in row.get(entry, {}).values()
            for b in side.get("backends", {})
        ]
        for backend in dict.fromkeys(found):  # the backends the runs reported, in their order
            med, ok = {}, True
            for side in SIDES:
                values = []
                for row in results["rounds"]:
                    cell = row.get(entry, {}).get(side, {}).get("backends", {}).get(backend)
                    if not cell or cell["median_s"] is None:
                        ok = False
                        continue
                    values.append(cell["median_s"])
                    ok = ok and bool(cell["verified"] or cell.get("is_reference"))
                med[side] = statistics.median(values) * 1e6 if values else None
            ratio = f"{med['new'] / med['base']:.3f}" if med["base"] and med["new"] else "—"
            cells = [f"{med[s]:.1f}" if med[s] else "—" for s in SIDES]
            lines.append(
                f"| {entry} | {backend} | {cells[0]} | {cells[1]} | {ratio} | {'yes' if ok else 'no'} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare", help="build the base and new artifacts (here, with Rust)")
    p.add_argument("--base", required=True)
    p.add_argument("--examples", required=True, help="comma-separated: example or example:kernel")
    p.add_argument("--out", default=str(REPO / ".gpu-artifacts" / "ab"))
    r = sub.add_parser("run", help="alternate base and new on the GPU host")
    r.add_argument("folder")
    r.add_argument("--rounds", type=int, default=3)
    r.add_argument("--budget", type=float, default=400, help="seconds; later runs are skipped")
    r.add_argument("--out", required=True)
    r.add_argument("--small", action="store_true", help="the evidence run's small sizes (a dry run)")
    t = sub.add_parser("table", help="print the table of an ab.json")
    t.add_argument("json")
    args = parser.parse_args(argv)
    if args.cmd == "prepare":
        prepare(args)
    elif args.cmd == "run":
        run(args)
    else:
        print(table(json.loads(Path(args.json).read_text())))


if __name__ == "__main__":
    main()
