"""What a sweep reports while it goes: one frozen record per kind of event (Qt-free).

`SweepRunner.run(points, on_event=fn)` calls `fn` from the calling thread with, per run of a
point, `SweepPoint` before it and `SweepEntries` after it (its entries; with `live_ranking` the
merge and ranking so far), with a search strategy `SweepSearched` per evaluation, and `SweepDone` (the `SweepResult`) last. A `BackgroundSweep` hands
those on from its own thread, adds `SweepNote` (its cluster's notes) and ends with
`SweepFinished` (the result or the error), always. Readers match on the class (`isinstance`,
`match`) and read fields as attributes, as the run's events (`workbench/run/events.py`): no
`event["kind"]`, no `event.get(...)` (`tests/ui/test_typed_events.py`). None crosses a process
boundary (a cluster's workers send back run reports, never events) and `workbench tune --json`
writes the `SweepResult`, not these, so none has a `to_dict()`.

`SweepProgress` is the count the events carry (`index` of `total`), kept by the runner.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from workbench.run.events import Event


@dataclass(frozen=True)
class SweepEvent(Event):
    """The base of a sweep's events."""


@dataclass(frozen=True)
class SweepPoint(SweepEvent):
    """A point is about to run (or be read back) in `round`: the `index`-th run of `total`."""

    index: int
    total: int
    point: Any  # workbench.profile.tuning.sweep_space.Point
    round: int


@dataclass(frozen=True)
class SweepEntries(SweepEvent):
    """A point's run is taken: its `entries` (one per backend × device, `tune_entries`), read back
    from the sessions store (`resumed`) or run; `confirm` for a side-by-side re-timing. With the
    runner's `live_ranking`, `merged` (every run so far, merged) and `best` (their ranking)."""

    index: int
    total: int
    entries: list[dict[str, Any]]
    resumed: bool
    round: int
    confirm: bool
    merged: list[dict[str, Any]] | None = None
    best: dict[str, dict[str, Any]] | None = None


@dataclass(frozen=True)
class SweepSearched(SweepEvent):
    """A search strategy's counted evaluation (`strategies.Evaluation`: n, config, its time or None
    when it failed, the best so far): the convergence plot's point; `budget` evaluations planned."""

    evaluation: Any  # workbench.profile.tuning.strategies.Evaluation
    budget: int


@dataclass(frozen=True)
class SweepDone(SweepEvent):
    """The runner is done (finished or cancelled): its whole result."""

    result: Any  # workbench.profile.tuning.sweep_space.SweepResult


@dataclass(frozen=True)
class SweepNote(SweepEvent):
    """A line for the user from a background sweep's cluster (its workers, those refused)."""

    text: str


@dataclass(frozen=True)
class SweepFinished(SweepEvent):
    """A background sweep's thread is over: its result (None when it failed) or its error."""

    result: Any  # workbench.profile.tuning.sweep_space.SweepResult | None
    error: str | None


@dataclass
class SweepProgress:
    """How far a sweep is: `step` runs taken of `total` planned. The plan changes as it goes: a
    point found dead is not run in later rounds (`drop`), the side-by-side re-timing adds its
    runs once its pair is known (`plan`)."""

    step: int = 0
    total: int = 0

    def advance(self) -> None:
        self.step += 1

    def drop(self, runs: int = 1) -> None:
        self.total -= runs

    def plan(self, runs: int) -> None:
        self.total += runs
