"""The kernel API crate (`resources/crates/gpu_kernel`) of this tree against that of another revision:
what a kernel crate's cpu build costs after an edit, and how fast each example's cpu kernel runs.

A change to the host executor moves work between the kernel crate's build (the edit → result
loop waits for it) and the kernel's run (what the cpu backend times). This measures both, for the
crate as it is here ("head") and as it was at `--base` ("base"), each example a copy linking one
of the two:

- build: saxpy's kernel line edited (a different factor each time, so nothing is served from a
  cache), then the cpu adapter's build (`CpuAdapter.build`, in this process as the build service
  runs it: after the first, a replay of cargo's rustc call, `workbench.build.rustc_replay`), the
  crate's dependencies already built; the two crates alternate, `--build-reps` times each.
  `--base-build` gives the base another build: `cargo` the adapter's with replays off (its cargo
  command every time), `previous` the command the adapter ran before it built a cdylib alone
  (`cargo build` of both crate types, the profile's codegen units, the system's linker): a
  build A/B when `--base` is the same crate (HEAD). Wall clock and the CPU time of the build
  (this process's and its children's);
- run: `workbench run --backend cpu` of each example's prebuilt artifacts (built by this tree's
  workbench, whatever `--base-build` says), the two crates alternating in separate processes,
  `--reps` times each; the median of each crate's medians and their ratio (head / base). Between processes this machine varies by several per cent: read a
  ratio beside its spread.

    .venv/bin/python benchmarks/kernel_crate_ab.py --base REV [--examples saxpy,reduction]
                                                   [--reps 3] [--build-reps 7] [--out PATH]
                                                   [--base-build adapter|cargo|previous]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.bench_output import OUT_HELP, machine, write_json  # noqa: E402

CRATE = "resources/crates/gpu_kernel"
EXAMPLES = REPO / "resources" / "examples"
#: The saxpy line the build measure edits (the kernel body: the edit a user makes).
KERNEL_LINE = "y[i] = a * x[i] + y[i];"


def crate_at(rev: str, into: Path) -> Path:
    """The kernel API crate as it was at `rev` (git archive), under `into`."""
    tar = subprocess.run(["git", "-C", str(REPO), "archive", rev, CRATE], capture_output=True, check=True)
    with tarfile.open(fileobj=io.BytesIO(tar.stdout)) as archive:
        archive.extractall(into, filter="data")
    return into / CRATE


def project_copy(example: str, crate: Path, into: Path) -> Path:
    """`example` copied under `into`, its `gpu_kernel` path dependency pointing at `crate`."""
    copy = into / example
    shutil.copytree(EXAMPLES / example, copy, symlinks=True)
    link = copy / "gpu_kernel"
    link.unlink()
    link.symlink_to(crate.resolve(), target_is_directory=True)
    if "macro_rules! sim_inline" not in (crate / "src" / "host" / "mod.rs").read_text():
        # A crate from before `sim_inline!`: the entries pass the closure itself, as they did
        # then (the macro changes only the sim build; the cpu build's code is the same).
        lib = copy / "src" / "lib.rs"
        lib.write_text(SIM_INLINE.sub(r"\2.run(\1);", lib.read_text()))
    return copy


#: An entry's `let body = gpu_kernel::sim_inline!(CLOSURE); K.run(body);`.
SIM_INLINE = re.compile(r"let body =\s*gpu_kernel::sim_inline!\((.*?)\);\s*(\w+)\.run\(body\);", re.S)


def workbench(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "workbench", *args], capture_output=True, text=True, env=env, cwd=REPO
    )


#: The cpu adapter's cargo command before it built the cdylib alone (`--base-build previous`).
PREVIOUS_BUILD = ["build", "-Zchecksum-freshness", "--release", "--lib", "--offline", "--message-format=json"]


def build_command(kind: str, target_dir: Path) -> list[str]:
    """The cargo command of a cpu build of saxpy: the adapter's (`adapter`, `cargo`) or `PREVIOUS_BUILD`."""
    from workbench.build.adapters.cpu import CpuAdapter
    from workbench.build.adapters.cpu import build_command as adapter_command
    from workbench.build.adapters.host_rust import cargo

    if kind == "previous":
        return [cargo() or "cargo", *PREVIOUS_BUILD, "--target-dir", str(target_dir)]
    flags = CpuAdapter().flags(None, "host", {}, None)
    return adapter_command(cargo() or "cargo", flags, "host", target_dir)


