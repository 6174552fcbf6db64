"""optuna's model-based samplers (TPE, CMA-ES) behind the strategies' ask/tell interface
(Qt-free; the interface: `search_space.py`). optuna is imported when a strategy is made, so the
classic strategies work without it."""

from __future__ import annotations

import math
from typing import Any

from workbench.profile.tuning.search_space import Config, SearchSpace, Strategy, StrategyError


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
