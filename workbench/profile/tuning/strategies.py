"""Search strategies behind one ask/tell interface (Qt-free), and the loop that drives one.

A strategy proposes configurations of a finite space (`SearchSpace`: each tunable's values, the
configurations the `[kernel.tunables]` constraints leave) and is told each one's time; `search`
drives it against an objective (a device sweep's first round, or a Kernel Tuner cache replayed,
`replay.py`) within a budget of evaluations and/or seconds.

- Strategies (`NAMES`; the classic ones in `strategies_classic.py`, optuna's in
  `strategies_optuna.py`, the space and the interface in `search_space.py`): `random`, `grid`
  (Kernel Tuner's brute force, in order), `annealing` (simulated annealing over neighbouring
  values), `genetic` (a genetic algorithm), `diff_evo` (differential evolution over the values'
  indices), and optuna's model-based samplers `tpe`
  (Tree-structured Parzen Estimator) and `cmaes` (CMA-ES). optuna because it is maintained,
  seedable, has an ask/tell API that lets the workbench own the loop (rounds, recording,
  cancelling), and its TPE handles the mixed integer spaces of kernels; scikit-optimize has not
  had a release since 2021. optuna's GP sampler needs PyTorch (hundreds of MB): not offered.
- Kernel Tuner's treatment of what a strategy proposes: a configuration breaking a constraint is
  invalid (not evaluated, not counted, told as the worst time so far); one that fails to build or
  run, or whose output is wrong, is an evaluation (counted) told as the worst time so far; one
  already evaluated is answered from memory and not counted. A strategy that proposes nothing
  new `Strategy.stall` times in a row is given a random unvisited configuration (its restart).
- Budgets: `budget` evaluations, `budget_s` seconds of the objective's cost (its own figure where
  it gives one, a replay's recorded compile and benchmark time; else the wall clock).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from workbench.profile.tuning.search_space import Config, SearchSpace, Strategy, StrategyError
from workbench.profile.tuning.strategies_classic import (
    AnnealingStrategy,
    DiffEvoStrategy,
    GeneticStrategy,
    GridStrategy,
    RandomStrategy,
)
from workbench.profile.tuning.strategies_optuna import CmaesStrategy, TpeStrategy

#: Every strategy, in the order the help lists them.
NAMES = ("random", "grid", "annealing", "genetic", "diff_evo", "tpe", "cmaes")
#: The default under a budget: chosen by benchmarks/strategies.py (benchmarks/results/strategies-vm.md).
DEFAULT = "tpe"

DESCRIPTIONS = {
    "random": "random order, no repeats",
    "grid": "every configuration in order (Kernel Tuner's brute force)",
    "annealing": "simulated annealing over neighbouring values",
    "genetic": "genetic algorithm (population 20, uniform crossover, mutation)",
    "diff_evo": "differential evolution over the values' indices",
    "tpe": "optuna's Tree-structured Parzen Estimator (model-based)",
    "cmaes": "optuna's CMA-ES over the values' indices",
}


CLASSES: dict[str, type[Strategy]] = {
    c.name: c
    for c in (
        RandomStrategy,
        GridStrategy,
        AnnealingStrategy,
        GeneticStrategy,
        DiffEvoStrategy,
        TpeStrategy,
        CmaesStrategy,
    )  # fmt: skip
}


def make(name: str, space: SearchSpace, seed: int = 0) -> Strategy:
    if name not in CLASSES:
        raise StrategyError(f"unknown strategy {name!r}; valid: {', '.join(NAMES)}")
    if not space.configs:
        raise StrategyError("the space has no valid configuration")
    return CLASSES[name](space, seed)


# ----------------------------------------------------------------------------- the loop


@dataclass
class Evaluation:
    """One counted evaluation: the configuration, its time (None: failed), the best so far."""

    n: int
    config: dict[str, Any]
    value: float | None
    best: float | None
    seconds: float  # the budget's clock at its end

    def to_json(self) -> dict[str, Any]:
        return {"n": self.n, "config": self.config, "value": self.value, "best": self.best,
                "seconds": self.seconds}  # fmt: skip


@dataclass
class Trace:
    strategy: str
    seed: int
    evaluations: list[Evaluation] = field(default_factory=list)
    invalid: int = 0  # proposals breaking a constraint (not counted)
    repeats: int = 0  # proposals already evaluated (not counted)
    restarts: int = 0  # random configurations given after a stall
    stopped: str = ""  # "budget", "time", "exhausted", "cancelled"
    seconds: float = 0.0

    def best(self) -> Evaluation | None:
        ok = [e for e in self.evaluations if e.value is not None]
        return min(ok, key=lambda e: e.value) if ok else None  # type: ignore[arg-type,return-value]

    def to_json(self) -> dict[str, Any]:
        best = self.best()
        return {
            "strategy": self.strategy, "seed": self.seed, "evaluations": len(self.evaluations),
            "failed": sum(e.value is None for e in self.evaluations), "invalid": self.invalid,
            "repeats": self.repeats, "restarts": self.restarts, "stopped": self.stopped,
            "seconds": self.seconds, "best": best.to_json() if best else None,
            "trace": [e.to_json() for e in self.evaluations],
        }  # fmt: skip


#: objective(config) → (time or None when it failed, the cost in seconds or None: wall clock).
Objective = Callable[[dict[str, Any]], tuple[float | None, float | None]]


def search(
    space: SearchSpace,
    objective: Objective,
    strategy: str = DEFAULT,
    *,
    budget: int | None = None,
    budget_s: float | None = None,
    seed: int = 0,
    cancelled: Callable[[], bool] = lambda: False,
    on_evaluation: Callable[[Evaluation], None] | None = None,
) -> Trace:
    """Drive `strategy` over `space` until the budget is spent (at most every configuration)."""
    if budget is not None and budget < 1:
        raise StrategyError(f"the budget is at least 1 evaluation (got {budget})")
    if budget_s is not None and budget_s <= 0:
        raise StrategyError(f"the time budget is a positive number of seconds (got {budget_s})")
    chooser = make(strategy, space, seed)
    limit = min(budget or len(space.configs), len(space.configs))
    trace = Trace(strategy, seed)
    known: dict[Config, float | None] = {}
    clock, started = 0.0, time.perf_counter()
    best: float | None = None
    stalled = 0
    fill = random.Random(seed ^ 0x5EED)
    while True:
        if len(known) >= limit:
            trace.stopped = "budget" if limit < len(space.configs) else "exhausted"
            break
        if budget_s is not None and clock >= budget_s:
            trace.stopped = "time"
            break
        if cancelled():
            trace.stopped = "cancelled"
            break
        config = chooser.ask()
        if config not in space.valid or config in known:
            if config not in space.valid:
                trace.invalid += 1
                chooser.tell(config, None)
            else:
                trace.repeats += 1
                chooser.tell(config, known[config])
            stalled += 1
            if stalled < chooser.stall:
                continue
            trace.restarts += 1  # the strategy's restart: a random unvisited configuration
            config = fill.choice([c for c in space.configs if c not in known])
        stalled = 0
        begun = time.perf_counter()
        value, cost = objective(space.as_dict(config))
        clock += cost if cost is not None else time.perf_counter() - begun
        if cancelled():
            trace.stopped = "cancelled"
            break
        known[config] = value
        chooser.tell(config, value)
        if value is not None and (best is None or value < best):
            best = value
        evaluation = Evaluation(len(known), space.as_dict(config), value, best, clock)
        trace.evaluations.append(evaluation)
        if on_evaluation is not None:
            on_evaluation(evaluation)
    trace.seconds = time.perf_counter() - started
    return trace


# ----------------------------------------------------------------------------- scoring


def random_expectation(values: Sequence[float], threshold: float, total: int | None = None) -> float:
    """Random search's expected evaluations (without repeats) to draw one of the k of N
    configurations at or below `threshold`: (N + 1) / (k + 1). `total`: N when some of the
    space failed (`values` are the times of those that ran)."""
    k = sum(v <= threshold for v in values)
    n = len(values) if total is None else total
    return (n + 1) / (k + 1) if k else math.inf


def targets(values: Sequence[float]) -> dict[str, float]:
    """The autotuning methodology's target (95 % of the way from the space's median to its
    optimum) and "within 5 % of the optimum", as times."""
    ok = [v for v in values if v is not None]
    best, median = min(ok), float(np.median(ok))
    return {"optimum": best, "median": median, "p95": median - 0.95 * (median - best),
            "within5": best * 1.05}  # fmt: skip


def reached(trace_values: Sequence[float | None], threshold: float) -> int | None:
    """The evaluation (1-based) at which the best so far first reaches `threshold`."""
    for i, v in enumerate(trace_values, 1):
        if v is not None and v <= threshold:
            return i
    return None


def expected_best(values: Sequence[float], evaluations: int) -> list[float]:
    """Random search's expected best-so-far after 1..`evaluations` draws without repeats (the
    convergence plot's reference curve): E[min of m draws] over the sorted values."""
    ok = sorted(v for v in values if v is not None)
    n = len(ok)
    out = []
    for m in range(1, min(evaluations, n) + 1):
        # P(the minimum is the i-th smallest) = C(n-i, m-1) / C(n, m): p1 = m/n, then each
        # next one times (n-i-m+1)/(n-i) (floats: the binomials overflow on large spaces).
        p, expect = m / n, 0.0
        for i in range(1, n - m + 2):
            expect += ok[i - 1] * p
            p *= (n - i - m + 1) / (n - i) if n - i else 0.0
        out.append(expect)
    return out