def build_once(kind: str, project: Path, target_dir: Path, scratch: Path) -> str:
    """One cpu build of saxpy at `project`: `previous` its cargo command run here, `adapter` and
    `cargo` the cpu adapter's build (`cargo`: with WB_RUSTC_REPLAY=off). Returns what ran:
    "cargo" or "rustc" (a replay)."""
    from workbench.build.adapters.base import BuildRequest
    from workbench.build.adapters.cpu import CpuAdapter
    from workbench.build.adapters.host_rust import rustc
    from workbench.build.toolchains import detect
    from workbench.project import Project

    if kind == "previous":
        env = {**os.environ, "RUSTC": rustc() or "rustc", "RUSTC_BOOTSTRAP": "1"}
        subprocess.run(build_command(kind, target_dir), cwd=project, env=env, check=True, capture_output=True)
        return "cargo"
    adapter = CpuAdapter()
    out = scratch / f"out-{time.monotonic_ns()}"
    out.mkdir(parents=True)
    # The toolchain as the build service has it: detected once a process (`toolchains.detect`).
    req = BuildRequest(Project.open(project), "cpu", detect("cpu"), "host",
                       adapter.flags(None, "host", {}, None), {}, out, target_dir)  # fmt: skip
    replay = os.environ.get("WB_RUSTC_REPLAY")
    os.environ["WB_RUSTC_REPLAY"] = "off" if kind == "cargo" else "on"
    try:
        built = adapter.build(req)
    finally:
        os.environ.pop("WB_RUSTC_REPLAY")
        if replay is not None:
            os.environ["WB_RUSTC_REPLAY"] = replay
        shutil.rmtree(out, ignore_errors=True)
    if not built.ok:
        raise SystemExit(f"the {kind} build of {project} failed:\n" + "\n".join(req.log[-30:]))
    ran = next(line for line in req.log if line.startswith("$ "))
    return "cargo" if "--message-format=json" in ran else "rustc"


