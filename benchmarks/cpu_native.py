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

Where cargo is (this VM), `--export DIR` builds every variant's artifact (the example's cpu build
and cpu-sim's if in --variants, the plain sequential and threaded copies: build.json, the cdylib
and, for the plain copies, the project they run under), checks the plain outputs as above and
writes them under DIR (layout: `export_layout`). `--from-artifacts DIR` runs the same alternating
measurement from those artifacts on a machine without a Rust toolchain (the GPU host: 16 free
cores, where the wall-clock goal can be judged), the plain check redone there from the artifacts;
`--cores N` pins every measuring process to N of the allowed CPUs, one per physical core where
sysfs says which are SMT siblings (`os.sched_setaffinity`, inherited by the run's processes and
threads: the "N cores, all free" figure; the cpu backend and the plain threaded loop both take
their thread count from `available_parallelism`, which follows the affinity).

    python benchmarks/cpu_native.py [--examples saxpy,reduction] [--rounds 3] [--sizes default,large]
                                    [--cpu-time] [--json] [--out PATH] [--budget S]
                                    [--export DIR | --from-artifacts DIR [--cores N]]
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.bench_output import OUT_HELP, machine, write_json  # noqa: E402
from workbench.run.runtimes.cpu import cpu_model  # noqa: E402

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


@dataclass(frozen=True)
class Target:
    """Where one variant runs: its project, its backend and, from an export, the folder holding
    `<backend>/build.json` (None: the run service builds it here, with cargo)."""

    project: Path
    backend: str
    artifacts: Path | None = None


def built_targets(example: str, tmp: Path) -> dict[str, Target]:
    """Each variant built here: the example itself and its plain copies (made in `tmp`)."""
    from workbench.project import examples_dir

    source = examples_dir() / example
    seq, par = plain_copy(example, tmp, False), plain_copy(example, tmp, True)
    return {"cpu": Target(source, "cpu"), "cpu-sim": Target(source, "cpu-sim"),
            "plain": Target(seq, "cpu"), "plain-threads": Target(par, "cpu")}  # fmt: skip


#: The export's index: what was exported, with which rustc, and the plain checks made there.
INDEX = "cpu_native.json"


def export_layout(root: Path, example: str) -> dict[str, Target]:
    """Each variant in an export DIR: `DIR/<example>/example/{cpu,cpu-sim}/` (the example's own
    builds, run under the checkout's example) and `DIR/<example>/{plain,plain-threads}/` (the plain
    copy's `project/`, no target dir, beside its `cpu/` build). Each build folder holds only
    build.json and the cdylib it names (plain-threads' names plain's: the same file, see `share`)."""
    from workbench.project import examples_dir

    folder, source = root / example, examples_dir() / example
    return {"cpu": Target(source, "cpu", folder / "example"), "cpu-sim": Target(source, "cpu-sim", folder / "example"),
            "plain": Target(folder / "plain" / "project", "cpu", folder / "plain"),
            "plain-threads": Target(folder / "plain-threads" / "project", "cpu", folder / "plain-threads")}  # fmt: skip


def export_variant(example: str, variant: str, built: Target, into: Target) -> None:
    """Build `built` (a cache hit after the check) and copy what a run needs to `into`."""
    from workbench.build import build_project, export

    (result,) = build_project(built.project, [built.backend])
    if result.status != "ok":
        errors = [
            d.get("rendered") or d.get("message") for d in result.diagnostics if d.get("severity") == "error"
        ]
        raise SystemExit(
            f"--export: {example} {variant}: the {built.backend} build failed: {errors[:1] or result.log[-500:]}"
        )
    assert into.artifacts is not None
    (folder,) = export([result], into.artifacts)
    keep = {"build.json"} | {
        k["artifact"] for k in json.loads((folder / "build.json").read_text())["kernels"].values()
    }
    for path in folder.iterdir():  # build.log and the like: the carry to the GPU host is small
        if path.name not in keep:
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    if variant == "plain-threads":  # the same crate as plain (only its entries differ): one cdylib
        share(folder, export_layout(into.artifacts.parent.parent, example)["plain"].artifacts / "cpu")
    if into.project != built.project:
        shutil.rmtree(into.project, ignore_errors=True)
        shutil.copytree(built.project, into.project, symlinks=True, ignore=shutil.ignore_patterns("target"))


