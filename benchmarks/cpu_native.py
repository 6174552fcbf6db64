"""The cpu backend against plain Rust (issue 37): each example's kernel body run by the host
executor (`cpu`, and `cpu-sim` with every check) beside a plain Rust version of the same computation
(`benchmarks/cpu_native/src/lib.rs`: loops over slices, no workgroups or barriers), sequential and
threaded over the same cores, built with the same rustc and flags (the cpu adapter's cargo build of
a copy of the example whose `src/lib.rs` is the plain one, run by the same cpu runtime and timing
protocol through `RunService`).

Each measurement is its own process (`--one`), the variants alternating round by round (the order
rotating), at the example's default size and at a large one; a variant's figure is the median of
its rounds' medians. Before timing, each plain version's outputs are checked against the example's
cpu backend with the manifest's tolerances at a size that is no multiple of the workgroup.

Goals: cpu / plain sequential <= 1.0 (the cpu backend uses every core), cpu-sim / cpu <= 3.

`--cpu-time` measures CPU time per launch instead (the cpu variant on every core, its threads'
time summed, against the plain sequential one; `--variants cpu,plain,cpu-sim` adds cpu-sim, every
check on): each variant's artifact from the check's build,
called in a process of its own through the cpu runtime with the manifest's inputs, `time.
process_time` around each launch. On a loaded machine a wall-clock median says more about the
scheduler than about the code (a helper thread preempted while it holds workgroups holds the
launch up for a time slice); the CPU time says what work the executor adds to the computation.

    python benchmarks/cpu_native.py [--examples saxpy,reduction] [--rounds 3] [--sizes default,large]
                                    [--cpu-time] [--json] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.bench_output import OUT_HELP, machine, write_json  # noqa: E402

PLAIN_LIB = REPO / "benchmarks" / "cpu_native" / "src" / "lib.rs"
EXAMPLES = ["saxpy", "reduction", "matmul", "softmax", "bitonic", "histogram", "scan", "stencil2d",
            "transpose", "warp_reduce"]  # fmt: skip
#: A large size per example (about 4-16x the default's elements).
LARGE = {
    "saxpy": {"n": 1 << 24},
    "reduction": {"n": 1 << 26},
    "matmul": {"m": 512, "n": 512, "k": 512},
    "softmax": {"rows": 16384, "cols": 1000},
    "bitonic": {"n": 1 << 22},
    "histogram": {"n": 1 << 24},
    "scan": {"n": 1 << 22},
    "stencil2d": {"width": 8192, "height": 4096},
    "transpose": {"m": 3072, "n": 4096},
    "warp_reduce": {"n": 1 << 24},
}
#: Sizes for the plain versions' check: no multiple of any workgroup.
CHECK = {
    "saxpy": {"n": 100_003},
    "reduction": {"n": 1_000_003},
    "matmul": {"m": 101, "n": 67, "k": 45},
    "softmax": {"rows": 37, "cols": 1001},
    "bitonic": {"n": 100_003},
    "histogram": {"n": 100_003},
    "scan": {"n": 100_003},
    "stencil2d": {"width": 301, "height": 117},
    "transpose": {"m": 97, "n": 131},
    "warp_reduce": {"n": 100_003},
}
GOAL_NATIVE = 1.0
GOAL_SIM = 3.0
VARIANTS = ["cpu", "plain", "plain-threads", "cpu-sim"]


def plain_copy(example: str, into: Path, threaded: bool) -> Path:
    """A copy of `example` whose crate is the plain version (no gpu_kernel), its cpu entries
    `NAME_threads` when `threaded`."""
    from workbench.project import examples_dir

    copy = into / ("threads" if threaded else "seq") / example
    shutil.copytree(examples_dir() / example, copy, symlinks=True)
    (copy / "gpu_kernel").unlink(missing_ok=True)
    cargo = (copy / "Cargo.toml").read_text()
    cargo = re.sub(r"(?m)^gpu_kernel = .*$", "", cargo)
    (copy / "Cargo.toml").write_text(
        re.sub(r'(?m)^rust-cuda = \["gpu_kernel/rust-cuda"\]$', "rust-cuda = []", cargo)
    )
    shutil.copy(PLAIN_LIB, copy / "src" / "lib.rs")
    if threaded:
        toml = (copy / "workbench.toml").read_text()
        (copy / "workbench.toml").write_text(re.sub(r'(?m)^cpu = "(\w+)_cpu"', r'cpu = "\1_threads"', toml))
    return copy


def kernels_of(project: Path) -> list[str]:
    from workbench.project import Project

    return [k.name for k in Project.open(project).manifest.kernels]


def one(project: str, kernel: str, backend: str, sizes: dict) -> dict:
    """One measurement in this process: the run service's median for `kernel` on `backend`."""
    from workbench.run.service import RunService

    service = RunService()
    try:
        report = service.run(project, kernel=kernel, backends=[backend], sizes=sizes or None,
                             reference=backend, keep_outputs=False)  # fmt: skip
    finally:
        service.close()
    (result,) = report.results
    timing = result.timing or {}
    findings = (result.findings or {}).get("findings") if result.findings is not None else None
    return {"status": result.status, "median_s": timing.get("median_s"), "n": timing.get("n"),
            "error": result.error, "findings": None if findings is None else len(findings)}  # fmt: skip


