"""The console's builds and runs as plain futures, each on a thread of its own (Qt-free).

`start(what, work)` returns a `JobFuture` at once. Its thread starts when the owner's `defer`
calls it (the window: on the next turn of the event loop, so the typed statement returns and the
console draws its prompt before the job's Python work competes with it for the interpreter), or
at once when something waits for its result. `on_failed(text)` and `on_ended(what)` are called
from the job's thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any


class JobFuture(Future):
    """A console job's Future: its thread starts on `start()`, or when its result is asked for."""

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


class ConsoleJobs:
    """The jobs in flight and the threads to join at shutdown."""

    def __init__(
        self,
        defer: Callable[[Callable[[], None]], None],
        on_failed: Callable[[str], None],
        on_ended: Callable[[str], None],
    ):
        self._defer = defer
        self._on_failed = on_failed
        self._on_ended = on_ended
        self._jobs: list[JobFuture] = []
        #: Jobs started and not yet ended (the owner's thread counts: `start` and `ended`).
        self.running = 0
        self.closed = False

    def start(self, what: str, work: Callable[[], Any]) -> JobFuture:
        """`work()` on a thread of its own; the Future gets what it returns (or its exception)."""

        def body() -> None:
            try:
                future.set_result(work())
            except BaseException as exc:  # the caller's .result() raises it; the window says it
                future.set_exception(exc)
                self._on_failed(f"console {what} failed: {exc}")
            finally:
                self._on_ended(what)

        self.running += 1
        self._jobs = [f for f in self._jobs if not f.started or f.thread.is_alive()]
        future = JobFuture(threading.Thread(target=body, name=f"wb-console-{what}", daemon=True))
        future.set_running_or_notify_cancel()
        self._jobs.append(future)
        self._defer(lambda: None if self.closed else future.start())
        return future

    def ended(self) -> None:
        """Owner's thread: a job's end was delivered."""
        self.running = max(0, self.running - 1)

    def join(self, timeout_s: float = 30.0) -> None:
        """Wait for every job that started (the services are closed first: their waits end)."""
        self.closed = True
        for job in self._jobs:
            if job.started:  # one whose turn never came has no thread to wait for
                job.thread.join(timeout_s)
