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

from workbench.debug.build import DebugBuild, ensure_debug_build
from workbench.debug.gdb_mi import DebugError, gdb_path
from workbench.debug.session import Debugger, launcher_argv, run_session
from workbench.project import Project
from workbench.run.inputs import make_inputs, verification_inputs
from workbench.run.sim_trace import TracePoint, outside
from workbench.run.spec import make_launch_spec


class DebugJob:
    """One launch of a kernel's debug build under gdb, prepared (the build looked up or made, the
    inputs written) and held open: `debugger` steps it (`session.Debugger`); `close()` ends gdb
    and the launcher and removes the job's files. `workbench debug` and the window's dock open it
    the same way (`open_debug`)."""

    def __init__(self, project: Project, kernel: Any, symbols: dict, invocation: TracePoint | None,
                 build: Any, record: dict, spec: dict, work: tempfile.TemporaryDirectory, timeout_s: float):  # fmt: skip
        self.project, self.kernel, self.symbols, self.invocation = project, kernel, symbols, invocation
        self.build, self.record, self._work = build, record, work
        self.seconds: dict[str, float] = {}  # build lookup, inputs and gdb started (`open_debug`)
        folder = Path(work.name)
        self.debugger = Debugger(
            launcher_argv(folder / "job.json"), project.root, project.root, build.library, record["entry"],
            folder / "addresses.json", (invocation.group, invocation.local) if invocation is not None else None,
            timeout_s, printed=folder / "stderr.txt",
        )  # fmt: skip

    def aim(self, invocation: TracePoint | None) -> None:
        """Stop in `invocation` (a job opened without one: a window's parked session)."""
        threads, grid = self.kernel.evaluate(self.symbols).geometry("cpu-sim")
        if invocation is not None and (why := outside(invocation, grid, threads)):
            raise DebugError(f"--invocation: {why}")
        self.invocation = invocation
        self.debugger.invocation = (invocation.group, invocation.local) if invocation is not None else None

    def close(self) -> None:
        try:
            self.debugger.close()
        finally:
            self._work.cleanup()


def open_debug(
    project: Project,
    kernel_name: str | None = None,
    sizes: dict[str, int] | None = None,
    seed: int | None = None,
    invocation: TracePoint | None = None,
    cache_dir: str | Path | None = None,
    timeout_s: float = 60.0,
    build: DebugBuild | None = None,
) -> DebugJob:
    """The kernel's debug build (built now if this source has none; `build`: that one, no
    lookup), the run's inputs at these sizes and seed written for the launcher, gdb started on it
    (not run yet: `debugger.start`)."""
    started = time.perf_counter()
    kernel = project.manifest.kernel(kernel_name)
    symbols = kernel.symbols(sizes or {}, None)
    values = kernel.evaluate(symbols)
    gdb_path()  # missing: said before anything is built
    threads, grid = values.geometry("cpu-sim")
    if invocation is not None and (why := outside(invocation, grid, threads)):
        raise DebugError(f"--invocation: {why}")
    build = build or ensure_debug_build(project, cache_dir)
    built = time.perf_counter()
    record = dict(build.info["kernels"][kernel.name], artifact=str(build.library), checks=True)
    spec = make_launch_spec(kernel, "cpu-sim", record, symbols, 0, build.folder, values=values)
    work = tempfile.TemporaryDirectory(prefix="wb-debug-")
    try:
        folder = Path(work.name)
        inputs = verification_inputs(kernel, make_inputs(kernel, values, seed, project.root))
        files = {}
        for name, array in inputs.items():
            files[name] = str(folder / f"{name}.bin")
            np.ascontiguousarray(array).tofile(files[name])
        job = {"spec": spec, "buffers": files, "addresses": str(folder / "addresses.json"),
               "stderr": str(folder / "stderr.txt")}  # fmt: skip
        (folder / "job.json").write_text(json.dumps(job))
        job = DebugJob(project, kernel, symbols, invocation, build, record, spec, work, timeout_s)
        job.seconds = {"build": built - started, "prepare": time.perf_counter() - built}
        return job
    except BaseException:
        work.cleanup()
        raise


def break_path(project: Project, break_at: tuple[str, int]) -> tuple[Path, int]:
    """FILE:LINE (relative to the project) as the file's full path and the line; DebugError when
    there is no such file."""
    path = (project.root / break_at[0]).resolve()
    if not path.is_file():
        raise DebugError(f"--break {break_at[0]}:{break_at[1]}: no file {path}")
    return path, int(break_at[1])


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
    breakpoint = None
    if break_at is not None:
        if invocation is None:
            raise DebugError(
                "--break needs --invocation WG/LOCAL: the breakpoint stops in that invocation only"
            )
        breakpoint = break_path(project, break_at)
    if breakpoint is None and watch is None:
        raise DebugError("nothing to stop at: give --break FILE:LINE (with --invocation) or --watch BUF[I]")
    if watch is not None and watch[0] not in (b.name for b in kernel.buffers):
        names = ", ".join(b.name for b in kernel.buffers)
        raise DebugError(f"--watch {watch[0]}[{watch[1]}]: no buffer {watch[0]!r} (buffers: {names})")
    job = open_debug(project, kernel.name, sizes, seed, invocation, cache_dir=cache_dir, timeout_s=timeout_s)
    try:
        stops = run_session(job.debugger, [breakpoint] if breakpoint else [], watch, list(commands or []))
    finally:
        job.close()
    return {
        "project": project.name,
        "kernel": kernel.name,
        "sizes": {name: int(job.symbols[name]) for name in kernel.sizes},
        "invocation": invocation.to_json() if invocation is not None else None,
        "break": f"{break_at[0]}:{break_at[1]}" if break_at else None,
        "watch": f"{watch[0]}[{watch[1]}]" if watch else None,
        "debug_build": str(job.build.library),
        "stops": [s.to_json() for s in stops],
        "seconds": {**job.seconds, "debugger": time.perf_counter() - started - sum(job.seconds.values())},
    }