def measure(project: Path, kernel: str, backend: str, sizes: dict) -> dict:
    cmd = [sys.executable, __file__, "--one", str(project), kernel, backend, json.dumps(sizes)]
    out = subprocess.run(
        cmd, capture_output=True, text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}
    )
    if out.returncode != 0:
        return {"status": "failed", "median_s": None, "error": (out.stderr or out.stdout)[-2000:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def one_cpu_time(project: str, kernel_name: str, artifact: dict, sizes: dict, seconds: float = 1.0) -> dict:
    """CPU time per launch of `artifact` (the run's provenance record) in this process: the
    manifest's inputs, two launches to warm up, then launches for about `seconds` (at least 5)."""
    import time

    import numpy as np

    from workbench.manifest import BufferArg
    from workbench.project import Project
    from workbench.run.inputs import make_buffer
    from workbench.run.runtimes.cpu import CpuRuntime
    from workbench.run.spec import make_launch_spec

    project_ = Project.open(project)
    kernel = next(k for k in project_.manifest.kernels if k.name == kernel_name)
    symbols = kernel.symbols(sizes or None)
    values = kernel.evaluate(symbols)
    spec = make_launch_spec(kernel, "cpu", artifact, symbols, 0, values=values)
    prepared = CpuRuntime().prepare(spec)
    arrays = {a.name: make_buffer(a, values.lengths[a.name], 0, project_.root)
              for a in kernel.args if isinstance(a, BufferArg)}  # fmt: skip
    # [kernel.timing] fresh_inputs (bitonic's idempotent step): every launch on the inputs, put
    # back untimed, as the run service times it; else launches follow on their own outputs.
    working = {name: array.copy() for name, array in arrays.items()}
    prepared.bind(working)

    def restore() -> None:
        if kernel.fresh_inputs:
            for name, array in arrays.items():
                np.copyto(working[name], array)

    prepared.use_workers(0)
    for _ in range(2):
        restore()
        prepared.launch(1)
    samples: list[float] = []
    started = time.perf_counter()
    while len(samples) < 5 or (time.perf_counter() - started < seconds and len(samples) < 10_000):
        restore()
        before = time.process_time()
        prepared.launch(1)
        samples.append(time.process_time() - before)
    prepared.close()
    return {"status": "ok", "median_s": statistics.median(samples), "n": len(samples)}


def measure_cpu_time(project: Path, kernel: str, artifact: dict, sizes: dict) -> dict:
    cmd = [sys.executable, __file__, "--one-cpu-time", str(project), kernel, json.dumps(artifact),
           json.dumps(sizes)]  # fmt: skip
    out = subprocess.run(
        cmd, capture_output=True, text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}
    )
    if out.returncode != 0:
        return {"status": "failed", "median_s": None, "error": (out.stderr or out.stdout)[-2000:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def check_plain(service, example: str, kernel: str, plain: Path, artifacts: dict | None = None) -> dict:
    """The plain version's outputs against the example's cpu backend, with the workbench's own
    check and the manifest's tolerances (rtol, atol, max_ulp); `artifacts` gets each one's
    artifact record (variant -> provenance["artifact"])."""
    from workbench.project import Project, examples_dir
    from workbench.run.verify import check_outputs

    sizes = CHECK[example]
    ref = service.run(examples_dir() / example, kernel=kernel, backends=["cpu"], sizes=sizes)
    got = service.run(plain, kernel=kernel, backends=["cpu"], sizes=sizes)
    spec = next(k for k in Project.open(examples_dir() / example).manifest.kernels if k.name == kernel)
    c = spec.check
    passed, record = check_outputs(got.outputs["cpu"], ref.outputs["cpu"], c.rtol, c.atol, c.max_ulp)
    if artifacts is not None:
        artifacts.update(
            cpu=ref.results[0].provenance["artifact"], plain=got.results[0].provenance["artifact"]
        )
    return {"ok": passed, "max_abs": record.get("max_abs"), "max_ulp": record.get("max_ulp"), "sizes": sizes}


def median(values: list[float]) -> float | None:
    values = [v for v in values if v]
    return statistics.median(values) if values else None


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--one", nargs=4, metavar=("PROJECT", "KERNEL", "BACKEND", "SIZES"), help=argparse.SUPPRESS
    )
    parser.add_argument("--one-cpu-time", nargs=4, help=argparse.SUPPRESS)
    parser.add_argument("--examples", default=",".join(EXAMPLES))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", default="default,large")
    parser.add_argument(
        "--variants", help=f"default {','.join(VARIANTS)}; with --cpu-time cpu,plain (cpu-sim may be added)"
    )
    parser.add_argument("--check-only", action="store_true", help="only check the plain versions' outputs")
    parser.add_argument("--cpu-time", action="store_true",
                        help="CPU time per launch of cpu and plain (see above), not the run service's wall-clock median")  # fmt: skip
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--out", help=OUT_HELP)
    args = parser.parse_args()
    if args.one:
        project, kernel, backend, sizes = args.one
        print(json.dumps(one(project, kernel, backend, json.loads(sizes))))
        return 0
    if args.one_cpu_time:
        project, kernel, artifact, sizes = args.one_cpu_time
        print(json.dumps(one_cpu_time(project, kernel, json.loads(artifact), json.loads(sizes))))
        return 0

    from workbench.project import examples_dir
    from workbench.run.service import RunService

    if args.cpu_time:
        variants = args.variants.split(",") if args.variants else ["cpu", "plain"]
        if unknown := set(variants) - {"cpu", "plain", "cpu-sim"}:
            parser.error(f"--cpu-time measures cpu, plain and cpu-sim, not {', '.join(sorted(unknown))}")
    else:
        variants = (args.variants or ",".join(VARIANTS)).split(",")
    load_before = os.getloadavg()  # the 2-core VM is shared: its load says how far to trust times
    rows = []
    with tempfile.TemporaryDirectory(prefix="cpu-native-") as tmp:
        service = RunService()
        try:
            for example in args.examples.split(","):
                seq, par = plain_copy(example, Path(tmp), False), plain_copy(example, Path(tmp), True)
                projects = {"cpu": (examples_dir() / example, "cpu"), "cpu-sim": (examples_dir() / example, "cpu-sim"),
                            "plain": (seq, "cpu"), "plain-threads": (par, "cpu")}  # fmt: skip
                for kernel in kernels_of(seq):
                    artifacts: dict = {}
                    check = check_plain(service, example, kernel, seq, artifacts)
                    if args.cpu_time and "cpu-sim" in variants:
                        sim = service.run(examples_dir() / example, kernel=kernel, backends=["cpu-sim"],
                                          sizes=CHECK[example], keep_outputs=False)  # fmt: skip
                        artifacts["cpu-sim"] = sim.results[0].provenance["artifact"]
                    print(f"{example}/{kernel}: plain version {'matches' if check['ok'] else 'DIFFERS'}: {check}",
                          file=sys.stderr)  # fmt: skip
                    if args.check_only:
                        rows.append({"example": example, "kernel": kernel, "plain_check": check})
                        continue
                    for size_name in args.sizes.split(","):
                        sizes = LARGE[example] if size_name == "large" else {}
                        runs: dict[str, list] = {v: [] for v in variants}
                        for rnd in range(args.rounds):
                            order = variants[rnd % len(variants) :] + variants[: rnd % len(variants)]
                            for variant in order:
                                project, backend = projects[variant]
                                if args.cpu_time:
                                    runs[variant].append(
                                        measure_cpu_time(project, kernel, artifacts[variant], sizes)
                                    )
                                else:
                                    runs[variant].append(measure(project, kernel, backend, sizes))
                        med = {v: median([r["median_s"] for r in runs[v]]) for v in variants}
                        row = {"example": example, "kernel": kernel, "size": size_name, "sizes": sizes,
                               "plain_check": check, "median_s": med, "runs": runs}  # fmt: skip
                        cpu, plain, threads, sim = (med.get(v) for v in VARIANTS)
                        row["cpu_over_plain"] = cpu / plain if cpu and plain else None
                        row["cpu_over_plain_threads"] = cpu / threads if cpu and threads else None
                        row["sim_over_cpu"] = sim / cpu if sim and cpu else None
                        rows.append(row)
                        print(line(row), file=sys.stderr)
        finally:
            service.close()
    data = {"machine": machine(), "goals": {"cpu_over_plain": GOAL_NATIVE, "sim_over_cpu": GOAL_SIM},
            "measure": "cpu time per launch" if args.cpu_time else "run service median (wall clock)",
            "rounds": args.rounds, "load_average": {"before": load_before, "after": os.getloadavg()},
            "rows": rows}  # fmt: skip
    path = write_json(args.out, "cpu_native-cpu-time.json" if args.cpu_time else "cpu_native.json", data)
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    print(HEADER)
    for row in rows:
        if "median_s" in row:
            print(line(row))
    print(f"JSON: {path}")
    return 0


HEADER = (f"{'example':22} {'size':7} {'cpu':>10} {'plain':>10} {'threads':>10} {'cpu-sim':>10} "
          f"{'cpu/plain':>9} {'cpu/thr':>8} {'sim/cpu':>8}")  # fmt: skip


def line(row: dict) -> str:
    med = row["median_s"]
    cells = [f"{med[v] * 1e3:8.2f}ms" if med.get(v) else f"{'-':>10}" for v in VARIANTS]
    ratios = [row[k] for k in ("cpu_over_plain", "cpu_over_plain_threads", "sim_over_cpu")]
    texts = [f"{r:.2f}x" if r else "-" for r in ratios]
    name = row["example"] if row["kernel"] == row["example"] else f"{row['example']}/{row['kernel']}"
    return f"{name:22} {row['size']:7} {' '.join(cells)} {texts[0]:>9} {texts[1]:>8} {texts[2]:>8}"


if __name__ == "__main__":
    sys.exit(main())
