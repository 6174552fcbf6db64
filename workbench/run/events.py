"""What a run reports while it goes: one frozen record per kind of event (Qt-free).

`RunService.run(on_event=fn)` calls `fn` from the run's thread with these, in this order for each
run: `RunBuilding` (once builds start), `RunBuildEvent` / `RunBuilt` (per backend, as its build
goes and ends; not for prebuilt artifact folders), `RunPhase(None, "inputs")`, then per backend ×
device `RunStarted`, `RunPhase` (upload, launch, download, verify, timing), `RunVerified` (its
output checked, the timing to come), `RunProgress` (timing heartbeats) and `RunFinished` (its
`RunResult`), and last `RunDone` (the report). The live loop passes them on inside its
`LiveRunEvent`, the window's bridge as they are (`ServiceBridge.runEvent`): readers match on the
class (`isinstance`, `match`) and read its fields as attributes. Events are not dicts and cannot be
read as one (no `event["kind"]`, no `event.get(...)`: `tests/ui/test_typed_events.py`); none
crosses a process boundary, so none has a `to_dict()` either (the worker's own messages are
`run/protocol.py`'s).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Event:
    """A typed event: the run's here, the live loop's in `profile/live/live.py`."""


@dataclass(frozen=True)
class RunEvent(Event):
    """The base of a run's events."""


@dataclass(frozen=True)
class RunBuilding(RunEvent):
    """The run's builds are starting (not sent when the run reads prebuilt artifact folders)."""

    backends: tuple[str, ...]


@dataclass(frozen=True)
class RunBuildEvent(RunEvent):
    """One of the run's own builds reported something (`workbench.build.BuildEvent`)."""

    event: Any


@dataclass(frozen=True)
class RunBuilt(RunEvent):
    """A backend's build (or prebuilt folder) is ready for the run: ok, error, cancelled, skipped."""

    backend: str
    status: str


@dataclass(frozen=True)
class RunStarted(RunEvent):
    """A backend starts on a device (`device`: the device record a result carries)."""

    backend: str
    device: dict[str, Any]


@dataclass(frozen=True)
class RunPhase(RunEvent):
    """A backend (None: the run itself, drawing its inputs) enters a phase: inputs, upload,
    launch, download, verify, timing."""

    backend: str | None
    phase: str


@dataclass(frozen=True)
class RunProgress(RunEvent):
    """A heartbeat of the worker's timing protocol: how far it is in `phase`."""

    backend: str
    phase: str
    done: Any = None


@dataclass(frozen=True)
class RunVerified(RunEvent):
    """A backend's output is checked and its timing follows: `result` is the `RunResult` without
    timing (its verdict, check, findings are final). Sent only when the check ends before the
    timing starts (where the host compares while a GPU is timed, the verdict comes with the timing
    in `RunFinished`), so an edit's verdict is shown without waiting for the samples."""

    backend: str
    device: dict[str, Any]
    result: Any  # workbench.records.RunResult, timing None


@dataclass(frozen=True)
class RunFinished(RunEvent):
    """A backend's result on a device, as soon as it is made (the others may still run)."""

    backend: str
    device: dict[str, Any]
    result: Any  # workbench.records.RunResult


@dataclass(frozen=True)
class RunDone(RunEvent):
    """The run is over: its whole report (results in the order asked)."""

    report: Any  # workbench.run.service.RunReport
