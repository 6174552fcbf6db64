"""The build stage of a run: each backend's build (or prebuilt artifact folder) as soon as it is done.

`BuildStream` hands the run each backend's outcome when that backend's own build ends, so the
run starts a backend while the others still build (the first result does not wait for the
slowest build). Builds go through the caller's `BuildService` (the window, the console: a newer
build cancels an older one), a `BuildJob` the caller started (the live loop, which also builds
backends that cannot run here, for inspection, without the run waiting for them), or a service
of the stream's own (the CLI); prebuilt folders (`--artifacts DIR`) are read instead of building.
Each backend ends as a `StagedBuild`: ok (with its build.json and folder), error (with the first
error diagnostic) or skipped (with the reason).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.errors import WorkbenchError
from workbench.project import Project
from workbench.run.events import RunBuildEvent, RunBuilding, RunBuilt, RunEvent


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


class BuildStream:
    """Each backend's `StagedBuild` as soon as its own build is done; emits `RunBuilding` once and
    `RunBuilt` (backend, status) as the run takes each build. `close()` ends a service it owns."""

    def __init__(
        self,
        job: Any = None,
        ready: dict[str, StagedBuild] | None = None,
        emit=None,
        owned=None,
        service=None,
    ):
        self._job = job
        self._staged: dict[str, StagedBuild] = dict(ready or {})
        self._emit = emit or (lambda event: None)
        self._owned = owned
        self._service = owned or service
        self._backends: list[str] = []

    @classmethod
    def prebuilt(cls, backends: list[str], artifacts_dir: str | Path) -> BuildStream:
        """The builds in an exported folder, all ready at once."""
        return cls(ready=prebuilt(backends, artifacts_dir))

    @classmethod
    def start(
        cls,
        project: Project,
        backends: list[str],
        emit: Callable[[RunEvent], None],
        build_service: Any = None,
        job: Any = None,
        cache_dir: str | Path | None = None,
        tunables: dict[str, int | float] | None = None,
    ) -> BuildStream:
        """Start building `backends` (returns at once): on `job` when the caller started one,
        else on `build_service`, else on a service of the stream's own (its build events are
        emitted as `RunBuildEvent`)."""
        owned = None
        if backends:
            emit(RunBuilding(tuple(backends)))
        if job is None and backends:
            if build_service is None:
                from workbench.build import BuildService

                build_service = owned = BuildService(cache_dir=cache_dir)
                owned.subscribe(lambda event: emit(RunBuildEvent(event)))
            job = build_service.submit(project, list(backends), tunables=tunables)
        stream = cls(job=job, emit=emit, owned=owned, service=build_service)
        stream._backends = list(backends)
        missing = [b for b in backends if job is None or b not in job.backends]
        for backend in missing:  # a job the caller started without it
            stream._staged[backend] = StagedBuild(backend, "skipped", message="not built: not in this build")
        return stream

    def cancel(self) -> None:
        """Stop the builds this stream waits for (others of the caller's job go on)."""
        if self._service is not None:
            for backend in self._backends:
                if backend not in self._staged:
                    self._service.cancel(backend)

    def get(self, backend: str) -> StagedBuild:
        """`backend`'s outcome; waits for its build (only its own)."""
        if backend not in self._staged:
            if self._job is None or backend not in self._job.backends:
                return StagedBuild(backend, "skipped", message="not built")
            self._job.wait_any([backend])
            self._take(backend)
        return self._staged[backend]

    def next_done(self, backends: list[str]) -> str:
        """Of `backends`, the first whose outcome is known (waits for the first build to end)."""
        for backend in backends:
            if backend in self._staged or self._job is None or backend not in self._job.backends:
                return backend
        backend = self._job.wait_any(backends)
        self._take(backend)
        return backend

    def _take(self, backend: str) -> None:
        result = self._job.finished()[backend]
        self._staged[backend] = staged(result)
        self._emit(RunBuilt(result.backend, result.status))

    def close(self) -> None:
        """Stop and close a build service of the stream's own (the caller's stays open)."""
        if self._owned is not None:
            self._owned.close()


def staged(result: Any) -> StagedBuild:
    """A `BuildResult` as the run needs it (build.json read for an ok build)."""
    from workbench.build.artifacts import read_build

    if result.status == "ok":
        try:
            return StagedBuild(result.backend, "ok", read_build(result.artifact_dir), result.artifact_dir)
        except (OSError, ValueError, WorkbenchError) as exc:
            return StagedBuild(result.backend, "error", message=f"unreadable build: {exc}")
    if result.status == "skipped":
        message = f"not built: {result.hint}" if result.hint else "not built"
        return StagedBuild(result.backend, "skipped", message=message)
    return StagedBuild(result.backend, "error", message=build_error(result))


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