def share(folder: Path, other: Path) -> None:
    """Point `folder`'s build.json at `other`'s copy of each artifact that is the same file, byte
    for byte (a relative path, as build.json's are), and drop its own: the carry stays small."""
    build = json.loads((folder / "build.json").read_text())
    for name in {record["artifact"] for record in build["kernels"].values()}:  # kernels share a cdylib
        mine, theirs = folder / name, other / Path(name).name
        if mine.is_file() and theirs.is_file() and filecmp.cmp(mine, theirs, shallow=False):
            mine.unlink()
            for record in build["kernels"].values():
                if record["artifact"] == name:
                    record["artifact"] = os.path.relpath(theirs, folder)
    (folder / "build.json").write_text(json.dumps(build, indent=2) + "\n")


def missing_from_export(root: Path, example: str, variants: list[str]) -> list[str]:
    """What a `--from-artifacts` run of `example` needs and `root` lacks, one line each."""
    out = []
    for variant in variants:
        target = export_layout(root, example)[variant]
        if not (target.project / "workbench.toml").is_file():
            out.append(f"{target.project / 'workbench.toml'} (the {variant} project of {example})")
        assert target.artifacts is not None
        build = target.artifacts / target.backend / "build.json"
        if not build.is_file():
            out.append(f"{build} (the {target.backend} build of {example}'s {variant})")
            continue
        for name, entry in json.loads(build.read_text()).get("kernels", {}).items():
            if not (build.parent / entry["artifact"]).is_file():
                out.append(
                    f"{build.parent / entry['artifact']} ({example}'s {variant} artifact of kernel {name})"
                )
    return out


def one(project: str, kernel: str, backend: str, sizes: dict, artifacts: str | None = None) -> dict:
    """One measurement in this process: the run service's median for `kernel` on `backend`
    (from the build in `artifacts/<backend>/` when given)."""
    from workbench.run.service import RunService

    service = RunService()
    try:
        report = service.run(project, kernel=kernel, backends=[backend], sizes=sizes or None,
                             reference=backend, keep_outputs=False, artifacts_dir=artifacts)  # fmt: skip
    finally:
        service.close()
    (result,) = report.results
    timing = result.timing or {}
    findings = (result.findings or {}).get("findings") if result.findings is not None else None
    return {"status": result.status, "median_s": timing.get("median_s"), "n": timing.get("n"),
            "error": result.error, "findings": None if findings is None else len(findings),
            "cores": len(os.sched_getaffinity(0))}  # fmt: skip


def _env() -> dict[str, str]:
    """This environment with the checkout first on PYTHONPATH (what was there kept after it)."""
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path}


