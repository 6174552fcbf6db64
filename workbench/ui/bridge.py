"""The one place where Qt meets the core services: a relay over the Qt-free `WindowSession`.

The session (`profile/live/window_session.py`) owns the build and run services, the live loop, the
selection, the console's jobs, the recording of every run and the last good results. The bridge
gives it a `post` that brings what service threads report to the GUI thread
(`paced_relay.PacedRelay`: in order, a few milliseconds of it per turn of the event loop) and a
`defer` that starts console jobs on the next turn of the event loop; it subscribes to the
session's typed events and re-emits each as the Qt signal of the same name (`SIGNAL_OF`), so
widgets are only ever touched from the GUI thread (pyqtgraph#1398). Its methods and attributes
are the session's (`_FORWARDED`, `_STATE`, made class members below): the panels and the console
call them as before.
"""

from __future__ import annotations

import inspect
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal, Slot

from workbench.profile.live import session_events as ev
from workbench.profile.live.window_session import WindowSession
from workbench.ui.paced_relay import PacedRelay

#: Session event type -> (the bridge's signal name, how the event's fields become its arguments).
SIGNAL_OF: dict[type, tuple[str, Any]] = {
    ev.ProjectChanged: ("projectChanged", lambda e: (e.project,)),
    ev.BuildEventSeen: ("buildEvent", lambda e: (e.event,)),
    ev.BuildFinished: ("buildFinished", lambda e: (e.results,)),
    ev.RunEventSeen: ("runEvent", lambda e: (e.event,)),
    ev.RunFinished: ("runFinished", lambda e: (e.report,)),
    ev.BusyChanged: ("busyChanged", lambda e: (e.busy,)),
    ev.LatencyMeasured: ("latencyMeasured", lambda e: (e.seconds,)),
    ev.StatusMessage: ("statusMessage", lambda e: (e.text,)),
    ev.DevicesListed: ("devicesListed", lambda e: (e.info,)),
    ev.BackendsChanged: ("backendsChanged", lambda e: (e.backends,)),
    ev.LineInfoReady: ("lineInfoReady", lambda e: (e.folder, e.path, e.message)),
    ev.ManifestChecked: ("manifestChecked", lambda e: (e.diagnostics,)),
    ev.SizesChanged: ("sizesChanged", lambda e: (e.sizes,)),
    ev.RunRecorded: ("runRecorded", lambda e: (e.outcome,)),
    ev.CountersRecorded: ("countersRecorded", lambda e: (e.outcome,)),
}

#: The session's methods the bridge offers as its own (the panels', console's and tests' calls).
_FORWARDED = (
    "set_project", "check_manifest", "set_backends", "backends", "set_devices", "devices",
    "set_trace", "trace", "set_writers", "writers", "set_sizes", "sizes", "kernel_name", "set_tunables", "tunables",
    "expected_reference", "build", "run", "on_saved", "cancel", "refresh_devices",
    "request_line_info", "start_build", "start_run", "build_blocking", "run_blocking",
    "recording_of", "run_ids", "record_counters",
)  # fmt: skip
#: The session's state the bridge shows (and sets on it).
_STATE = (
    "project", "last_build", "last_report", "devices_info", "last_good", "reference_changed",
    "manifest_diagnostics", "last_latency_reason", "cache_dir", "recorder", "loop", "run_service",
    "build_service", "busy",
)  # fmt: skip


class ServiceBridge(QObject):
    """The window's `WindowSession`, its events as queued Qt signals."""

    projectChanged = Signal(object)  # Project
    buildEvent = Signal(object)  # BuildEvent
    buildFinished = Signal(object)  # dict[str, BuildResult]
    runEvent = Signal(object)  # RunEvent (workbench.run.events) of the run in progress
    runFinished = Signal(object)  # RunReport
    busyChanged = Signal(bool)
    latencyMeasured = Signal(float)  # edit-to-result seconds of the last hot-reload cycle
    statusMessage = Signal(str)
    # Beyond the composition contract: what the device picker, the build panel and the window use.
    devicesListed = Signal(object)  # list_devices() dict, or {"error": str}
    backendsChanged = Signal(object)  # list[str]
    #: (artifact folder, `.lines.ptx` path or None, message): the on-demand line-table build is done.
    lineInfoReady = Signal(str, object, str)
    #: list[dict] (Diagnostic.to_dict()): what is wrong with workbench.toml as last read ([]: nothing).
    manifestChecked = Signal(object)
    #: dict[str, int]: the sizes runs use instead of the manifest's ({}: the manifest's own).
    sizesChanged = Signal(object)
    #: After each recording of a finished run: {"ids": [...], "rows": {(backend, device): id},
    #: "db": file} or {"error": "..."}.
    runRecorded = Signal(object)
    #: After `record_counters`: {"ids": {key: run id}, "not_recorded": {key: why}} or {"error": ...}.
    countersRecorded = Signal(object)
    #: {"buffer", "index", "writer" (its `sim_writers` record, or None)}: the details view's "Debug
    #: element", for the Debug dock (`ui/debug`).
    debugRequested = Signal(object)

    def __init__(self, parent: QObject | None = None, cache_dir: Any = None, recorder: Any = None):
        super().__init__(parent)
        self._closed = False
        self._relay = PacedRelay(self._deliver, self)
        self.session = WindowSession(
            cache_dir=cache_dir,
            recorder=recorder,
            post=self._relay.post,
            defer=lambda start: QTimer.singleShot(0, start),
        )
        self.session.subscribe(self._emit)

    def shutdown(self) -> None:
        """Cancel everything, stop every thread the session started and wait for them. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self.session.shutdown()
        self._relay.close()

    @Slot(object)
    def _deliver(self, item: Any) -> None:
        """GUI thread: a posted item goes to the session, whose events come back as signals."""
        if not self._closed:
            self.session.deliver(item)

    def _emit(self, event: Any) -> None:
        name, arguments = SIGNAL_OF[type(event)]
        getattr(self, name).emit(*arguments(event))


def _state(name: str) -> property:
    return property(
        lambda self: getattr(self.session, name),
        lambda self, value: setattr(self.session, name, value),  # tests and scripts set devices_info
        doc=f"The session's `{name}`.",
    )


def _forward(name: str) -> Any:
    method = getattr(WindowSession, name)

    def call(self, *args: Any, **kwargs: Any) -> Any:
        return getattr(self.session, name)(*args, **kwargs)

    call.__name__, call.__doc__, call.__signature__ = name, method.__doc__, inspect.signature(method)
    return call


# The session's state and methods as the bridge's own class members, so the panels' Protocols
# (tests/ui/test_typed_events.py) find them on the class as on an instance.
for _name in _STATE:
    setattr(ServiceBridge, _name, _state(_name))
for _name in _FORWARDED:
    setattr(ServiceBridge, _name, _forward(_name))
