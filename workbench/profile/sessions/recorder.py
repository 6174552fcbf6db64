"""`SessionRecorder`: record finished runs on a thread of its own (Qt-free).

The window hands every finished `RunReport` to one of these, so a database locked for a moment by
another workbench process (`busy_timeout`) never holds up the event loop. The recorder opens its own
connection on its thread, records the reports in the order they came and tells `on_done` (called on
the recorder's thread) what happened: `{"ids": [...]}` or `{"error": "..."}`.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from workbench.errors import WorkbenchError

log = logging.getLogger(__name__)

_STOP = object()


class SessionRecorder:
    def __init__(
        self,
        path: str | Path | None = None,
        on_done: Callable[[dict[str, Any]], None] | None = None,
        keep_outputs: bool = False,
    ):
        self.path = path
        self.on_done = on_done
        self.keep_outputs = keep_outputs
        self._queue: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._closed = False

    def submit(self, report: Any, snapshot: tuple[str, dict[str, str]] | None = None, **options: Any) -> None:
        """Queue one report (never blocks); `options` go to `record_report`."""
        if self._closed:
            return
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="wb-session-recorder", daemon=True)
            self._thread.start()
        self._queue.put((report, snapshot, options))

    def close(self, timeout: float = 60.0) -> None:
        """Record what is queued, then stop the thread. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._thread is not None:
            self._queue.put(_STOP)
            self._thread.join(timeout)

    def _work(self) -> None:
        from workbench.profile.sessions.record import record_report
        from workbench.profile.sessions.store import SessionStore

        store = None
        try:
            while True:
                item = self._queue.get()
                if item is _STOP:
                    return
                report, snapshot, options = item
                options.setdefault("keep_outputs", self.keep_outputs)
                try:
                    if store is None:
                        store = SessionStore(self.path)
                    outcome = {"ids": record_report(store, report, snapshot=snapshot, **options)}
                except (WorkbenchError, OSError) as exc:
                    outcome = {"error": f"the run was not recorded: {exc}"}
                except Exception as exc:  # a recording bug must not kill the thread silently
                    log.exception("recording a run failed")
                    outcome = {"error": f"the run was not recorded: {type(exc).__name__}: {exc}"}
                if self.on_done is not None:
                    try:
                        self.on_done(outcome)
                    except Exception:
                        log.exception("the recorder's callback failed")
        finally:
            if store is not None:
                store.close()
