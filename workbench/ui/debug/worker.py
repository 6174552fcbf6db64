"""The Debug dock's session off the window's thread: one Python thread per debugging session
runs the Qt-free `workbench.debug` job (`open_debug`, `Debugger`: gdb in its own process) and
answers through queued signals. The window only posts requests; a kernel that panics, hangs or
takes long to reach the breakpoint never blocks it (the debugger's own time limit ends a stop
that never comes). `close()` ends gdb and the launcher and lets the thread go.

gdb's own start and the launcher's (a Python process under gdb) are most of the way from a click
to the stop, about 1 s of it on a quiet 2-core machine: once a session ends, the next one is
started and held at the kernel's entry (`Debugger.load`) with the same project, sizes and debug
build — the *parked* session; a click then only sets its breakpoints and runs on. A parked session
made before an edit (another debug build) or at other sizes is ended, never used.
The window's first session has none before it: `park` makes one ahead of the first click when a
click becomes likely (the dock's `warm_up`: a run with wrong elements, the dock brought to the
front), only on the debug build the cache already has.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal

from workbench.errors import WorkbenchError

#: How long `close()` waits for a session's thread (one still building the debug build goes on
#: alone, its result dropped); the window's shutdown waits longer.
CLOSE_WAIT_S = 2.0


class _Session:
    """One session's queue of calls, thread, cancel flag and job (touched by its thread)."""

    def __init__(self) -> None:
        self.calls: queue.Queue[Callable[[], None] | None] = queue.Queue()
        self.cancelled = threading.Event()
        self.job: Any = None
        self.thread: threading.Thread | None = None


