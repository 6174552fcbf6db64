"""The Tuning panel's sweep runner: a `BackgroundSweep` (core, Qt-free; its own thread, workers
and sessions connection) whose events reach the GUI thread through a queued signal; the status
line of a finished sweep (`finished_text`).

A size sweep's devices' copy ceilings are measured on the sweep's thread once it is done (a guide
line of the size plot), and arrive after its `SweepDone` as a `CopyCeilings` message.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject, Qt, Signal

from workbench.profile.tuning import ranking
from workbench.profile.tuning.events import SweepDone, SweepEvent
from workbench.units import format_time


@dataclass(frozen=True)
class CopyCeilings:
    """A size sweep's devices' copy ceilings (GB/s), measured on the sweep's thread once it is
    done: the runner's own message on its relay, after the sweep's `SweepDone`."""

    ceilings: dict[str, Any]


class _Relay(QObject):
    """Carries sweep events from the sweep thread to the GUI thread (queued connection)."""

    posted = Signal(object)


class SweepRunner:
    """One sweep at a time; `on_event(SweepEvent | CopyCeilings)` is called on the GUI thread."""

    def __init__(self, on_event: Callable[[Any], None]):
        self._relay = _Relay()
        self._relay.posted.connect(on_event, Qt.ConnectionType.QueuedConnection)
        self._sweep = None

    def running(self) -> bool:
        return self._sweep is not None

    def start(self, project: Any, kernel: str, points: list, *, size_mode: bool, cache_dir: Any,
              **sweep: Any) -> None:  # fmt: skip
        """Start a `BackgroundSweep` of `points` (`sweep`: its keyword arguments)."""
        from workbench.profile.tuning.background import BackgroundSweep

        def on_event(event: SweepEvent) -> None:  # the sweep thread
            self._relay.posted.emit(event)
            if size_mode and isinstance(event, SweepDone):
                # Measured here, off the GUI thread, before the sweep's thread reports it finished.
                from workbench.profile.tuning.size_sweep import copy_ceilings

                try:
                    ceilings = copy_ceilings({e["device"] for e in event.result.entries}, cache_dir)
                except Exception:  # noqa: BLE001 - a guide line only
                    ceilings = {}
                self._relay.posted.emit(CopyCeilings(ceilings))

        self._sweep = BackgroundSweep(project, kernel, points, on_event, cache_dir=cache_dir, **sweep).start()

    def cancel(self) -> bool:
        """Ask the sweep in flight to stop; False when there is none."""
        if self._sweep is None:
            return False
        self._sweep.cancel()
        return True

    def finished(self, timeout: float = 5) -> None:
        """The sweep reported it finished: its thread is joined and forgotten."""
        if self._sweep is not None:
            self._sweep.join(timeout)
        self._sweep = None

    def shutdown(self) -> None:
        """Stop and join a sweep in flight (the window closes)."""
        if self.cancel():
            self.finished(30)


def finished_text(result: Any, best: dict[str, dict[str, Any]], size_mode: bool) -> str:
    """The status line of a finished sweep: done or cancelled, what a search chose, the counts,
    and the tunables that changed nothing on a backend."""
    entries = result.entries
    counts = ranking.counts(entries)
    resumed = sum(1 for e in entries if e.get("resumed"))
    unread = [
        f"{', '.join(b['no_effect'])} no effect on {slot.split('@', 1)[0]}"
        for slot, b in best.items()
        if b["no_effect"] and not size_mode
    ]
    searched = (result.search or {}) if not size_mode else {}
    return (
        ("cancelled: " if result.cancelled else "done: ")
        + (f"{searched['strategy']} chose {searched['evaluations']} configuration(s); " if searched else "")
        + f"{len(entries)} result(s), {counts['failed']} failed, {counts['skipped']} skipped, "
        + f"{counts['not verified']} not verified, {resumed} resumed from the sessions store"
        + "".join(f"; {text}" for text in unread)
    )


def started_text(
    sweep: Any, strategy: str, budget: int | None, budget_s: float | None, cluster: str | None
) -> str:
    """The status line of a sweep that starts (`sweep`: a `sweep_space.SweepPlan`): how many
    configurations it sweeps or searches, those the constraints pruned, the cluster."""
    configs, pruned = sweep.space.configs, sweep.space.pruned
    tail = f"; {len(pruned)} pruned by constraints" if pruned else ""
    if sweep.search is not None:
        limit = min(budget or len(configs), len(configs))
        text = f"searching ({strategy}) at most {limit} of {len(configs)} configuration(s)"
        text += (f" or {budget_s:g} s" if budget_s else "") + tail
    else:
        text = f"sweeping {len(sweep.points)} configuration(s){tail}"
    return f"{text} on cluster {cluster}" if cluster else text


def searching_text(strategy: str, event: Any) -> str:
    """The status line while a search runs (`event`: its `SweepSearched`)."""
    e = event.evaluation
    best = format_time(e.best) if e.best is not None else "none yet"
    return f"searching ({strategy}): evaluation {e.n} of at most {event.budget}, best so far {best}"
