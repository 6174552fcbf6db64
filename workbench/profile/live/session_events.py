"""What a `WindowSession` tells its listeners: one frozen record per kind of event (Qt-free).

The window's bridge re-emits each as the Qt signal of the same name (`ui/bridge.py`'s
`SIGNAL_OF`); a test or a script subscribes to the session directly. Events reach listeners on
the thread that owns the session (the thread that calls `WindowSession.deliver`, the GUI thread
in the window), or on the caller's thread for what an action says at once (`set_sizes`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ProjectChanged:
    project: Any  # Project or None


@dataclass(frozen=True)
class BuildEventSeen:
    event: Any  # build.service.BuildEvent


@dataclass(frozen=True)
class BuildFinished:
    results: dict[str, Any]  # backend -> BuildResult


@dataclass(frozen=True)
class RunEventSeen:
    event: Any  # run.events.RunEvent of the run in progress


@dataclass(frozen=True)
class RunFinished:
    report: Any  # RunReport as shown: failed rows keep their last good result, stale


@dataclass(frozen=True)
class BusyChanged:
    busy: bool


@dataclass(frozen=True)
class LatencyMeasured:
    seconds: float  # edit (or run) to result, of the last live cycle


@dataclass(frozen=True)
class StatusMessage:
    text: str


@dataclass(frozen=True)
class DevicesListed:
    info: dict[str, Any]  # list_devices() answer (with `hosts` once probed), or {"error": str}


@dataclass(frozen=True)
class BackendsChanged:
    backends: list[str]


@dataclass(frozen=True)
class LineInfoReady:
    folder: str  # the artifact folder
    path: Any  # the `.lines.ptx` (or `.lines.asm`) path, or None
    message: str  # why not, when path is None


@dataclass(frozen=True)
class ManifestChecked:
    diagnostics: list[dict]  # Diagnostic.to_dict() of what is wrong with workbench.toml ([]: nothing)


@dataclass(frozen=True)
class SizesChanged:
    sizes: dict[str, int]  # the sizes runs use instead of the manifest's ({}: its own)


@dataclass(frozen=True)
class RunRecorded:
    outcome: dict[str, Any]  # {"ids", "rows", "db"} or {"error"}


@dataclass(frozen=True)
class CountersRecorded:
    outcome: dict[str, Any]  # {"ids": {key: run id}, "not_recorded": {key: why}} or {"error"}


SESSION_EVENTS: tuple[type, ...] = (
    ProjectChanged,
    BuildEventSeen,
    BuildFinished,
    RunEventSeen,
    RunFinished,
    BusyChanged,
    LatencyMeasured,
    StatusMessage,
    DevicesListed,
    BackendsChanged,
    LineInfoReady,
    ManifestChecked,
    SizesChanged,
    RunRecorded,
    CountersRecorded,
)
