"""What one run is asked to do (`RunRequest`), and the error for a run that cannot start.

Every caller in the workbench (the command line, the live loop, the window's session, sweeps, a
cluster worker, the self-test) builds one with `RunRequest.of(...)` and hands it to
`RunService.execute`, so the arguments travel as one value instead of fourteen;
`RunService.run(...)` takes the same as keywords, for scripts and tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.errors import WorkbenchError
from workbench.project import Project


class RunError(WorkbenchError):
    """A run cannot start: unknown size, backend or device, or a missing artifact folder."""


@dataclass(frozen=True)
class RunRequest:
    """One run: `kernel` of `project` on `backends` × `devices` at `sizes` and `tunables`."""

    project: Project
    kernel: str | None = None
    #: Backend names as asked (None or empty: `RunService.default_backends`).
    backends: tuple[str, ...] | None = None
    #: Device specs (`cpu`, `wgpu:0`, `HOST/cuda:0`); none: each runtime's default device here.
    devices: tuple[str, ...] = ()
    sizes: dict[str, int] | None = None
    tunables: dict[str, int | float] | None = None
    #: Seconds a launch may take before its worker is killed.
    timeout_s: float = 10.0
    #: Prebuilt artifact folders (`workbench build --export`): nothing is built.
    artifacts_dir: str | Path | None = None
    build_service: Any = None
    #: A `BuildJob` the caller started (the live loop): its builds are taken as they finish.
    build_job: Any = None
    cache_dir: str | Path | None = None
    seed: int | None = None
    #: The user's reference backend for this run; None: the kernel's `[kernel.check] reference`.
    reference: str | None = None
    #: False: only the reference's outputs stay in the report (the command line).
    keep_outputs: bool = True
    #: The invocation whose `ctx.trace` values cpu-sim records (`sim_trace.TracePoint`); None: none.
    trace: Any = None
    #: cpu-sim records each output element's writer: the elements named (`[(buffer, index)]`,
    #: `sim_writers.parse_elements`) besides the check's mismatches; None: no writers.
    writers: list[tuple[str, int]] | None = None

    @classmethod
    def of(
        cls,
        project: Project | str | Path,
        backends: list[str] | tuple[str, ...] | str | None = None,
        devices: list[str] | tuple[str, ...] | None = None,
        **options: Any,
    ) -> RunRequest:
        """The request for `RunService.run`'s keywords: a project path opened, a "cpu,wgsl"
        string split into names."""
        if not isinstance(project, Project):
            project = Project.open(project)
        if isinstance(backends, str):
            backends = [b for b in backends.split(",") if b.strip()]
        return cls(
            project=project,
            backends=tuple(backends) if backends else None,
            devices=tuple(devices or ()),
            **options,
        )
