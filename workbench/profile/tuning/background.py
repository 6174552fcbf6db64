"""A tuning sweep on a thread of its own (Qt-free): the window's tuning panel drives one
(`ui/tuning/runner.py`); the command line runs `SweepRunner` (`tune.py`) on its own thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from workbench.profile.tuning.events import SweepEvent, SweepFinished, SweepNote
from workbench.profile.tuning.sweep_space import Point, Search
from workbench.profile.tuning.tune import SweepRunner
from workbench.project import Project


class BackgroundSweep:
    """A sweep on a thread of its own (Qt-free; the window's tuning panel drives one).

    It opens its own sessions store and `RunService` on that thread (SQLite connections and
    workers stay with the thread that made them), runs `points`, and hands every runner event to
    `on_event` from that thread; a final `SweepFinished` (the `SweepResult` or None, the error or
    None) always comes. `cancel()` stops it; `join()` waits.

    With `cluster` (a spec `cluster.connect.parse` reads: `local:2`, `tcp://…`, `hosts:…`), the
    configurations run on that cluster through `cluster.dispatch.open_dispatcher`, as
    `workbench tune --cluster` runs them; its notes arrive as `SweepNote` events and
    the cluster is stopped when the sweep ends. With `search`, a strategy chooses round 1's
    configurations (`SweepRunner.run`)."""

    def __init__(
        self,
        project: Project,
        kernel: str | None,
        points: list[Point],
        on_event: Callable[[SweepEvent], None],
        *,
        backends: list[str] | None = None,
        devices: list[str] | None = None,
        db_path: str | Path | None = None,
        timing: Any = None,
        cache_dir: str | Path | None = None,
        rounds: int = 1,
        confirm_rounds: int = 0,
        cluster: str | None = None,
        search: Search | None = None,
    ) -> None:
        self._args = (project, kernel, points, backends, devices, db_path, timing, cache_dir)
        self._search = search
        self._cluster = cluster
        self._rounds = (rounds, confirm_rounds)
        self._on_event = on_event
        self._runner: SweepRunner | None = None
        self._cancelled = threading.Event()
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self._body, name="tuning-sweep", daemon=True)

    def start(self) -> BackgroundSweep:
        self.thread.start()
        return self

    def cancel(self) -> None:
        self._cancelled.set()
        with self._lock:
            if self._runner is not None:
                self._runner.cancel()

    def join(self, timeout: float | None = None) -> bool:
        self.thread.join(timeout)
        return not self.thread.is_alive()

    def _body(self) -> None:
        from workbench.profile.sessions.store import SessionStore
        from workbench.run.service import RunService

        project, kernel, points, backends, devices, db_path, timing, cache_dir = self._args
        result, error = None, None
        service = RunService(timing=timing) if timing is not None else RunService()
        store = dispatcher = None
        try:
            store = SessionStore(db_path)
            with self._lock:
                self._runner = SweepRunner(project, kernel, backends, devices, store=store,
                                           run_service=service, cache_dir=cache_dir,
                                           rounds=self._rounds[0], confirm_rounds=self._rounds[1],
                                           live_ranking=True)  # fmt: skip
                if self._cancelled.is_set():
                    self._runner.cancel()
            if self._cluster and not self._cancelled.is_set():
                from workbench.profile.tuning.cluster.dispatch import open_dispatcher

                note = lambda text: self._on_event(SweepNote(f"cluster: {text}"))  # noqa: E731
                dispatcher = self._runner.dispatcher = open_dispatcher(
                    self._cluster, project, self._runner.kernel.name, self._runner, on_note=note
                )
            result = self._runner.run(points, on_event=self._on_event, search=self._search)
            if dispatcher is not None:
                result.cluster = dispatcher.describe()
        except Exception as exc:  # noqa: BLE001 - reported to the panel, never raised on a thread
            error = str(exc) or type(exc).__name__
        finally:
            if dispatcher is not None:
                dispatcher.close()
            service.close()
            if store is not None:
                store.close()
        self._on_event(SweepFinished(result, error))
