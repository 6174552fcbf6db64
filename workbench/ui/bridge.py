"""The one place where Qt meets the core services: builds, runs and the hot-reload loop.

`ServiceBridge` owns a `BuildService`, a `RunService` and a `LiveLoop` (all Qt-free). Their work
happens on their own threads and child processes; what they report is posted to the GUI thread
through a queued signal and re-emitted there as the bridge's public signals, so widgets are only
ever touched from the GUI thread (pyqtgraph#1398). Nothing here waits on a process or a thread
while the event loop runs, except `shutdown()`, which waits for every thread it started.

The console's `build()` / `run()` go through `start_build` / `start_run`: they return a
`concurrent.futures.Future` at once and do the work on a thread of their own; the results reach
the panels through the same signals as the window's Build and Run (`buildFinished`, `runEvent`,
`runFinished`).
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Qt, Signal, Slot

from workbench.backends import BACKENDS
from workbench.errors import WorkbenchError
from workbench.profile.live import LiveLoop
from workbench.project import Project

log = logging.getLogger(__name__)

#: Backends built when nobody chose: all of them (missing toolchains show as "skipped").
DEFAULT_BACKENDS = list(BACKENDS)


class _Relay(QObject):
    """Carries (kind, payload) from service threads to the GUI thread (queued connection)."""

    posted = Signal(object)


class ServiceBridge(QObject):
    """Build, run and hot-reload a project off the GUI thread; report through queued signals."""

    projectChanged = Signal(object)  # Project
    buildEvent = Signal(object)  # BuildEvent
    buildFinished = Signal(object)  # dict[str, BuildResult]
    runEvent = Signal(object)  # dict progress event of the run service
    runFinished = Signal(object)  # RunReport
    busyChanged = Signal(bool)
    latencyMeasured = Signal(float)  # edit-to-result seconds of the last hot-reload cycle
    statusMessage = Signal(str)
    # Beyond the composition contract: what the device picker, the build panel and the window use.
    devicesListed = Signal(object)  # list_devices() dict, or {"error": str}
    backendsChanged = Signal(object)  # list[str]

    def __init__(self, parent: QObject | None = None, cache_dir: str | Path | None = None):
        super().__init__(parent)
        from workbench.build import BuildService
        from workbench.run.service import RunService
        from workbench.run.timing import INTERACTIVE

        self.project: Project | None = None
        self.last_build: dict[str, Any] | None = None
        self.last_report: Any = None
        self.devices_info: dict[str, Any] | None = None
        self.cache_dir = cache_dir
        self._busy = False
        self._closed = False
        self._device_thread: threading.Thread | None = None
        self._job_threads: list[threading.Thread] = []
        self._jobs_running = 0  # console builds and runs in flight (GUI thread's count)

        self._relay = _Relay()
        self._relay.posted.connect(self._deliver, Qt.ConnectionType.QueuedConnection)
        self.build_service = BuildService(cache_dir=cache_dir)
        # Interactive timing: the edit-to-result loop favours latency (see timing.INTERACTIVE).
        self.run_service = RunService(timing=INTERACTIVE)
        self.loop = LiveLoop(self.build_service, self.run_service, backends=list(DEFAULT_BACKENDS))
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
        self.projectChanged.emit(project)

    def set_backends(self, backends: list[str]) -> None:
        self.loop.backends = [b for b in backends if b in BACKENDS]
        self.backendsChanged.emit(list(self.loop.backends))

    def backends(self) -> list[str]:
        return list(self.loop.backends)

    def set_devices(self, specs: list[str]) -> None:
        """Device specs to run on (`cpu`, `cuda:0`, `wgpu:0`); empty means the run service's default."""
        self.loop.devices = list(dict.fromkeys(specs))

    def devices(self) -> list[str]:
        return list(self.loop.devices)

    def set_sizes(self, sizes: dict[str, int] | None) -> None:
        """Problem sizes for runs (None: the manifest's defaults)."""
        self.loop.sizes = dict(sizes) if sizes else None

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

        self._device_thread = threading.Thread(target=work, name="wb-list-devices", daemon=True)
        self._device_thread.start()

    def start_build(self, backends: list[str] | None = None) -> Future:
        """Build now, off the GUI thread (the console's `build()`); the Future gets
        {backend: BuildResult}, and `buildFinished` carries it to the panels."""
        project = self._require_project()
        job = self.build_service.submit(project, backends or self.backends())  # never blocks

        def work() -> Any:
            results = job.wait()
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
            report = self.run_service.run(
                project, on_event=lambda event: self._post("job-run-event", event), **options
            )
            self._post("job-run", report)
            return report

        return self._start_job("run", work)

    def build_blocking(self, backends: list[str] | None = None) -> dict[str, Any]:
        """Build and wait (scripts and tests; the console uses `start_build`)."""
        return self.start_build(backends).result()

    def run_blocking(self, backends: list[str] | None = None, devices: list[str] | None = None) -> Any:
        """Build, run and wait (scripts and tests; the console uses `start_run`)."""
        return self.start_run(backends, devices).result()

    def _start_job(self, what: str, work) -> Future:
        future: Future = Future()
        future.set_running_or_notify_cancel()

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
        self._job_threads = [t for t in self._job_threads if t.is_alive()]
        thread = threading.Thread(target=body, name=f"wb-console-{what}", daemon=True)
        self._job_threads.append(thread)
        thread.start()
        return future

    def shutdown(self) -> None:
        """Cancel everything, stop every thread this bridge started and wait for them. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self.build_service.unsubscribe(self._on_build_event)
        self.loop.unsubscribe(self._on_live_event)
        self.loop.close()
        for service in (self.build_service, self.run_service):
            try:
                service.close()
            except Exception:
                log.exception("closing %s failed", type(service).__name__)
        if self._device_thread is not None:
            self._device_thread.join(30.0)
        for thread in self._job_threads:
            thread.join(30.0)  # the services are closed: their waits end
        self._relay.posted.disconnect(self._deliver)
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
        return self.project

    def _set_busy(self, busy: bool) -> None:
        if busy != self._busy:
            self._busy = busy
            self.busyChanged.emit(busy)

    def _post(self, kind: str, payload: Any) -> None:
        """From any thread: hand (kind, payload) to the GUI thread."""
        if not self._closed:
            self._relay.posted.emit((kind, payload))

    def _on_build_event(self, event: Any) -> None:
        self._post("build", event)

    def _on_live_event(self, event: dict[str, Any]) -> None:
        self._post("live", event)

    @Slot(object)
    def _deliver(self, item: tuple[str, Any]) -> None:
        """GUI thread: turn a posted item into the public signals."""
        if self._closed:
            return
        kind, payload = item
        if kind == "build":
            self.buildEvent.emit(payload)
        elif kind == "devices":
            self.devices_info = payload
            self.devicesListed.emit(payload)
        elif kind == "live":
            self._deliver_live(payload)
        elif kind == "job-build":
            self.last_build = payload
            self.buildFinished.emit(payload)
        elif kind == "job-run-event":
            self.runEvent.emit(payload)
            self._status_of_run_event(payload)
        elif kind == "job-run":
            self.last_report = payload
            self.runFinished.emit(payload)
            self.statusMessage.emit("run finished")
        elif kind == "job-failed":
            self.statusMessage.emit(payload)
        elif kind == "job-ended":
            self._jobs_running = max(0, self._jobs_running - 1)
            self._settle_busy()

    def _deliver_live(self, event: dict[str, Any]) -> None:
        kind = event.get("kind")
        if kind == "cycle-started":
            self._set_busy(True)
            what = {"save": "rebuilding", "build": "building", "run": "building and running"}
            self.statusMessage.emit(f"{what.get(event['reason'], 'working')}: {', '.join(event['backends'])}")
        elif kind == "project":
            self.project = event["project"]
            self.projectChanged.emit(self.project)
        elif kind == "build-finished":
            self.last_build = event["results"]
            self.buildFinished.emit(event["results"])
        elif kind == "run-event":
            self.runEvent.emit(event["event"])
            self._status_of_run_event(event["event"])
        elif kind == "cycle-finished":
            self._cycle_finished(event)
        elif kind == "idle":
            self._settle_busy()

    def _status_of_run_event(self, event: dict[str, Any]) -> None:
        """The run's phase in the status bar (inputs, upload, launch, verify, timing ...): a long
        run shows where it is."""
        if event.get("kind") != "phase":
            return
        backend = event.get("backend")
        self.statusMessage.emit(f"run: {backend} {event['phase']}" if backend else f"run: {event['phase']}")

    def _cycle_finished(self, event: dict[str, Any]) -> None:
        status = event["status"]
        report = event.get("report")
        if report is not None:
            self.last_report = report
            self.runFinished.emit(report)
        if status == "ok" and event.get("latency_s") is not None:
            self.latencyMeasured.emit(event["latency_s"])
            self.statusMessage.emit(f"edit to result: {event['latency_s']:.2f} s")
        elif status == "ok":
            self.statusMessage.emit("build finished" if report is None else "run finished")
        elif status == "cancelled":
            self.statusMessage.emit("cancelled")
        else:
            self.statusMessage.emit(event.get("error") or "failed")
        self._settle_busy()

    def _settle_busy(self) -> None:
        """Busy while the live loop or a console job works."""
        self._set_busy(self.loop.busy or self._jobs_running > 0)
