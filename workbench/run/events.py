"""What a run reports while it goes: one frozen record per kind of event (Qt-free).

`RunService.run(on_event=fn)` calls `fn` from the run's thread with these, in this order for
each run: `RunBuilding` (once builds start), `RunBuildEvent` / `RunBuilt` (per backend, as its
build goes and ends; not for prebuilt artifact folders), `RunPhase(None, "inputs")`, then per
backend × device `RunStarted`, `RunPhase` (upload, launch, download, verify, timing),
`RunProgress` (timing heartbeats) and `RunFinished` (its `RunResult`), and last `RunDone` (the
report). The live loop passes them on inside its `LiveRunEvent`, the window's bridge as they are
(`ServiceBridge.runEvent`): readers match on the class (`isinstance`, `match`), never on text.

Every event also answers `event["kind"]` / `event.get("backend")`, the dict shape events had
before they were typed, so a reader written against it still works; new code reads attributes.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar


@dataclass(frozen=True)
class Event:
    """A typed event (the run's here, the live loop's in `profile/live.py`); `kind` names it as
    the dict events did."""

    kind: ClassVar[str] = ""

    def get(self, key: str, default: Any = None) -> Any:
        """The field `key` (or "kind"), `default` when the event has no such field."""
        if key == "kind":
            return self.kind
        if key in {f.name for f in fields(self)}:
            return getattr(self, key)
        return default

    def __getitem__(self, key: str) -> Any:
        missing = object()
        value = self.get(key, missing)
        if value is missing:
            raise KeyError(key)
        return value


@dataclass(frozen=True)
class RunEvent(Event):
    """The base of a run's events."""


@dataclass(frozen=True)
class RunBuilding(RunEvent):
    """The run's builds are starting (not sent when the run reads prebuilt artifact folders)."""

    kind: ClassVar[str] = "building"
    backends: tuple[str, ...]


@dataclass(frozen=True)
class RunBuildEvent(RunEvent):
    """One of the run's own builds reported something (`workbench.build.BuildEvent`)."""

    kind: ClassVar[str] = "build-event"
    event: Any


@dataclass(frozen=True)
class RunBuilt(RunEvent):
    """A backend's build (or prebuilt folder) is ready for the run: ok, error, cancelled, skipped."""

    kind: ClassVar[str] = "built"
    backend: str
    status: str


@dataclass(frozen=True)
class RunStarted(RunEvent):
    """A backend starts on a device (`device`: the device record a result carries)."""

    kind: ClassVar[str] = "started"
    backend: str
    device: dict[str, Any]


@dataclass(frozen=True)
class RunPhase(RunEvent):
    """A backend (None: the run itself, drawing its inputs) enters a phase: inputs, upload,
    launch, download, verify, timing."""

    kind: ClassVar[str] = "phase"
    backend: str | None
    phase: str


@dataclass(frozen=True)
class RunProgress(RunEvent):
    """A heartbeat of the worker's timing protocol: how far it is in `phase`."""

    kind: ClassVar[str] = "progress"
    backend: str
    phase: str
    done: Any = None


@dataclass(frozen=True)
class RunFinished(RunEvent):
    """A backend's result on a device, as soon as it is made (the others may still run)."""

    kind: ClassVar[str] = "finished"
    backend: str
    device: dict[str, Any]
    result: Any  # workbench.records.RunResult


@dataclass(frozen=True)
class RunDone(RunEvent):
    """The run is over: its whole report (results in the order asked)."""

    kind: ClassVar[str] = "done"
    report: Any  # workbench.run.service.RunReport


#: Every kind of run event, by the name the dict events had.
RUN_EVENTS: dict[str, type[RunEvent]] = {
    cls.kind: cls for cls in (RunBuilding, RunBuildEvent, RunBuilt, RunStarted, RunPhase, RunProgress,
                              RunFinished, RunDone)
}  # fmt: skip
