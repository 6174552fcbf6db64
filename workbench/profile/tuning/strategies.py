"""Search strategies behind one ask/tell interface (Qt-free), and the loop that drives one.

A strategy proposes configurations of a finite space (`SearchSpace`: each tunable's values, the
configurations the `[kernel.tunables]` constraints leave) and is told each one's time; `search`
drives it against an objective (a device sweep's first round, or a Kernel Tuner cache replayed,
`replay.py`) within a budget of evaluations and/or seconds.

- Strategies (`NAMES`): `random`, `grid` (Kernel Tuner's brute force, in order), `annealing`
  (simulated annealing over neighbouring values), `genetic` (a genetic algorithm), `diff_evo`
  (differential evolution over the values' indices), and optuna's model-based samplers `tpe`
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

from workbench.errors import WorkbenchError

#: Every strategy, in the order the help lists them.
NAMES = ("random", "grid", "annealing", "genetic", "diff_evo", "tpe", "cmaes")
#: The default under a budget: chosen by benchmarks/strategies.py (benchmarks/results/strategies-vm.md).
DEFAULT = "tpe"
#: Proposals in a row that bring nothing new before a random unvisited configuration is given.
STALL = 50

DESCRIPTIONS = {
    "random": "random order, no repeats",
    "grid": "every configuration in order (Kernel Tuner's brute force)",
    "annealing": "simulated annealing over neighbouring values",
    "genetic": "genetic algorithm (population 20, uniform crossover, mutation)",
    "diff_evo": "differential evolution over the values' indices",
    "tpe": "optuna's Tree-structured Parzen Estimator (model-based)",
    "cmaes": "optuna's CMA-ES over the values' indices",
}


class StrategyError(WorkbenchError):
    """An unknown strategy, a bad budget, a strategy whose library is missing."""


Config = tuple[Any, ...]


def _ordered(values: Sequence[Any]) -> tuple[Any, ...]:
    """A tunable's values in the order neighbours are taken: ascending when all are numbers."""
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        return tuple(sorted(values))
    return tuple(values)


@dataclass
class SearchSpace:
    """A finite space: `names`, each one's `values` (ordered), and the valid `configs` (tuples in
    the order of `names`; what the constraints leave)."""

    names: list[str]
    values: dict[str, tuple[Any, ...]]
    configs: list[Config]

    def __post_init__(self) -> None:
        self.values = {n: _ordered(self.values[n]) for n in self.names}
        self.valid = set(self.configs)
        self._index = {n: {v: i for i, v in enumerate(self.values[n])} for n in self.names}
        self._array: np.ndarray | None = None

    @classmethod
    def of(cls, names: list[str], configs: list[dict[str, Any]]) -> SearchSpace:
        values = {n: tuple(dict.fromkeys(c[n] for c in configs)) for n in names}
        return cls(list(names), values, [tuple(c[n] for n in names) for c in configs])

    def as_dict(self, config: Config) -> dict[str, Any]:
        return dict(zip(self.names, config, strict=True))

    def indices(self, config: Config) -> tuple[int, ...]:
        return tuple(self._index[n][v] for n, v in zip(self.names, config, strict=True))

    def at(self, indices: Sequence[int]) -> Config:
        return tuple(self.values[n][int(i)] for n, i in zip(self.names, indices, strict=True))

    def array(self) -> np.ndarray:
        """The valid configurations as value indices (one row each)."""
        if self._array is None:
            self._array = np.array([self.indices(c) for c in self.configs], dtype=float).reshape(
                len(self.configs), len(self.names)
            )
        return self._array

    def nearest(self, point: Sequence[float]) -> Config:
        """The valid configuration nearest `point` (value indices, real), by Manhattan distance."""
        distance = np.abs(self.array() - np.asarray(point, dtype=float)).sum(axis=1)
        return self.configs[int(np.argmin(distance))]

    def neighbours(self, config: Config) -> list[Config]:
        """Valid configurations one step away: one tunable moved to an adjacent value."""
        idx = self.indices(config)
        out = []
        for d, name in enumerate(self.names):
            for step in (-1, 1):
                j = idx[d] + step
                if 0 <= j < len(self.values[name]):
                    cand = self.at(idx[:d] + (j,) + idx[d + 1 :])
                    if cand in self.valid:
                        out.append(cand)
        return out


