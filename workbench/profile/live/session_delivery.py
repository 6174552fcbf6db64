"""What each item the services report does to a `WindowSession`, on the owner's thread (Qt-free).

`deliver(item)` takes what `WindowSession._post` handed over: a live-loop event, a console run's
run event, or one of the session's own `(kind, payload)` items; it updates the session's state
(the shown report merged with the last good results, the recordings, busy) and says so through
`session_events`.
"""

from __future__ import annotations

from typing import Any

from workbench.profile.live import session_events as ev
from workbench.profile.live.live_events import (
    LiveBuildFinished,
    LiveCycleFinished,
    LiveCycleStarted,
    LiveEvent,
    LiveIdle,
    LiveManifest,
    LiveProject,
    LiveRunEvent,
)
from workbench.run.events import RunEvent, RunPhase

#: The status bar's words for builds a run does not wait for (their runtime is unavailable here).
BUILDING_IN_BACKGROUND = "still building in the background, for inspection (no runtime here: not run)"


def background_status(builds: dict[str, Any]) -> str:
    """The status once the background builds are done: each backend's outcome."""
    done = ", ".join(f"{b} {getattr(r, 'status', '?')}" for b, r in builds.items())
    return f"built in the background, for inspection: {done}"


class SessionDelivery:
    """The delivery half of `WindowSession` (it defines the state and `_emit`, `_record`, ...)."""

    def deliver(self, item: LiveEvent | RunEvent | tuple[str, Any]) -> None:
        """Owner's thread: turn a posted item into state and events."""
        if self._closed:
            return
        if isinstance(item, LiveEvent):
            self._deliver_live(item)
            return
        if isinstance(item, RunEvent):  # a console run's (`start_run`)
            self._emit(ev.RunEventSeen(item))
            self._status_of_run_event(item)
            return
        kind, payload = item
        if kind == "build":
            self._emit(ev.BuildEventSeen(payload))
        elif kind == "devices":
            self.devices_info = payload
            self._emit(ev.DevicesListed(payload))
        elif kind == "line-info":
            self._emit(ev.LineInfoReady(*payload))
        elif kind == "default-backends":
            project, backends = payload
            if project is self.project and not self.loop.backends:  # still nobody's choice
                self._emit(ev.BackendsChanged(list(backends)))
        elif kind == "job-build":
            self.last_build = payload
            self._emit(ev.BuildFinished(payload))
        elif kind == "job-run":
            self._console_run_finished(*payload)
        elif kind == "recorded":
            self._emit(ev.RunRecorded(payload))
        elif kind == "counters-recorded":
            self._emit(ev.CountersRecorded(payload))
        elif kind in ("job-failed", "status"):
            self._emit(ev.StatusMessage(payload))
        elif kind == "job-ended":
            self.jobs.ended()
            self._settle_busy()

    def _console_run_finished(self, report: Any, sources: Any) -> None:
        # As the window's own Run: failed rows keep their last good result, shown stale.
        shown = self.last_good.merge(report, {})
        if len(shown.results) == len(report.results) and all(
            a is b for a, b in zip(shown.results, report.results, strict=True)
        ):
            shown = report  # nothing stale: the console's report is the one shown
        self.last_report = shown
        self._record(shown, sources)
        self._emit(ev.RunFinished(shown))
        self._emit(ev.StatusMessage("run finished"))

    def _deliver_live(self, event: LiveEvent) -> None:
        match event:
            case LiveCycleStarted():
                self._set_busy(True)
                what = {"save": "rebuilding", "build": "building", "run": "building and running"}
                self._emit(
                    ev.StatusMessage(f"{what.get(event.reason, 'working')}: {', '.join(event.backends)}")
                )
            case LiveProject():
                self.project = event.project
                self._emit(ev.ProjectChanged(self.project))
            case LiveManifest():
                self.manifest_diagnostics = list(event.diagnostics)
                self._publish_manifest([d.to_dict() for d in event.diagnostics])
            case LiveBuildFinished():
                if event.background:  # builds an earlier cycle left going: added to the last
                    self.last_build = {**(self.last_build or {}), **event.results}
                    self._emit(ev.StatusMessage(background_status(event.results)))
                    self._settle_busy()
                else:
                    self.last_build = event.results
                self._emit(ev.BuildFinished(event.results))
            case LiveRunEvent():
                self._emit(ev.RunEventSeen(event.event))
                self._status_of_run_event(event.event)
            case LiveCycleFinished():
                self._cycle_finished(event)
            case LiveIdle():
                self._settle_busy()

    def _status_of_run_event(self, event: RunEvent) -> None:
        """The run's phase in the status bar (inputs, upload, launch, verify, timing ...): a long
        run shows where it is."""
        if isinstance(event, RunPhase):
            where = f"{event.backend} {event.phase}" if event.backend else event.phase
            self._emit(ev.StatusMessage(f"run: {where}"))

    def _cycle_finished(self, event: LiveCycleFinished) -> None:
        status = event.status
        report = event.report
        build = event.build or {}
        sources = self._cycle_sources.pop(event.cycle, None)
        self._cycle_projects.pop(event.cycle, None)  # a cycle that stopped before its build
        shown = None
        if report is not None:
            self.reference_changed = event.reference_changed
            # Failed rows (and rows of backends whose build failed) show their last good result, stale.
            shown = self.last_good.merge(report, build)
        elif self.last_report is not None and status == "error":
            shown = self.last_good.all_stale(self.last_report, event.error or "the build failed")
        elif self.last_report is not None and any(
            getattr(r, "status", "") == "error" for r in build.values()
        ):
            # A build without a run: what the table shows is from before this build.
            reasons = {b: f"{b} build error" for b, r in build.items() if r.status == "error"}
            shown = self.last_good.all_stale(self.last_report, "not rerun since the last build", reasons)
        if shown is not None:
            self.last_report = shown
            if report is not None:
                self._record(shown, sources)
            self._emit(ev.RunFinished(shown))
        if status == "ok" and event.latency_s is not None and report is not None:
            self.last_latency_reason = event.reason
            self._emit(ev.LatencyMeasured(event.latency_s))
            what = "edit to result" if self.last_latency_reason == "save" else "run to result"
            building = event.building
            still = f"; {', '.join(building)} {BUILDING_IN_BACKGROUND}" if building else ""
            self._emit(ev.StatusMessage(f"{what}: {event.latency_s:.2f} s{still}"))
        elif status == "ok":
            self._emit(ev.StatusMessage("build finished" if report is None else "run finished"))
        elif status == "cancelled":
            self._emit(ev.StatusMessage("cancelled"))
        else:
            self._emit(ev.StatusMessage(event.error or "failed"))
        self._settle_busy()
