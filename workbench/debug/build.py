"""The debug build of cpu-sim: the kernel crate built as cargo's dev profile (debug info, no
optimisation) with the kernel API's `debug` feature (the `sim` checks, and the executor publishes
the invocation running now: `gpu_kernel::host::debug`). Made on demand beside the cpu-sim build
it belongs to, like the line tables (`build/line_info.py`): a cargo target dir of its own
(`cpu-debug/<folder hash>`, never waited for by the hot-reload builds), the library copied into
the cpu-sim build's artifact folder as `<crate>.<folder hash>.debug.so` and named in its
build.json, one per project folder (debug information names the sources by their full paths):

    "debug_builds": {"<folder hash>": {"artifact": "libsaxpy.<folder hash>.debug.so",
                                       "project": "/.../saxpy", "flags": [...], "note": ...}}

so the next `workbench debug` of the same sources in the same folder finds it there (the cpu-sim
build's cache key covers the sources, so a source edit gives a new folder without it).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.build import cache
from workbench.build.adapters import ADAPTERS, BuildRequest
from workbench.build.artifacts import read_build, write_build
from workbench.build.builder import build_backend, cached_result
from workbench.build.process import Budget
from workbench.build.toolchains import detect
from workbench.errors import WorkbenchError
from workbench.kernel_api import CRATE_NAME, SIM_FEATURE
from workbench.project import Project

#: The kernel API's feature of the debug build (implies `sim`).
DEBUG_FEATURE = f"{CRATE_NAME}/debug"
#: The cargo target dirs of the debug builds, one per project folder (beside the hot-reload ones).
DEBUG_TARGET = "cpu-debug"
#: cargo's dev profile with its debug info and optimisation pinned (a crate's own [profile.dev]
#: may say otherwise): locals and lines as written, every inlined function's variables kept.
PROFILE_FLAGS = ("--config", "profile.dev.debug=2", "--config", "profile.dev.opt-level=0")
SUFFIX = ".debug.so"


class DebugBuildError(WorkbenchError):
    """Why there is no debug build (the cpu-sim build failed, or its debug variant did)."""


@dataclass(frozen=True)
class DebugBuild:
    library: Path  # the debug build's shared library
    folder: Path  # the cpu-sim build's artifact folder (build.json: kernels, entries)
    info: dict[str, Any]  # that build.json


def _flags(sim_flags: list[str]) -> list[str]:
    """The cpu-sim build's flags as a dev-profile build with the debug feature."""
    flags = [f for f in sim_flags if f != "--release"]
    flags = [DEBUG_FEATURE if f == SIM_FEATURE else f for f in flags]
    return [*flags, *PROFILE_FLAGS]


def _place(project: Project) -> tuple[str, str]:
    """The project's folder and its hash. The cpu-sim build's key leaves the folder out (a copy
    of a project shares its build), but debug information names the source files by their full
    paths: one debug build per folder, or a copy's breakpoints would name files gdb never saw."""
    where = str(project.root.resolve())
    return where, hashlib.sha256(where.encode()).hexdigest()[:12]


def _known(folder: Path, data: dict[str, Any], place: str) -> DebugBuild | None:
    known = ((data.get("debug_builds") or {}).get(place) or {}).get("artifact")
    return DebugBuild(folder / known, folder, data) if known and (folder / known).is_file() else None


def cached_debug_build(project: Project, cache_dir: str | Path | None = None) -> DebugBuild | None:
    """The project's debug build as its source is now when the cache has it, else None: nothing
    is built (the window parks a debugging session only on a build already there)."""
    result = cached_result(project, "cpu-sim", cache.cache_root(cache_dir))
    if result is None or result.status != "ok" or not result.artifact_dir:
        return None
    folder = Path(result.artifact_dir)
    return _known(folder, read_build(folder), _place(project)[1])


def ensure_debug_build(
    project: Project, cache_dir: str | Path | None = None, budget: Budget | None = None
) -> DebugBuild:
    """The project's debug build of cpu-sim, built now if this source's has none yet."""
    root = cache.cache_root(cache_dir)
    budget = budget or Budget.with_timeout(600.0)
    result = build_backend(project, "cpu-sim", root, budget=budget)
    if result.status != "ok":
        why = result.hint or (result.log or "").strip()[-2000:] or result.status
        raise DebugBuildError(f"the cpu-sim build {result.status}: {why}")
    folder = Path(result.artifact_dir)
    data: dict[str, Any] = read_build(folder)
    where, place = _place(project)
    if found := _known(folder, data, place):
        return found
    adapter, toolchain = ADAPTERS["cpu-sim"], detect("cpu-sim")
    flags = _flags(list(data.get("flags") or []))
    timed = next(iter(data.get("kernels", {}).values()), {}).get("artifact", "kernel.so")
    name = f"{Path(timed).stem}.{place}{SUFFIX}"
    # A target dir per folder too: cargo hashes a path package relative to its workspace, so two
    # copies of a crate would share the first one's library (and its paths) in one target dir.
    target = f"{DEBUG_TARGET}/{place}"
    target_dir = cache.target_dir(root, target)
    with (
        cache.target_lock(root, target, budget.check),
        tempfile.TemporaryDirectory(prefix=".debug-", dir=folder.parent) as staging,
    ):
        req = BuildRequest(project, "cpu-sim", toolchain, data.get("target") or "host", flags,
                           data.get("tunables") or {}, Path(staging), target_dir, Path(staging), budget)  # fmt: skip
        built = adapter.build(req)
        if not built.ok:
            tail = "\n".join(req.log[-20:])
            raise DebugBuildError(f"the debug build failed:\n{tail}")
        library = Path(staging) / next(iter(built.kernels.values()))["artifact"]
        tmp = folder / f".{name}.tmp"
        shutil.copyfile(library, tmp)
        os.replace(tmp, folder / name)
    data = read_build(folder)  # as it is now: another folder's debug build may have been added
    data.setdefault("debug_builds", {})[place] = {
        "artifact": name,
        "project": where,
        "flags": flags,
        "note": f"a debug build for workbench debug (dev profile, {DEBUG_FEATURE}); the timed code is {timed}",
    }
    write_build(folder, data)
    return DebugBuild(folder / name, folder, data)
