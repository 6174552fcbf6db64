"""The live loop's events (Qt-free; `live.py` emits them from its worker thread).

Events (one frozen record per kind, below; read by class and attribute, never as dicts):

- `LiveCycleStarted` (cycle, reason, path, backends, affected)
- `LiveProject` (cycle, project) — `workbench.toml` changed on disk: the cycle uses it
- `LiveManifest` (cycle, diagnostics) — what is wrong with `workbench.toml` as read this cycle
  (`build.manifest_check.on_disk`; empty: nothing), before any build
- `LiveBuildFinished` (cycle, results: {backend: BuildResult}, rebuilt, cached, background) —
  after a run, the builds done by then; a second one (`background` True, with just those) once
  the builds the run did not wait for (runtime unavailable here) are done too; later cycles
  neither wait for nor restart a backend still building in the background
- `LiveRunEvent` (cycle, event) — an event of the run service (`workbench.run.events`), as it
  came; each backend runs as soon as its own build is done (`RunService.run(build_job=...)`)
- `LiveCycleFinished` (cycle, status, reason, latency_s, build, report, error,
  reference_changed, project, building) where status is ``ok``, ``error`` (nothing could run;
  `error` says why) or ``cancelled`` (superseded or cancelled; `build` and `report` keep
  whatever had finished). `building`: the backends still building in the background after a
  run. `reference_changed` is None, or (when a check failed and the reference backend's own
  sources changed since the last run in which every backend agreed) ``{reference, message,
  failed, unchanged}`` — see `AgreementTracker`.
- `LiveIdle` after a cycle, once no request is in flight or pending.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from workbench.project import Project
from workbench.run.events import Event, RunEvent


@dataclass(frozen=True)
class LiveEvent(Event):
    """The base of the live loop's events."""


@dataclass(frozen=True)
class LiveCycleStarted(LiveEvent):
    """A cycle starts: why, the saved file, the backends it builds and runs."""

    cycle: int
    reason: str  # save | build | run
    path: str | None
    backends: list[str]
    affected: list[str]  # those whose build reads `path` (`affected_backends`)


@dataclass(frozen=True)
class LiveProject(LiveEvent):
    """`workbench.toml` changed on disk: the cycle uses this project."""

    cycle: int
    project: Project


@dataclass(frozen=True)
class LiveManifest(LiveEvent):
    """What is wrong with `workbench.toml` as this cycle read it (empty: nothing)."""

    cycle: int
    diagnostics: list[Any]  # workbench.records.Diagnostic


@dataclass(frozen=True)
class LiveBuildFinished(LiveEvent):
    """The cycle's builds done by its run (`background`: those it did not wait for, later)."""

    cycle: int
    results: dict[str, Any]  # backend -> BuildResult
    rebuilt: list[str]
    cached: list[str]
    background: bool = False


@dataclass(frozen=True)
class LiveRunEvent(LiveEvent):
    """An event of the cycle's run, as the run service made it."""

    cycle: int
    event: RunEvent


@dataclass(frozen=True)
class LiveCycleFinished(LiveEvent):
    """A cycle is over: ok, error (nothing could run) or cancelled."""

    cycle: int
    reason: str
    status: str  # ok | error | cancelled
    latency_s: float | None = None
    build: dict[str, Any] | None = None
    report: Any = None  # RunReport
    error: str | None = None
    reference_changed: dict[str, Any] | None = None
    project: Project | None = None
    building: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class LiveIdle(LiveEvent):
    """No request is in flight or pending any more."""


LiveListener = Callable[[LiveEvent], None]
