"""The H200 evidence run (issue 13), step by step, inside a wall-time budget; and the assembly of its
outputs into `benchmarks/results/h200-<date>.json`.

On the GPU host (after `source .gpu-bundle/gpu-host-setup.sh .gpu-bundle`), via evidence.sh:

    python3 benchmarks/gpu_host/evidence.py run --out $OUT [--steps a,b,...] [--budget 480]

Steps, in order (each writes `OUT/steps/<step>.json` and `OUT/logs/<step>.log` as soon as it ends,
so a run cut short keeps what it finished; a step that would not fit the remaining budget is
skipped and says so):

- `device`: nvidia-smi, `workbench doctor --json`, `workbench ceilings --json` where that
  sub-command exists (else null);
- `examples`: every example at its large size (saxpy, reduction, bitonic n = 2^28, matmul 4096³) on
  cuda-c, nvptx and wgsl through `workbench run --json --l2 both` (warm median, then cold with the
  L2 flushed before every sample); cuda-c runs first and is the reference the others are verified
  against (a CPU reference at these sizes takes minutes);
- `gpu-tests`: `pytest tests/gpu -m gpu` (the log is the evidence);
- `rust-gpu`: the real rust-gpu SPIR-V modules (prepared by prepare.sh) on the Vulkan adapter,
  verified against their cpu cdylib;
- `harness`: benchmarks/harness_overhead.py (workbench / independent loop, ncu and nsys beside);
- `ncu`: Nsight Compute's kernel duration of nvptx and cuda-c at the large sizes (defaults: base
  clocks, caches flushed; and with clock and cache control off), beside the cold and warm medians;
- `sass`: ptxas + cuobjdump of every PTX artifact: registers and an instruction histogram;
- `wgsl-variants`: benchmarks/wgsl_variants.py, matmul, reduction, softmax and scan WGSL variants
  on the Vulkan adapter (what naga's bounds clamps and loop counters cost);
- `scaling` (issue 15): benchmarks/run_scaling.py warm and cold, and `workbench run` of saxpy at
  2^28 timed as a user starts it (wall, CPU time, peak memory);
- `cold`: every example again with `--l2 cold` alone (only when asked for: `examples` has both);
- `cpu-native` (issue 37, only when asked for: `STEPS=cpu-native`): benchmarks/cpu_native.py
  `--from-artifacts .gpu-artifacts/cpu_native` (exported by prepare.sh), the cpu backend against
  plain sequential and threaded Rust in wall time, pinned to 2 free cores (`--cores 2`; the cores
  of each run: `EVIDENCE_CPU_NATIVE_CORES=2,all`, `all` unpinned; more arguments:
  `EVIDENCE_CPU_NATIVE_ARGS="--sizes default --rounds 5"`). Every example's default size first,
  then the large ones, until its share of the budget is spent (the rest listed as skipped).

Then, on either machine:

    python benchmarks/gpu_host/evidence.py assemble OUT [OUT2 ...] --json benchmarks/results/h200-<date>.json

merges the step files of one or more runs (a later run's step replaces an earlier one's) into
`{"device", "device_ceilings", "results": [...], ...}`. `EVIDENCE_SMALL=1` shrinks every size (a
local dry run on llvmpipe: `EVIDENCE_BACKENDS=wgsl WGPU_DEVICE=llvmpipe`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
#: The examples the ncu and SASS steps profile (the first four; each capture takes a while).
PROFILED = ("saxpy", "reduction", "bitonic", "matmul")
#: Every example the examples step runs (EVIDENCE_EXAMPLES=a,b picks some).
EXAMPLES = tuple(filter(None, os.environ.get("EVIDENCE_EXAMPLES", "").split(","))) or PROFILED + (
    "histogram",
    "scan",
    "transpose",
    "stencil2d",
    "softmax",
    "warp_reduce",
)
LARGE = {
    "saxpy": {"n": 1 << 28},
    "reduction": {"n": 1 << 28},
    "bitonic": {"n": 1 << 28},
    "matmul": {"m": 4096, "n": 4096, "k": 4096},
    "histogram": {"n": 1 << 28},
    # scan_add sums the tile totals before its tile: O(tiles^2) reads, so 2^22 (8192 tiles), not 2^28
    "scan": {"n": 1 << 22},
    "transpose": {"m": 8192, "n": 8192},
    "stencil2d": {"width": 8192, "height": 8192},
    "softmax": {"rows": 65536, "cols": 1000},
    "warp_reduce": {"n": 1 << 28},
}
SMALL = {
    "saxpy": {"n": 1 << 18},
    "reduction": {"n": 1 << 18},
    "bitonic": {"n": 1 << 18},
    "matmul": {"m": 128, "n": 128, "k": 128},
    "histogram": {"n": 1 << 18},
    "scan": {"n": 1 << 18},
    "transpose": {"m": 256, "n": 384},
    "stencil2d": {"width": 512, "height": 256},
    "softmax": {"rows": 256, "cols": 1000},
    "warp_reduce": {"n": 1 << 18},
}
STEPS = (
    "device",
    "examples",
    "gpu-tests",
    "rust-gpu",
    "harness",
    "ncu",
    "sass",
    "scaling",
    "wgsl-variants",
    "cold",
    "cpu-native",
)
#: Steps that run only when named (`--steps`): the default list stays within its budget.
OPT_IN = ("cpu-native",)
#: Rough seconds each step needs on an H200 (a step starts only if this much budget is left).
NEEDS = {"device": 15, "examples": 180, "gpu-tests": 40, "rust-gpu": 30, "harness": 100, "cold": 120,
         "ncu": 60, "sass": 10, "scaling": 120, "wgsl-variants": 180, "cpu-native": 240}  # fmt: skip
#: saxpy at 2^28 through the command line, as a user starts it (issue 15's 8 s goal): the three GPU
#: backends, then with the cpu backend timed too.
CLI_RUNS = {"gpu3": "nvptx,cuda-c,wgsl", "all4": "cpu,nvptx,cuda-c,wgsl"}


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def sh(cmd: list[str], log: Path, timeout: float) -> tuple[int, str]:
    """Run `cmd` in its own process group with a deadline; stdout returned, everything logged."""
    log.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with log.open("a") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        out.flush()
        proc = subprocess.Popen(
            cmd, cwd=REPO, env=_env(), stdout=subprocess.PIPE, stderr=out, text=True, start_new_session=True
        )
        try:
            stdout, _ = proc.communicate(timeout=max(timeout, 1))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            stdout, _ = proc.communicate()
            out.write(f"[timed out after {timeout:.0f} s]\n")
            return 124, stdout or ""
        out.write(stdout[-20000:] if not stdout.lstrip().startswith("{") else "[json on stdout]\n")
        out.write(f"[exit {proc.returncode} after {time.monotonic() - started:.1f} s]\n")
    return proc.returncode, stdout


def _json_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


class Run:
    def __init__(self, args: argparse.Namespace):
        self.out = Path(args.out).resolve()
        self.artifacts = Path(args.artifacts).resolve()
        self.deadline = time.monotonic() + args.budget
        self.small = bool(os.environ.get("EVIDENCE_SMALL"))
        self.sizes = SMALL if self.small else LARGE
        self.backends = os.environ.get("EVIDENCE_BACKENDS", "cuda-c,nvptx,wgsl")
        self.wgpu_device = os.environ.get("WGPU_DEVICE", "0")
        self.python = sys.executable

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def devices(self) -> list[str]:
        out = []
        if any(b in self.backends for b in ("cuda-c", "nvptx", "rust-cuda")):
            out += ["--device", "cuda:0"]
        if "wgsl" in self.backends or "rust-gpu" in self.backends:
            out += ["--device", f"wgpu:{self.wgpu_device}"]
        return out

    def save(self, step: str, data: dict[str, Any]) -> None:
        path = self.out / "steps" / f"{step}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=1) + "\n")

    def workbench_run(self, project: Path, artifacts: Path, sizes: dict, log: Path, extra: list[str],
                      timeout: float, backends: str | None = None) -> dict[str, Any]:  # fmt: skip
        size_args = [a for k, v in sizes.items() for a in ("--size", f"{k}={v}")]
        cmd = [self.python, "-m", "workbench", "run", str(project), "--backend", backends or self.backends,
               "--artifacts", str(artifacts), "--json", "--timeout", "60", "--no-record", *size_args, *extra]  # fmt: skip
        started = time.monotonic()
        code, stdout = sh(cmd, log, timeout)
        report = _json_or_none(stdout)
        return {"exit": code, "wall_s": round(time.monotonic() - started, 1), "report": report}

    # ------------------------------------------------------------------------------ steps

    def step_device(self) -> dict[str, Any]:
        log = self.out / "logs" / "device.log"
        data: dict[str, Any] = {}
        if shutil.which("nvidia-smi"):
            query = "name,driver_version,memory.total,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.limit"
            code, text = sh(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"], log, 20)
            if code == 0 and text.strip():
                keys = query.split(",")
                data["nvidia_smi"] = dict(
                    zip(keys, [v.strip() for v in text.splitlines()[0].split(",")], strict=False)
                )
            code, text = sh(["nvidia-smi", "-q", "-d", "CLOCK,PERFORMANCE"], log, 20)
            (self.out / "nvidia-smi-clocks.txt").write_text(text)
        code, text = sh([self.python, "-m", "workbench", "doctor", "--json"], log, 60)
        data["doctor"] = _json_or_none(text)
        code, _ = sh([self.python, "-m", "workbench", "ceilings", "--help"], log, 20)
        if code == 0:
            # Every device's streams (copy, read, write, update: `ceilings_kernels.STREAMS`) and FMA;
            # a cut-off run loses them all (and with them every result's roof), so room to spare.
            code, text = sh(
                [self.python, "-m", "workbench", "ceilings", "--json"], log, max(30, min(150, self.left()))
            )
            data["ceilings"] = _json_or_none(text)
        else:
            data["ceilings"] = None
            data["ceilings_note"] = "this checkout has no `workbench ceilings` sub-command"
        return data

    def _examples(self, step: str, extra: list[str]) -> dict[str, Any]:
        runs = {}
        for example in EXAMPLES:
            if self.left() < 20:
                runs[example] = {"skipped": "out of budget"}
                continue
            runs[example] = self.workbench_run(
                REPO / "resources" / "examples" / example, self.artifacts / example, self.sizes[example],
                self.out / "logs" / f"{step}-{example}.log",
                # The first backend (cuda-c) is the reference, chosen explicitly: the manifests'
                # cpu reference is not run at these sizes and the reference never changes by itself.
                self.devices() + ["--reference", self.backends.split(",")[0]] + extra, min(240, self.left()),
            )  # fmt: skip
            self.save(step, {"sizes": self.sizes, "runs": runs})  # partial results as it goes
            _print_report(example, runs[example])
        return {"sizes": self.sizes, "runs": runs}

    def step_examples(self) -> dict[str, Any]:
        # --l2 both: each backend's warm median, then a cold one (L2 flushed before every sample),
        # from the same verified run: no second pass over 2^28-element inputs.
        return self._examples("examples", ["--l2", "both"])

    def step_cold(self) -> dict[str, Any]:
        return self._examples("cold", ["--l2", "cold"])

    def step_gpu_tests(self) -> dict[str, Any]:
        log = self.out / "gpu-tests.log"
        code, text = sh([self.python, "-m", "pytest", "tests/gpu", "-m", "gpu", "-v", "-p", "no:cacheprovider",
                         "-o", "addopts=-ra --import-mode=importlib"], log, min(180, self.left()))  # fmt: skip
        summary = [
            line for line in text.splitlines() if re.search(r"\d+ (passed|failed|skipped|error)", line)
        ]
        return {"exit": code, "summary": summary[-1] if summary else None, "log": log.name}

    def step_rust_gpu(self) -> dict[str, Any]:
        root = self.artifacts / "rust-gpu"
        runs = {}
        for name in ("headless", "particles"):
            if not (root / name / "project").is_dir():
                runs[name] = {"skipped": f"{root / name} is absent (run prepare.sh)"}
                continue
            runs[name] = self.workbench_run(
                root / name / "project", root / name / "artifacts", {},
                self.out / "logs" / f"rust-gpu-{name}.log", ["--device", "cpu", "--device", f"wgpu:{self.wgpu_device}"],
                min(120, self.left()), backends="cpu,rust-gpu",
            )  # fmt: skip
            _print_report(name, runs[name])
        return {"runs": runs}

    def step_harness(self) -> dict[str, Any]:
        out = self.out / "harness_overhead.json"
        n = 1 << 18 if self.small else 1 << 24
        code, _ = sh([self.python, "benchmarks/harness_overhead.py", "--project", "resources/examples/saxpy",
                      "--backend", self.backends, "--artifacts", str(self.artifacts / "saxpy"),
                      "--size", f"n={n}", "--rounds", "7", "--min-n", "50", "--min-time", "0.3",
                      "--json", str(out)], self.out / "logs" / "harness.log", min(240, self.left()))  # fmt: skip
        return {"exit": code, "result": _json_or_none(out.read_text()) if out.is_file() else None}

    def step_scaling(self) -> dict[str, Any]:
        """Issue 15 on the GPU host: benchmarks/run_scaling.py warm (workers up, 2^20..2^28, four
        backends), cold at 2^28 (workers started inside the run, per-backend phases), and the
        command line itself at 2^28 with its wall, CPU time and peak memory (getrusage)."""
        saxpy = str(self.artifacts / "saxpy")
        log = self.out / "logs" / "scaling.log"
        data: dict[str, Any] = {}
        top = 20 if self.small else 28  # a local dry run stays small
        exps = ["--max-exp", str(top), "--min-exp", str(top - 8 if not self.small else top)]
        runs = {
            "warm4": ["--gpu-host", *exps],
            "cold3": ["--gpu-host", "--cold", "--min-exp", str(top), "--max-exp", str(top),
                      "--backends", CLI_RUNS["gpu3"]],
            "cold4": ["--gpu-host", "--cold", "--min-exp", str(top), "--max-exp", str(top)],
        }  # fmt: skip
        for name, extra in runs.items():
            if self.left() < 40:
                data[name] = {"skipped": "out of budget"}
                continue
            out = self.out / f"run_scaling-{name}.json"
            code, _ = sh([self.python, "benchmarks/run_scaling.py", "--artifacts", saxpy, "--out", str(out), *extra],
                         log, min(200, self.left()))  # fmt: skip
            data[name] = {"exit": code, "result": _json_or_none(out.read_text()) if out.is_file() else None}
            self.save("scaling", data)
        for name, backends in CLI_RUNS.items():
            if self.left() < 40:
                data[f"cli-{name}"] = {"skipped": "out of budget"}
                continue
            cmd = [self.python, "-m", "workbench", "run", "resources/examples/saxpy", "--artifacts", saxpy,
                   "--backend", backends, "--size", f"n={1 << top}", "--no-record"]  # fmt: skip
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.monotonic()
            code, text = sh(cmd, log, min(120, self.left()))
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            data[f"cli-{name}"] = {
                "command": " ".join(cmd), "exit": code, "wall_s": round(time.monotonic() - started, 2),
                "user_s": round(after.ru_utime - before.ru_utime, 2),
                "sys_s": round(after.ru_stime - before.ru_stime, 2),
                # ru_maxrss of children: the largest one process reached (KiB), shared pages included
                "max_rss_mib_one_process": round(after.ru_maxrss / 1024), "output": text[-3000:],
            }  # fmt: skip
            self.save("scaling", data)
        return data

    def step_wgsl_variants(self) -> dict[str, Any]:
        """benchmarks/wgsl_variants.py (issue 13: which of naga's additions costs what): matmul
        2048³, reduction 2^26, softmax 65536 rows and scan 2^22 (issue 26), each variant verified against cuda-c and timed on the Vulkan
        adapter; artifacts from `wgsl_variants.py --prepare .gpu-artifacts/wgsl-variants`."""
        folder = self.artifacts / "wgsl-variants"
        if not folder.is_dir():
            return {"skipped": f"{folder} is absent (run prepare.sh)"}
        small = {"matmul": "128", "reduction": str(1 << 16), "softmax": "64", "scan": "70000"}
        large = {"matmul": "2048", "reduction": str(1 << 26), "softmax": str(LARGE["softmax"]["rows"]),
                 "scan": str(LARGE["scan"]["n"])}  # fmt: skip
        data: dict[str, Any] = {}
        for example in ("matmul", "reduction", "softmax", "scan"):
            if self.left() < 40:
                data[example] = {"skipped": "out of budget"}
                continue
            out = self.out / f"wgsl_variants-{example}.json"
            size = (small if self.small else large)[example]
            reference = self.backends.split(",")[0]
            code, _ = sh([self.python, "benchmarks/wgsl_variants.py", "--artifacts", str(folder), "--example", example,
                          "--size", size, "--device", f"wgpu:{self.wgpu_device}", "--reference-backend", reference,
                          "--out", str(out)], self.out / "logs" / "wgsl-variants.log", min(150, self.left()))  # fmt: skip
            data[example] = {
                "exit": code,
                "result": _json_or_none(out.read_text()) if out.is_file() else None,
            }
            self.save("wgsl-variants", data)
        return data

    def step_cpu_native(self) -> dict[str, Any]:
        """Issue 37 item 2 where cores are free: benchmarks/cpu_native.py from the artifacts of
        `cpu_native.py --export` (this host has no cargo), each core setting of
        EVIDENCE_CPU_NATIVE_CORES (default 2) with an equal share of the budget; cpu_native stops
        starting rows when its share runs out, so each writes its JSON."""
        folder = self.artifacts / "cpu_native"
        if not (folder / "cpu_native.json").is_file():
            return {"skipped": f"{folder}/cpu_native.json is absent (run prepare.sh)"}
        settings = [
            c.strip() for c in os.environ.get("EVIDENCE_CPU_NATIVE_CORES", "2").split(",") if c.strip()
        ]
        small = ["--sizes", "default", "--rounds", "1"] if self.small else []
        extra = os.environ.get("EVIDENCE_CPU_NATIVE_ARGS", "").split()  # e.g. "--sizes default --rounds 5"
        log = self.out / "logs" / "cpu-native.log"
        data: dict[str, Any] = {}
        for i, cores in enumerate(settings):
            share = self.left() / (len(settings) - i)
            if share < 40:
                data[f"cores-{cores}"] = {"skipped": f"out of budget ({share:.0f} s)"}
                continue
            out = self.out / f"cpu_native-cores-{cores}.json"
            pin = [] if cores == "all" else ["--cores", cores]
            code, _ = sh([self.python, "benchmarks/cpu_native.py", "--from-artifacts", str(folder), *pin, *small, *extra,
                          "--budget", str(int(share - 30)), "--out", str(out)],
                         log, min(share + 60, self.left()))  # fmt: skip
            result = _json_or_none(out.read_text()) if out.is_file() else None
            data[f"cores-{cores}"] = {"exit": code, "result": result}
            if code != 0:  # what went wrong (a missing artifact is named there), beside the step
                data[f"cores-{cores}"]["log_tail"] = log.read_text()[-2000:]
            self.save("cpu-native", data)
        return data

    def step_ncu(self) -> dict[str, Any]:
        if not shutil.which("ncu"):
            return {"skipped": "ncu is not on PATH"}
        sys.path.insert(0, str(REPO / "benchmarks"))
        sys.path.insert(0, str(REPO))
        from harness_overhead import launch_description, nsight

        from workbench.project import Project

        out: dict[str, Any] = {}
        for example in PROFILED:
            kernel = Project.open(REPO / "resources" / "examples" / example).manifest.kernel()
            for backend in ("cuda-c", "nvptx"):
                if self.left() < 20 or backend not in self.backends:
                    continue
                folder = self.artifacts / example / backend
                entry = json.loads((folder / "build.json").read_text())["kernels"][kernel.name]["entry"]
                launch = self.out / "launch" / f"{example}-{backend}.json"
                launch.parent.mkdir(parents=True, exist_ok=True)
                description = launch_description(
                    kernel, backend, folder, self.sizes[example], {"index": 0}, 0
                )
                launch.write_text(json.dumps(description))
                out[f"{example}/{backend}"] = nsight(launch, entry, timeout=min(90, self.left()))
                self.save("ncu", out)
        return out

    def step_sass(self) -> dict[str, Any]:
        cuda_bin = Path("/usr/local/cuda/bin")
        ptxas = shutil.which("ptxas") or str(cuda_bin / "ptxas")
        cuobjdump = shutil.which("cuobjdump") or str(cuda_bin / "cuobjdump")
        if not (Path(ptxas).exists() and Path(cuobjdump).exists()):
            return {"skipped": "ptxas or cuobjdump is missing"}
        out: dict[str, Any] = {}
        log = self.out / "logs" / "sass.log"
        for example in PROFILED:
            for backend in ("cuda-c", "nvptx"):
                folder = self.artifacts / example / backend
                if not (folder / "build.json").is_file():
                    continue
                build = json.loads((folder / "build.json").read_text())
                for name, entry in build["kernels"].items():
                    cubin = self.out / "sass" / f"{example}-{backend}.cubin"
                    cubin.parent.mkdir(parents=True, exist_ok=True)
                    sh(
                        [ptxas, "-arch=sm_90", "-v", str(folder / entry["artifact"]), "-o", str(cubin)],
                        log,
                        60,
                    )
                    code, text = sh([cuobjdump, "-sass", str(cubin)], log, 60)
                    (cubin.with_suffix(".sass")).write_text(text)
                    cubin.unlink(missing_ok=True)
                    out[f"{example}/{backend}"] = {
                        "registers": (build.get("resources") or {}).get(name, {}).get("registers"),
                        "histogram": sass_histogram(text),
                    }
        return out

    def run(self, steps: list[str]) -> int:
        self.out.mkdir(parents=True, exist_ok=True)
        for step in steps:
            left = self.left()
            if left < NEEDS[step] * (0.2 if self.small else 1.0):
                print(f"[{step}] skipped: {left:.0f} s left, it needs about {NEEDS[step]} s", flush=True)
                self.save(step, {"skipped": f"out of budget ({left:.0f} s left)"})
                continue
            print(f"[{step}] {left:.0f} s left", flush=True)
            started = time.monotonic()
            try:
                data = getattr(self, "step_" + step.replace("-", "_"))()
            except Exception as exc:  # one broken step must not cost the others
                data = {"error": f"{type(exc).__name__}: {exc}"}
            data["step_wall_s"] = round(time.monotonic() - started, 1)
            self.save(step, data)
            print(f"[{step}] done in {data['step_wall_s']} s", flush=True)
        return 0


def sass_histogram(text: str) -> dict[str, int]:
    """Opcode counts of a cuobjdump -sass listing (LDS/LD, FFMA/FMUL/FADD, BAR, ...)."""
    counts: dict[str, int] = {}
    for match in re.finditer(
        r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)(?:\.[A-Z0-9_.]+)?", text
    ):
        counts[match.group(1)] = counts.get(match.group(1), 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def _print_report(name: str, run: dict[str, Any]) -> None:
    report = run.get("report") or {}
    print(f"  {name}: exit {run.get('exit')} in {run.get('wall_s')} s", flush=True)
    for r in report.get("results", []):
        t = r.get("timing") or {}
        tp = r.get("throughput") or {}
        med = f"{t['median_s'] * 1e6:11.1f} us" if t.get("median_s") else " " * 14
        rate = f"{tp['gbps']:8.1f} GB/s" if tp.get("gbps") else ""
        rate += f" {tp['gflops']:9.1f} GFLOP/s" if tp.get("gflops") and name == "matmul" else ""
        print(f"    {r['backend']:<8} {r['status']:<7} verified={r['verified']!s:<5} {med} {rate} "
              f"{(r.get('error') or '')[:160]}", flush=True)  # fmt: skip


# ---------------------------------------------------------------------------------- assemble


def _load_steps(dirs: list[Path]) -> dict[str, Any]:
    steps: dict[str, Any] = {}
    for folder in dirs:
        for path in sorted((folder / "steps").glob("*.json")):
            data = json.loads(path.read_text())
            if "skipped" in data and path.stem in steps:
                continue  # an earlier run did it
            steps[path.stem] = data
    return steps


def _ceilings_of(ceilings: dict[str, Any] | None, spec: str) -> dict[str, Any] | None:
    """One device's entry of `workbench ceilings --json` (None when it was not measured)."""
    return next((d for d in (ceilings or {}).get("devices", []) if d.get("spec") == spec), None)


def _registers(example: str, backend: str, artifacts: Path) -> int | None:
    path = artifacts / example / backend / "build.json"
    if not path.is_file():
        return None
    resources = json.loads(path.read_text()).get("resources") or {}
    return next((r.get("registers") for r in resources.values()), None)


def assemble(dirs: list[Path], artifacts: Path) -> dict[str, Any]:
    steps = _load_steps(dirs)
    device_step = steps.get("device", {})
    ceilings = device_step.get("ceilings")
    results = []
    cold_runs = (steps.get("cold") or {}).get("runs", {})
    ncu = steps.get("ncu") or {}
    sass = steps.get("sass") or {}
    device: dict[str, Any] = {}
    for example, run in ((steps.get("examples") or {}).get("runs") or {}).items():
        report = run.get("report") or {}
        cold = {
            r["backend"]: r for r in ((cold_runs.get(example) or {}).get("report") or {}).get("results", [])
        }
        for r in report.get("results", []):
            if r.get("device", {}).get("runtime") == "cuda" and not device:
                device = r["device"]
            key = f"{example}/{r['backend']}"
            cold_timing = (cold.get(r["backend"]) or {}).get("timing")
            both = ((r.get("timing") or {}).get("conditions") or {}).get("l2_cold")
            if both and not cold_timing:
                cold_timing = dict(both, conditions={"l2": "cold (measured after warm, --l2 both)"})
            results.append({
                "kernel": report.get("kernel", example),
                "sizes": (r.get("provenance") or {}).get("sizes"),
                "backend": r["backend"],
                "device": (r.get("device") or {}).get("name"),
                "device_spec": (r.get("device") or {}).get("spec"),
                "status": r["status"],
                "verified": r["verified"],
                "reference": (r.get("check") or {}).get("reference"),
                "check": {k: (r.get("check") or {}).get(k) for k in ("max_abs_err", "max_ulp_err", "bad", "note")},
                "timing": r.get("timing"),
                # Launches per warm sample: a kernel shorter than 100 ticks of its timer is timed in
                # batches (CUDA events: 0.5 µs ticks, so under 50 µs; wgpu timestamps: 1 ns), which
                # divide the per-sample fixed cost; ratios across different batches are not kernel
                # ratios (parity.md, scan).
                "timing_batch": (r.get("provenance") or {}).get("timing_batch"),
                "throughput": r.get("throughput"),
                "registers": _registers(example, r["backend"], artifacts),
                "l2_cold": None if not cold_timing else {
                    "median_s": cold_timing.get("median_s"), "iqr_s": cold_timing.get("iqr_s"),
                    "conditions": cold_timing.get("conditions"),
                    "verified": (cold.get(r["backend"]) or r).get("verified")},
                "ncu": ncu.get(key),
                "sass": (sass.get(key) or {}).get("histogram"),
                "error": r.get("error"),
            })  # fmt: skip
    rust_gpu = []
    for name, run in ((steps.get("rust-gpu") or {}).get("runs") or {}).items():
        for r in (run.get("report") or {}).get("results") or []:
            rust_gpu.append({"kernel": name, "backend": r["backend"], "device": (r.get("device") or {}).get("name"),
                             "status": r["status"], "verified": r["verified"], "timing": r.get("timing"),
                             "throughput": r.get("throughput"), "error": r.get("error"),
                             "sizes": (r.get("provenance") or {}).get("sizes")})  # fmt: skip
    if not device:
        device = {"nvidia_smi": device_step.get("nvidia_smi")}
    else:
        device = dict(device, nvidia_smi=device_step.get("nvidia_smi"))
    return {
        "device": device,
        # The CUDA device's measured ceilings (flat, as the shape asks), and every measured
        # device's by spec: a wgsl result is compared with its own (Vulkan) adapter's ceilings.
        "device_ceilings": _ceilings_of(ceilings, "cuda:0"),
        "ceilings_by_device": {
            d["spec"]: d
            for d in (ceilings or {}).get("devices", [])
            if d.get("copy_gbps") or d.get("fma_gflops_f32")
        },
        "results": results,
        "rust_gpu_modules": rust_gpu,
        "harness_overhead": (steps.get("harness") or {}).get("result"),
        "wgsl_variants": {
            example: (run or {}).get("result")
            for example, run in (steps.get("wgsl-variants") or {}).items()
            if isinstance(run, dict) and "result" in run
        },
        "run_scaling": _scaling_summary(steps.get("scaling") or {}),
        "gpu_tests": steps.get("gpu-tests"),
        "cpu_native": _cpu_native_summary(steps.get("cpu-native") or {}),
        "notes": {
            "reference": "cuda-c ran first and is the reference at these sizes (a CPU reference takes minutes); "
            "the manifests' cpu reference is reported as not run in each check's note",
            "l2_cold": "`workbench run --l2 both`: after the warm samples, cold ones with the L2 flushed "
            "(a write of 2x its size) before every one-launch sample, outside the timed region",
            "ncu": "Nsight Compute gpu__time_duration.sum of benchmarks/bare_loop.py launches: defaults "
            "(base clocks, caches flushed) and --clock-control none --cache-control none",
        },
        "steps": {
            name: {
                "wall_s": data.get("step_wall_s"),
                "skipped": data.get("skipped"),
                "error": data.get("error"),
            }
            for name, data in steps.items()
        },  # fmt: skip
    }


def _scaling_summary(step: dict[str, Any]) -> dict[str, Any]:
    """The scaling step in brief: each run_scaling run's rows (wall, phases, memory) and goals, and
    the command-line runs' wall, CPU time and peak memory (their output text stays in the step)."""
    out: dict[str, Any] = {}
    for name, run in step.items():
        if not isinstance(run, dict):
            continue
        result = run.get("result")
        if result:
            out[name] = {k: result.get(k) for k in ("backends", "cold", "rows", "host_ns_per_element",
                         "memory_ratio_at_largest", "met")}  # fmt: skip
        elif "wall_s" in run:
            out[name] = {k: run.get(k) for k in ("command", "exit", "wall_s", "user_s", "sys_s",
                         "max_rss_mib_one_process")}  # fmt: skip
    return out


def _cpu_native_summary(step: dict[str, Any]) -> dict[str, Any]:
    """The cpu-native step in brief: per core setting, the CPUs it ran on and each row's medians,
    ratios and plain check (the rounds stay in the step file)."""
    out: dict[str, Any] = {}
    for name, run in step.items():
        result = run.get("result") if isinstance(run, dict) else None
        if not result:
            continue
        rows = [{k: row.get(k) for k in ("example", "kernel", "size", "sizes", "median_s", "cpu_over_plain",
                 "cpu_over_plain_threads", "sim_over_cpu", "skipped")} | {"plain_ok": (row.get("plain_check") or {}).get("ok")}
                for row in result.get("rows") or []]  # fmt: skip
        out[name] = {"cores": result.get("cores"), "goals": result.get("goals"), "rows": rows,
                     "load_average": result.get("load_average")}  # fmt: skip
    return out


def _default_budget() -> float:
    if os.environ.get("EVIDENCE_DEADLINE"):
        return float(os.environ["EVIDENCE_DEADLINE"]) - time.time() - 20
    return float(os.environ.get("EVIDENCE_BUDGET_S", 480))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the steps on the GPU host")
    run.add_argument("--out", required=True)
    run.add_argument("--artifacts", default=str(REPO / ".gpu-artifacts"))
    run.add_argument("--steps", default=",".join(s for s in STEPS if s not in OPT_IN),
                     help=f"default: every step but {', '.join(OPT_IN)}; all: {', '.join(STEPS)}")  # fmt: skip
    run.add_argument(
        "--budget", type=float, default=_default_budget(),
        help="seconds for all steps (default: until $EVIDENCE_DEADLINE, an epoch time, less 20 s for "
        "assembling; else $EVIDENCE_BUDGET_S or 480)",
    )  # fmt: skip
    asm = sub.add_parser("assemble", help="merge step outputs into the results JSON")
    asm.add_argument("dirs", nargs="+")
    asm.add_argument("--artifacts", default=str(REPO / ".gpu-artifacts"))
    asm.add_argument("--json", required=True)
    args = parser.parse_args(argv)
    if args.command == "run":
        steps = [s.strip() for s in args.steps.split(",") if s.strip()]
        unknown = [s for s in steps if s not in STEPS]
        if unknown:
            parser.error(f"unknown steps {unknown}; steps: {', '.join(STEPS)}")
        return Run(args).run(steps)
    data = assemble([Path(d) for d in args.dirs], Path(args.artifacts))
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {out}: {len(data['results'])} results")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
