"""A/B of source variants on the GPU host (issues 23 and 26: the parity gaps' causes, measured).

A variant is an example with a patch applied (`benchmarks/gpu_host/variants/<example>--<name>.patch`,
a `git diff` from the repository root). Each example that has a variant also runs as it is
(`as-is`), so every ratio is read beside the kept form's, from the same device call.

Here (Rust and nvcc; the GPU host has neither), every variant copied, patched, built and exported:

    python benchmarks/gpu_host/variants.py prepare [--out .variant-artifacts]

There (after `source .gpu-bundle/gpu-host-setup.sh .gpu-bundle`):

    python3 benchmarks/gpu_host/variants.py run --artifacts .variant-artifacts --out $OUT [--budget 300]

Each variant is one `workbench run --repeat N` of cuda-c and nvptx (cuda-c the reference: the
output is verified, not only timed) at the evidence run's large size: N interleaved repetitions,
each in fresh worker processes, so a ratio rests on separate measurements. Rounds go over every
variant before the next round starts. `OUT/variants.json` is rewritten after each run and
`OUT/variants.md` holds the table: per variant, nvptx / cuda-c in each repetition and their median.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
PATCHES = REPO / "benchmarks" / "gpu_host" / "variants"
sys.path.insert(0, str(REPO))

from benchmarks.gpu_host.evidence import LARGE, SMALL  # noqa: E402  the evidence run's sizes: one room

#: The compared pair, the first the reference. A dry run here on llvmpipe (no GPU):
#: VARIANT_BACKENDS=cpu,wgsl VARIANT_DEVICE=cpu,wgpu:0 VARIANT_SMALL=1 … run …
BACKENDS = os.environ.get("VARIANT_BACKENDS", "cuda-c,nvptx")
DEVICE = os.environ.get("VARIANT_DEVICE", "cuda:0")
SIZES = SMALL if os.environ.get("VARIANT_SMALL") else LARGE


def variants() -> dict[str, list[tuple[str, Path | None]]]:
    """example → [(variant name, its patch or None for the example as it is)]."""
    found: dict[str, list[tuple[str, Path | None]]] = {}
    for patch in sorted(PATCHES.glob("*--*.patch")):
        example, name = patch.stem.split("--", 1)
        found.setdefault(example, [("as-is", None)]).append((name, patch))
    return found


def prepare(out: Path, python: str) -> int:
    if out.exists():
        shutil.rmtree(out)
    for example, forms in variants().items():
        for name, patch in forms:
            project = out / example / name / "project"
            shutil.copytree(REPO / "resources" / "examples" / example, project, symlinks=False)
            if patch is not None:
                # a/resources/examples/<example>/… → the copy's own paths
                subprocess.run(["patch", "-s", "-p4", "-d", str(project), "-i", str(patch)], check=True)
            built = subprocess.run(
                [python, "-m", "workbench", "build", str(project), "--backend", BACKENDS, *(["--target", "9.0"] if "nvptx" in BACKENDS else []),
                 "--export", str(out / example / name / "artifacts")], cwd=REPO,
            )  # fmt: skip
            if built.returncode != 0:
                print(f"{example}/{name}: the build failed", file=sys.stderr)
                return built.returncode
            print(f"{example}/{name}: built")
    return 0


def _ratios(report: dict[str, Any] | None) -> dict[str, Any]:
    """nvptx / cuda-c of each repetition, and whether every nvptx result verified."""
    if not report:
        return {"error": "no report"}
    reps = report.get("repetitions") or [report]
    ratios, verified = [], []
    for rep in reps:
        by = {r["backend"]: r for r in rep.get("results", [])}
        c, r = (by.get(b) for b in BACKENDS.split(","))
        if not c or not r or not c.get("timing") or not r.get("timing"):
            continue
        ratios.append(r["timing"]["median_s"] / c["timing"]["median_s"])
        verified.append(r.get("verified"))
    return {
        "ratios": [round(x, 4) for x in ratios],
        "median_ratio": round(statistics.median(ratios), 4) if ratios else None,
        "reference_median_us": [
            round(r["timing"]["median_s"] * 1e6, 1)
            for rep in reps
            for r in rep.get("results", [])
            if r["backend"] == BACKENDS.split(",")[0] and r.get("timing")
        ],
        "verified": verified,
    }


def run(artifacts: Path, out: Path, python: str, budget_s: float, rounds: int, repeat: int) -> int:
    out.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + budget_s
    results: dict[str, Any] = {"repeat": repeat, "rounds": rounds, "runs": []}
    forms = [(ex, name) for ex, fs in variants().items() for name, _ in fs]
    for round_ in range(rounds):
        for example, name in forms:
            left = deadline - time.monotonic()
            if left < 30:
                results["runs"].append(
                    {"example": example, "variant": name, "round": round_, "skipped": "budget"}
                )
                continue
            folder = artifacts / example / name
            sizes = [a for k, v in SIZES[example].items() for a in ("--size", f"{k}={v}")]
            cmd = [python, "-m", "workbench", "run", str(folder / "project"), "--artifacts",
                   str(folder / "artifacts"), "--backend", BACKENDS, "--reference", BACKENDS.split(",")[0],
                   "--device", DEVICE, "--json", "--no-record", "--repeat", str(repeat), *sizes]  # fmt: skip
            started = time.monotonic()
            try:
                done = subprocess.run(cmd, capture_output=True, text=True, timeout=min(240, left), cwd=REPO)
                report = json.loads(done.stdout) if done.returncode == 0 else None
                error = None if report else done.stderr[-2000:]
            except (subprocess.TimeoutExpired, json.JSONDecodeError) as exc:
                report, error = None, str(exc)
            entry = {"example": example, "variant": name, "round": round_,
                     "wall_s": round(time.monotonic() - started, 1), **_ratios(report)}  # fmt: skip
            if error:
                entry["error"] = error
            results["runs"].append(entry)
            print(json.dumps(entry), flush=True)
            (out / "variants.json").write_text(json.dumps(results, indent=1))
    (out / "variants.md").write_text(table(results))
    print(table(results))
    return 0


def table(results: dict[str, Any]) -> str:
    rows: dict[tuple[str, str], list[float]] = {}
    for entry in results["runs"]:
        rows.setdefault((entry["example"], entry["variant"]), []).extend(entry.get("ratios") or [])
    lines = ["| example | variant | nvptx / cuda-c, each repetition | median |", "|---|---|---|---|"]
    for (example, name), ratios in rows.items():
        each = ", ".join(f"{r:.3f}" for r in ratios) or "-"
        med = f"{statistics.median(ratios):.3f}" if ratios else "-"
        lines.append(f"| {example} | {name} | {each} | {med} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--out", default=str(REPO / ".variant-artifacts"))
    r = sub.add_parser("run")
    r.add_argument("--artifacts", default=str(REPO / ".variant-artifacts"))
    r.add_argument("--out", required=True)
    r.add_argument("--budget", type=float, default=300.0, help="seconds of runs (default %(default)s)")
    r.add_argument("--rounds", type=int, default=2)
    r.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)
    if args.cmd == "prepare":
        return prepare(Path(args.out), sys.executable)
    return run(Path(args.artifacts), Path(args.out), sys.executable, args.budget, args.rounds, args.repeat)


if __name__ == "__main__":
    sys.exit(main())
