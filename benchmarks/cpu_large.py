"""The cpu reference at GPU sizes (issue 37, item 4): one launch of an example's cpu build at a
large size, its wall-clock and CPU time (the process's threads summed) and the memory it takes
beside its buffers, each case in a process of its own.

The example's cpu artifact comes from the workbench's own build (the cpu adapter, through a run at
a small size); the child binds the manifest's inputs as the run service's worker does (`bind`: no
copy), launches once on every core, then checks the output against numpy in float64 with the
manifest's tolerances (sampled elements: a float64 copy of the whole would be the largest
allocation of the process). Memory: the child's peak resident set during the launch (`VmHWM`, reset
once the inputs are made: making them takes float64 temporaries) less what it held before the
buffers were made, against the buffers' bytes.

    python benchmarks/cpu_large.py [--cases saxpy:n=2**28,matmul:m=2048:n=2048:k=2048] [--json] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.bench_output import OUT_HELP, machine, write_json  # noqa: E402

CASES = "saxpy:n=2**28,matmul:m=2048:n=2048:k=2048"
#: Peak memory beside the buffers, as a share of them (the issue's bound).
GOAL_MEMORY = 1.5


def parse_cases(text: str) -> list[tuple[str, dict[str, int]]]:
    """`saxpy:n=2**28,matmul:m=2048:n=2048:k=2048` -> [(example, sizes)]."""
    from workbench import expr

    cases = []
    for case in filter(None, (c.strip() for c in text.split(","))):
        example, *pairs = case.split(":")
        sizes = {}
        for pair in pairs:
            name, _, value = pair.partition("=")
            sizes[name] = int(expr.evaluate(value.replace("^", "**"), {}))
        cases.append((example, sizes))
    return cases


def artifact_of(example: str) -> dict:
    """The example's cpu artifact record, from a run at a small size (the workbench's own build)."""
    from benchmarks.cpu_native import CHECK
    from workbench.project import examples_dir
    from workbench.run.service import RunService

    service = RunService()
    try:
        report = service.run(examples_dir() / example, backends=["cpu"], sizes=CHECK[example])
    finally:
        service.close()
    (result,) = report.results
    if result.status != "ok":
        raise SystemExit(f"{example}: the cpu build or run failed: {result.error}")
    return result.provenance["artifact"]


def resident_bytes(field: str = "VmRSS") -> int:
    """This process's resident set (`VmRSS`) or its peak since the last reset (`VmHWM`), in bytes."""
    with open("/proc/self/status") as f:
        line = next(line for line in f if line.startswith(field + ":"))
    return int(line.split()[1]) * 1024


def reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM to the current resident set (Linux 4.0+)


#: Elements (rows for matmul) checked against numpy.
SAMPLE = 4096


def sample_inputs(example: str, arrays: dict, sizes: dict):
    """What the check needs of the inputs, taken before the launch (saxpy writes y in place)."""
    import numpy as np

    rng = np.random.default_rng(1)
    if example == "saxpy":
        index = rng.choice(sizes["n"], size=min(SAMPLE, sizes["n"]), replace=False)
        return index, arrays["x"][index].astype(np.float64), arrays["y"][index].astype(np.float64)
    if example == "matmul":
        return rng.choice(sizes["m"], size=min(16, sizes["m"]), replace=False), None, None
    raise SystemExit(f"no numpy version of {example}")


def sampled_check(example: str, arrays: dict, sizes: dict, taken) -> tuple[str, object, object]:
    """(output, got, want in float64) at the sampled elements."""
    index, x, y = taken
    if example == "saxpy":
        return "y", arrays["y"][index], 2.5 * x + y
    m, n, k = sizes["m"], sizes["n"], sizes["k"]
    a = arrays["a"].reshape(m, k)[index].astype("float64")
    want = a @ arrays["b"].reshape(k, n).astype("float64")
    return "c", arrays["c"].reshape(m, n)[index].ravel(), want.ravel()


