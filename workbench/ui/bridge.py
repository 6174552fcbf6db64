"""The one place where Qt meets the core services: builds, runs and the hot-reload loop.

`ServiceBridge` owns a `BuildService`, a `RunService` and a `LiveLoop` (all Qt-free). Their work
happens on their own threads and child processes; what they report is posted to the GUI thread
(`paced_relay.PacedRelay`: in order, a few milliseconds of it per turn of the event loop) and
re-emitted there as the bridge's public signals, so widgets are only ever touched from the GUI
thread (pyqtgraph#1398). Nothing here waits on a process or a thread while the event loop runs,
except `shutdown()`, which waits for every thread it started.

The console's `build()` / `run()` go through `start_build` / `start_run`: they return a
`concurrent.futures.Future` at once and do the work on a thread of their own, started on the next
turn of the event loop (at once when the result is waited for); the results reach the panels
through the same signals as the window's Build and Run (`buildFinished`, `runEvent`,
`runFinished`).

Recording is the bridge's, not a panel's: every run it finishes (the window's Run, a save's rerun,
the console's `run()`) goes to the `SessionRecorder` the composition root hands it, with the
sources snapshotted when that run's build started; `runRecorded` says how each recording went.
The bridge keeps, for each result it shows, the recording its run went into (or why it went into
none), so counters taken afterwards (the Counters dock's *Take counters*) are recorded with that
run through `record_counters`, behind the recording on the recorder's thread; `countersRecorded`
says how.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal, Slot

from workbench.backends import BACKENDS
from workbench.errors import WorkbenchError
from workbench.profile.live.last_good import LastGood, fresh_only
from workbench.profile.live.live import (
    LiveBuildFinished,
    LiveCycleFinished,
    LiveCycleStarted,
    LiveEvent,
    LiveIdle,
    LiveLoop,
    LiveManifest,
    LiveProject,
    LiveRunEvent,
)
from workbench.profile.sessions.findings_history import dispute_from_history
from workbench.project import Project
from workbench.run.events import RunEvent, RunPhase
from workbench.ui.paced_relay import PacedRelay

log = logging.getLogger(__name__)


#: The status bar's words for builds a run does not wait for (their runtime is unavailable here).
BUILDING_IN_BACKGROUND = "still building in the background, for inspection (no runtime here: not run)"


def background_status(builds: dict[str, Any]) -> str:
    """The status once the background builds are done: each backend's outcome."""
    done = ", ".join(f"{b} {getattr(r, 'status', '?')}" for b, r in builds.items())
    return f"built in the background, for inspection: {done}"


class _JobFuture(Future):
    """A console job's Future: its thread starts on the next turn of the event loop, so the typed
    statement returns (and the console draws its prompt) before the job's Python work competes
    with it for the interpreter; or at once when something waits for its result."""

    def __init__(self, thread: threading.Thread):
        super().__init__()
        self.thread = thread
        self._lock = threading.Lock()
        self._started = False

    def start(self) -> None:
        with self._lock:
            if self._started:
                return
            self._started = True
        self.thread.start()

    @property
    def started(self) -> bool:
        return self._started

    def result(self, timeout: float | None = None) -> Any:
        self.start()
        return super().result(timeout)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        self.start()
        return super().exception(timeout)