class Strategy:
    """The interface: `ask()` a configuration (a tuple of the space's values, perhaps invalid or
    already evaluated), `tell(config, value)` its time (None: failed or invalid)."""

    name = ""
    #: proposals in a row that bring nothing new before the loop restarts it
    stall = STALL

    def __init__(self, space: SearchSpace, seed: int) -> None:
        self.space = space
        self.rng = random.Random(seed)
        self.seed = seed
        self.worst: float | None = None  # the penalty of a failed or invalid configuration

    def ask(self) -> Config:
        raise NotImplementedError

    def tell(self, config: Config, value: float | None) -> None:
        if value is not None:
            self.worst = value if self.worst is None else max(self.worst, value)

    def penalty(self, value: float | None) -> float:
        """Kernel Tuner tells a strategy the largest float for a failed configuration; a finite
        worst-so-far keeps a model's scale sane and ranks it last all the same."""
        if value is not None:
            return value
        return self.worst * 2 if self.worst is not None else 1e30

    def random_config(self) -> Config:
        return self.rng.choice(self.space.configs)


class RandomStrategy(Strategy):
    name = "random"

    def __init__(self, space: SearchSpace, seed: int) -> None:
        super().__init__(space, seed)
        self.order = list(space.configs)
        self.rng.shuffle(self.order)

    def ask(self) -> Config:
        return self.order.pop() if self.order else self.random_config()


class GridStrategy(Strategy):
    name = "grid"

    def __init__(self, space: SearchSpace, seed: int) -> None:
        super().__init__(space, seed)
        self.order = list(reversed(space.configs))

    def ask(self) -> Config:
        return self.order.pop() if self.order else self.random_config()


class AnnealingStrategy(Strategy):
    """Kernel Tuner's simulated annealing: a neighbour (one tunable moved one value) is accepted
    when faster, or with probability exp(-relative slowdown / T); T falls from 1 by 0.995 a step,
    and the search restarts at a random configuration when T reaches 0.001."""

    name = "annealing"
    T0, T_MIN, ALPHA = 1.0, 0.001, 0.995

    def __init__(self, space: SearchSpace, seed: int) -> None:
        super().__init__(space, seed)
        self.current: Config | None = None
        self.current_value: float | None = None
        self.T = self.T0

    def ask(self) -> Config:
        if self.current is None:
            return self.random_config()
        near = self.space.neighbours(self.current)
        return self.rng.choice(near) if near else self.random_config()

    def tell(self, config: Config, value: float | None) -> None:
        super().tell(config, value)
        cost = self.penalty(value)
        if self.current is None or self.current_value is None:
            self.current, self.current_value = config, cost
            return
        old = self.current_value
        accept = cost <= old or self.rng.random() < math.exp(-((cost - old) / max(old, 1e-300)) / self.T)
        if accept:
            self.current, self.current_value = config, cost
        self.T *= self.ALPHA
        if self.T < self.T_MIN:
            self.T, self.current, self.current_value = self.T0, None, None


class _Generations(Strategy):
    """A population strategy: each generation's members are asked in turn, then `breed` makes
    the next from the told values."""

    POPULATION = 20

    def __init__(self, space: SearchSpace, seed: int) -> None:
        super().__init__(space, seed)
        size = min(self.POPULATION, len(space.configs))
        self.population: list[Config] = self.rng.sample(space.configs, size)
        self.values: dict[Config, float] = {}
        self.queue = list(self.population)
        self.fitness: dict[Config, float] = {}

    def ask(self) -> Config:
        if not self.queue:
            self.population = self.breed()
            self.queue = list(self.population)
        return self.queue.pop(0)

    def tell(self, config: Config, value: float | None) -> None:
        super().tell(config, value)
        self.fitness[config] = self.penalty(value)

    def breed(self) -> list[Config]:
        raise NotImplementedError


class GeneticStrategy(_Generations):
    """Kernel Tuner's genetic algorithm: parents drawn with weights by rank, uniform crossover,
    each gene mutated to a neighbouring value with probability 1/len; an invalid child is drawn
    again (then a random configuration)."""

    name = "genetic"

    def breed(self) -> list[Config]:
        ranked = sorted(self.population, key=lambda c: self.fitness.get(c, math.inf))
        weights = [len(ranked) - i for i in range(len(ranked))]
        children: list[Config] = ranked[:2]  # elitism: the two best carry over
        while len(children) < len(ranked):
            for _ in range(10):
                a, b = self.rng.choices(ranked, weights=weights, k=2)
                child = list(self.space.indices(a))
                other = self.space.indices(b)
                for d in range(len(child)):
                    if self.rng.random() < 0.5:
                        child[d] = other[d]
                    if self.rng.random() < 1.0 / len(child):
                        n = len(self.space.values[self.space.names[d]])
                        child[d] = min(n - 1, max(0, child[d] + self.rng.choice((-1, 1))))
                config = self.space.at(child)
                if config in self.space.valid:
                    break
            else:
                config = self.random_config()
            children.append(config)
        return children


