"""The hot-reload loop: save → rebuild what changed → rerun → results, with the latency measured.

`LiveLoop` is Qt-free: the window (`workbench.ui.bridge`) and any headless tool drive it the same
way. Requests are served one at a time by a single worker thread; a newer request cancels the
one in flight (its build processes and its run), so a burst of saves costs one build, not many.

    loop = LiveLoop(build_service, run_service, backends=["cpu", "wgsl"], devices=["cpu", "wgpu:0"])
    loop.subscribe(print)                 # typed events, called from the loop's thread
    loop.on_saved(project, "src/lib.rs")  # returns at once
    loop.wait_idle()
    loop.close()

Events: `live_events.py` (typed, one frozen record per kind). Which backends a save affects and
whether the reference changed since every backend agreed: `agreement.py`.

Edit-to-result latency is measured from the moment of the save (`saved_at`, `time.monotonic()`)
to the moment the run's report is ready; a manual run measures from the request (`latency_s` of
every completed cycle that ran; `reason` tells which).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.build import manifest_check
from workbench.errors import WorkbenchError
from workbench.profile.live.agreement import AgreementTracker, affected_backends
from workbench.profile.live.live_events import (
    LiveBuildFinished,
    LiveCycleFinished,
    LiveCycleStarted,
    LiveEvent,
    LiveIdle,
    LiveListener,
    LiveManifest,
    LiveProject,
    LiveRunEvent,
)
from workbench.project import Project
from workbench.run.events import RunEvent, RunFinished
from workbench.run.request import RunRequest


@dataclass
class _Request:
    cycle: int
    project: Project
    reason: str  # "save" | "build" | "run"
    run: bool
    path: str | None = None
    saved_at: float = field(default_factory=time.monotonic)
    cancelled: threading.Event = field(default_factory=threading.Event)


class LiveLoop:
    """Serve save/build/run requests on one worker thread; a newer request cancels the older."""

    def __init__(
        self,
        build_service: Any,
        run_service: Any,
        *,
        backends: list[str] | None = None,
        devices: list[str] | None = None,
        sizes: dict[str, int] | None = None,
        kernel: str | None = None,
        timeout_s: float = 10.0,
    ):
        self.build_service = build_service
        self.run_service = run_service
        #: The backends of each cycle; empty: the command line's default, resolved per cycle on
        #: the loop's thread (`RunService.default_backends`: cpu plus every backend whose
        #: toolchain is installed and whose runtime is available here).
        self.backends: list[str] = list(backends or [])
        self.devices: list[str] = list(devices or [])
        self.sizes: dict[str, int] | None = dict(sizes) if sizes else None
        #: Tunables of the next cycles' builds and runs (None: the manifest's defaults).
        self.tunables: dict[str, int | float] | None = None
        self.kernel = kernel
        self.timeout_s = timeout_s
        #: The user's choice of reference backend (None: the kernel's [kernel.check] reference).
        self.reference: str | None = None
        #: The invocation cpu-sim traces (`run.sim_trace.TracePoint`; None: none).
        self.trace: Any = None
        #: The output elements whose writers cpu-sim records, beside the check's mismatches
        #: (`run.sim_writers`; [] the mismatches only, None: no writers recorded).
        self.writers: list[tuple[str, int]] | None = None
        #: Latest RunResult per (backend, device spec): kept across cancelled cycles.
        self.results: dict[tuple[str, str], Any] = {}
        self.last_build: dict[str, Any] | None = None
        self.last_report: Any = None
        self.last_latency_s: float | None = None
        self.agreement = AgreementTracker()
        self._listeners: list[LiveListener] = []
        self._lock = threading.Condition()
        self._pending: _Request | None = None
        self._current: _Request | None = None
        self._phase = ""  # "build" | "run" while a request is in flight
        self._background: set[str] = set()  # backends an earlier cycle still builds, unwaited for
        self._cycle_builds: list[str] = []  # what the cycle in flight builds
        self._cycles = 0
        self._closed = False
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ events
    def subscribe(self, fn: LiveListener) -> None:
        """Call `fn(event)` for every `LiveEvent` (from the loop's worker thread)."""
        with self._lock:
            if fn not in self._listeners:
                self._listeners.append(fn)

    def unsubscribe(self, fn: LiveListener) -> None:
        with self._lock:
            if fn in self._listeners:
                self._listeners.remove(fn)

    def _emit(self, event: LiveEvent) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for fn in listeners:
            try:
                fn(event)
            except Exception:  # a broken listener must not stop the loop
                logging.getLogger(__name__).exception("live-loop listener failed")

    # ------------------------------------------------------------------ requests
    def on_saved(
        self, project: Project, path: str | Path | None = None, saved_at: float | None = None
    ) -> int:
        """A file of `project` was saved: rebuild, rerun and measure the latency. Returns the cycle id."""
        return self._submit(project, "save", True, path, saved_at)

    def request_build(self, project: Project) -> int:
        """Build the selected backends (no run)."""
        return self._submit(project, "build", False, None, None)

    def request_run(self, project: Project) -> int:
        """Build the selected backends and run them on the selected devices."""
        return self._submit(project, "run", True, None, None)

    def _submit(self, project, reason, run, path, saved_at) -> int:
        with self._lock:
            if self._closed:
                raise WorkbenchError("the live loop is closed")
            self._cycles += 1
            request = _Request(
                self._cycles,
                project,
                reason,
                run,
                str(path) if path is not None else None,
                saved_at if saved_at is not None else time.monotonic(),
            )
            if self._pending is not None:
                self._pending.cancelled.set()
            self._pending = request
            self._cancel_current_locked()
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="wb-live-loop", daemon=True)
                self._thread.start()
            self._lock.notify_all()
            return request.cycle

    def cancel(self) -> None:
        """Cancel the request in flight, any pending one and the builds going on in the
        background (finished results are kept)."""
        with self._lock:
            if self._pending is not None:
                self._pending.cancelled.set()
                self._pending = None
            self._cancel_current_locked()
            background = list(self._background)
        for backend in background:
            self.build_service.cancel(backend)

    def _cancel_current_locked(self) -> None:
        current = self._current
        if current is None or current.cancelled.is_set():
            return
        current.cancelled.set()
        # Stop the work itself, not just our interest in it: kill the build processes / the run.
        try:
            if self._phase == "build":  # this cycle's builds: not those going on in the background
                for backend in self._cycle_builds:
                    self.build_service.cancel(backend)
            elif self._phase == "run":
                self.run_service.cancel()
        except Exception:
            pass

    @property
    def busy(self) -> bool:
        with self._lock:
            return self._current is not None or self._pending is not None

    @property
    def background(self) -> list[str]:
        """Backends an earlier cycle still builds in the background (`cancel()` stops them)."""
        with self._lock:
            return sorted(self._background)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until no request is pending or in flight (for scripts and tests)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while self._current is not None or self._pending is not None:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._lock.wait(remaining)
        return True

    def close(self, timeout: float | None = 30.0) -> None:
        """Cancel everything and stop the worker thread (waits for it). Safe to call twice."""
        with self._lock:
            self._closed = True
            if self._pending is not None:
                self._pending.cancelled.set()
                self._pending = None
            self._cancel_current_locked()
            self._lock.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    # ------------------------------------------------------------------ the worker
    def _serve(self) -> None:
        while True:
            with self._lock:
                while self._pending is None and not self._closed:
                    self._lock.wait()
                if self._closed:
                    self._current = None
                    self._lock.notify_all()
                    return
                request, self._pending = self._pending, None
                self._current = request
            try:
                self._cycle(request)
            except Exception as exc:  # never let the worker die; report instead
                self._emit(self._finished(request, "error", None, None, f"{type(exc).__name__}: {exc}"))
            finally:
                with self._lock:
                    self._current = None
                    self._phase = ""
                    idle = self._pending is None
                    self._lock.notify_all()
                # After `LiveCycleFinished`, once nothing is in flight: listeners that check `busy`
                # on `LiveCycleFinished` could still see this cycle as current.
                if idle:
                    self._emit(LiveIdle())

    def _set_phase(self, request: _Request, phase: str) -> bool:
        """Enter a phase; False when the request was cancelled meanwhile."""
        with self._lock:
            if request.cancelled.is_set():
                return False
            self._phase = phase
            return True

    def _cycle(self, request: _Request) -> None:
        project = request.project
        backends = list(self.backends) or self.run_service.default_backends(project)
        affected = affected_backends(project, request.path, backends)
        self._emit(LiveCycleStarted(request.cycle, request.reason, request.path, backends, affected))
        # Every cycle builds and runs workbench.toml as the folder holds it now, whoever edited
        # it; one that no longer loads stops the cycle, its error a diagnostic at its line.
        fresh, diagnostics = manifest_check.on_disk(project)
        if fresh is not None and fresh is not project:
            request.project = project = fresh
            self._emit(LiveProject(request.cycle, project))
        self._emit(LiveManifest(request.cycle, diagnostics))
        if fresh is None:
            self._emit(self._finished(request, "error", None, None, diagnostics[0].rendered))
            return

        if not self._set_phase(request, "build"):
            self._emit(self._finished(request, "cancelled", None, None, None))
            return
        with self._lock:  # still building in the background since an earlier cycle: not restarted
            to_build = [b for b in backends if b not in self._background]
        if request.run:
            reference = self._reference_backend(project)
            if reference and reference not in to_build:
                to_build.append(reference)  # what the others are checked against
        with self._lock:
            self._cycle_builds = list(to_build)
        # A build whose result cannot run here (known from an earlier cycle's probe; the first
        # cycle's are not) waits until this cycle's runs are timed, then goes on at a lower
        # priority: it is never on the cores the first result or a timing needs.
        background = self.run_service.cannot_run_here(to_build, self.devices) if request.run else []
        job = self.build_service.submit(
            project, to_build, tunables=self.tunables, background=background, hold_background=True
        )
        try:
            self._build_and_run(request, project, backends, to_build, job)
        finally:
            job.release_background()  # whatever ended the cycle

    def _build_and_run(self, request: _Request, project: Project, backends, to_build, job) -> None:
        if request.cancelled.is_set():  # cancelled between entering the phase and submitting
            for backend in to_build:
                self.build_service.cancel(backend)
        if not request.run:
            build = job.wait()
            self.last_build = build
            self._emit(self._build_finished(request, build))
            status = "cancelled" if request.cancelled.is_set() else "ok"
            self._emit(self._finished(request, status, build, None, None))
            return
        if not self._set_phase(request, "run"):
            job.release_background()  # no run to wait for: else the wait below never ends
            job.wait()
            self._emit(self._finished(request, "cancelled", job.finished(), None, None))
            return

        def on_event(event: RunEvent) -> None:
            if isinstance(event, RunFinished):  # kept even if the run is cancelled later
                result = event.result
                self.results[(result.backend, str((result.device or {}).get("spec", "")))] = result
            self._emit(LiveRunEvent(request.cycle, event))

        error = None
        report = None
        # The run takes this cycle's builds as each finishes (no second build, no second set of
        # build events): a backend runs as soon as its own build is done, and one whose runtime
        # cannot run here goes on building in the background without holding the results back.
        try:
            asked = RunRequest.of(
                project,
                backends,
                self.devices or None,
                kernel=self.kernel,
                sizes=self.sizes,
                tunables=self.tunables,
                timeout_s=self.timeout_s,
                build_service=self.build_service,
                build_job=job,
                reference=self.reference,
                trace=self.trace,
                writers=self.writers,
            )
            report = self.run_service.execute(asked, on_event=on_event)
        except WorkbenchError as exc:
            error = str(exc)
        job.release_background()  # the timed runs are over
        build = job.finished()
        self.last_build = build
        self._emit(self._build_finished(request, build))
        self._in_background(request, job, build)
        if report is not None:
            # As before streaming: a backend whose build failed has no row of its own (the
            # window shows its last good one, stale); nothing built at all is an error.
            failed = {b for b, r in build.items() if r.status in ("error", "cancelled")}
            report.results = [r for r in report.results if r.backend not in failed]
            if not any(r.backend in build and build[r.backend].status == "ok" for r in report.results):
                states = ", ".join(f"{b}: {r.status}" for b, r in build.items()) or "no backend selected"
                error, report = f"nothing to run ({states})", None
        if report is not None:
            for result in report.results:
                spec = str((result.device or {}).get("spec", ""))
                self.results[(result.backend, spec)] = result
            self.last_report = report
        if request.cancelled.is_set() or getattr(report, "cancelled", False):
            self._emit(self._finished(request, "cancelled", build, report, error))
            return
        if report is None:
            self._emit(self._finished(request, "error", build, None, error or "the run failed"))
            return
        latency = time.monotonic() - request.saved_at
        self.last_latency_s = latency
        try:
            changed = self.agreement.observe(project, report)
        except OSError:
            changed = None
        building = [b for b in job.backends if b not in build]
        self._emit(self._finished(request, "ok", build, report, error, latency, changed, building))

    def _in_background(self, request: _Request, job: Any, build: dict[str, Any]) -> None:
        """Builds the run did not wait for (their runtime is unavailable here) go on after the
        cycle, nobody waiting: the next cycles neither wait for them nor restart them (a cold
        nvptx build would never finish under a stream of saves), and when they end their
        artifacts reach the build panel in a second ``LiveBuildFinished`` (``background``)."""
        left = [b for b in job.backends if b not in build]
        if not left:
            return
        # Started at normal priority when this cycle began (their runtime was not probed yet):
        # from here on they yield the cores to the next cycles' builds.
        self.build_service.lower_priority(left)
        with self._lock:
            self._background.update(left)

        def done(job: Any) -> None:
            with self._lock:
                self._background.difference_update(left)
            results = job.finished()
            self._emit(self._build_finished(request, {b: results[b] for b in left}, background=True))

        job.add_done_callback(done)

    def _build_finished(
        self, request: _Request, build: dict[str, Any], background: bool = False
    ) -> LiveBuildFinished:
        return LiveBuildFinished(
            cycle=request.cycle,
            results=build,
            rebuilt=[b for b, r in build.items() if r.status == "ok" and not r.cached],
            cached=[b for b, r in build.items() if r.status == "ok" and r.cached],
            background=background,
        )

    def _reference_backend(self, project: Project) -> str | None:
        if self.reference:
            return self.reference
        try:
            return project.manifest.kernel(self.kernel).check.reference
        except (WorkbenchError, LookupError, ValueError):
            return None

    def _finished(
        self, request, status, build, report, error, latency=None, changed=None, building=()
    ) -> LiveCycleFinished:
        return LiveCycleFinished(
            cycle=request.cycle,
            reason=request.reason,
            status=status,
            latency_s=latency,
            build=build,
            report=report,
            error=error,
            reference_changed=changed,
            project=request.project,
            building=list(building),
        )
