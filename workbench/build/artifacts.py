"""Artifact folders and their `build.json` (docs/contracts.md, "Build artifacts"): write, read, export."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from pathlib import Path
from typing import Any

from workbench.errors import WorkbenchError
from workbench.records import BuildResult
from workbench.runtimes_table import ARTIFACT_KINDS

BUILD_JSON = "build.json"
FORMAT = 1
#: The toolchain's output when the folder was built, kept beside build.json: a build served from
#: the cache shows it (Build › Log), not an empty log.
BUILD_LOG = "build.log"
#: A longer log keeps its end (the errors and the summary are at the end).
MAX_LOG_CHARS = 200_000


def write_build(folder: Path, data: dict[str, Any]) -> Path:
    data = {"format": FORMAT, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **data}
    path = folder / BUILD_JSON
    tmp = folder / f"{BUILD_JSON}.{os.getpid()}-{threading.get_ident()}.tmp"  # one writer's own
    tmp.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")
    os.replace(tmp, path)
    return path


def write_log(folder: Path, log: str) -> Path:
    """Keep a build's log in its artifact folder (`BUILD_LOG`), at most `MAX_LOG_CHARS`."""
    path = folder / BUILD_LOG
    path.write_text(log[-MAX_LOG_CHARS:], errors="replace")
    return path


def cached_log(folder: Path, data: dict[str, Any]) -> str:
    """The log of a build served from the cache: that it was, its key and when it was built, then
    what the toolchain printed then (or why there is nothing to show)."""
    head = (
        f"served from the build cache: key {data.get('key') or '?'}, built {data.get('created') or 'at an unknown time'}"
        f"\nin {folder}\n"
    )
    try:
        text = (folder / BUILD_LOG).read_text(errors="replace")
    except FileNotFoundError:
        return head + "\n(no log was kept with this build: it was built before logs were kept)"
    except OSError as exc:
        return head + f"\n(its log cannot be read: {exc})"
    return head + "\n" + (text if text.strip() else "(the toolchain printed nothing)")


def read_build(folder: str | Path) -> dict[str, Any]:
    """Load and check one artifact folder's build.json; errors name the file and what is wrong."""
    folder = Path(folder)
    path = folder / BUILD_JSON if folder.is_dir() or not folder.suffix else folder
    if not path.is_file():
        raise WorkbenchError(f"{path}: no build.json (is {folder} an artifact folder of `workbench build`?)")
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise WorkbenchError(f"{path}: not readable as JSON ({exc})") from None
    if not isinstance(data, dict):
        raise WorkbenchError(f"{path}: expected a JSON object, got {type(data).__name__}")
    if data.get("format") != FORMAT:
        raise WorkbenchError(f"{path}: unsupported format {data.get('format')!r} (expected {FORMAT})")
    for key in ("backend", "kernels"):
        if key not in data:
            raise WorkbenchError(f"{path}: missing key {key!r}")
    if not isinstance(data["kernels"], dict):
        raise WorkbenchError(f"{path}: kernels: expected an object of kernel name -> artifact record")
    for name, record in data["kernels"].items():
        if (
            not isinstance(record, dict)
            or record.get("kind") not in ARTIFACT_KINDS
            or "artifact" not in record
        ):
            raise WorkbenchError(
                f"{path}: kernels.{name}: needs artifact, entry and kind ({', '.join(ARTIFACT_KINDS)})"
            )
        if not (path.parent / record["artifact"]).is_file():
            raise WorkbenchError(f"{path}: kernels.{name}: artifact {record['artifact']!r} is missing")
    return data


def result_from_build(
    folder: Path, data: dict[str, Any], cached: bool, seconds: float, log: str = ""
) -> BuildResult:
    """A successful BuildResult describing an artifact folder (with the build's diagnostics); a
    cached one's log is the one kept when it was built (`cached_log`)."""
    if cached and not log:
        log = cached_log(folder, data)
    files = sorted({folder / r["artifact"] for r in data["kernels"].values()})
    return BuildResult(
        backend=data["backend"], status="ok", seconds=seconds, cached=cached,
        artifacts=[str(f) for f in files], diagnostics=data.get("diagnostics", []),
        resources=data.get("resources", {}), log=log,
        key=data.get("key", ""), artifact_dir=str(folder), toolchain=data.get("toolchain", {}),
        flags=data.get("flags", []),
    )  # fmt: skip


def export(results: list[BuildResult], dest: str | Path) -> list[Path]:
    """Copy each successful backend's artifact folder to DEST/<backend>/ (replacing it)."""
    dest = Path(dest).expanduser()
    written = []
    for result in results:
        if result.status != "ok" or not result.artifact_dir:
            continue
        target = dest / result.backend
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(result.artifact_dir, target)
        written.append(target)
    return written