class DiffEvoStrategy(_Generations):
    """Differential evolution (rand/1/bin, F 0.8, CR 0.9) over the values' indices: each
    member's trial vector snaps to the nearest valid configuration and replaces it when faster."""

    name = "diff_evo"
    F, CR = 0.8, 0.9

    def __init__(self, space: SearchSpace, seed: int) -> None:
        super().__init__(space, seed)
        self.members = list(self.population)  # the current generation (trials replace members)
        self.trials: list[Config] = []

    def breed(self) -> list[Config]:
        if self.trials:  # greedy selection of the last trials
            self.members = [
                t if self.fitness.get(t, math.inf) <= self.fitness.get(m, math.inf) else m
                for m, t in zip(self.members, self.trials, strict=True)
            ]
        dims = len(self.space.names)
        trials = []
        for i, member in enumerate(self.members):
            others = [m for j, m in enumerate(self.members) if j != i] or [member]
            a, b, c = (self.space.indices(self.rng.choice(others)) for _ in range(3))
            x = self.space.indices(member)
            forced = self.rng.randrange(dims)
            point = [
                a[d] + self.F * (b[d] - c[d]) if (self.rng.random() < self.CR or d == forced) else x[d]
                for d in range(dims)
            ]
            trials.append(self.space.nearest(point))
        self.trials = trials
        return trials


class OptunaStrategy(Strategy):
    """optuna's sampler through its ask/tell API: each tunable an integer index into its values
    (their order carries meaning: sizes, factors), every told value on the log scale (times
    spread over decades); a proposal breaking the constraints stands for the valid configuration
    nearest it (Manhattan distance over the indices); a failed one is told the worst time so far. A
    sampler that has converged repeats itself: each proposal costs a model fit, so the loop
    restarts it after a few repeats. The first `startup` configurations are drawn as random
    search draws them, uniformly among the valid ones (the sampler's own random start, snapped
    to valid configurations, would favour those beside large invalid regions)."""

    stall = 5
    startup = 10

    def __init__(self, space: SearchSpace, seed: int) -> None:
        super().__init__(space, seed)
        try:
            import optuna
        except ImportError as exc:
            raise StrategyError(f"strategy {self.name!r} needs optuna (pip install optuna): {exc}") from None
        import warnings

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        from optuna.distributions import IntDistribution

        self.optuna = optuna
        self.dists = {n: IntDistribution(0, len(space.values[n]) - 1) for n in space.names}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.study = optuna.create_study(sampler=self.sampler(optuna, seed), direction="minimize")
        self.pending: dict[Config, list[Any]] = {}
        self.first = self.rng.sample(space.configs, min(self.startup, len(space.configs)))

    def sampler(self, optuna: Any, seed: int) -> Any:
        raise NotImplementedError

    def ask(self) -> Config:
        import warnings

        if self.first:  # told without a trial: `tell` adds it to the study
            return self.first.pop()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            trial = self.study.ask(self.dists)
        config = self.space.at([trial.params[n] for n in self.space.names])
        if config not in self.space.valid:
            # Where most of the grid breaks the constraints (a GEMM space: 4 in 5), a penalty
            # per invalid proposal teaches the model little: the proposal stands for the valid
            # configuration nearest it, whose time the model is told.
            config = self.space.nearest([trial.params[n] for n in self.space.names])
        self.pending.setdefault(config, []).append(trial)
        return config

    def tell(self, config: Config, value: float | None) -> None:
        super().tell(config, value)
        cost = math.log(self.penalty(value))
        trials = self.pending.pop(config, [])
        for trial in trials:
            self.study.tell(trial, cost)
        if not trials:  # a random start, or the loop's restart: the model learns from it as well
            params = dict(zip(self.space.names, self.space.indices(config), strict=True))
            self.study.add_trial(self.optuna.trial.create_trial(params=params, distributions=self.dists,
                                                                value=cost))  # fmt: skip


class TpeStrategy(OptunaStrategy):
    name = "tpe"

    def sampler(self, optuna: Any, seed: int) -> Any:
        return optuna.samplers.TPESampler(seed=seed, multivariate=True, n_startup_trials=self.startup)


class CmaesStrategy(OptunaStrategy):
    name = "cmaes"
    startup = 5

    def sampler(self, optuna: Any, seed: int) -> Any:
        return optuna.samplers.CmaEsSampler(
            seed=seed, n_startup_trials=self.startup, warn_independent_sampling=False
        )


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