def one(example: str, sizes: dict, artifact: dict) -> dict:
    """In this process: make the inputs, bind them, launch once, check."""
    import numpy as np

    from workbench.manifest import BufferArg
    from workbench.project import Project, examples_dir
    from workbench.run.inputs import make_buffer
    from workbench.run.runtimes.cpu import CpuRuntime
    from workbench.run.spec import make_launch_spec
    from workbench.run.verify import check_outputs

    project = Project.open(examples_dir() / example)
    (kernel,) = project.manifest.kernels
    symbols = kernel.symbols(sizes)
    values = kernel.evaluate(symbols)
    spec = make_launch_spec(kernel, "cpu", artifact, symbols, 0, values=values)
    prepared = CpuRuntime().prepare(spec)
    before = resident_bytes()
    arrays = {a.name: make_buffer(a, values.lengths[a.name], 0, project.root)
              for a in kernel.args if isinstance(a, BufferArg)}  # fmt: skip
    buffer_bytes = sum(a.nbytes for a in arrays.values())
    taken = sample_inputs(example, arrays, sizes)
    prepared.bind(arrays)
    prepared.use_workers(0)
    reset_peak()
    wall, cpu = time.perf_counter(), time.process_time()
    prepared.launch(1)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak = resident_bytes("VmHWM")
    name, got, want = sampled_check(example, arrays, sizes, taken)
    c = kernel.check
    passed, record = check_outputs({name: got}, {name: want.astype(np.float32)}, c.rtol, c.atol, c.max_ulp)
    prepared.close()
    return {
        "example": example, "sizes": sizes, "wall_s": wall, "cpu_s": cpu,
        "buffer_bytes": buffer_bytes, "peak_rss_bytes": peak, "rss_before_bytes": before,
        "memory_ratio": (peak - before) / buffer_bytes, "verified": bool(passed),
        "max_abs": record.get("max_abs"), "max_ulp": record.get("max_ulp"),
    }  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default=CASES)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--out", help=OUT_HELP)
    parser.add_argument("--one", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        example, sizes, artifact = args.one
        print(json.dumps(one(example, json.loads(sizes), json.loads(artifact))))
        return 0
    rows = []
    for example, sizes in parse_cases(args.cases):
        artifact = artifact_of(example)
        load = os.getloadavg()[0]
        cmd = [sys.executable, __file__, "--one", example, json.dumps(sizes), json.dumps(artifact)]
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO,
                             env={**os.environ, "PYTHONPATH": str(REPO)})  # fmt: skip
        if out.returncode != 0:
            rows.append({"example": example, "sizes": sizes, "error": (out.stderr or out.stdout)[-2000:]})
            continue
        row = json.loads(out.stdout.strip().splitlines()[-1])
        row["load_before"] = load
        row["load_after"] = os.getloadavg()[0]
        rows.append(row)
    print("| example | sizes | launch (wall) | CPU time | buffers | peak beside them | verified | load |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        size = ", ".join(f"{k}={v}" for k, v in r["sizes"].items())
        if "error" in r:
            print(f"| {r['example']} | {size} | failed: {r['error'].splitlines()[-1]} | | | | | |")
            continue
        print(f"| {r['example']} | {size} | {r['wall_s']:.2f} s | {r['cpu_s']:.2f} s | "
              f"{r['buffer_bytes'] / 2**20:,.0f} MiB | {r['memory_ratio']:.2f}× | {r['verified']} | "
              f"{r['load_before']:.1f}–{r['load_after']:.1f} |")  # fmt: skip
    data = {"benchmark": "cpu_large", "machine": machine(), "goal_memory": GOAL_MEMORY, "rows": rows}
    if args.json or args.out:
        print(f"wrote {write_json(args.out, 'cpu_large.json', data)}")
    return 0 if all("error" not in r and r["verified"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
