"""`BuildService`: builds backends concurrently off the caller's thread, with cancel and events."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.backends import BACKENDS, check_backend
from workbench.build.builder import build_backend
from workbench.build.cache import cache_root
from workbench.build.process import Budget
from workbench.build.scratch import sweep_quietly
from workbench.project import Project
from workbench.records import BuildResult, Diagnostic

#: The niceness of a background build (nobody waits for it): on a 2-core machine a cold nvptx
#: build at normal priority took about 0.15 s from each hot-reload cycle's cpu build.
BACKGROUND_NICENESS = 10
#: How often a held background build looks at its cancel flag while it waits for its release.
HOLD_POLL_S = 0.05
#: How often a niced build reports that it is still working (its row's "progress" line).
PROGRESS_S = 2.0


@dataclass
class BuildEvent:
    """`kind`: queued (a held background build waiting for its release) | started | output |
    diagnostic | progress (a niced build's limit clock, every `PROGRESS_S`: `Budget.progress`'s
    dict) | finished. Delivered on service threads."""

    kind: str
    project: str
    backend: str
    line: str | None = None
    diagnostic: Diagnostic | None = None
    result: BuildResult | None = None
    progress: dict | None = None


class BuildJob:
    """The builds of one `submit`: `wait()` returns {backend: BuildResult}."""

    def __init__(self, project: str, backends: list[str]):
        self.project = project
        self.backends = list(backends)
        self._results: dict[str, BuildResult] = {}
        self._cond = threading.Condition()
        self._callbacks: list[Callable[[BuildJob], None]] = []
        #: Set when the job's held background builds may start (`release_background`).
        self._released = threading.Event()
        self._released.set()

    def release_background(self) -> None:
        """Let the background builds a `submit(hold_background=True)` held back start now."""
        self._released.set()

    def _hold(self) -> None:
        """Held from now until `release_background` (set at creation: nothing is held)."""
        self._released.clear()

    @property
    def holding(self) -> bool:
        return not self._released.is_set()

    def wait_released(self, cancel: threading.Event) -> None:
        """Block until `release_background` or `cancel` (looked at every HOLD_POLL_S)."""
        while not self._released.wait(HOLD_POLL_S) and not cancel.is_set():
            pass

    def _set(self, backend: str, result: BuildResult) -> None:
        with self._cond:
            self._results[backend] = result
            self._cond.notify_all()
            callbacks = self._callbacks if len(self._results) == len(self.backends) else []
            if callbacks:
                self._callbacks = []
        for fn in callbacks:
            fn(self)

    def add_done_callback(self, fn: Callable[[BuildJob], None]) -> None:
        """Call `fn(job)` once every backend finished (on the last build's thread; at once when
        done already): builds a run does not wait for report without anyone waiting on them."""
        with self._cond:
            if len(self._results) < len(self.backends):
                self._callbacks.append(fn)
                return
        fn(self)

    @property
    def done(self) -> bool:
        with self._cond:
            return len(self._results) == len(self.backends)

    def wait(self, timeout: float | None = None) -> dict[str, BuildResult]:
        """Block until every backend finished; TimeoutError when `timeout` passes first."""
        with self._cond:
            if not self._cond.wait_for(lambda: len(self._results) == len(self.backends), timeout):
                raise TimeoutError(f"builds of {self.project} not finished after {timeout} s")
            return {b: self._results[b] for b in self.backends}

    def finished(self) -> dict[str, BuildResult]:
        """The builds done so far, in the order asked."""
        with self._cond:
            return {b: self._results[b] for b in self.backends if b in self._results}

    def wait_any(self, backends: list[str] | set[str], timeout: float | None = None) -> str:
        """Block until one of `backends` (all of this job's) finished; returns the first of them
        done, in the order asked. A run takes each backend's build as soon as it is done."""
        wanted = [b for b in self.backends if b in set(backends)]
        if not wanted:
            raise KeyError(f"none of {sorted(backends)} is built by this job ({', '.join(self.backends)})")
        with self._cond:
            if not self._cond.wait_for(lambda: any(b in self._results for b in wanted), timeout):
                raise TimeoutError(f"builds of {', '.join(wanted)} not finished after {timeout} s")
            return next(b for b in wanted if b in self._results)


@dataclass
class _Task:
    job: BuildJob
    budget: Budget
    held: bool = False  # a background build: waits for `job.release_background()`
    thread: threading.Thread | None = None


class BuildService:
    """Owns the build child processes; a newer submit for a backend cancels the older build."""

    def __init__(self, cache_dir: str | Path | None = None, timeout_s: float = 300.0):
        self.cache_dir = cache_root(cache_dir)
        self.timeout_s = timeout_s
        self._subscribers: list[Callable[[BuildEvent], None]] = []
        self._active: dict[str, _Task] = {}
        self._lock = threading.Lock()
        self._closed = False
        # What builds killed earlier left in this cache (their staging and work folders), swept
        # off the caller's thread: a window must not wait for it.
        threading.Thread(
            target=sweep_quietly, args=(self.cache_dir,), name="build-sweep", daemon=True
        ).start()

    def subscribe(self, fn: Callable[[BuildEvent], None]) -> None:
        with self._lock:
            self._subscribers.append(fn)

    def unsubscribe(self, fn: Callable[[BuildEvent], None]) -> None:
        with self._lock:
            if fn in self._subscribers:
                self._subscribers.remove(fn)

    def _emit(self, event: BuildEvent) -> None:
        with self._lock:
            subscribers = list(self._subscribers)
        for fn in subscribers:
            try:
                fn(event)
            except Exception:  # noqa: BLE001  a broken view must not break the build
                pass

    def submit(
        self,
        project: Project,
        backends: list[str] | tuple[str, ...] | None = None,
        tunables: dict[str, Any] | None = None,
        target: str | None = None,
        background: Iterable[str] = (),
        hold_background: bool = False,
    ) -> BuildJob:
        """Start building `backends` (default: all) in worker threads; returns at once. Those in
        `background` (nobody waits for them) run at a lower CPU priority; with `hold_background`
        they do not start before `job.release_background()` (the caller's timed runs are over:
        even a niced compiler takes cache and memory bandwidth from them, and on two cores the
        cores themselves), and their timeout counts from then. The job is not done before they
        are: whoever holds them must release them."""
        background = set(background)
        backends = [check_backend(b) for b in dict.fromkeys(backends or BACKENDS)]
        if self._closed:
            raise RuntimeError("BuildService is closed")
        job = BuildJob(project.name, backends)
        if hold_background and background & set(backends):
            job._hold()
        for backend in backends:
            niceness = BACKGROUND_NICENESS if backend in background else 0
            task = _Task(job, Budget.with_timeout(self.timeout_s, niceness), held=backend in background)
            with self._lock:
                older = self._active.get(backend)
                self._active[backend] = task
            if older is not None:
                older.budget.cancel.set()  # its runner kills the whole process tree
            task.thread = threading.Thread(
                target=self._run, args=(task, project, backend, tunables, target),
                name=f"build-{backend}", daemon=True,
            )  # fmt: skip
            task.thread.start()
        return job

    def _run(self, task: _Task, project: Project, backend: str, tunables, target) -> None:
        name = project.name
        if task.held and task.job.holding:
            self._emit(BuildEvent("queued", name, backend))
            task.job.wait_released(task.budget.cancel)
            task.budget.restart_clock()  # its timeout is for building, not for waiting
        if task.budget.cancel.is_set():  # before it started (held): nothing to stop or report
            self._end(
                task, name, backend, BuildResult(backend, "cancelled", log="cancelled before it started")
            )
            return
        self._emit(BuildEvent("started", name, backend))
        self._report_progress(task, name, backend)
        try:
            result = build_backend(
                project, backend, self.cache_dir, tunables=tunables, target=target, budget=task.budget,
                on_output=lambda line: self._emit(BuildEvent("output", name, backend, line=line)),
                on_diagnostic=lambda d: self._emit(BuildEvent("diagnostic", name, backend, diagnostic=d)),
            )  # fmt: skip
        except Exception as exc:  # noqa: BLE001  reported as a result, never lost in a thread
            result = BuildResult(backend, "error", log=f"internal error: {exc!r}",
                                 diagnostics=[Diagnostic("error", f"internal error: {exc}").to_dict()])  # fmt: skip
        if task.budget.cancel.is_set() and result.status != "ok":
            result.status = "cancelled"
        self._end(task, name, backend, result)

    def _report_progress(self, task: _Task, name: str, backend: str) -> None:
        """A niced build's budget reports its limit clock every PROGRESS_S (also once a build is
        niced later, by `lower_priority`)."""
        last = [0.0]

        def sample() -> None:
            now = time.monotonic()
            progress = task.budget.progress()
            if progress is not None and now - last[0] >= PROGRESS_S:
                last[0] = now
                self._emit(BuildEvent("progress", name, backend, progress=progress))

        task.budget.on_sample = sample

    def _end(self, task: _Task, name: str, backend: str, result: BuildResult) -> None:
        with self._lock:
            if self._active.get(backend) is task:
                del self._active[backend]
        task.job._set(backend, result)
        self._emit(BuildEvent("finished", name, backend, result=result))

    def lower_priority(self, backends: list[str] | tuple[str, ...]) -> None:
        """The running builds of `backends` go on at `BACKGROUND_NICENESS` (nobody waits for them
        any more: their runtime turned out to be unavailable once the run probed it)."""
        with self._lock:
            tasks = [t for b, t in self._active.items() if b in backends]
        for task in tasks:
            task.budget.lower_priority(BACKGROUND_NICENESS)

    def cancel(self, backend: str | None = None) -> None:
        """Cancel the running build of `backend` (all when None); its processes are killed."""
        with self._lock:
            tasks = [t for b, t in self._active.items() if backend is None or b == backend]
        for task in tasks:
            task.budget.cancel.set()

    def close(self, timeout: float = 10.0) -> None:
        """Cancel every build and wait for their worker threads."""
        self._closed = True
        with self._lock:
            tasks = list(self._active.values())
        for task in tasks:
            task.budget.cancel.set()
        for task in tasks:
            if task.thread is not None:
                task.thread.join(timeout)

    def __enter__(self) -> BuildService:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def build_project(
    project: Project | str | Path,
    backends: list[str] | tuple[str, ...] | None = None,
    cache_dir: str | Path | None = None,
    *,
    tunables: dict[str, Any] | None = None,
    target: str | None = None,
    timeout_s: float = 300.0,
    on_event: Callable[[BuildEvent], None] | None = None,
) -> list[BuildResult]:
    """Build and wait: one BuildResult per backend, in the order asked."""
    if not isinstance(project, Project):
        project = Project.open(project)
    service = BuildService(cache_dir=cache_dir, timeout_s=timeout_s)
    if on_event is not None:
        service.subscribe(on_event)
    try:
        results = service.submit(project, backends, tunables=tunables, target=target).wait()
    finally:
        service.close()
    return list(results.values())
