"""Tuning sweeps (Qt-free): the configurations of a kernel's tunables, each one built (its own
cached build), run, verified and timed by the run service on every backend × device in
interleaved rounds, recorded in the sessions store as it finishes, and ranked (`ranking.py`).

- Space: `[kernel.tunables]` (name → allowed values), the grid of every combination, less those
  breaking a `constraints` condition. `--param NAME=V1,V2` sweeps only the tunables it names (over
  those values; `--param NAME` alone: over the manifest's), the others stay at their defaults;
  without `--param`, every tunable is swept. `random` draws `budget` of them (seeded), `grid`
  takes the first `budget`.
- Search: any other strategy (`strategies.py`: annealing, genetic, diff_evo, tpe, cmaes) chooses
  the configurations of round 1 one by one from the times it has seen (`Search`), within a
  budget of evaluations and/or seconds; the later rounds, the side-by-side re-timing, the
  verification, the recording and the ranking are those of every sweep, over what it evaluated.
- Rounds: round 1 runs every configuration once, round 2 again in reverse order, ...
  (`--rounds`, default 3), all through one `RunService`; the ranking rests on the spread between
  the rounds' medians, and the leaders are re-timed side by side (`--confirm` rounds, never
  resumed) before a winner is named (`SweepRunner`). Each result carries the digest of what it ran
  (`tune_entries`: the artifact's bytes, and the launch geometry where the runtime reads it, not on
  cpu), so identical builds are one point. Per slot (backend × device) the leader wins when the 95%
  t-interval of its time ratio to every other point (log ratios paired by round) lies below
  `1 - min_effect` (default 2%); else the best is the tie set (`ranking.py`).
- Verification: the reference's `BASELINE` mode (`run/reference.py`): the reference backend's
  output of each configuration is compared with its output at the manifest's default
  configuration (the baseline, run first; same inputs, same seed), so every entry is verified and
  a configuration that breaks the reference itself is flagged too; only the run's own reference
  result gets that verdict, every result the run compared (a second device of the reference
  backend too) keeps its own; the other backends are compared with the reference of the same
  configuration, as in every run, and are "not verified (reference failed)", never failed, when
  that reference is the broken one. A kernel whose outputs follow the
  tunables (`[kernel.check] outputs_follow_tunables`, e.g. one partial sum per workgroup) has no
  baseline: each configuration's reference stands for itself.
- Resume: each recorded row (through the sweep's `SessionRecorder`) carries `provenance.tuning` =
  {"key", "config", "round", "confirm", "build", "settings"}; `key` (`resume_key`) hashes what
  decides the result (the sources less workbench.toml, the kernel's settings with the tunables'
  lists as sets, the sizes, the configuration, the backend); `settings` are the timeout, backends,
  devices, seed, sizes and timing protocol. A round of a configuration whose rows are all recorded
  for the requested backends (and devices) is read back (`SessionStore.tuning_runs(key)`) instead
  of run, unless one of them failed, was skipped or was not verified under other settings
  (timeout, backends, devices, seed, timing): that one runs again.
- Points: a sweep runs points, each a configuration at a set of sizes; a size sweep
  (`size_sweep.py`) is the same runner over sizes at one configuration, in one round.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from workbench.profile.tuning import ranking, tune_entries
from workbench.profile.tuning import strategies as strategies_mod
from workbench.profile.tuning.events import (
    SweepDone,
    SweepEntries,
    SweepEvent,
    SweepPoint,
    SweepProgress,
    SweepSearched,
)
from workbench.profile.tuning.sweep_space import (
    Point,
    Search,
    SweepResult,
    TuneError,
    objective_of,
    resume_key,
)
from workbench.project import Project
from workbench.run.request import RunRequest

# ----------------------------------------------------------------------------- the runner


class SweepRunner:
    """Runs points in interleaved rounds through one `RunService` (its workers stay warm).

    Round 1 runs every point once (the default configuration first: its reference output is the
    others' baseline), round 2 runs them again in reverse order (a steady drift then favours no
    end of the list), and so on; a point none of whose results can be ranked is not run again.
    Then, for each backend × device whose rounds make a leader look like a winner, the leader and
    the runner-up are re-timed side by side for `confirm_rounds` more rounds (alternating which
    goes first, never resumed) before a winner is named (`ranking.rank`).

    `on_event(SweepEvent)` is called from the calling thread (`events.py`): `SweepPoint` before a
    run, `SweepEntries` after it (this run's entries, and with `live_ranking` the merge and
    ranking so far), `SweepDone` (the `SweepResult`) last. `cancel()` (any thread) stops the run
    in flight and the rest; what finished stays recorded.

    With a `dispatcher` (`profile/cluster`), each round's configurations are built here and
    measured side by side on a cluster's devices, taken (verified, recorded, ranked) as each
    comes back; the re-timing of the leaders runs on one worker."""

    def __init__(
        self,
        project: Project,
        kernel: str | None = None,
        backends: list[str] | None = None,
        devices: list[str] | None = None,
        *,
        store: Any = None,
        run_service: Any = None,
        resume: bool = True,
        seed: int | None = None,
        timeout_s: float = 10.0,
        cache_dir: str | Path | None = None,
        rounds: int = 1,
        confirm_rounds: int = 0,
        min_effect: float = ranking.MIN_EFFECT,
        live_ranking: bool = False,
        dispatcher: Any = None,
    ) -> None:
        from workbench.run import RunService

        if rounds < 1 or confirm_rounds < 0:
            raise TuneError(f"rounds must be at least 1 (got {rounds}), confirmation rounds at least 0 "
                            f"(got {confirm_rounds})")  # fmt: skip
        if not 0.0 <= min_effect < 1.0:
            raise TuneError(f"the minimum effect is a fraction in [0, 1) (got {min_effect})")
        self.project = project
        self.kernel = project.manifest.kernel(kernel)
        self.devices = list(devices or [])
        self.store = store
        # Rows are written the one way every run is recorded (the window's and `workbench run`'s
        # too), through the sweep's own store: its resume reads see them at once.
        self.recorder = None
        if store is not None:
            from workbench.profile.sessions.recorder import SessionRecorder

            self.recorder = SessionRecorder(store=store)
        self.resume = resume
        self.seed = seed
        self.timeout_s = timeout_s
        self.cache_dir = cache_dir
        self.rounds = rounds
        self.confirm_rounds = confirm_rounds
        self.min_effect = min_effect
        self.live_ranking = live_ranking
        # A cluster (`profile/cluster`): configurations built here, run on its workers' devices.
        self.dispatcher = dispatcher
        self._pinned_worker: str | None = None  # the one worker of the side-by-side re-timing
        self._own_service = run_service is None
        self.service = run_service or RunService()
        self.backends = list(backends or self.service.default_backends(project, None))
        self._cancel = threading.Event()
        self._baseline: dict[tuple, dict[str, np.ndarray]] = {}
        self._digests: dict[str, str] = {}
        self._rows: dict[str, list[dict[str, Any]]] = {}
        self._trace: strategies_mod.Trace | None = None

    def cancel(self) -> None:
        self._cancel.set()
        self.service.cancel()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def close(self) -> None:
        if self._own_service:
            self.service.close()

    def settings(self, point: Point) -> dict[str, Any]:
        """What a configuration's result depends on beyond its resume key (recorded with it)."""
        from workbench.run.timing import options_to_dict

        timing = getattr(self.service, "timing", None)
        return {
            "timeout_s": self.timeout_s,
            "backends": sorted(self.backends),
            "devices": sorted(self.devices),
            "seed": self.seed,
            "sizes": {k: point.sizes[k] for k in sorted(point.sizes or {})},
            "timing": options_to_dict(timing) if timing is not None else None,
        }

    def run(
        self,
        points: list[Point],
        on_event: Callable[[SweepEvent], None] | None = None,
        search: Search | None = None,
    ) -> SweepResult:
        """Run `points` in rounds; with `search`, round 1's points are those its strategy chooses
        (`points` is then ignored) and the later rounds run over them."""
        from workbench.profile.sessions.sources import snapshot

        emit = on_event or (lambda event: None)
        defaults = self.kernel.default_tunables()
        points = sorted(points, key=lambda p: p.config != defaults)
        started = time.perf_counter()
        result = SweepResult(self.project.name, self.kernel.name, rounds=self.rounds,
                             confirm_rounds=self.confirm_rounds, min_effect=self.min_effect,
                             defaults=defaults, confirmed=set() if self.confirm_rounds else None)  # fmt: skip
        snap = snapshot(
            self.project
        )  # the sources as built: read before the first build, kept with every row
        self._rows = {}
        progress = SweepProgress(total=len(points) * self.rounds if search is None else 0)

        def step(point: Point, round_: int, confirm: bool, report: Any = None) -> list[dict[str, Any]] | None:
            emit(SweepPoint(index=progress.step, total=progress.total, point=point, round=round_))
            keys = self._keys(point, snap)
            entries = None
            if report is None and self.resume and not confirm and self.store is not None:
                entries = self._recorded(keys, point, round_)
            resumed = entries is not None
            if entries is None:
                entries = self._run_point(point, keys, snap, round_, confirm, report)
                if entries is None:  # cancelled part-way: nothing of this run is kept
                    return None
            result.runs.extend(entries)
            merged = best = None
            if self.live_ranking:  # the merge and ranking so far, for a view that draws them as they come
                merged = result.entries
                best = ranking.rank(merged, min_effect=self.min_effect, confirmed=result.confirmed,
                                    defaults=defaults)  # fmt: skip
            emit(SweepEntries(index=progress.step, total=progress.total, entries=entries, resumed=resumed,
                              round=round_, confirm=confirm, merged=merged, best=best))  # fmt: skip
            progress.advance()
            return entries

        dead: set[int] = set()  # points none of whose results can be ranked: not run again
        first = 1
        if search is not None:
            points, dead = self._search(search, step, progress, emit)
            result.search = self._trace.to_json() if self._trace is not None else None
            first = 2
        for round_ in range(first, self.rounds + 1):
            order = list(enumerate(points)) if round_ % 2 else list(enumerate(points))[::-1]
            self._round(order, round_, step, dead, progress, snap)
        if not self._cancel.is_set() and self.confirm_rounds:
            self._confirm(result, points, step, progress)
        result.cancelled = self._cancel.is_set()
        result.seconds = time.perf_counter() - started
        emit(SweepDone(result))
        return result

    def _search(self, search: Search, step, progress: SweepProgress, emit) -> tuple[list[Point], set[int]]:
        """Round 1 chosen by a strategy, one configuration at a time from the times seen: the
        points it evaluated (in order), and the dead ones among them (no rankable result)."""
        evaluated: list[Point] = []
        dead: set[int] = set()
        sp = search.search_space()
        budget = min(search.budget or len(sp.configs), len(sp.configs))
        progress.plan(budget * self.rounds)

        def objective(config: dict[str, Any]) -> tuple[float | None, float | None]:
            point = Point(dict(config), search.sizes or {})
            entries = step(point, 1, False)
            if entries is None:  # cancelled part-way
                return None, None
            if not any(ranking.outcome(e) == "ok" for e in entries):
                dead.add(len(evaluated))
            evaluated.append(point)
            return objective_of(entries), None

        def searched(evaluation: strategies_mod.Evaluation) -> None:
            emit(SweepSearched(evaluation, budget))

        self._trace = None
        try:
            self._trace = strategies_mod.search(
                sp, objective, search.strategy, budget=search.budget, budget_s=search.budget_s,
                seed=search.seed, cancelled=self._cancel.is_set, on_evaluation=searched,
            )  # fmt: skip
        except strategies_mod.StrategyError as exc:
            raise TuneError(str(exc)) from None
        progress.drop((budget - len(evaluated)) * self.rounds)  # a time budget may stop it early
        return evaluated, dead

    def _keys(self, point: Point, snap) -> dict[str, str]:
        return {b: resume_key(self.project, self.kernel, point, b, snap[1]) for b in self.backends}

    def _round(self, order, round_: int, step, dead: set[int], progress: SweepProgress, snap) -> None:
        """One round, the rule both paths share: the points are visited in `order` (`_visit`), each
        run taken is recorded with its entries (`step`), a point none of whose results can be
        ranked is dead from then on (not run in later rounds), and a run cancelled part-way ends
        the round. Only where the runs come from differs: here, each run by `step` when its turn
        comes; on a cluster, submitted together and taken as they finish (`_cluster_runs`)."""
        visiting = self._visit(order, dead, progress)
        if self.dispatcher is not None:
            runs = self._cluster_runs(visiting, round_, snap)
        else:
            runs = ((index, point, None) for index, point in visiting)
        with contextlib.closing(runs):  # a round ended early cancels what a cluster still has pending
            for index, point, report in runs:
                entries = step(point, round_, False, report)
                if entries is None:
                    break
                if not any(ranking.outcome(e) == "ok" for e in entries):
                    dead.add(index)

    def _visit(self, order, dead: set[int], progress: SweepProgress) -> Iterator[tuple[int, Point]]:
        """The points a round visits, in `order`: none once the sweep is cancelled; a dead point is
        passed over and its run leaves the plan."""
        for index, point in order:
            if self._cancel.is_set():
                return
            if index in dead:
                progress.drop()
                continue
            yield index, point

    def _cluster_runs(self, visiting, round_: int, snap) -> Iterator[tuple[int, Point, Any]]:
        """A round's runs on a cluster, as (index, point, report): a point whose round is recorded
        comes at once with no report (`step` reads it back), the rest are submitted together (each
        built here while the workers measure the earlier ones) and come as each finishes, the
        default configuration first (its reference output is the others' baseline). It stops at a
        run cancelled meanwhile; what is still pending when it stops or is closed is cancelled."""
        pending: list[tuple[int, Point, Any]] = []
        try:
            for index, point in visiting:
                if self.resume and self.store is not None and self._recorded(self._keys(point, snap), point,
                                                                             round_) is not None:  # fmt: skip
                    yield index, point, None
                    continue
                pending.append((index, point, self.dispatcher.submit(point, self._cluster_request())))
            defaults = self.kernel.default_tunables()
            first = [p for p in pending if p[1].config == defaults]  # its output is the others' baseline
            by_future = {p[2]: p for p in pending}
            rest = self.dispatcher.as_completed([p[2] for p in pending if p not in first])
            for index, point, future in [*first, *(by_future[f] for f in rest)]:
                report = self.dispatcher.result(future, lambda: self._cancel.is_set())
                pending.remove((index, point, future))
                del by_future[future]  # taken: the worker may let its result go
                if report is None:  # cancelled while it ran
                    return
                yield index, point, report
        finally:
            for _index, _point, future in pending:
                future.cancel()

    def _cluster_request(self, backends: list[str] | None = None) -> dict[str, Any]:
        from workbench.run.timing import options_to_dict

        timing = getattr(self.service, "timing", None)
        return {"backends": list(backends or self.backends), "timeout_s": self.timeout_s, "seed": self.seed,
                "timing": options_to_dict(timing) if timing is not None else None}  # fmt: skip

    def _execute(self, point: Point, backends: list[str], devices: list[str] | None) -> Any:
        """One configuration's `RunReport`: on this machine's `RunService`, or on the cluster
        (None when cancelled meanwhile)."""
        if self.dispatcher is not None:
            future = self.dispatcher.submit(
                point, self._cluster_request(backends), worker=self._pinned_worker
            )
            return self.dispatcher.result(future, lambda: self._cancel.is_set())
        request = RunRequest.of(
            self.project, backends, devices, kernel=self.kernel.name, sizes=point.sizes,
            timeout_s=self.timeout_s, seed=self.seed, cache_dir=self.cache_dir, tunables=point.config,
        )  # fmt: skip
        return self.service.execute(request)

    def _confirm(self, result: SweepResult, points: list[Point], step, progress: SweepProgress) -> None:
        """Re-time each slot's leader and runner-up side by side before a winner is named."""
        prelim = ranking.rank(result.entries, min_effect=self.min_effect, confirmed=set(),
                              defaults=result.defaults)  # fmt: skip
        lead = ranking.leaders(prelim)
        by_config = {json.dumps(p.config, sort_keys=True): p for p in points}
        chosen: dict[str, Point] = {}
        for configs in lead.values():
            for config in configs:
                text = json.dumps(config, sort_keys=True)
                if text in by_config:
                    chosen.setdefault(text, by_config[text])
        pair = list(chosen.values())
        progress.plan(len(pair) * self.confirm_rounds)
        if self.dispatcher is not None:  # side by side means on one device
            self._pinned_worker = self.dispatcher.first_worker()
        for extra in range(self.confirm_rounds):
            for point in pair if extra % 2 == 0 else pair[::-1]:
                if self._cancel.is_set() or step(point, self.rounds + 1 + extra, True) is None:
                    return
        result.confirmed = set(lead)

    # ------------------------------------------------------------------ one run of a point

    def _run_point(
        self, point: Point, keys: dict[str, str], snap, round_: int, confirm: bool = False, report: Any = None
    ) -> list[dict[str, Any]] | None:
        from workbench.run.service import RunError

        if report is None:
            try:
                report = self._execute(point, self.backends, self.devices or None)
            except RunError as exc:
                raise TuneError(str(exc)) from None
        if report is None or report.cancelled or self._cancel.is_set():
            return None
        self._verify_reference(point, report)
        settings = self.settings(point)
        builds = []
        for r in report.results:
            build = tune_entries.build_digest(r, self.kernel, report.sizes, point.config, self._digests)
            builds.append(build)
            r.provenance["tuning"] = {"key": keys.get(r.backend), "config": dict(point.config), "round": round_,
                                      "confirm": confirm, "build": build, "settings": settings}  # fmt: skip
        ids: list[int | None] = [None] * len(report.results)
        if self.recorder is not None:
            ids = list(self.recorder.record(report, snap))
        return [
            tune_entries.entry_of(r, point.config, report.sizes, i, False, round_, b)
            for r, i, b in zip(report.results, ids, builds, strict=True)
        ]

    def _verify_reference(self, point: Point, report: Any) -> None:
        """The run judged in the reference's `BASELINE` mode (`run/reference.py`): against the
        reference's own outputs at the default configuration (same sizes and seed), run once per
        sizes when no round gave them yet."""
        from workbench.run.reference import ReferencePolicy

        ref = report.reference
        if not ReferencePolicy.own_results(report):
            return
        defaults = self.kernel.default_tunables()
        sizes_key = tuple(sorted(report.sizes.items()))
        baseline = None
        if point.config == defaults:
            self._baseline.setdefault(sizes_key, report.outputs[ref])
        elif not self.kernel.check.outputs_follow_tunables:
            baseline = self._baseline.get(sizes_key)
            if baseline is None:
                base = self._execute(Point(defaults, point.sizes), [ref], None)
                baseline = base.outputs.get(ref) if base is not None else None
                if baseline is None:
                    return
                self._baseline[sizes_key] = baseline
        ReferencePolicy.against_baseline(
            report, self.kernel, baseline, f"the default configuration {defaults}"
        )

    def _recorded(self, keys: dict[str, str], point: Point, round_: int) -> list[dict[str, Any]] | None:
        """The recorded entries of one round of a point, when every backend (and device) asked for
        has one; None (run it) also when one that failed, was skipped or not verified was recorded
        under other settings (`settings`): a longer timeout, other sizes or backends may change it."""
        from workbench.backends import runtime_of

        settings = self.settings(point)
        entries = []
        for backend, key in keys.items():
            if key not in self._rows:
                self._rows[key] = self.store.tuning_runs(key)
            # A side-by-side re-timing is never a sweep round, whatever its number.
            rows = [
                r
                for r in self._rows[key]
                if _tuning(r).get("round") == round_ and not _tuning(r).get("confirm")
            ]
            # Only the devices of this backend's runtime (`cpu`, `cuda:0`, `wgpu:llvmpipe`).
            wanted = [d for d in self.devices if d.split(":", 1)[0] == runtime_of(backend)]
            if wanted:
                rows = [r for r in rows if any(spec_matches(r, d) for d in wanted)]
                if any(not any(spec_matches(r, d) for r in rows) for d in wanted):
                    return None
            if not rows:
                return None
            latest: dict[str, dict[str, Any]] = {}
            for row in rows:  # newest first
                latest.setdefault(row["device"], row)
            for row in latest.values():
                entry = tune_entries.entry_from_row(row, self.store.samples(row["id"]))
                changed = tune_entries.settings_differ(_tuning(row).get("settings"), settings)
                if ranking.outcome(entry) != "ok" and changed:
                    return None
                entries.append(entry)
        return entries


def _tuning(row: dict[str, Any]) -> dict[str, Any]:
    return ((row.get("detail") or {}).get("provenance") or {}).get("tuning") or {}


def spec_matches(row: dict[str, Any], spec: str) -> bool:
    """Whether a recorded row's device answers to a `--device` spec (spec or part of the name)."""
    return row["device"] == spec or spec.lower() in (row.get("device_name") or "").lower()
