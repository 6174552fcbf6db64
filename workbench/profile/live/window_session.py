"""`WindowSession`: what the window does with the core services, without Qt (napari's `ViewerModel`
to the bridge's `QtViewer`).

It owns a `BuildService`, a `RunService` and a `LiveLoop`; the selection (project, backends,
devices, sizes, tunables, trace); the console's jobs (`console_jobs`, plain futures); the
recording of every run it finishes (`recordings`); the last good results (`last_good`); and the
background threads that list devices, find the default backends and build line tables. It says
what happens through the typed events of `session_events` to its listeners (`subscribe`).

Threads: service threads never touch the session's state. What they report is handed to
`post(item)`, which must bring it to the thread that owns the session and call `deliver(item)`
there: the window's bridge posts through its `PacedRelay` (the GUI thread); without a `post`
the session queues items itself and `pump()` delivers them on the caller's thread (tests,
scripts). `defer(fn)` runs `fn` on a later turn of the owner's loop (the console's jobs start
there); without one, at once.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from workbench.backends import BACKENDS
from workbench.errors import WorkbenchError
from workbench.profile.live import session_events as ev
from workbench.profile.live.console_jobs import ConsoleJobs
from workbench.profile.live.last_good import LastGood
from workbench.profile.live.live import LiveLoop
from workbench.profile.live.live_events import LiveCycleStarted, LiveEvent, LiveManifest, LiveProject
from workbench.profile.live.recordings import Recordings
from workbench.profile.live.session_delivery import SessionDelivery
from workbench.profile.live.session_probes import SessionProbes
from workbench.profile.sessions.findings_history import dispute_from_history
from workbench.project import Project
from workbench.run.request import RunRequest

log = logging.getLogger(__name__)


class WindowSession(SessionDelivery, SessionProbes):
    """Build, run and hot-reload a project off the owner's thread; report through typed events."""

    def __init__(
        self,
        cache_dir: str | Path | None = None,
        recorder: Any = None,
        post: Callable[[Any], None] | None = None,
        defer: Callable[[Callable[[], None]], None] | None = None,
    ):
        from workbench.build import BuildService
        from workbench.run.service import RunService
        from workbench.run.timing import INTERACTIVE

        self.project: Project | None = None
        self.last_build: dict[str, Any] | None = None
        self.last_report: Any = None
        self.devices_info: dict[str, Any] | None = None
        #: Good results kept across failed builds and runs (shown stale); see live.last_good.
        self.last_good = LastGood()
        #: The live loop's note when the reference's own source changed since all agreed (or None).
        self.reference_changed: dict[str, Any] | None = None
        #: What is wrong with workbench.toml as `check_manifest` last read it (Diagnostic records).
        self.manifest_diagnostics: list[Any] = []
        self._published_manifest: list[dict] | None = None  # what `ManifestChecked` last said
        #: "save" (edit → result) or "run" (run → result): what `LatencyMeasured` measured.
        self.last_latency_reason = ""
        self.cache_dir = cache_dir
        self.recordings = Recordings(recorder, self.last_good)
        if recorder is not None and getattr(recorder, "on_wait", False) is None:
            # A run waiting for a database another process holds locked: the status bar says so.
            recorder.on_wait = lambda text: self._post(("status", text))
        #: Live cycle -> the sources snapshotted as its build started (loop thread writes, owner reads).
        self._cycle_sources: dict[int, Any] = {}
        self._cycle_projects: dict[int, Project | None] = {}
        self._listeners: list[Callable[[Any], None]] = []
        self._busy = False
        self._closed = False
        self._queue: queue.SimpleQueue | None = None if post is not None else queue.SimpleQueue()
        self._post_item = post if post is not None else self._queue.put
        self.jobs = ConsoleJobs(
            defer or (lambda fn: fn()),
            on_failed=lambda text: self._post(("job-failed", text)),
            on_ended=lambda what: self._post(("job-ended", what)),
        )
        self._device_thread: threading.Thread | None = None
        self._defaults_thread: threading.Thread | None = None
        self._line_threads: dict[str, threading.Thread] = {}
        self._line_budget = None  # the Budget of the line-table builds (cancelled at shutdown)
        self.build_service = BuildService(cache_dir=cache_dir)
        # Interactive timing: the edit-to-result loop favours latency (see timing.INTERACTIVE).
        self.run_service = RunService(timing=INTERACTIVE)
        # No backends chosen: the command line's default (`RunService.default_backends`).
        self.loop = LiveLoop(self.build_service, self.run_service, backends=[])
        self.build_service.subscribe(self._on_build_event)
        self.loop.subscribe(self._on_live_event)

    @property
    def recorder(self) -> Any:
        return self.recordings.recorder

    @property
    def busy(self) -> bool:
        return self._busy

    # ------------------------------------------------------------------ listeners and threads
    def subscribe(self, listener: Callable[[Any], None]) -> None:
        """`listener(event)` for every `session_events` event, on the owner's thread."""
        self._listeners.append(listener)

    def _emit(self, event: Any) -> None:
        for listener in list(self._listeners):
            listener(event)

    def _post(self, item: Any) -> None:
        """From any thread: hand an item (a live or run event, or (kind, payload)) to the owner."""
        if not self._closed:
            self._post_item(item)

    def pump(self, timeout_s: float = 0.0) -> int:
        """Without a `post`: deliver what service threads handed over, on this thread; wait up to
        `timeout_s` for the first item. Returns how many were delivered."""
        if self._queue is None:
            raise RuntimeError("this session's items are delivered by its owner's post()")
        count = 0
        try:
            item = self._queue.get(timeout=timeout_s) if timeout_s > 0 else self._queue.get_nowait()
            while True:
                self.deliver(item)
                count += 1
                item = self._queue.get_nowait()
        except queue.Empty:
            return count

    # ------------------------------------------------------------------ selection
    def set_project(self, project: Project | str | Path | None) -> None:
        """Switch to `project` (a Project or its folder); cancels work on the previous one."""
        if project is not None and not isinstance(project, Project):
            try:
                project = Project.open(project)
            except WorkbenchError as exc:
                self._emit(ev.StatusMessage(str(exc)))
                return
        self.loop.cancel()
        self.project = project
        self.last_build = None
        self.last_report = None
        self.last_good.forget()
        self.recordings.forget()
        self.loop.agreement.forget()
        self.reference_changed = None
        self._emit(ev.ProjectChanged(project))
        self._published_manifest = None  # the new project's state is said even when it matches
        if project is None:
            self._publish_manifest([])
        else:
            self.check_manifest()  # what its sources contradict shows before anything builds
        if not self.loop.backends:
            self._show_default_backends()

    def check_manifest(self) -> Project | None:
        """Re-read workbench.toml as the folder holds it now (`build.manifest_check.on_disk`): a
        changed one becomes the project (`ProjectChanged`); `ManifestChecked` says what is wrong.
        Returns the project as read, None when it no longer loads (`manifest_diagnostics` say why)."""
        if self._closed or self.project is None:
            return None
        from workbench.build import manifest_check

        fresh, diagnostics = manifest_check.on_disk(self.project)
        if fresh is not None and fresh is not self.project:
            self.project = fresh
            self._emit(ev.ProjectChanged(fresh))
        self.manifest_diagnostics = diagnostics
        self._publish_manifest([d.to_dict() for d in diagnostics])
        return fresh

    def _publish_manifest(self, diagnostics: list[dict]) -> None:
        """`ManifestChecked`, when what is wrong with workbench.toml differs from what was last
        said: saying the same again would redo the diagnostics list and every editor's markers
        (about 2 ms a check on the GUI thread) for nothing."""
        if diagnostics == self._published_manifest:
            return
        self._published_manifest = diagnostics
        self._emit(ev.ManifestChecked(diagnostics))

    def set_backends(self, backends: list[str] | None) -> None:
        """The backends to build and run; empty: the command line's default (cpu plus every
        backend whose toolchain is installed and whose runtime is available here), which is found
        on a thread and said by `BackendsChanged` once known."""
        self.loop.backends = [b for b in backends or [] if b in BACKENDS]
        if self.loop.backends:
            self._emit(ev.BackendsChanged(list(self.loop.backends)))
        else:
            self._show_default_backends()

    def backends(self) -> list[str]:
        """The chosen backends ([]: the default, see `set_backends`)."""
        return list(self.loop.backends)

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

    def set_writers(self, elements: list[tuple[str, int]] | None) -> None:
        """cpu-sim records the writers of the check's mismatches and of `elements` in the next
        runs (`run.sim_writers`; None: no writers)."""
        self.loop.writers = list(elements) if elements is not None else None

    def writers(self) -> list[tuple[str, int]] | None:
        return self.loop.writers

    def set_sizes(self, sizes: dict[str, int] | None) -> None:
        """Problem sizes for runs (None: the manifest's defaults)."""
        self.loop.sizes = dict(sizes) if sizes else None
        self._emit(ev.SizesChanged(self.sizes()))

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

    def expected_reference(self) -> str:
        """The reference backend: the user's choice (`loop.reference`), else the one the manifest
        names ('' when unknown)."""
        if self.loop.reference:
            return self.loop.reference
        try:
            return self.project.manifest.kernel(self.loop.kernel).check.reference if self.project else ""
        except (WorkbenchError, LookupError, ValueError):
            return ""

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
            if self.jobs.running:
                self.run_service.cancel()
                self.build_service.cancel()
            self._emit(ev.StatusMessage("cancelling…"))

    # ------------------------------------------------------------------ console jobs
    def start_build(self, backends: list[str] | None = None) -> Future:
        """Build now, off the owner's thread (the console's `build()`); the Future gets
        {backend: BuildResult}, and `BuildFinished` carries it to the listeners."""
        project = self._require_project()
        chosen = backends or self.backends()

        def work() -> Any:
            names = chosen or self.run_service.default_backends(project)
            results = self.build_service.submit(project, names).wait()
            self._post(("job-build", results))
            return results

        return self._start_job("build", work)

    def start_run(self, backends: list[str] | None = None, devices: list[str] | None = None) -> Future:
        """Build and run now, off the owner's thread (the console's `run()`); the Future gets the
        RunReport, and `RunEventSeen` / `RunFinished` carry its progress and results."""
        project = self._require_project()
        request = RunRequest.of(
            project,
            backends or self.backends(),
            devices or self.devices() or None,
            kernel=self.loop.kernel,
            sizes=self.loop.sizes,
            timeout_s=self.loop.timeout_s,
            build_service=self.build_service,
            reference=self.loop.reference,
            writers=self.loop.writers,
        )

        def work() -> Any:
            sources = self.recorder.begin(project) if self.recorder is not None else None
            report = self.run_service.execute(request, on_event=self._post)
            if self.recorder is not None and self.recorder.enabled:  # off the owner's thread
                dispute_from_history(self.recorder.database, report)  # cpu-sim findings recorded
            self._post(("job-run", (report, sources)))
            return report

        return self._start_job("run", work)

    def build_blocking(self, backends: list[str] | None = None) -> dict[str, Any]:
        """Build and wait (scripts and tests; the console uses `start_build`)."""
        return self.start_build(backends).result()

    def run_blocking(self, backends: list[str] | None = None, devices: list[str] | None = None) -> Any:
        """Build, run and wait (scripts and tests; the console uses `start_run`)."""
        return self.start_run(backends, devices).result()

    def _start_job(self, what: str, work: Callable[[], Any]) -> Future:
        future = self.jobs.start(what, work)
        self._set_busy(True)
        return future

    # ------------------------------------------------------------------ recordings
    def recording_of(self, result: Any) -> Future | str:
        """The recording a shown result's run went into (a Future of the recorder's outcome), or
        why it went into none."""
        return self.recordings.recording_of(result)

    def run_ids(self, report: Any = None) -> dict[tuple[str, str], int]:
        """(backend, device) -> run id of the shown results (default: the last report) whose
        recording has ended in the database."""
        return self.recordings.run_ids(report or self.last_report)

    def record_counters(self, report: Any, records: dict[tuple[str, str], dict[str, Any]]) -> None:
        """Record counters taken of a report this session showed with each result's run (never
        waits); `CountersRecorded` says which runs have them and why the others do not."""
        outcome = self.recordings.record_counters(
            report, records, on_done=lambda outcome: self._post(("counters-recorded", outcome))
        )
        if outcome is not None:
            self._emit(ev.CountersRecorded(outcome))

    def _record(self, shown: Any, sources: Any) -> None:
        self.recordings.record(shown, sources, on_done=lambda outcome: self._post(("recorded", outcome)))

    # ------------------------------------------------------------------ shutdown
    def shutdown(self) -> None:
        """Cancel everything, stop every thread this session started and wait for them. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self.jobs.closed = True
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
        self.jobs.join(30.0)  # the services are closed: their waits end (a closed pool starts no worker)
        if self.recorder is not None:
            self.recorder.close()  # what is queued is recorded first
        self._set_busy(False)

    # ------------------------------------------------------------------ plumbing
    def _ready(self) -> bool:
        if self._closed:
            return False
        if self.project is None:
            self._emit(ev.StatusMessage("open a project first"))
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
            self._emit(ev.BusyChanged(busy))

    def _settle_busy(self) -> None:
        """Busy while the live loop, a build it left going in the background or a console job works."""
        self._set_busy(self.loop.busy or bool(self.loop.background) or self.jobs.running > 0)

    def _on_build_event(self, event: Any) -> None:
        self._post(("build", event))

    def _on_live_event(self, event: LiveEvent) -> None:
        """Loop thread: note what a recording needs, then hand the event to the owner."""
        if self.recorder is not None:
            self._snapshot_at_build(event)
        self._post(event)

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
