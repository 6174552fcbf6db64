"""cpu-sim's cost (issue 23): each example at its default size on cpu-sim (the kernel body with
GPU semantics and every check on), on cpu (the same executor and body, no checks: the checks-off
figure) and on llvmpipe running the reference WGSL, through `RunService` as `workbench run` does
(one verification launch, then the timing protocol; medians reported).

Goals: every example's default size in ≤ 5 s on cpu-sim here (2 cores), and the checks' cost
(cpu-sim median / cpu median) ≤ 5×. `--scaling` reruns saxpy on cpu and cpu-sim at workgroup
sizes 64, 256 and 1024 (its `threads` tunable) to show how the cost grows with the workgroup.

    python benchmarks/cpu_sim.py [--examples saxpy,reduction,matmul,bitonic,histogram,scan,transpose,stencil2d,softmax] [--scaling] [--json] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.bench_output import OUT_HELP, machine, write_json  # noqa: E402

GOAL_SIM_S = 5.0
GOAL_CHECK_RATIO = 5.0
BACKENDS = ["cpu", "cpu-sim", "wgsl"]


def run_example(service, name: str, tunables: dict | None = None, backends=BACKENDS) -> dict:
    from workbench.project import examples_dir

    report = service.run(examples_dir() / name, backends=list(backends), devices=["cpu", "wgpu:llvmpipe"],
                         tunables=tunables, reference="cpu")  # fmt: skip
    row: dict = {"example": name, "sizes": report.sizes, "tunables": tunables or {}}
    for result in report.results:
        timing = result.timing or {}
        row[result.backend] = {
            "status": result.status,
            "verified": result.verdict,
            "median_s": timing.get("median_s"),
            "findings": len((result.findings or {}).get("findings", []))
            if result.findings is not None
            else None,
            "error": result.error,
        }
    cpu, sim = row.get("cpu", {}).get("median_s"), row.get("cpu-sim", {}).get("median_s")
    row["check_ratio"] = sim / cpu if cpu and sim else None
    return row


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--examples",
        default="saxpy,reduction,matmul,bitonic,histogram,scan,transpose,stencil2d,softmax,warp_reduce",
    )
    parser.add_argument("--scaling", action="store_true", help="saxpy at workgroup sizes 64..1024 too")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--out", help=OUT_HELP)
    args = parser.parse_args()

    from workbench.run.service import RunService

    service = RunService()
    try:
        rows = [run_example(service, name) for name in args.examples.split(",") if name]
        scaling = []
        if args.scaling:
            for threads in (64, 256, 1024):
                scaling.append(run_example(service, "saxpy", {"threads": threads}, ["cpu", "cpu-sim"]))
    finally:
        service.close()
    data = {"machine": machine(), "goals": {"sim_s": GOAL_SIM_S, "check_ratio": GOAL_CHECK_RATIO},
            "examples": rows, "scaling": scaling}  # fmt: skip
    path = write_json(args.out, "cpu_sim.json", data)
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    print(
        f"{'example':10} {'cpu':>10} {'cpu-sim':>10} {'llvmpipe':>10} {'checks':>7}  goals (sim <= 5 s, checks <= 5x)"
    )
    for row in [*rows, *scaling]:
        sim = row.get("cpu-sim", {}).get("median_s")
        ratio = row.get("check_ratio")
        label = row["example"] + (f" t={row['tunables']['threads']}" if row["tunables"] else "")

        cells = [row.get(b, {}).get("median_s") for b in ("cpu", "cpu-sim", "wgsl")]
        cells = [f"{v * 1e3:8.1f}ms" if v else f"{'-':>10}" for v in cells]

        ok = sim is not None and sim <= GOAL_SIM_S and ratio is not None and ratio <= GOAL_CHECK_RATIO
        print(f"{label:10} {cells[0]} {cells[1]} {cells[2]} "
              f"{(f'{ratio:6.1f}x' if ratio else '      -')}  {'met' if ok else 'NOT met'}")  # fmt: skip
    print(f"JSON: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
