"""Issue 26 item 1, "at the limit": saxpy, reduction and matmul in each of their forms (the
tunables' variants) at large sizes on nvptx, cuda-c and wgsl, each against the ceiling that bounds
it: saxpy the copy ceiling, the reduction the read ceiling, matmul the f32 FMA ceiling (measured on
the same device by `workbench ceilings`' kernels).

Here (Rust and nvcc; the GPU host has neither), every variant built and exported:

    python benchmarks/gpu_host/limit.py prepare [--out .limit-artifacts]

There (after `source .gpu-bundle/gpu-host-setup.sh .gpu-bundle`; limit.sh does both):

    python3 benchmarks/gpu_host/limit.py run --artifacts .limit-artifacts --out $OUT [--budget 420]

writes `OUT/limit.json` (rewritten after every run, so a run cut short keeps what it finished) and
`OUT/limit.md` (the table). Each example × variant is one `RunService` run of the prebuilt
folders with that variant's tunables, cuda-c first and the reference (a CPU reference takes
minutes at these sizes); a variant that would not fit the remaining budget is skipped and says so.
`--small` shrinks the sizes and `--devices wgpu:llvmpipe --backends wgsl` makes a dry run here.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

#: example -> (sizes, small sizes, [(variant name, tunables)], the ceiling that bounds it). The first
#: variant is the plain form (the examples' teaching form), the second the form at the limit; the
#: others (tuning around it) run after every example's first two, budget permitting.
PLAN: dict[str, tuple[dict[str, int], dict[str, int], list[tuple[str, dict[str, int]]], str]] = {
    "saxpy": (
        {"n": 1 << 28},
        {"n": 1_000_003},
        [("scalar", {"vector": 1}), ("vector4", {"vector": 4})],
        "copy",
    ),
    "reduction": (
        {"n": 1 << 28},
        {"n": 1_000_003},
        [
            ("one-chunk-per-group", {"vector": 1, "max_groups": 1048576}),
            ("grid-stride-vector4", {"vector": 4, "max_groups": 2048}),
            ("grid-stride-scalar", {"vector": 1, "max_groups": 2048}),
            ("grid-stride-vector4-1024", {"vector": 4, "max_groups": 1024}),
            ("grid-stride-vector4-4096", {"vector": 4, "max_groups": 4096}),
        ],
        "read",
    ),
    "matmul": (
        {"m": 4096, "n": 4096, "k": 4096},
        {"m": 131, "n": 97, "k": 75},
        [
            ("tiled-16", {"tile": 16, "per_thread": 1}),
            ("blocked-16x8", {"tile": 16, "per_thread": 8}),
            ("blocked-16x4", {"tile": 16, "per_thread": 4}),
            ("blocked-8x8", {"tile": 8, "per_thread": 8}),
        ],
        "fma",
    ),
}
BACKENDS = ["cuda-c", "nvptx", "wgsl"]
#: What prepare builds: the run's backends, and cpu for a dry run here (`--backends cpu,wgsl`).
PREPARED = ["cpu", *BACKENDS]


def prepare(out: Path) -> None:
    """Build every example × variant for nvptx, cuda-c and wgsl and export each to
    `out/<example>/<variant>/<backend>/` (what `run --artifacts` reads)."""
    from workbench.build import build_project, export
    from workbench.project import Project, examples_dir

    for example, (_, _, variants, _) in PLAN.items():
        project = Project.open(examples_dir() / example)
        for name, tunables in variants:
            results = build_project(project, PREPARED, None, tunables=tunables)
            for result in results:
                if result.status != "ok":
                    errors = [d["message"] for d in result.diagnostics if d["severity"] == "error"]
                    raise SystemExit(f"{example} {name} {result.backend}: {result.status} {errors[:3]}")
            export(results, out / example / name)
            print(f"{example} {name}: {', '.join(r.backend for r in results)}", flush=True)


def ceilings(devices: list[str]) -> dict[str, dict[str, Any]]:
    """Measured ceilings (`workbench ceilings`' kernels, refreshed) of the run's devices, by spec."""
    from workbench.run.ceilings import ceilings_for
    from workbench.run.devices import list_devices, resolve_device_spec

    info = list_devices()
    found = []
    for spec in devices:
        runtime, index = resolve_device_spec(spec, info)
        found.append(info[runtime]["devices"][index])
    return {c.spec: c.to_json() for c in ceilings_for(found, refresh=True)}


def bound(
    kind: str, result: dict[str, Any], ceiling: dict[str, Any] | None
) -> tuple[float | None, float | None]:
    """(achieved, ceiling) in the bounding unit: GB/s for copy and read, GFLOP/s for fma."""
    throughput = result.get("throughput") or {}
    if kind == "fma":
        return throughput.get("gflops"), (ceiling or {}).get("fma_gflops_f32")
    return throughput.get("gbps"), (ceiling or {}).get(f"{kind}_gbps")


def run(args: argparse.Namespace) -> int:
    from workbench.run.service import RunService

    started = time.monotonic()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    devices = [d for item in args.devices.split(",") for d in [item.strip()] if d]
    backends = [b for b in args.backends.split(",") if b]
    data: dict[str, Any] = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "devices": devices,
                            "ceilings": {}, "rows": [], "skipped": []}  # fmt: skip
    try:
        data["ceilings"] = ceilings(devices)
    except Exception as exc:  # the table still has the absolute figures without them
        data["ceilings_error"] = str(exc)
    service = RunService()
    longest = 0.0
    chosen = [ex for ex in PLAN if ex in args.examples.split(",")]
    order = [(ex, i) for i in (0, 1) for ex in chosen] + [
        (ex, i) for ex in chosen for i in range(2, len(PLAN[ex][2]))
    ]
    try:
        for example, index in order:
            sizes, small, variants, kind = PLAN[example]
            name, tunables = variants[index]
            # The next run fits when the longest so far would still end inside the budget.
            if time.monotonic() - started + longest > args.budget:
                data["skipped"].append(f"{example} {name}: out of budget")
                continue
            folder = Path(args.artifacts) / example / name
            t0 = time.monotonic()
            try:
                report = service.run(
                    folder_project(example), backends=backends, devices=devices,
                    sizes=small if args.small else sizes, tunables=tunables, artifacts_dir=folder,
                    reference=backends[0], keep_outputs=False, timeout_s=60,
                )  # fmt: skip
            except Exception as exc:  # one variant's failure (a worker lost, memory) spares the others
                data["skipped"].append(f"{example} {name}: {type(exc).__name__}: {exc}")
                save(out, data)
                continue
            longest = max(longest, time.monotonic() - t0)
            for result in report.results:
                row = result.to_json()
                spec = str((result.device or {}).get("spec") or "")
                achieved, ceiling = bound(kind, row, data["ceilings"].get(spec))
                data["rows"].append({
                    "example": example, "variant": name, "tunables": tunables, "sizes": report.sizes,
                    "backend": result.backend, "device": spec, "status": result.status,
                    "verified": result.verified, "median_s": (row.get("timing") or {}).get("median_s"),
                    "gbps": (row.get("throughput") or {}).get("gbps"),
                    "gflops": (row.get("throughput") or {}).get("gflops"),
                    "bound_by": kind, "achieved": achieved, "ceiling": ceiling,
                    "fraction": achieved / ceiling if achieved and ceiling else None,
                    "error": result.error, "wall_s": round(time.monotonic() - t0, 1),
                })  # fmt: skip
            save(out, data)
            print(table_rows([r for r in data["rows"] if r["example"] == example and r["variant"] == name]),
                  flush=True)  # fmt: skip
    finally:
        service.close()
    data["wall_s"] = round(time.monotonic() - started, 1)
    save(out, data)
    print(table(data))
    return 0 if all(r["status"] == "ok" and r["verified"] is not False for r in data["rows"]) else 1


def folder_project(example: str):
    from workbench.project import Project, examples_dir

    return Project.open(examples_dir() / example)


def save(out: Path, data: dict[str, Any]) -> None:
    (out / "limit.json").write_text(json.dumps(data, indent=1) + "\n")
    (out / "limit.md").write_text(table(data) + "\n")


UNIT = {"copy": "GB/s", "read": "GB/s", "fma": "GFLOP/s"}


def table_rows(rows: list[dict[str, Any]]) -> str:
    lines = []
    for r in rows:
        median = f"{r['median_s'] * 1e3:.3f} ms" if r["median_s"] else "-"
        achieved, ceiling = figure(r["achieved"]), figure(r["ceiling"])
        share = f"{100 * r['fraction']:.1f} %" if r["fraction"] else "-"
        verified = {True: "yes", False: "NO", None: "ref" if r["status"] == "ok" else "-"}[r["verified"]]
        note = r["error"] or ""
        lines.append(f"| {r['example']} | {r['variant']} | {r['backend']} | {verified} | {median} | "
                     f"{achieved} {UNIT[r['bound_by']]} | {r['bound_by']} {ceiling} | {share} | {note[:80]} |")  # fmt: skip
    return "\n".join(lines)


def figure(value: float | None) -> str:
    if not value:
        return "-"
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def table(data: dict[str, Any]) -> str:
    head = ["# At the limit (issue 26 item 1)", "",
            f"Devices {', '.join(data['devices'])}; started {data['started']}; ceilings measured by "
            "`workbench ceilings` (copy: bytes read + written, read: bytes read, fma: f32 FMA).", "",
            "| example | variant | backend | verified | median | achieved | ceiling | of ceiling | note |",
            "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    tail = [f"- skipped: {s}" for s in data["skipped"]]
    return "\n".join(head + [table_rows(data["rows"])] + ([""] + tail if tail else []))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare", help="build and export every variant (here)")
    p.add_argument("--out", default=str(REPO / ".limit-artifacts"))
    r = sub.add_parser("run", help="run every variant (on the GPU host)")
    r.add_argument("--artifacts", default=str(REPO / ".limit-artifacts"))
    r.add_argument("--out", default=os.environ.get("OUT", str(REPO / "benchmarks/results/limit-out")))
    r.add_argument("--budget", type=float, default=420.0, help="seconds; later variants are skipped past it")
    r.add_argument("--devices", default="cuda:0,wgpu:0")
    r.add_argument("--backends", default=",".join(BACKENDS))
    r.add_argument("--small", action="store_true", help="small odd sizes (a dry run)")
    r.add_argument("--examples", default=",".join(PLAN), help="comma-separated (default: %(default)s)")
    args = parser.parse_args()
    if args.command == "prepare":
        prepare(Path(args.out))
        return 0
    return run(args)


if __name__ == "__main__":
    raise SystemExit(main())
