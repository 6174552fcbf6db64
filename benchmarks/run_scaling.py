"""Host side of a run against its size: wall time per phase, host overhead per element, peak memory.

    python benchmarks/run_scaling.py [--backends cpu] [--min-exp 20] [--max-exp 26] [--gpu-host]
                                     [--example saxpy] [--repeat 1] [--cold] [--out FILE.json]

Each size runs in a fresh child process (`RunService.run`, as `workbench run` does, without the
interpreter's start-up), whose events time the phases: inputs, prepare (per backend: module
load, device buffers; with `--cold` also the worker's start), upload, the verification launch,
download, verify, timing (the timing protocol's launches), start (before the inputs: workers with
`--cold`, builds or artifact folders), setup (between backends) and close (the workers' shutdown);
`backend_phases_s` splits them per backend. Without `--cold` the workers are started before the
clock (as in a tuning loop or the window); `--cold` measures a fresh `workbench run`.
Host overhead = wall − the timed windows (timing phase and verification launch); its slope
against n (least squares over the sizes) is the per-element cost the goal bounds. Peak memory is
what the child and its workers hold (private and file pages of each, shared-memory segments
once), sampled every 10 ms, less what they held before the run, compared with the kernel's
buffer bytes plus the reference outputs.

Goals (issue 15), on the 2-core VM: host overhead ≤ 15 ns per element; peak memory ≤ 1.5 ×
buffers + reference outputs. `--gpu-host` extends the sizes to 2^28 (and defaults the backends
to cpu,nvptx,cuda-c,wgsl). Prints a table; writes JSON (--out, else outside the repository:
bench_output.py).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Appended, not prepended: the child's `workbench` must stay the --tree one (first on PYTHONPATH).
sys.path.append(str(REPO))

from benchmarks.bench_output import OUT_HELP, machine, write_json  # noqa: E402

GOAL_NS_PER_ELEMENT = 15.0
GOAL_MEMORY_FACTOR = 1.5
TIMED_PHASES = ("launch", "timing")


def child(
    example: str, n: int, backends: list[str], artifacts: str | None = None, cold: bool = False
) -> None:
    """One run at size n; prints one JSON line: phase seconds (summed, and per backend), wall,
    buffer bytes. `cold`: the workers start inside the timed run, as in a fresh `workbench run`."""
    import workbench
    from workbench.project import Project
    from workbench.run.events import RunDone, RunEvent, RunFinished, RunPhase, RunStarted
    from workbench.run.service import RunService

    project = Project.open(Path(workbench.__file__).resolve().parents[1] / "resources" / "examples" / example)
    kernel = project.manifest.kernel(None)
    symbols = kernel.symbols({"n": n}, None)
    lengths = kernel.lengths(symbols)
    from workbench.run.spec import dtype_of

    sizes = {b.name: lengths[b.name] * dtype_of(b.type).itemsize for b in kernel.buffers}
    from workbench.backends import runtime_of

    service = RunService()
    if not cold:
        for runtime in {"cpu"} | {runtime_of(b) for b in backends}:
            service.devices(runtime)  # workers up before the clock starts (a tuning loop has them)
    phases: dict[str, float] = {}
    by_backend: dict[str, dict[str, float]] = {}
    mark = [time.perf_counter(), "start", None]  # workers (cold), builds or artifact folders

    def on_event(event: RunEvent) -> None:
        now = time.perf_counter()
        if isinstance(event, RunPhase):
            name, backend = event.phase, event.backend
        elif isinstance(event, RunStarted):
            name, backend = "prepare", event.backend  # worker start (cold), module load, buffers
        elif isinstance(event, RunFinished):
            name, backend = "setup", None
        elif isinstance(event, RunDone):
            name, backend = "close", None  # the report is out: the workers' shutdown
        else:
            return
        spent = now - mark[0]
        phases[mark[1]] = phases.get(mark[1], 0.0) + spent
        if mark[2] is not None:
            own = by_backend.setdefault(mark[2], {})
            own[mark[1]] = own.get(mark[1], 0.0) + spent
        mark[:] = [now, name, backend]

    print(json.dumps({"ready": True}), flush=True)
    sys.stdin.readline()  # the parent has its memory baseline
    started = time.perf_counter()
    report = service.run(
        project,
        backends=backends,
        sizes={"n": n},
        on_event=on_event,
        artifacts_dir=artifacts,
        keep_outputs=False,  # as `workbench run` does
    )
    service.close()
    wall = time.perf_counter() - started
    phases[mark[1]] = phases.get(mark[1], 0.0) + time.perf_counter() - mark[0]
    print(
        json.dumps(
            {
                "n": n,
                "wall_s": wall,
                "phases_s": phases,
                "backend_phases_s": by_backend,
                "buffer_bytes": sum(sizes.values()),
                "reference_bytes": sum(sizes[b.name] for b in kernel.buffers if b.is_output),
                "statuses": {r.backend: [r.status, r.verified] for r in report.results},
            }
        ),
        flush=True,
    )


def _kib(path: str, keys: tuple[str, ...]) -> int:
    """The sum of the `key:  N kB` lines of a /proc file (status, meminfo) named in `keys`."""
    total = 0
    with open(path) as f:
        for line in f:
            name, _, value = line.partition(":")
            if name in keys:
                total += int(value.split()[0])
    return total


def _tree_memory(pid: int) -> int:
    """Bytes the process tree holds: every process's private and file pages (RssAnon + RssFile,
    from /proc/PID/status) plus the shared-memory segments once (the system's Shmem; the memfd
    buffers shared with workers are counted there, not in each process that maps them).

    Counters, not /proc/PID/smaps: reading smaps walks every page table under the process's mmap
    lock, and sampling it every 10 ms stalled the run's own page faults (a 256 MiB download took
    0.7 s instead of 0.1 s)."""
    import psutil

    total = 0
    try:
        root = psutil.Process(pid)
        for proc in [root, *root.children(recursive=True)]:
            try:
                total += _kib(f"/proc/{proc.pid}/status", ("RssAnon", "RssFile")) * 1024
            except (OSError, ValueError):
                pass  # the process ended between the listing and the read
    except psutil.NoSuchProcess:
        pass
    return total + _kib("/proc/meminfo", ("Shmem",)) * 1024


def measure(
    example: str,
    n: int,
    backends: list[str],
    tree: Path = REPO,
    artifacts: str | None = None,
    cold: bool = False,
) -> dict:
    # The tree first, the caller's path after it: a GPU host's setup puts wgpu and pycuda there.
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(tree), os.environ.get("PYTHONPATH")) if p)
    )
    cmd = [
        sys.executable,
        __file__,
        "--tree",
        str(tree),
        "--child",
        str(n),
        "--example",
        example,
        "--backends",
        ",".join(backends),
        *(["--artifacts", artifacts] if artifacts else []),
        *(["--cold"] if cold else []),
    ]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=REPO)
    assert json.loads(proc.stdout.readline()).get("ready")
    baseline = _tree_memory(proc.pid)
    peak = [baseline]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _tree_memory(proc.pid))
            time.sleep(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    proc.stdin.write("go\n")
    proc.stdin.flush()
    line = proc.stdout.readline()
    done.set()
    sampler.join()
    proc.wait(timeout=60)
    if not line:
        raise SystemExit(f"the run at n={n} failed (exit {proc.returncode})")
    result = json.loads(line)
    timed = sum(result["phases_s"].get(p, 0.0) for p in TIMED_PHASES)
    result["timed_s"] = timed
    result["host_s"] = result["wall_s"] - timed
    result["peak_bytes"] = peak[0] - baseline
    budget = GOAL_MEMORY_FACTOR * result["buffer_bytes"] + result["reference_bytes"]
    result["memory_budget_bytes"] = budget
    result["memory_ratio"] = result["peak_bytes"] / budget
    return result


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of y against x."""
    mx = sum(x for x, _ in points) / len(points)
    my = sum(y for _, y in points) / len(points)
    sxx = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--example", default="saxpy")
    parser.add_argument("--backends", default=None)
    parser.add_argument("--min-exp", type=int, default=20)
    parser.add_argument("--max-exp", type=int, default=None)
    parser.add_argument("--gpu-host", action="store_true", help="sizes to 2^28, GPU backends")
    parser.add_argument("--repeat", type=int, default=1, help="runs per size (the fastest counts)")
    parser.add_argument("--out", default=None, help=OUT_HELP)
    parser.add_argument(
        "--tree",
        default=str(REPO),
        help="the workbench checkout to measure (another one, e.g. main's, for a before/after)",
    )
    parser.add_argument(
        "--artifacts",
        default=None,
        help="run prebuilt artifacts (`workbench build --export DIR`): a GPU host has no Rust",
    )
    parser.add_argument(
        "--cold", action="store_true", help="start the workers inside the measured run (a fresh CLI run)"
    )
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    default_backends = "cpu,nvptx,cuda-c,wgsl" if args.gpu_host else "cpu"
    backends = [b for b in (args.backends or default_backends).split(",") if b]
    if args.child is not None:
        child(args.example, args.child, backends, args.artifacts, args.cold)
        return 0
    max_exp = args.max_exp or (28 if args.gpu_host else 26)
    rows = []
    for exp in range(args.min_exp, max_exp + 1, 2):
        runs = [
            measure(args.example, 1 << exp, backends, Path(args.tree), args.artifacts, args.cold)
            for _ in range(max(1, args.repeat))
        ]
        rows.append(min(runs, key=lambda r: r["wall_s"]))
    per_element_ns = slope([(r["n"], r["host_s"]) for r in rows]) * 1e9
    # Memory per element (the slope over the sizes: fixed costs such as thread stacks drop out)
    # against the budget per element; and the ratio at the largest size, fixed costs included.
    memory_slope = slope([(r["n"], r["peak_bytes"]) for r in rows])
    budget_slope = slope([(r["n"], r["memory_budget_bytes"]) for r in rows])
    worst_memory = rows[-1]["memory_ratio"]
    phase_names = sorted({p for r in rows for p in r["phases_s"]})
    header = f"{'n':>10} {'wall s':>7} {'timed s':>7} {'host s':>7} " + " ".join(
        f"{p:>8}" for p in phase_names
    )
    print(header + f" {'peak MiB':>9} {'budget MiB':>10}")
    for r in rows:
        cells = " ".join(f"{r['phases_s'].get(p, 0.0):8.3f}" for p in phase_names)
        print(
            f"{r['n']:>10} {r['wall_s']:7.3f} {r['timed_s']:7.3f} {r['host_s']:7.3f} {cells} "
            f"{r['peak_bytes'] / 2**20:9.0f} {r['memory_budget_bytes'] / 2**20:10.0f}"
        )
    last = rows[-1]
    for backend, own in (last.get("backend_phases_s") or {}).items():
        cells = ", ".join(f"{p} {v:.3f}" for p, v in own.items())
        print(f"  n={last['n']} {backend}: {cells} s")
    print(
        f"host overhead {per_element_ns:.2f} ns/element (goal ≤ {GOAL_NS_PER_ELEMENT:g}); "
        f"peak memory {memory_slope:.2f} B/element against a budget of {budget_slope:.2f} "
        f"(1.5 × buffers + reference); at n={rows[-1]['n']}: {worst_memory:.3f} × the budget"
    )
    result = {
        "benchmark": "run_scaling",
        "example": args.example,
        "backends": backends,
        "cold": args.cold,
        "tree": str(Path(args.tree).resolve()),
        "machine": machine(),
        "rows": rows,
        "host_ns_per_element": per_element_ns,
        "memory_bytes_per_element": memory_slope,
        "memory_budget_bytes_per_element": budget_slope,
        "memory_ratio_at_largest": worst_memory,
        "goals": {"host_ns_per_element": GOAL_NS_PER_ELEMENT, "memory_ratio": 1.0},
        "met": {
            "host_ns_per_element": per_element_ns <= GOAL_NS_PER_ELEMENT,
            "memory_per_element": memory_slope <= budget_slope,
            "memory_at_largest": worst_memory <= 1.0,
        },
    }
    out = write_json(args.out, "run_scaling.json", result)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
