"""The Debug dock's session off the window's thread: one Python thread per debugging session
runs the Qt-free `workbench.debug` job (`open_debug`, `Debugger`: gdb in its own process) and
answers through queued signals. The window only posts requests; a kernel that panics, hangs or
takes long to reach the breakpoint never blocks it (the debugger's own time limit ends a stop
that never comes). `close()` ends gdb and the launcher and joins the thread.
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


class DebugWorker(QObject):
    """Runs one debugging session's calls in order on its own thread.

    `stopped(dict)`: a stop (`Stop.to_json()` with `memory` and `index`); `failed(str)`: a call
    raised (the message); `closed()`: the session ended (gdb gone)."""

    stopped = Signal(object)
    failed = Signal(str)
    closed = Signal()

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._queue: queue.Queue[Callable[[], None] | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self.job: Any = None  # workbench.debug.job.DebugJob, touched on the worker's thread only
        #: The last session's start in phases (`open_debug`'s build lookup, inputs and gdb started;
        #: gdb to the first stop; memory read at the stop): the latency benchmark reports them.
        self.seconds: dict[str, float] = {}

    def running(self) -> bool:
        return self._thread is not None

    def open(self, project: Any, kernel: str | None, sizes: dict | None, invocation: Any,
             breakpoints: list[tuple[Path, int]], watch: tuple[str, int] | None, cache_dir: Any,
             timeout_s: float = 60.0) -> None:  # fmt: skip
        """Start a session: the debug build, gdb, run to the first stop (a breakpoint in
        `invocation` or the watch)."""
        self.close()
        self._thread = threading.Thread(target=self._loop, name="wb-debug-session", daemon=True)
        self._thread.start()

        def start() -> None:
            from workbench.debug.job import open_debug

            self.job = open_debug(project, kernel, sizes, None, invocation, cache_dir, timeout_s)
            opened = time.perf_counter()
            stop = self.job.debugger.start(breakpoints, watch)
            # build lookup, inputs and gdb started (`open_debug`), gdb to the first stop
            self.seconds = {**self.job.seconds, "to the stop": time.perf_counter() - opened}
            self._emit_stop(stop, watch)

        self._queue.put(start)

    def resume(self, how: str) -> None:
        self._queue.put(lambda: self._emit_stop(self._debugger().resume(how)))

    def set_breakpoint(self, path: Path, line: int, on: bool) -> None:
        def change() -> None:
            debugger = self._debugger()
            (debugger.add_breakpoint if on else debugger.remove_breakpoint)(path, line)

        if self.running():
            self._queue.put(change)

    def close(self) -> None:
        """End the session (gdb and the launcher killed) and join its thread."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        job = self.job
        if job is not None:
            # A stop being waited for ends now: gdb and the launcher go, the wait returns.
            job.debugger.session.close()
        self._queue.put(None)
        thread.join(timeout=30)
        self._queue = queue.Queue()

    # ------------------------------------------------------------------ the worker's thread
    def _debugger(self) -> Any:
        if self.job is None:
            raise WorkbenchError("no debugging session")
        return self.job.debugger

    def _emit_stop(self, stop: Any, watch: tuple[str, int] | None = None) -> None:
        from workbench.debug.memory import memory_around

        data = stop.to_json()
        if not self.job.debugger.ended and stop.invocation:
            began = time.perf_counter()
            data["memory"] = memory_around(self.job, stop, watch)
            self.seconds["memory"] = time.perf_counter() - began
        self.stopped.emit(data)

    def _loop(self) -> None:
        while True:
            call = self._queue.get()
            if call is None:
                break
            try:
                call()
            except Exception as exc:  # noqa: BLE001 - said in the dock; the session goes on or ends
                if self._thread is not None:
                    self.failed.emit(
                        str(exc) if isinstance(exc, WorkbenchError) else f"{type(exc).__name__}: {exc}"
                    )
        job, self.job = self.job, None
        if job is not None:
            job.close()
        self.closed.emit()
