"""Line information for an nvptx or cpu build, on demand: `<crate>.lines.ptx` beside the timed PTX,
`<crate>.lines.asm` (rustc's assembly with line tables) beside the cpu cdylib.

Line tables (`-C debuginfo=line-tables-only`, PTX `.loc` directives) change the generated code
(`.target sm_90, debug`), so the PTX that runs and is timed never carries them. Building them with
every edit would double the nvptx build on the hot-reload path; instead the artifacts view asks
for them when it shows an nvptx build: `ensure_line_table` builds the same crate with the same
flags plus line tables, in a cargo target dir of its own (it never waits for, or invalidates, the
hot-reload builds), and adds the file to the artifact folder and to its build.json:

    "line_info": {"artifact": "saxpy.lines.ptx", "flags": ["-C", "debuginfo=line-tables-only"], "note": …}

The cpu backend's listing is made the same way (`cargo rustc --crate-type cdylib -- -C codegen-units=1
--emit asm -C debuginfo=line-tables-only`: the build's code flags plus line tables, target dir
`cpu-asm`): the shared library has no text to show, and its assembly with `.file` / `.loc` is read
by the same `PtxLines` parser.

Only when the build is still the project's current one (same cache key): line numbers of an older
source would point at the wrong lines.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.build import cache
from workbench.build.adapters import ADAPTERS, BuildRequest
from workbench.build.adapters.cpu import ASM_FLAGS, ASM_SUFFIX
from workbench.build.adapters.nvptx import LINE_INFO_FLAGS, LINES_SUFFIX
from workbench.build.artifacts import read_build, write_build
from workbench.build.process import Budget
from workbench.build.scratch import LINES_PREFIX, OwnedDir
from workbench.build.toolchains import detect
from workbench.errors import WorkbenchError
from workbench.project import Project

#: The cargo target dir of the line-table builds (beside the hot-reload one, `nvptx`).
LINES_TARGET = "nvptx-lines"


@dataclass(frozen=True)
class _Listing:
    """What one backend's line-table build is: its target dir, file suffix, flags and view."""

    target_dir: str
    suffix: str
    flags: tuple[str, ...]
    view: str  # what the note calls it


LISTINGS = {
    "nvptx": _Listing(LINES_TARGET, LINES_SUFFIX, LINE_INFO_FLAGS, "Rust <-> PTX view"),
    "cpu": _Listing("cpu-asm", ASM_SUFFIX, ASM_FLAGS, "Rust <-> assembly view"),
}


class LineInfoError(WorkbenchError):
    """Why there is no line information for a build (said in the artifacts view)."""


def line_table_path(artifact_dir: str | Path) -> Path | None:
    """The build's `.lines.ptx` when it has one already."""
    folder = Path(artifact_dir)
    try:
        info = read_build(folder).get("line_info") or {}
    except WorkbenchError:
        return None
    name = info.get("artifact")
    return folder / name if name and (folder / name).is_file() else None


def ensure_line_table(project: Project, artifact_dir: str | Path, budget: Budget | None = None) -> Path:
    """The build's `<crate>.lines.ptx` (nvptx) or `<crate>.lines.asm` (cpu), built now if needed;
    LineInfoError says why not."""
    folder = Path(artifact_dir)
    existing = line_table_path(folder)
    if existing is not None:
        return existing
    data: dict[str, Any] = read_build(folder)
    backend = data.get("backend")
    listing = LISTINGS.get(backend or "")
    if listing is None:
        raise LineInfoError(f"{backend} builds carry no line information")
    toolchain = detect(backend)
    if not toolchain.found:
        raise LineInfoError(f"no {backend} toolchain here to build line information with")
    flags, target, tunables = (
        list(data.get("flags") or []),
        data.get("target") or "",
        data.get("tunables") or {},
    )
    adapter = ADAPTERS[backend]
    root = folder.parents[2]  # <cache>/artifacts/<backend>/<key>
    pre, _, _ = cache.pre_key(
        project, backend, toolchain, flags, target, tunables, adapter.key_inputs(project)
    )
    inputs = cache.read_inputs(root, backend, pre)
    if (
        pre != data.get("pre_key")
        or inputs is None
        or cache.full_key(pre, project, inputs) != data.get("key")
    ):
        raise LineInfoError("the sources changed since this build: line information comes with the next one")
    target_dir = cache.target_dir(root, listing.target_dir)
    timed = next(iter(data.get("kernels", {}).values()), {}).get("artifact", "kernel.ptx")
    stem = Path(timed).stem.removeprefix("lib") if backend == "cpu" else Path(timed).stem
    budget = budget or Budget.with_timeout(600.0)
    # A target dir of its own (never waits for, or invalidates, the hot-reload builds), held like
    # the builder holds the shared one: two projects' crates may share a name.
    with (
        cache.target_lock(root, listing.target_dir, budget.check),
        OwnedDir(folder.parent, LINES_PREFIX) as owned,  # a killed build's is swept (`scratch.sweep`)
    ):
        existing = line_table_path(folder)  # made by another process while this one waited
        if existing is not None:
            return existing
        staging = owned.path
        req = BuildRequest(project, backend, toolchain, target, flags, tunables, staging, target_dir,
                           staging, budget)  # fmt: skip
        built = adapter.line_table(req, stem) if backend == "nvptx" else adapter.asm_listing(req, stem)
        if built is None:
            tail = "\n".join(req.log[-20:])
            raise LineInfoError(f"the line-table build failed:\n{tail}")
        name = stem + listing.suffix
        tmp = folder / f".{name}.{os.getpid()}.tmp"
        shutil.copyfile(built, tmp)
        os.replace(tmp, folder / name)
        # build.json read again and written under the lock: what another process added stays.
        data = read_build(folder)
        data["line_info"] = {
            "artifact": name,
            "flags": list(listing.flags),
            "note": f"a line-table build for the {listing.view}; the timed code is {timed}",
        }
        write_build(folder, data)
    return folder / name
