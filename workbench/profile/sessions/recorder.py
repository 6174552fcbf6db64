"""`SessionRecorder`: the one way a finished run becomes rows of the sessions database (Qt-free).

The command line (`workbench run`), the window (its composition root makes one and hands it to the
bridge) and sweeps (`SweepRunner`) all record through one of these, so the rules live here once:

- the sources recorded with a run are the ones it built: `begin(project)` snapshots them when
  the build starts, and that snapshot goes with the report however long the run takes (an edit
  saved meanwhile belongs to the next run);
- `enabled` is the window's "Record runs" toggle and the command line's `--no-record`;
- `record()` records now, on the caller's thread (the command line, a sweep: they want the ids);
  `submit()` queues the report for the recorder's own thread and connection, so a database locked
  for a moment by another workbench process (`busy_timeout`) never holds up the window's event
  loop. Reports are recorded in the order they came; `on_done` (called on the recorder's thread)
  gets `{"ids": [...], "rows": {(backend, device): id}, "db": file}` or `{"error": "..."}` for
  each, and the `Future` `submit()` returns holds the same outcome;
- a report `submit()` queued while another process holds the database locked past the store's
  wait (`lock_wait_s`, SQLite's busy timeout) is not dropped: the recorder's thread tries again
  until the lock is gone, for `LOCKED_PATIENCE_S` at most or until the recorder closes, telling
  `on_wait` (if set) each time it starts waiting again; the reports behind it wait their turn.
  (`record()`, on the caller's thread, gives up after one wait: the command line says so.)
- `submit_counters()` queues counters taken after their run was recorded (the window's *Take
  counters*) behind that recording, on the same thread: each record goes to the run id the
  recording's outcome names for its (backend, device), in the file it was recorded in
  (`SessionStore.add_counters`).
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

from workbench.errors import WorkbenchError
from workbench.profile.sessions.db_errors import SessionStoreError

log = logging.getLogger(__name__)

_STOP = object()

#: How long a queued report waits in all for a database another process keeps locked (each try
#: waits the store's `lock_wait_s`) before it is given up with the store's error.
LOCKED_PATIENCE_S = 600.0

#: A source snapshot: (hash, {relative path: text}) as `sources.snapshot` reads it.
Snapshot = tuple[str, dict[str, str]]


class SessionRecorder:
    def __init__(
        self,
        path: str | Path | None = None,
        on_done: Callable[[dict[str, Any]], None] | None = None,
        keep_outputs: bool = False,
        *,
        store: Any = None,
        enabled: bool = True,
        lock_wait_s: float = 30.0,
    ):
        """`path`: the database file (None: the default in the user data folder). `store`: an
        open `SessionStore` that `record()` writes through instead (a sweep reads its resume
        rows from the same one); it stays the caller's to close. `lock_wait_s`: how long one try
        waits for another process's lock (SQLite's busy timeout)."""
        self.path = path if store is None else store.path
        self.lock_wait_s = lock_wait_s
        #: Told (on the recorder's thread) why a queued report waits: the database is locked.
        self.on_wait: Callable[[str], None] | None = None
        self.on_done = on_done
        self.keep_outputs = keep_outputs
        self.enabled = enabled
        self._store = store
        self._own_store = store is None
        self._queue: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._pending = 0
        self._idle = threading.Condition()

    # ------------------------------------------------------------------ at build time
    def begin(self, project: Any) -> Snapshot | None:
        """The project's sources as they are about to be built, to be recorded with the run's
        report; None when recording is off or they cannot be read (said in the log)."""
        if not self.enabled or project is None:
            return None
        from workbench.profile.sessions.sources import snapshot

        try:
            return snapshot(project)
        except OSError as exc:
            log.warning("could not read the sources to record: %s", exc)
            return None

    # ------------------------------------------------------------------ recording
    def record(self, report: Any, snapshot: Snapshot | None = None, **options: Any) -> list[int]:
        """Record one report now, on this thread; the new run ids. Raises `SessionStoreError`
        (a `WorkbenchError`) or `OSError` when the database refuses it."""
        from workbench.profile.sessions.store import SessionStore

        if self._store is None:
            self._store = SessionStore(self.path)
        return [run_id for _key, run_id in self._record_one(self._store, report, snapshot, options)]

    def submit(
        self,
        report: Any,
        snapshot: Snapshot | None = None,
        on_done: Callable[[dict[str, Any]], None] | None = None,
        **options: Any,
    ) -> Future:
        """Queue one report for the recorder's thread (never blocks); `on_done` (default: the
        recorder's) hears how it went; `options` go to `record_report`. The Future gets the same
        outcome (`submit_counters` reads it); a closed recorder answers at once with an error."""

        def job(current: Callable[[], Any]) -> dict[str, Any]:
            deadline = time.monotonic() + LOCKED_PATIENCE_S
            while True:
                try:
                    store = current()
                    rows = self._record_one(store, report, snapshot, options)
                    return {"ids": [i for _k, i in rows], "rows": dict(rows), "db": str(store.path)}
                except SessionStoreError as exc:
                    # Locked by another process past one wait: this thread may wait longer (the
                    # window's event loop is not waiting on it), and the run is not lost.
                    if exc.kind != "locked" or self._closed or time.monotonic() > deadline:
                        raise
                    if self.on_wait is not None:
                        self.on_wait(f"{exc} (the run waits to be recorded: it is tried again)")

        return self._enqueue(job, "the run was not recorded", on_done or self.on_done)

    def submit_counters(
        self,
        records: dict[tuple[str, str], dict[str, Any]],
        runs: dict[tuple[str, str], tuple[Future | str, tuple[str, str]]],
        on_done: Callable[[dict[str, Any]], None] | None = None,
    ) -> Future:
        """Queue counters taken after their run was recorded. `records`: {key: counters record}
        (`nsight.collect`); `runs`: {key: (the Future `submit` gave for its run's recording, or
        why that run was not recorded; the (backend, device) of its row)}. Queued behind the
        recordings, so each is done by then. `on_done` and the Future get `{"ids": {key: run
        id}, "not_recorded": {key: why}}`, or `{"error": ...}` when the database refused."""

        def job(current: Callable[[], Any]) -> dict[str, Any]:
            return self._attach_counters(current, records, runs)

        return self._enqueue(job, "the counters were not recorded", on_done)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until every submitted report is recorded (or refused); False on timeout."""
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout)

    @property
    def database(self) -> Path:
        """The database file this recorder writes (the default one when no path was given)."""
        from workbench.profile.sessions.store import default_db_path

        if self._store is not None:
            return self._store.path
        return Path(self.path).expanduser() if self.path else default_db_path()

    def set_path(self, path: str | Path | None) -> None:
        """Record into another database file from now on (what is queued goes to the old one)."""
        if path == self.path:
            return
        self._stop_thread()
        self._close_store()
        self.path = path
        self._closed = False

    def close(self, timeout: float = 60.0) -> None:
        """Record what is queued, then stop the thread and close this recorder's connections."""
        if self._closed:
            return
        self._stop_thread(timeout)
        self._close_store()

    # ------------------------------------------------------------------ plumbing
    def _record_one(
        self, store: Any, report: Any, snapshot: Snapshot | None, options: dict[str, Any]
    ) -> list[tuple[tuple[str, str], int]]:
        from workbench.profile.sessions.record import record_report_rows

        options.setdefault("keep_outputs", self.keep_outputs)
        return record_report_rows(store, report, snapshot=snapshot, **options)

    def _attach_counters(
        self, current: Callable[[], Any], records: dict[tuple[str, str], dict[str, Any]],
        runs: dict[tuple[str, str], tuple[Future | str, tuple[str, str]]],
    ) -> dict[str, Any]:  # fmt: skip
        """Recorder thread: each record onto its run, in the file that run was recorded in."""
        from workbench.profile.sessions.store import SessionStore

        ids: dict[tuple[str, str], int] = {}
        why: dict[tuple[str, str], str] = {}
        others: dict[str, Any] = {}  # files recorded into before a `set_path`
        try:
            for key, record in records.items():
                recording, row = runs.get(key, ("no run of this result was recorded", key))
                if isinstance(recording, str):
                    why[key] = recording
                    continue
                if not recording.done():  # only a recording submitted to another recorder
                    why[key] = "its run's recording has not ended"
                    continue
                outcome = recording.result()
                if "error" in outcome:
                    why[key] = outcome["error"]
                    continue
                if row not in outcome["rows"]:
                    why[key] = f"no recorded row of {row[0]} on {row[1]}"
                    continue
                try:
                    if Path(outcome["db"]) == self.database:
                        target = current()
                    else:
                        if outcome["db"] not in others:
                            others[outcome["db"]] = SessionStore(outcome["db"])
                        target = others[outcome["db"]]
                    target.add_counters(outcome["rows"][row], record)
                except (WorkbenchError, OSError) as exc:  # that run alone (deleted meanwhile, ...)
                    why[key] = f"the counters were not recorded: {exc}"
                    continue
                ids[key] = outcome["rows"][row]
        finally:
            for other in others.values():
                other.close()
        return {"ids": ids, "not_recorded": why}

    def _enqueue(self, job: Callable[[Any], dict[str, Any]], failed: str, on_done: Any) -> Future:
        """Queue `job(current)` for the recorder's thread (`current()`: its store, opened on first
        use); `failed` leads the error it may end in."""
        future: Future = Future()
        if self._closed:
            future.set_result({"error": f"{failed}: the recorder is closed"})
            return future
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="wb-session-recorder", daemon=True)
            self._thread.start()
        with self._idle:
            self._pending += 1
        self._queue.put((job, failed, on_done, future))
        return future

    def _stop_thread(self, timeout: float = 60.0) -> None:
        self._closed = True
        if self._thread is not None:
            self._queue.put(_STOP)
            self._thread.join(timeout)
            self._thread = None
            self._queue = queue.Queue()

    def _close_store(self) -> None:
        if self._store is not None and self._own_store:
            self._store.close()
            self._store = None

    def _work(self) -> None:
        from workbench.profile.sessions.store import SessionStore

        store = None
        work = self._queue

        def current() -> SessionStore:
            nonlocal store
            if store is None:
                store = SessionStore(self.path, timeout_s=self.lock_wait_s)
            return store

        try:
            while True:
                item = work.get()
                if item is _STOP:
                    return
                job, failed, on_done, future = item
                try:
                    outcome = job(current)
                except (WorkbenchError, OSError) as exc:
                    outcome = {"error": f"{failed}: {exc}"}
                except Exception as exc:  # a recording bug must not kill the thread silently
                    log.exception("%s", failed)
                    outcome = {"error": f"{failed}: {type(exc).__name__}: {exc}"}
                future.set_result(outcome)
                if on_done is not None:
                    try:
                        on_done(outcome)
                    except Exception:
                        log.exception("the recorder's callback failed")
                with self._idle:
                    self._pending -= 1
                    self._idle.notify_all()
        finally:
            if store is not None:
                store.close()
