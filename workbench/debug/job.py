"""`workbench debug`'s work, Qt-free: the debug build, the launch spec and inputs of one run at
the given sizes and seed (the same inputs `workbench run` draws), the launcher's job file, and
the gdb session (`session.run_session`); the stops as JSON.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from workbench.debug.build import ensure_debug_build
from workbench.debug.session import DebugError, gdb_path, launcher_argv, run_session
from workbench.project import Project
from workbench.run.inputs import make_inputs, verification_inputs
from workbench.run.sim_trace import TracePoint, outside
from workbench.run.spec import make_launch_spec


def debug_kernel(
    project: Project,
    kernel_name: str | None = None,
    sizes: dict[str, int] | None = None,
    seed: int | None = None,
    invocation: TracePoint | None = None,
    break_at: tuple[str, int] | None = None,
    watch: tuple[str, int] | None = None,
    commands: list[str] | None = None,
    cache_dir: str | Path | None = None,
    timeout_s: float = 60.0,
) -> dict[str, Any]:
    """One launch of the kernel's debug build under gdb; what `--json` prints: the invocation,
    the breakpoint and watch, each stop (`Stop.to_json`) and the seconds each phase took."""
    started = time.perf_counter()
    kernel = project.manifest.kernel(kernel_name)
    symbols = kernel.symbols(sizes or {}, None)
    values = kernel.evaluate(symbols)
    gdb_path()  # missing: said before anything is built
    threads, grid = values.geometry("cpu-sim")
    if invocation is not None and (why := outside(invocation, grid, threads)):
        raise DebugError(f"--invocation: {why}")
    breakpoint = None
    if break_at is not None:
        if invocation is None:
            raise DebugError(
                "--break needs --invocation WG/LOCAL: the breakpoint stops in that invocation only"
            )
        path = (project.root / break_at[0]).resolve()
        if not path.is_file():
            raise DebugError(f"--break {break_at[0]}:{break_at[1]}: no file {path}")
        breakpoint = (path, int(break_at[1]))
    if breakpoint is None and watch is None:
        raise DebugError("nothing to stop at: give --break FILE:LINE (with --invocation) or --watch BUF[I]")
    if watch is not None and watch[0] not in (b.name for b in kernel.buffers):
        names = ", ".join(b.name for b in kernel.buffers)
        raise DebugError(f"--watch {watch[0]}[{watch[1]}]: no buffer {watch[0]!r} (buffers: {names})")
    build = ensure_debug_build(project, cache_dir)
    built = time.perf_counter()
    record = dict(build.info["kernels"][kernel.name], artifact=str(build.library), checks=True)
    spec = make_launch_spec(kernel, "cpu-sim", record, symbols, 0, build.folder, values=values)
    with tempfile.TemporaryDirectory(prefix="wb-debug-") as folder:
        work = Path(folder)
        inputs = verification_inputs(kernel, make_inputs(kernel, values, seed, project.root))
        files = {}
        for name, array in inputs.items():
            files[name] = str(work / f"{name}.bin")
            np.ascontiguousarray(array).tofile(files[name])
        job = {"spec": spec, "buffers": files, "addresses": str(work / "addresses.json"),
               "stderr": str(work / "stderr.txt")}  # fmt: skip
        (work / "job.json").write_text(json.dumps(job))
        prepared = time.perf_counter()
        stops = run_session(
            launcher_argv(work / "job.json"), project.root, project.root, build.library, record["entry"],
            work / "addresses.json", breakpoint,
            (invocation.group, invocation.local) if invocation is not None else None,
            watch, list(commands or []), timeout_s, printed=work / "stderr.txt",
        )  # fmt: skip
    done = time.perf_counter()
    return {
        "project": project.name,
        "kernel": kernel.name,
        "sizes": {name: int(symbols[name]) for name in kernel.sizes},
        "invocation": invocation.to_json() if invocation is not None else None,
        "break": f"{break_at[0]}:{break_at[1]}" if break_at else None,
        "watch": f"{watch[0]}[{watch[1]}]" if watch else None,
        "debug_build": str(build.library),
        "stops": [s.to_json() for s in stops],
        "seconds": {"build": built - started, "prepare": prepared - built, "debugger": done - prepared},
    }