class ServiceBridge(QObject):
    """Build, run and hot-reload a project off the GUI thread; report through queued signals."""

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

    def __init__(
        self, parent: QObject | None = None, cache_dir: str | Path | None = None, recorder: Any = None
    ):
        super().__init__(parent)
        from workbench.build import BuildService
        from workbench.run.service import RunService
        from workbench.run.timing import INTERACTIVE

        self.project: Project | None = None
        self.last_build: dict[str, Any] | None = None
        self.last_report: Any = None
        self.devices_info: dict[str, Any] | None = None
        #: Good results kept across failed builds and runs (shown stale); see profile.last_good.
        self.last_good = LastGood()
        #: The live loop's note when the reference's own source changed since all agreed (or None).
        self.reference_changed: dict[str, Any] | None = None
        #: What is wrong with workbench.toml as `check_manifest` last read it (Diagnostic records).
        self.manifest_diagnostics: list[Any] = []
        self._published_manifest: list[dict] | None = None  # what `manifestChecked` last said
        #: "save" (edit → result) or "run" (run → result): what `latencyMeasured` measured.
        self.last_latency_reason = ""
        self.cache_dir = cache_dir
        #: The `SessionRecorder` every finished run goes to (None: nothing is recorded); closed
        #: by `shutdown()`, after the runs in flight.
        self.recorder = recorder
        #: id(result.provenance) -> (that provenance, the Future of its run's recording or why
        #: it was not recorded), for the results shown and the last good ones (a stale row keeps
        #: its provenance dict: `LastGood.stale_copy` copies the result, not the dict). GUI thread.
        self._recordings: dict[int, tuple[dict[str, Any], Future | str]] = {}
        #: Live cycle -> the sources snapshotted as its build started (loop thread writes, GUI reads).
        self._cycle_sources: dict[int, Any] = {}
        self._cycle_projects: dict[int, Project | None] = {}
        self._busy = False
        self._closed = False
        self._device_thread: threading.Thread | None = None
        self._jobs: list[_JobFuture] = []  # console builds and runs (each its thread)
        self._jobs_running = 0  # console builds and runs in flight (GUI thread's count)
        self._line_threads: dict[str, threading.Thread] = {}
        self._line_budget = None  # the Budget of the line-table builds (cancelled at shutdown)

        # Typed events and the bridge's own (kind, payload) items, from service threads to the
        # GUI thread: in order, a few milliseconds of delivery per turn of the event loop.
        self._relay = PacedRelay(self._deliver, self)
        self.build_service = BuildService(cache_dir=cache_dir)
        # Interactive timing: the edit-to-result loop favours latency (see timing.INTERACTIVE).
        self.run_service = RunService(timing=INTERACTIVE)
        # No backends chosen: the command line's default (`RunService.default_backends`).
        self.loop = LiveLoop(self.build_service, self.run_service, backends=[])
        self._defaults_thread: threading.Thread | None = None
        self.build_service.subscribe(self._on_build_event)
        self.loop.subscribe(self._on_live_event)

    # ------------------------------------------------------------------ selection
    def set_project(self, project: Project | str | Path | None) -> None:
        """Switch to `project` (a Project or its folder); cancels work on the previous one."""
        if project is not None and not isinstance(project, Project):
            try:
                project = Project.open(project)
            except WorkbenchError as exc:
                self.statusMessage.emit(str(exc))
                return
        self.loop.cancel()
        self.project = project
        self.last_build = None
        self.last_report = None
        self.last_good.forget()
        self._recordings.clear()
        self.loop.agreement.forget()
        self.reference_changed = None
        self.projectChanged.emit(project)
        self._published_manifest = None  # the new project's state is said even when it matches
        if project is None:
            self._publish_manifest([])
        else:
            self.check_manifest()  # what its sources contradict shows before anything builds
        if not self.loop.backends:
            self._show_default_backends()

    def check_manifest(self) -> Project | None:
        """Re-read workbench.toml as the folder holds it now (`build.manifest_check.on_disk`): a
        changed one becomes the project (`projectChanged`); `manifestChecked` says what is wrong.
        Returns the project as read, None when it no longer loads (`manifest_diagnostics` say why)."""
        if self._closed or self.project is None:
            return None
        from workbench.build import manifest_check

        fresh, diagnostics = manifest_check.on_disk(self.project)
        if fresh is not None and fresh is not self.project:
            self.project = fresh
            self.projectChanged.emit(fresh)
        self.manifest_diagnostics = diagnostics
        self._publish_manifest([d.to_dict() for d in diagnostics])
        return fresh

    def _publish_manifest(self, diagnostics: list[dict]) -> None:
        """`manifestChecked`, when what is wrong with workbench.toml differs from what was last
        said. Every save and every console `build()` / `run()` re-reads the manifest; saying
        the same again would redo the diagnostics list and every editor's markers on the GUI
        thread (about 2 ms a check) for nothing."""
        if diagnostics == self._published_manifest:
            return
        self._published_manifest = diagnostics
        self.manifestChecked.emit(diagnostics)

    def set_backends(self, backends: list[str] | None) -> None:
        """The backends to build and run; empty: the command line's default (cpu plus every
        backend whose toolchain is installed and whose runtime is available here), which the
        live loop resolves on its thread and `backendsChanged` shows once known."""
        self.loop.backends = [b for b in backends or [] if b in BACKENDS]
        if self.loop.backends:
            self.backendsChanged.emit(list(self.loop.backends))
        else:
            self._show_default_backends()

    def backends(self) -> list[str]:
        """The chosen backends ([]: the default, see `set_backends`)."""
        return list(self.loop.backends)

    def _show_default_backends(self) -> None:
        """Find the default backends off the GUI thread (it asks the runtimes' workers)."""
        project = self.project
        if self._closed or project is None:
            return
        if self._defaults_thread is not None and self._defaults_thread.is_alive():
            return

        def work() -> None:
            current = project
            try:
                while current is not None and not self._closed:
                    backends = self.run_service.default_backends(current)
                    if current is self.project:
                        self._post("default-backends", (current, backends))
                        return
                    current = self.project  # another project opened meanwhile: its defaults
            except Exception as exc:  # a broken probe: the status bar says so, the window goes on
                self._post("job-failed", f"could not find the default backends: {exc}")

        self._defaults_thread = threading.Thread(target=work, name="wb-default-backends", daemon=True)
        self._defaults_thread.start()

    def set_devices(self, specs: list[str]) -> None:
        """Device specs to run on (`cpu`, `cuda:0`, `wgpu:0`); empty means the run service's default."""
        self.loop.devices = list(dict.fromkeys(specs))

    def devices(self) -> list[str]:
        return list(self.loop.devices)

    def set_trace(self, point: Any) -> None:
        """The invocation whose `ctx.trace` values cpu-sim records in the next runs
        (`run.sim_trace.TracePoint`; None: none)."""
        self.loop.trace = point

    def trace(self) -> Any:
        return self.loop.trace

    def set_sizes(self, sizes: dict[str, int] | None) -> None:
        """Problem sizes for runs (None: the manifest's defaults)."""
        self.loop.sizes = dict(sizes) if sizes else None
        self.sizesChanged.emit(self.sizes())

    def sizes(self) -> dict[str, int]:
        """The sizes runs use instead of the manifest's ({}: none, the manifest's own)."""
        return dict(self.loop.sizes or {})

    def kernel_name(self) -> str | None:
        """The kernel the window builds and runs (None: the manifest's first)."""
        return self.loop.kernel

    def set_tunables(self, tunables: dict[str, int | float] | None) -> None:
        """Tunables of the next builds and runs (None: the manifest's defaults); each
        configuration is its own cached build."""
        self.loop.tunables = dict(tunables) if tunables else None

    def tunables(self) -> dict[str, int | float]:
        return dict(self.loop.tunables or {})

    # ------------------------------------------------------------------ actions
    def build(self) -> None:
        """Build the selected backends (never blocks)."""
        if self._ready():
            self.loop.request_build(self.project)
            self._set_busy(True)

    def run(self) -> None:
        """Build the selected backends and run them on the selected devices (never blocks)."""
        if self._ready():
            self.loop.request_run(self.project)
            self._set_busy(True)

    def on_saved(self, path: str | Path) -> None:
        """A project file was saved: rebuild what changed, rerun, then report the latency."""
        saved_at = time.monotonic()
        if self._ready():
            self.loop.on_saved(self.project, path, saved_at=saved_at)
            self._set_busy(True)

    def cancel(self) -> None:
        """Cancel the build or run in flight (finished results stay)."""
        if not self._closed:
            self.loop.cancel()
            if self._jobs_running:
                self.run_service.cancel()
                self.build_service.cancel()
            self.statusMessage.emit("cancelling…")

    def refresh_devices(self, refresh: bool = False) -> None:
        """List devices on a background thread; `devicesListed` carries the answer."""
        if self._closed or (self._device_thread is not None and self._device_thread.is_alive()):
            return

        def work() -> None:
            from workbench.run.devices import list_devices

            try:
                info = list_devices(refresh=refresh)
            except Exception as exc:  # a broken probe must reach the user as text
                info = {"error": f"could not list devices: {exc}"}
            self._post("devices", info)
            if "error" not in info:  # then the GPU hosts' devices, probed over ssh (slower)
                from workbench.remote.hosts import HostStore
                from workbench.remote.probe import all_hosts_devices

                if HostStore().names():
                    self._post("devices", dict(info, hosts=all_hosts_devices(refresh=refresh)))

        self._device_thread = threading.Thread(target=work, name="wb-list-devices", daemon=True)
        self._device_thread.start()

    def request_line_info(self, artifact_dir: str) -> bool:
        """Build the line tables of an nvptx or cpu build (and an nvptx build's SASS where nvdisasm is)
        in the background (`workbench.build.line_info`, `workbench.build.sass`);
        `lineInfoReady` answers. False when one is in flight for that folder already."""
        if self._closed or self.project is None or not artifact_dir:
            return False
        thread = self._line_threads.get(artifact_dir)
        if thread is not None and thread.is_alive():
            return False
        from workbench.build.process import Budget

        if self._line_budget is None:
            self._line_budget = Budget()
        project, budget = self.project, self._line_budget

        def work() -> None:
            from workbench.build.sass import ensure_line_views

            try:
                path = ensure_line_views(project, artifact_dir, budget)  # + SASS where nvdisasm is
                self._post("line-info", (artifact_dir, path, ""))
            except Exception as exc:  # a failed or cancelled build: said in the artifacts view
                self._post("line-info", (artifact_dir, None, str(exc) or type(exc).__name__))

        thread = threading.Thread(target=work, name="wb-line-info", daemon=True)
        self._line_threads[artifact_dir] = thread
        thread.start()
        return True

    def start_build(self, backends: list[str] | None = None) -> Future:
        """Build now, off the GUI thread (the console's `build()`); the Future gets
        {backend: BuildResult}, and `buildFinished` carries it to the panels."""
        project = self._require_project()
        chosen = backends or self.backends()

        def work() -> Any:
            names = chosen or self.run_service.default_backends(project)
            results = self.build_service.submit(project, names).wait()
            self._post("job-build", results)
            return results

        return self._start_job("build", work)

    def start_run(self, backends: list[str] | None = None, devices: list[str] | None = None) -> Future:
        """Build and run now, off the GUI thread (the console's `run()`); the Future gets the
        RunReport, and `runEvent` / `runFinished` carry its progress and results to the panels."""
        project = self._require_project()
        options = dict(
            kernel=self.loop.kernel,
            backends=backends or self.backends(),
            devices=devices or self.devices() or None,
            sizes=self.loop.sizes,
            timeout_s=self.loop.timeout_s,
            build_service=self.build_service,
            reference=self.loop.reference,
        )

        def work() -> Any:
            sources = self.recorder.begin(project) if self.recorder is not None else None
            report = self.run_service.run(project, on_event=self._post_event, **options)
            if self.recorder is not None and self.recorder.enabled:  # off the GUI thread
                dispute_from_history(self.recorder.database, report)  # cpu-sim findings recorded
            self._post("job-run", (report, sources))
            return report

        return self._start_job("run", work)

    def build_blocking(self, backends: list[str] | None = None) -> dict[str, Any]:
        """Build and wait (scripts and tests; the console uses `start_build`)."""
        return self.start_build(backends).result()

    def run_blocking(self, backends: list[str] | None = None, devices: list[str] | None = None) -> Any:
        """Build, run and wait (scripts and tests; the console uses `start_run`)."""
        return self.start_run(backends, devices).result()

    def _start_job(self, what: str, work) -> Future:
        """`work()` on a thread of its own, started on the next turn of the event loop (or when
        its result is waited for: `_JobFuture`); the Future gets what it returns."""

        def body() -> None:
            try:
                future.set_result(work())
            except BaseException as exc:  # the caller's .result() raises it; the window says it
                future.set_exception(exc)
                self._post("job-failed", f"console {what} failed: {exc}")
            finally:
                self._post("job-ended", what)

        self._jobs_running += 1
        self._set_busy(True)
        self._jobs = [f for f in self._jobs if not f.started or f.thread.is_alive()]
        future = _JobFuture(threading.Thread(target=body, name=f"wb-console-{what}", daemon=True))
        future.set_running_or_notify_cancel()
        self._jobs.append(future)
        QTimer.singleShot(0, lambda: None if self._closed else future.start())
        return future

    def shutdown(self) -> None:
        """Cancel everything, stop every thread this bridge started and wait for them. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self.build_service.unsubscribe(self._on_build_event)
        self.loop.unsubscribe(self._on_live_event)
        self.loop.close()
        if self._defaults_thread is not None:  # before the services close: it starts run workers
            self._defaults_thread.join(30.0)
        for service in (self.build_service, self.run_service):
            try:
                service.close()
            except Exception:
                log.exception("closing %s failed", type(service).__name__)
        if self._device_thread is not None:
            self._device_thread.join(30.0)
        if self._line_budget is not None:
            self._line_budget.cancel.set()  # kills a line-table build in flight
        for thread in self._line_threads.values():
            thread.join(30.0)
        for job in self._jobs:
            if job.started:  # one whose turn never came has no thread to wait for
                job.thread.join(30.0)  # the services are closed: their waits end
        if self.recorder is not None:
            self.recorder.close()  # what is queued is recorded first
        self._relay.close()
        self._set_busy(False)

    @property
    def busy(self) -> bool:
        return self._busy

    # ------------------------------------------------------------------ plumbing
    def _ready(self) -> bool:
        if self._closed:
            return False
        if self.project is None:
            self.statusMessage.emit("open a project first")
            return False
        return True

    def _require_project(self) -> Project:
        if self.project is None:
            raise WorkbenchError("no project is open")
        if not self._closed and self.check_manifest() is None:  # the console runs what is on disk too
            raise WorkbenchError(self.manifest_diagnostics[0].rendered)
        return self.project

    def _set_busy(self, busy: bool) -> None:
        if busy != self._busy:
            self._busy = busy
            self.busyChanged.emit(busy)

    def _post(self, kind: str, payload: Any) -> None:
        """From any thread: hand (kind, payload) to the GUI thread."""
        if not self._closed:
            self._relay.post((kind, payload))

    def _post_event(self, event: LiveEvent | RunEvent) -> None:
        """From any thread: hand a live-loop or run event, as it is, to the GUI thread."""
        if not self._closed:
            self._relay.post(event)

    def _on_build_event(self, event: Any) -> None:
        self._post("build", event)

    def _on_live_event(self, event: LiveEvent) -> None:
        """Loop thread: note what a recording needs, then hand the event to the GUI thread."""
        if self.recorder is not None:
            self._snapshot_at_build(event)
        self._post_event(event)

    def _snapshot_at_build(self, event: LiveEvent) -> None:
        """Loop thread, before the cycle's build is submitted: snapshot the sources it builds
        (workbench.toml as the cycle re-read it), so an edit saved while it builds or runs is
        recorded with the next run, not this one."""
        match event:
            case LiveCycleStarted() if event.reason != "build":  # a build alone is not recorded
                self._cycle_projects[event.cycle] = self.project
            case LiveProject() if event.cycle in self._cycle_projects:
                self._cycle_projects[event.cycle] = event.project
            case LiveManifest() if event.cycle in self._cycle_projects:
                self._cycle_sources[event.cycle] = self.recorder.begin(self._cycle_projects.pop(event.cycle))

    def _record(self, shown: Any, sources: Any) -> None:
        """Hand a finished run to the recorder: only its rows that ran now (stale rows kept from an
        earlier run were recorded then), with the sources its build read; note for each row the
        recording it went into, or why none."""
        fresh = fresh_only(shown)
        if fresh is not None:
            if self.recorder is None:
                recording: Future | str = "this window records no runs"
            elif not self.recorder.enabled:
                recording = "recording was off (Record runs) when it ran"
            else:
                recording = self.recorder.submit(
                    fresh, sources, on_done=lambda outcome: self._post("recorded", outcome)
                )
            for result in fresh.results:
                if result.provenance is not None:
                    self._recordings[id(result.provenance)] = (result.provenance, recording)
        shown_now = [*shown.results, *self.last_good.results.values()]
        live = {id(r.provenance) for r in shown_now if r.provenance is not None}
        self._recordings = {k: v for k, v in self._recordings.items() if k in live}

    def recording_of(self, result: Any) -> Future | str:
        """The recording a shown result's run went into (a Future of the recorder's outcome), or
        why it went into none."""
        entry = self._recordings.get(id(result.provenance)) if result.provenance is not None else None
        if entry is None or entry[0] is not result.provenance:
            return "it is not a run this window recorded (another project, or from before)"
        return entry[1]

    def run_ids(self, report: Any = None) -> dict[tuple[str, str], int]:
        """(backend, device) -> run id of the shown results (default: the last report) whose
        recording has ended in the database."""
        from workbench.profile.sessions.record import row_key

        ids: dict[tuple[str, str], int] = {}
        for result in getattr(report or self.last_report, "results", None) or []:
            recording = self.recording_of(result)
            if isinstance(recording, Future) and recording.done():
                found = recording.result().get("rows", {}).get(row_key(result))
                if found is not None:
                    ids[row_key(result)] = found
        return ids

    def record_counters(self, report: Any, records: dict[tuple[str, str], dict[str, Any]]) -> None:
        """Record counters taken of a report this bridge showed with each result's run (never
        waits: queued behind the recordings on the recorder's thread); `countersRecorded` says
        which runs have them and why the others do not."""
        from workbench.profile.sessions.record import row_key
        from workbench.run.counters.nsight import record_key

        runs: dict[tuple[str, str], tuple[Future | str, tuple[str, str]]] = {}
        for result in getattr(report, "results", None) or []:
            key = record_key(result)
            if key in records:
                runs[key] = (self.recording_of(result), row_key(result))
        pending = [r for r, _row in runs.values() if isinstance(r, Future)]
        if not pending or self.recorder is None:
            why = {
                key: (r if isinstance(r, str) else "the recorder is gone") for key, (r, _row) in runs.items()
            }
            for key in records:
                why.setdefault(key, "no result of the report has it")
            self.countersRecorded.emit({"ids": {}, "not_recorded": why})
            return
        self.recorder.submit_counters(
            records, runs, on_done=lambda outcome: self._post("counters-recorded", outcome)
        )

    @Slot(object)
    def _deliver(self, item: LiveEvent | RunEvent | tuple[str, Any]) -> None:
        """GUI thread: turn a posted item into the public signals."""
        if self._closed:
            return
        if isinstance(item, LiveEvent):
            self._deliver_live(item)
            return
        if isinstance(item, RunEvent):  # a console run's (`start_run`)
            self.runEvent.emit(item)
            self._status_of_run_event(item)
            return
        kind, payload = item
        if kind == "build":
            self.buildEvent.emit(payload)
        elif kind == "devices":
            self.devices_info = payload
            self.devicesListed.emit(payload)
        elif kind == "line-info":
            self.lineInfoReady.emit(*payload)
        elif kind == "default-backends":
            project, backends = payload
            if project is self.project and not self.loop.backends:  # still nobody's choice
                self.backendsChanged.emit(list(backends))
        elif kind == "job-build":
            self.last_build = payload
            self.buildFinished.emit(payload)
        elif kind == "job-run":
            payload, sources = payload
            # As the window's own Run: failed rows keep their last good result, shown stale.
            shown = self.last_good.merge(payload, {})
            if len(shown.results) == len(payload.results) and all(
                a is b for a, b in zip(shown.results, payload.results, strict=True)
            ):
                shown = payload  # nothing stale: the console's report is the one shown
            self.last_report = shown
            self._record(shown, sources)
            self.runFinished.emit(shown)
            self.statusMessage.emit("run finished")
        elif kind == "recorded":
            self.runRecorded.emit(payload)
        elif kind == "counters-recorded":
            self.countersRecorded.emit(payload)
        elif kind == "job-failed":
            self.statusMessage.emit(payload)
        elif kind == "job-ended":
            self._jobs_running = max(0, self._jobs_running - 1)
            self._settle_busy()

    def _deliver_live(self, event: LiveEvent) -> None:
        match event:
            case LiveCycleStarted():
                self._set_busy(True)
                what = {"save": "rebuilding", "build": "building", "run": "building and running"}
                self.statusMessage.emit(f"{what.get(event.reason, 'working')}: {', '.join(event.backends)}")
            case LiveProject():
                self.project = event.project
                self.projectChanged.emit(self.project)
            case LiveManifest():
                self.manifest_diagnostics = list(event.diagnostics)
                self._publish_manifest([d.to_dict() for d in event.diagnostics])
            case LiveBuildFinished():
                if event.background:  # builds an earlier cycle left going: added to the last
                    self.last_build = {**(self.last_build or {}), **event.results}
                    self.statusMessage.emit(background_status(event.results))
                    self._settle_busy()
                else:
                    self.last_build = event.results
                self.buildFinished.emit(event.results)
            case LiveRunEvent():
                self.runEvent.emit(event.event)
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
            self.statusMessage.emit(f"run: {where}")

    def expected_reference(self) -> str:
        """The reference backend: the user's choice (`loop.reference`), else the one the manifest
        names ('' when unknown)."""
        if self.loop.reference:
            return self.loop.reference
        try:
            return self.project.manifest.kernel(self.loop.kernel).check.reference if self.project else ""
        except (WorkbenchError, LookupError, ValueError):
            return ""

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
            self.runFinished.emit(shown)
        if status == "ok" and event.latency_s is not None and report is not None:
            self.last_latency_reason = event.reason
            self.latencyMeasured.emit(event.latency_s)
            what = "edit to result" if self.last_latency_reason == "save" else "run to result"
            building = event.building
            still = f"; {', '.join(building)} {BUILDING_IN_BACKGROUND}" if building else ""
            self.statusMessage.emit(f"{what}: {event.latency_s:.2f} s{still}")
        elif status == "ok":
            self.statusMessage.emit("build finished" if report is None else "run finished")
        elif status == "cancelled":
            self.statusMessage.emit("cancelled")
        else:
            self.statusMessage.emit(event.error or "failed")
        self._settle_busy()

    def _settle_busy(self) -> None:
        """Busy while the live loop, a build it left going in the background or a console job works."""
        self._set_busy(self.loop.busy or bool(self.loop.background) or self._jobs_running > 0)