def cargo_build_times(
    projects: dict[str, Path], reps: int, target: Path, kinds: dict[str, str]
) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, list[str]]]:
    """Seconds of a cpu build (`build_once` of `kinds[name]`) after an edit of saxpy's kernel
    line, the crates alternating; each its own target folder, warmed by one build first: (wall
    clock, CPU time of this process and the processes it ran, what each build ran). On the shared VM the CPU time
    moves less with the load than the wall clock does."""
    times: dict[str, list[float]] = {name: [] for name in projects}
    cpu: dict[str, list[float]] = {name: [] for name in projects}
    ran: dict[str, list[str]] = {name: [] for name in projects}
    sources = {name: (p / "src" / "lib.rs").read_text() for name, p in projects.items()}

    def used() -> float:
        me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime

    for rep in range(reps + 1):
        for name, project in projects.items():
            edited = sources[name].replace(KERNEL_LINE, f"y[i] = a * x[i] + y[i] * {rep + 1}.0{rep};")
            if edited == sources[name]:
                raise SystemExit(f"saxpy's kernel line ({KERNEL_LINE!r}) is not in its lib.rs")
            (project / "src" / "lib.rs").write_text(edited)
            before = used()
            start = time.perf_counter()
            how = build_once(kinds[name], project, target / name, target / "scratch")
            wall = time.perf_counter() - start
            if rep:  # the first is the warm-up: the dependencies' own build
                ran[name].append(how)
                times[name].append(wall)
                cpu[name].append(used() - before)
    for name, project in projects.items():
        (project / "src" / "lib.rs").write_text(sources[name])
    return times, cpu, ran


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", required=True, help="the revision to compare with (e.g. HEAD~1)")
    parser.add_argument(
        "--examples", default=",".join(sorted(p.parent.name for p in EXAMPLES.glob("*/workbench.toml")))
    )
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--build-reps", type=int, default=7)
    parser.add_argument("--base-build", choices=("adapter", "cargo", "previous"), default="adapter",
                        help="the base's build: the cpu adapter's (default), the adapter's without "
                        "replays (cargo every time), or the command before it built a cdylib alone")  # fmt: skip
    parser.add_argument("--out", help=OUT_HELP)
    args = parser.parse_args(argv)
    examples = [e for e in args.examples.split(",") if e]
    load_before = os.getloadavg()  # the 2-core VM is shared: its load says how far to trust times

    with tempfile.TemporaryDirectory(prefix="wb-crate-ab-") as tmp:
        tmp = Path(tmp)
        crates = {"base": crate_at(args.base, tmp / "base-crate"), "head": tmp / "head-crate" / "gpu_kernel"}
        shutil.copytree(REPO / CRATE, crates["head"])
        env = {**os.environ, "WB_CONFIG_DIR": str(tmp / "config"), "WB_CACHE_DIR": str(tmp / "cache")}
        copies = {
            (ex, name): project_copy(ex, crate, tmp / name)
            for ex in examples
            for name, crate in crates.items()
        }

        build = build_cpu = build_how = None
        if "saxpy" in examples:
            build_copies = {
                name: project_copy("saxpy", crate, tmp / f"build-{name}") for name, crate in crates.items()
            }
            kinds = {"base": args.base_build, "head": "adapter"}
            build, build_cpu, build_how = cargo_build_times(
                build_copies, args.build_reps, tmp / "targets", kinds
            )

        runs: dict[str, dict[str, list[float]]] = {}
        for (ex, name), project in copies.items():
            workbench("trust", str(project), env=env)
            built = workbench(
                "build", str(project), "--backend", "cpu", "--export", str(project / "art"), env=env
            )
            if built.returncode:
                raise SystemExit(f"{ex} ({name}) did not build:\n{built.stdout}{built.stderr}")
        for _ in range(args.reps):
            for ex in examples:
                for name in crates:
                    project = copies[(ex, name)]
                    ran = workbench("run", str(project), "--backend", "cpu", "--artifacts", str(project / "art"),
                                    "--no-record", "--json", env=env)  # fmt: skip
                    report = json.loads(ran.stdout)
                    cpu = next(r for r in report["results"] if r["backend"] == "cpu")
                    if cpu["status"] != "ok" or not cpu.get("timing"):
                        raise SystemExit(f"{ex} ({name}) did not run: {cpu.get('status')} {cpu.get('error')}")
                    runs.setdefault(ex, {}).setdefault(name, []).append(cpu["timing"]["median_s"])

    result = {
        "benchmark": "kernel_crate_ab",
        "base": subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", args.base], capture_output=True, text=True
        ).stdout.strip(),  # fmt: skip
        "head": "working tree",
        "build_commands": {"base": args.base_build, "head": "adapter"},
        "build_ran": build_how and {name: dict(Counter(r)) for name, r in build_how.items()},
        "build_s": build and {name: [round(t, 4) for t in ts] for name, ts in build.items()},
        "build_median_s": build and {name: round(statistics.median(ts), 4) for name, ts in build.items()},
        "build_cpu_s": build_cpu and {name: [round(t, 4) for t in ts] for name, ts in build_cpu.items()},
        "build_cpu_median_s": build_cpu
        and {name: round(statistics.median(ts), 4) for name, ts in build_cpu.items()},
        "load_avg": [round(x, 2) for x in load_before + os.getloadavg()],
        "run_median_s": {
            ex: {name: [round(t, 6) for t in ts] for name, ts in by.items()} for ex, by in runs.items()
        },
        "run_ratio": {
            ex: round(statistics.median(by["head"]) / statistics.median(by["base"]), 3)
            for ex, by in runs.items()
        },
        "machine": machine(),
    }
    path = write_json(args.out, "kernel_crate_ab.json", result)
    print(table(result))
    print(f"wrote {path}")
    return 0


def table(result: dict) -> str:
    lines = [f"gpu_kernel: this tree (head) against {result['base'][:10]} (base)", ""]
    if result["build_median_s"]:
        b = result["build_median_s"]
        cmds = result.get("build_commands") or {"base": "adapter", "head": "adapter"}
        lines.append(f"saxpy cpu build after a kernel edit: base {b['base']:.3f} s ({cmds['base']} command), "
                     f"head {b['head']:.3f} s ({cmds['head']} command)")  # fmt: skip
        if c := result.get("build_cpu_median_s"):
            lines.append(
                f"  CPU time of the build and what it ran: base {c['base']:.3f} s, head {c['head']:.3f} s"
            )
        lines.append("")
    lines.append(f"{'example':<12} {'base ms (each run)':<28} {'head ms (each run)':<28} head/base")
    for ex, by in result["run_median_s"].items():
        cells = [", ".join(f"{t * 1e3:.2f}" for t in by[name]) for name in ("base", "head")]
        lines.append(f"{ex:<12} {cells[0]:<28} {cells[1]:<28} {result['run_ratio'][ex]:.3f}")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
