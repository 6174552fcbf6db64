"""Line information for an nvptx build, on demand: `<crate>.lines.ptx` beside the timed PTX.

Line tables (`-C debuginfo=line-tables-only`, PTX `.loc` directives) change the generated code
(`.target sm_90, debug`), so the PTX that runs and is timed never carries them. Building them with
every edit would double the nvptx build on the hot-reload path; instead the artifacts view asks
for them when it shows an nvptx build: `ensure_line_table` builds the same crate with the same
flags plus line tables, in a cargo target dir of its own (it never waits for, or invalidates, the
hot-reload builds), and adds the file to the artifact folder and to its build.json:

    "line_info": {"artifact": "saxpy.lines.ptx", "flags": ["-C", "debuginfo=line-tables-only"], "note": …}

Only when the build is still the project's current one (same cache key): line numbers of an older
source would point at the wrong lines.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from workbench.build import cache
from workbench.build.adapters import ADAPTERS, BuildRequest
from workbench.build.adapters.nvptx import LINE_INFO_FLAGS, LINES_SUFFIX
from workbench.build.artifacts import read_build, write_build
from workbench.build.process import Budget
from workbench.build.toolchains import detect
from workbench.errors import WorkbenchError
from workbench.project import Project

#: The cargo target dir of the line-table builds (beside the hot-reload one, `nvptx`).
LINES_TARGET = "nvptx-lines"


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
    """The build's `<crate>.lines.ptx`, built now if needed; LineInfoError says why not."""
    folder = Path(artifact_dir)
    existing = line_table_path(folder)
    if existing is not None:
        return existing
    data: dict[str, Any] = read_build(folder)
    if data.get("backend") != "nvptx":
        raise LineInfoError(f"{data.get('backend')} builds carry no line information")
    toolchain = detect("nvptx")
    if not toolchain.found:
        raise LineInfoError("no nvptx toolchain here to build line information with")
    flags, target, tunables = (
        list(data.get("flags") or []),
        data.get("target") or "",
        data.get("tunables") or {},
    )
    adapter = ADAPTERS["nvptx"]
    root = folder.parents[2]  # <cache>/artifacts/nvptx/<key>
    pre, _, _ = cache.pre_key(
        project, "nvptx", toolchain, flags, target, tunables, adapter.key_inputs(project)
    )
    inputs = cache.read_inputs(root, "nvptx", pre)
    if (
        pre != data.get("pre_key")
        or inputs is None
        or cache.full_key(pre, project, inputs) != data.get("key")
    ):
        raise LineInfoError("the sources changed since this build: line information comes with the next one")
    target_dir = cache.target_dir(root, LINES_TARGET)
    ptx_name = next(iter(data.get("kernels", {}).values()), {}).get("artifact", "kernel.ptx")
    stem = Path(ptx_name).stem
    budget = budget or Budget.with_timeout(600.0)
    # A target dir of its own (never waits for, or invalidates, the hot-reload builds), held like
    # the builder holds the shared one: two projects' crates may share a name.
    with (
        cache.target_lock(root, LINES_TARGET, budget.check),
        tempfile.TemporaryDirectory(prefix=".lines-", dir=folder.parent) as staging,
    ):
        req = BuildRequest(project, "nvptx", toolchain, target, flags, tunables, Path(staging), target_dir,
                           Path(staging), budget)  # fmt: skip
        built = adapter.line_table(req, stem)
        if built is None:
            tail = "\n".join(req.log[-20:])
            raise LineInfoError(f"the line-table build failed:\n{tail}")
        name = stem + LINES_SUFFIX
        tmp = folder / f".{name}.tmp"
        shutil.copyfile(built, tmp)
        os.replace(tmp, folder / name)
    data["line_info"] = {
        "artifact": name,
        "flags": list(LINE_INFO_FLAGS),
        "note": f"a line-table build for the Rust <-> PTX view; the timed code is {ptx_name}",
    }
    write_build(folder, data)
    return folder / name