def _child(cmd: list[str]) -> dict:
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=_env())
    if out.returncode != 0:
        return {"status": "failed", "median_s": None, "error": (out.stderr or out.stdout)[-2000:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(target: Target, kernel: str, sizes: dict) -> dict:
    cmd = [sys.executable, __file__, "--one", str(target.project), kernel, target.backend, json.dumps(sizes)]
    return _child(cmd + (["--one-artifacts", str(target.artifacts)] if target.artifacts else []))


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
    return _child([sys.executable, __file__, "--one-cpu-time", str(project), kernel, json.dumps(artifact),
                   json.dumps(sizes)])  # fmt: skip


def check_plain(
    service, example: str, kernel: str, ref: Target, plain: Target, artifacts: dict | None = None
) -> dict:
    """The plain version's outputs against the example's cpu backend, with the workbench's own
    check and the manifest's tolerances (rtol, atol, max_ulp); `artifacts` gets each one's
    artifact record (variant -> provenance["artifact"])."""
    from workbench.project import Project
    from workbench.run.verify import check_outputs

    sizes = CHECK[example]
    runs = [service.run(t.project, kernel=kernel, backends=["cpu"], sizes=sizes, artifacts_dir=t.artifacts)
            for t in (ref, plain)]  # fmt: skip
    for t, report in zip((ref, plain), runs, strict=True):
        if report.results[0].status != "ok" or "cpu" not in report.outputs:
            raise SystemExit(
                f"{example}/{kernel}: the cpu run of {t.project} failed: {report.results[0].error}"
            )
    spec = next(k for k in Project.open(ref.project).manifest.kernels if k.name == kernel)
    c = spec.check
    passed, record = check_outputs(runs[1].outputs["cpu"], runs[0].outputs["cpu"], c.rtol, c.atol, c.max_ulp)
    if artifacts is not None:
        artifacts.update(
            cpu=runs[0].results[0].provenance["artifact"], plain=runs[1].results[0].provenance["artifact"]
        )
    return {"ok": passed, "max_abs": record.get("max_abs"), "max_ulp": record.get("max_ulp"), "sizes": sizes}


def median(values: list[float]) -> float | None:
    values = [v for v in values if v]
    return statistics.median(values) if values else None


def _core_of(cpu: int) -> tuple[str, str] | None:
    """(package, core) of a logical CPU, from sysfs; None where it does not say."""
    topology = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology")
    try:
        return (topology / "physical_package_id").read_text().strip(), (
            topology / "core_id"
        ).read_text().strip()
    except OSError:
        return None


def pin(cores: int) -> dict:
    """Pin this process (and so every process and thread it starts) to `cores` of the CPUs it may
    use, one per physical core where sysfs tells the SMT siblings apart (two hyperthreads of one
    core are not two free cores), else the first ones; the CPUs chosen and how."""
    allowed = sorted(os.sched_getaffinity(0))
    if cores < 1 or cores > len(allowed):
        raise SystemExit(f"--cores {cores}: this process may use {len(allowed)} CPUs ({allowed})")
    chosen: list[int] = []
    seen: set = set()
    for cpu in allowed:
        core = _core_of(cpu)
        if core is not None and core not in seen:
            seen.add(core)
            chosen.append(cpu)
    how = "one per physical core"
    if len(chosen) < cores:
        chosen, how = allowed, "the first allowed (fewer physical cores than asked, or no topology in sysfs)"
    os.sched_setaffinity(0, chosen[:cores])
    return {"pinned": cores, "cpus": chosen[:cores], "chosen": how,
            "cores_of_cpus": {cpu: _core_of(cpu) for cpu in chosen[:cores]}}  # fmt: skip


def read_export(root: Path) -> dict:
    index = root / INDEX
    if not index.is_file():
        raise SystemExit(f"--from-artifacts {root}: {index} is missing; make it where cargo is with "
                         f"`python benchmarks/cpu_native.py --export {root}` (gpu_host/prepare.sh does)")  # fmt: skip
    return json.loads(index.read_text())


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--one", nargs=4, metavar=("PROJECT", "KERNEL", "BACKEND", "SIZES"), help=argparse.SUPPRESS
    )
    parser.add_argument("--one-artifacts", help=argparse.SUPPRESS)
    parser.add_argument("--one-cpu-time", nargs=4, help=argparse.SUPPRESS)
    parser.add_argument(
        "--examples", help=f"default {','.join(EXAMPLES)} (from an export: the exported ones)"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", default="default,large")
    parser.add_argument(
        "--variants", help=f"default {','.join(VARIANTS)}; with --cpu-time cpu,plain (cpu-sim may be added)"
    )
    parser.add_argument("--check-only", action="store_true", help="only check the plain versions' outputs")
    parser.add_argument("--cpu-time", action="store_true",
                        help="CPU time per launch of cpu and plain (see above), not the run service's wall-clock median")  # fmt: skip
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--export", metavar="DIR", help="build and check every variant here, write the artifacts to DIR"
    )
    where.add_argument(
        "--from-artifacts", metavar="DIR", help="measure from an --export DIR, building nothing"
    )
    parser.add_argument(
        "--cores",
        type=int,
        metavar="N",
        help="pin the measuring processes to N allowed CPUs, one per physical core",
    )
    parser.add_argument(
        "--budget", type=float, metavar="S", help="seconds: start no new row after them (the rest: skipped)"
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--out", help=OUT_HELP)
    args = parser.parse_args()
    if args.one:
        project, kernel, backend, sizes = args.one
        print(json.dumps(one(project, kernel, backend, json.loads(sizes), args.one_artifacts)))
        return 0
    if args.one_cpu_time:
        project, kernel, artifact, sizes = args.one_cpu_time
        print(json.dumps(one_cpu_time(project, kernel, json.loads(artifact), json.loads(sizes))))
        return 0

    from workbench.run.service import RunService

    started = time.monotonic()
    exported = read_export(Path(args.from_artifacts)) if args.from_artifacts else None
    if args.cpu_time:
        variants = args.variants.split(",") if args.variants else ["cpu", "plain"]
        if unknown := set(variants) - {"cpu", "plain", "cpu-sim"}:
            parser.error(f"--cpu-time measures cpu, plain and cpu-sim, not {', '.join(sorted(unknown))}")
    elif exported and not args.variants:
        variants = exported["variants"]
    else:
        variants = (args.variants or ",".join(VARIANTS)).split(",")
    if unknown := set(variants) - set(VARIANTS):
        parser.error(f"--variants: unknown {', '.join(sorted(unknown))}; variants: {', '.join(VARIANTS)}")
    examples = (
        args.examples.split(",") if args.examples else list(exported["examples"]) if exported else EXAMPLES
    )
    if unknown := set(examples) - set(EXAMPLES):
        parser.error(f"--examples: unknown {', '.join(sorted(unknown))}; examples: {', '.join(EXAMPLES)}")
    if exported:
        root = Path(args.from_artifacts)
        needed = ["cpu", "plain"] + [v for v in variants if v not in ("cpu", "plain")]
        if missing := [m for ex in examples for m in missing_from_export(root, ex, needed)]:
            raise SystemExit(f"--from-artifacts {root}: missing (re-run `cpu_native.py --export {root}` with "
                             f"these examples and variants where cargo is):\n  " + "\n  ".join(missing))  # fmt: skip
    cores = pin(args.cores) if args.cores else {"pinned": None, "cpus": sorted(os.sched_getaffinity(0))}
    load_before = os.getloadavg()  # the 2-core VM is shared: its load says how far to trust times
    rows = []
    index: dict = {"format": 1, "variants": variants, "examples": {}}
    row_s: dict[str, float] = {}  # seconds of the last row of each size: what the next one may take
    name = "cpu_native-cpu-time.json" if args.cpu_time else "cpu_native.json"

    def results(load_after: tuple[float, ...] | None = None) -> dict:
        return {"machine": machine(), "cpu_model": cpu_model(), "goals": {"cpu_over_plain": GOAL_NATIVE, "sim_over_cpu": GOAL_SIM},
                "measure": "cpu time per launch" if args.cpu_time else "run service median (wall clock)",
                "artifacts": args.from_artifacts and str(Path(args.from_artifacts).resolve()),
                "cores": cores, "rounds": args.rounds,
                "load_average": {"before": load_before, "after": load_after}, "rows": rows}  # fmt: skip

    with tempfile.TemporaryDirectory(prefix="cpu-native-") as tmp:
        service = RunService()
        plan = []  # (example, kernel, its variants' targets, the plain check, the artifact records)
        try:
            for example in examples:
                if exported:
                    targets = export_layout(Path(args.from_artifacts), example)
                else:
                    targets = built_targets(example, Path(tmp))
                for kernel in kernels_of(targets["plain"].project):
                    artifacts: dict = {}
                    check = check_plain(service, example, kernel, targets["cpu"], targets["plain"], artifacts)
                    if args.cpu_time and "cpu-sim" in variants:
                        sim = targets["cpu-sim"]
                        report = service.run(sim.project, kernel=kernel, backends=["cpu-sim"], sizes=CHECK[example],
                                             keep_outputs=False, artifacts_dir=sim.artifacts)  # fmt: skip
                        artifacts["cpu-sim"] = report.results[0].provenance["artifact"]
                    print(f"{example}/{kernel}: plain version {'matches' if check['ok'] else 'DIFFERS'}: {check}",
                          file=sys.stderr)  # fmt: skip
                    if args.export:
                        index["examples"].setdefault(example, {})[kernel] = check
                    if args.check_only or args.export:
                        rows.append({"example": example, "kernel": kernel, "plain_check": check})
                    plan.append((example, kernel, targets, check, artifacts))
                if args.export:
                    into = export_layout(Path(args.export), example)
                    for variant in dict.fromkeys(["cpu", "plain", *variants]):
                        export_variant(example, variant, targets[variant], into[variant])
        finally:
            service.close()
        # Size by size (every example's default size first): a --budget that runs out drops large sizes.
        for size_name in [] if args.check_only or args.export else args.sizes.split(","):
            for example, kernel, targets, check, artifacts in plan:
                sizes = LARGE[example] if size_name == "large" else {}
                expect = row_s.get(size_name, max(row_s.values(), default=0.0))
                if args.budget and time.monotonic() - started + expect > args.budget:
                    rows.append({"example": example, "kernel": kernel, "size": size_name, "sizes": sizes,
                                 "plain_check": check, "skipped": f"out of budget ({args.budget:.0f} s)"})  # fmt: skip
                    continue
                row_started = time.monotonic()
                runs: dict[str, list] = {v: [] for v in variants}
                for rnd in range(args.rounds):
                    order = variants[rnd % len(variants) :] + variants[: rnd % len(variants)]
                    for variant in order:
                        if args.cpu_time:
                            runs[variant].append(
                                measure_cpu_time(targets[variant].project, kernel, artifacts[variant], sizes)
                            )
                        else:
                            runs[variant].append(measure(targets[variant], kernel, sizes))
                row_s[size_name] = time.monotonic() - row_started
                med = {v: median([r["median_s"] for r in runs[v]]) for v in variants}
                row = {"example": example, "kernel": kernel, "size": size_name, "sizes": sizes,
                       "plain_check": check, "median_s": med, "runs": runs}  # fmt: skip
                if exported:
                    row["plain_check_at_export"] = exported["examples"].get(example, {}).get(kernel)
                cpu, plain, threads, sim = (med.get(v) for v in VARIANTS)
                row["cpu_over_plain"] = cpu / plain if cpu and plain else None
                row["cpu_over_plain_threads"] = cpu / threads if cpu and threads else None
                row["sim_over_cpu"] = sim / cpu if sim and cpu else None
                rows.append(row)
                print(line(row), file=sys.stderr)
                write_json(args.out, name, results())  # what is done survives a cut-off run
    if args.export:
        index.update(machine=machine(), created=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                     variants=list(dict.fromkeys(["cpu", "plain", *variants])))  # fmt: skip
        path = Path(args.export) / INDEX
        path.write_text(json.dumps(index, indent=2) + "\n")
        bad = [f"{ex}/{k}" for ex, ks in index["examples"].items() for k, c in ks.items() if not c["ok"]]
        print(f"exported {len(index['examples'])} examples ({', '.join(index['variants'])}) to {args.export}"
              + (f"; plain versions that DIFFER: {', '.join(bad)}" if bad else ""))  # fmt: skip
        return 1 if bad else 0
    data = results(os.getloadavg())
    path = write_json(args.out, name, data)
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    print(HEADER)
    for row in rows:
        if "median_s" in row:
            print(line(row))
        elif "skipped" in row:
            print(f"{row['example']}/{row['kernel']} {row['size']}: skipped, {row['skipped']}")
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