class DebugWorker(QObject):
    """Runs one debugging session's calls in order on its own thread.

    `stopped(dict)`: a stop (`Stop.to_json()` with `memory`); `failed(str)`: a call raised (the
    message); `closed()`: a session ended (gdb gone)."""

    stopped = Signal(object)
    failed = Signal(str)
    closed = Signal()

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._session: _Session | None = None
        #: The last session's start in phases (build lookup; `open_debug`'s inputs and gdb
        #: started; gdb to the first stop; memory read; whether it was parked): the latency
        #: benchmark reports them.
        self.seconds: dict[str, float] = {}
        #: The last session's (project, kernel, sizes, cache dir, time limit, debug build): the
        #: parked session is made like it.
        self._last: tuple | None = None
        self._spare: tuple[tuple, Any] | None = None  # (key, DebugJob held at the entry)
        self._spare_thread: threading.Thread | None = None
        self._spare_lock = threading.Lock()
        self._spare_cancelled = False

    @property
    def job(self) -> Any:
        """The running session's `DebugJob` (None before its build and gdb are ready)."""
        return self._session.job if self._session is not None else None

    def running(self) -> bool:
        return self._session is not None

    def open(self, project: Any, kernel: str | None, sizes: dict | None, invocation: Any,
             breakpoints: list[tuple[Path, int]], watch: tuple[str, int] | None, cache_dir: Any,
             timeout_s: float = 60.0) -> None:  # fmt: skip
        """Start a session: the debug build (or the parked session), gdb, run to the first stop
        (a breakpoint in `invocation` or the watch)."""
        self.close()
        session = self._session = _Session()

        def start() -> None:
            from workbench.debug.job import open_debug

            began = time.perf_counter()
            job = self._take_spare(project, kernel, sizes, invocation, cache_dir)
            warm = job is not None
            if job is None:
                job = open_debug(project, kernel, sizes, None, invocation, cache_dir, timeout_s)
            session.job = job
            if session.cancelled.is_set():
                return  # closed meanwhile: the loop's end closes the job
            opened = time.perf_counter()
            self._last = (project, kernel, sizes, cache_dir, timeout_s, job.build)
            stop = job.debugger.start(breakpoints, watch)
            self.seconds = {
                **({"build": opened - began} if warm else job.seconds),
                "to the stop": time.perf_counter() - opened,
                "parked": float(warm),
            }
            self._emit_stop(session, stop, watch)

        session.calls.put(start)
        session.thread = threading.Thread(
            target=self._loop, args=(session,), name="wb-debug-session", daemon=True
        )
        session.thread.start()

    def resume(self, how: str) -> None:
        session = self._session
        if session is not None:
            session.calls.put(lambda: self._emit_stop(session, self._debugger(session).resume(how)))

    def set_breakpoint(self, path: Path, line: int, on: bool) -> None:
        session = self._session
        if session is None:
            return

        def change() -> None:
            debugger = self._debugger(session)
            (debugger.add_breakpoint if on else debugger.remove_breakpoint)(path, line)

        session.calls.put(change)

    def close(self, wait_s: float = CLOSE_WAIT_S) -> None:
        """End the session (gdb and the launcher killed; a stop being waited for ends within
        0.2 s), wait up to `wait_s` for its thread; then park the next session."""
        session, self._session = self._session, None
        if session is None:
            return
        session.cancelled.set()
        if session.job is not None:
            session.job.debugger.session.close()
        session.calls.put(None)
        if session.thread is not None:
            session.thread.join(timeout=wait_s)
        self._park()

    def shutdown(self) -> None:
        """End the session and the parked one, and wait for their threads (the window closes)."""
        self._last = None
        session = self._session
        self.close(wait_s=600.0)
        if session is not None and session.thread is not None:
            session.thread.join()
        self._drop_spare()

    # ------------------------------------------------------------------ the session's thread
    def _debugger(self, session: _Session) -> Any:
        if session.job is None:
            raise WorkbenchError("no debugging session")
        return session.job.debugger

    def _emit_stop(self, session: _Session, stop: Any, watch: tuple[str, int] | None = None) -> None:
        from workbench.debug.memory import memory_around

        data = stop.to_json()
        if not session.job.debugger.ended and stop.invocation:
            began = time.perf_counter()
            data["memory"] = memory_around(session.job, stop, watch)
            self.seconds["memory"] = time.perf_counter() - began
        if not session.cancelled.is_set():
            self.stopped.emit(data)

    def _loop(self, session: _Session) -> None:
        while not session.cancelled.is_set():
            call = session.calls.get()
            if call is None:
                break
            try:
                call()
            except Exception as exc:  # noqa: BLE001 - said in the dock; the session goes on or ends
                if not session.cancelled.is_set():
                    text = str(exc) if isinstance(exc, WorkbenchError) else f"{type(exc).__name__}: {exc}"
                    self.failed.emit(text)
        if session.job is not None:
            session.job.close()
        self.closed.emit()

    # ------------------------------------------------------------------ the parked session
    def park(self, project: Any, sizes: dict | None, cache_dir: Any, timeout_s: float = 60.0) -> bool:
        """Park a session ahead of the first click (a debug click became likely): like `_park`,
        but only on the debug build the cache already has (looked up off this thread; nothing is
        built for it). Not while a session runs or one is being parked; a parked session for
        these sizes and this build is kept, another is ended and replaced. True: a look-up began."""
        if self._session is not None:
            return False
        return self._start_spare(project, None, sizes, cache_dir, timeout_s, None)

    def parked(self) -> bool:
        """A parked session is held at the kernel's entry."""
        with self._spare_lock:
            spare = self._spare
        return spare is not None and spare[1].debugger.loaded and not spare[1].debugger.ended

    def parking(self) -> bool:
        """A parked session is being looked up or started."""
        thread = self._spare_thread
        return thread is not None and thread.is_alive()

    def _park(self) -> None:
        """Start a parked session like the last one (its build: nothing is built for it)."""
        if self._last is not None:
            self._start_spare(*self._last)

    def _start_spare(self, project: Any, kernel: Any, sizes: Any, cache_dir: Any, timeout_s: float,
                     build: Any) -> bool:  # fmt: skip
        """A thread parks a session on `build` (None: the cached one, or none at all). One gdb
        at most: a parked session made otherwise (other sizes, another build) is ended first."""
        if self.parking():
            return False
        self._spare_cancelled = False

        def prepare() -> None:
            from workbench.debug.build import cached_debug_build
            from workbench.debug.job import open_debug

            try:
                found = build or cached_debug_build(project, cache_dir)
            except Exception:  # noqa: BLE001 - no look-up, no parked session
                return
            if found is None:
                return  # no debug build cached: nothing is built just to park
            key = (str(project.root), kernel, dict(sizes or {}), str(found.library))
            with self._spare_lock:
                old = self._spare
                if old is not None and old[0] == key and not old[1].debugger.ended:
                    return  # already parked like this
                self._spare = None
            if old is not None:
                old[1].close()
            try:
                job = open_debug(project, kernel, sizes, None, None, cache_dir, timeout_s, build=found)
            except Exception:  # noqa: BLE001 - no parked session: the next one starts cold
                return
            with self._spare_lock:
                if self._spare_cancelled:
                    job.close()
                    return
                self._spare = (key, job)
            try:
                job.debugger.load()
            except Exception:  # noqa: BLE001 - `_take_spare` sees it did not load, and ends it
                pass

        self._spare_thread = threading.Thread(target=prepare, name="wb-debug-parked", daemon=True)
        self._spare_thread.start()
        return True

    def _take_spare(self, project: Any, kernel: Any, sizes: Any, invocation: Any, cache_dir: Any) -> Any:
        """(The session's thread.) The parked session when it was made for this project, kernel,
        sizes and debug build (looked up: an edit since gives another) and reached the entry;
        else None (it is ended)."""
        thread, self._spare_thread = self._spare_thread, None
        if thread is None:
            return None
        thread.join()
        with self._spare_lock:
            spare, self._spare = self._spare, None
        if spare is None:
            return None
        key, job = spare
        from workbench.debug.build import ensure_debug_build

        build = ensure_debug_build(project, cache_dir)
        current = (str(project.root), kernel, dict(sizes or {}), str(build.library))
        if job.debugger.loaded and not job.debugger.ended and key == current:
            job.aim(invocation)
            return job
        job.close()
        return None

    def _drop_spare(self) -> None:
        with self._spare_lock:
            self._spare_cancelled = True
            spare, self._spare = self._spare, None
        if spare is not None:
            spare[1].debugger.session.close()  # a load in progress ends now
        thread, self._spare_thread = self._spare_thread, None
        if thread is not None:
            thread.join()
        if spare is not None:
            spare[1].close()
