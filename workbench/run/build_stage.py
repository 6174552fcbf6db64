"""The build stage of a run: each backend's build (or prebuilt artifact folder) as the run needs it.

Builds go through a `BuildService` when the caller has one (the window, the live loop: a newer
build cancels an older one) or `build_project` (the CLI); prebuilt folders (`--artifacts DIR`)
are read instead of building. Each backend ends as a `StagedBuild`: ok (with its build.json and
folder), error (with the first error diagnostic) or skipped (with the reason).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.errors import WorkbenchError
from workbench.project import Project


@dataclass
class StagedBuild:
    """One backend's build outcome as the run needs it."""

    backend: str
    status: str  # ok | error | skipped
    info: dict[str, Any] = field(default_factory=dict)  # build.json
    folder: str = ""
    message: str = ""


def prebuilt(backends: list[str], artifacts_dir: str | Path) -> dict[str, StagedBuild]:
    """The builds in an exported folder (`DIR/<backend>/build.json`), without building."""
    from workbench.build.artifacts import read_build

    out: dict[str, StagedBuild] = {}
    for backend in backends:
        folder = Path(artifacts_dir) / backend
        if not (folder / "build.json").is_file():
            out[backend] = StagedBuild(
                backend, "skipped", message=f"no build for {backend} in {artifacts_dir}"
            )
            continue
        try:
            out[backend] = StagedBuild(backend, "ok", read_build(folder), str(folder))
        except (OSError, ValueError, WorkbenchError) as exc:
            out[backend] = StagedBuild(backend, "error", message=f"cannot read {folder}/build.json: {exc}")
    return out


def build_stage(
    project: Project,
    backends: list[str],
    emit: Callable[[dict[str, Any]], None],
    build_service: Any = None,
    cache_dir: str | Path | None = None,
    tunables: dict[str, int | float] | None = None,
    on_service: Callable[[Any], None] | None = None,
) -> dict[str, StagedBuild]:
    """Build `backends` and return their outcomes; emits "building", "build-event" and "built".

    `on_service(build_service or None)` brackets a build on the caller's service, so the run
    can cancel it."""
    from workbench.build.artifacts import read_build

    out: dict[str, StagedBuild] = {}
    if not backends:
        return out
    emit({"kind": "building", "backends": list(backends)})
    if build_service is not None:
        if on_service is not None:
            on_service(build_service)
        try:
            results = list(build_service.submit(project, list(backends), tunables=tunables).wait().values())
        finally:
            if on_service is not None:
                on_service(None)
    else:
        from workbench.build import build_project

        results = build_project(
            project, list(backends), cache_dir=cache_dir, tunables=tunables,
            on_event=lambda event: emit({"kind": "build-event", "event": event}),
        )  # fmt: skip
    for result in results:
        if result.status == "ok":
            try:
                info = read_build(result.artifact_dir)
            except (OSError, ValueError, WorkbenchError) as exc:
                out[result.backend] = StagedBuild(result.backend, "error", message=f"unreadable build: {exc}")
                continue
            out[result.backend] = StagedBuild(result.backend, "ok", info, result.artifact_dir)
        elif result.status == "skipped":
            message = f"not built: {result.hint}" if result.hint else "not built"
            out[result.backend] = StagedBuild(result.backend, "skipped", message=message)
        else:
            out[result.backend] = StagedBuild(result.backend, "error", message=build_error(result))
        emit({"kind": "built", "backend": result.backend, "status": result.status})
    for backend in backends:
        out.setdefault(backend, StagedBuild(backend, "skipped", message="the build service returned nothing"))
    return out


def build_error(result: Any) -> str:
    """The first error diagnostic of a failed build, else the tail of its log."""
    for diagnostic in result.diagnostics or []:
        if diagnostic.get("severity") == "error":
            where = ""
            if diagnostic.get("file"):
                where = f"{diagnostic['file']}:{diagnostic.get('line') or '?'}: "
            return where + diagnostic.get("message", "")
    log = (result.log or "").strip().splitlines()
    return " | ".join(log[-3:]) if log else result.hint or "build failed"
