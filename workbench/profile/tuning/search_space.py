"""The search space of a tuning search and the ask/tell interface every strategy implements
(Qt-free; the strategies themselves: `strategies_classic.py`, `strategies_optuna.py`; the loop that
drives one and the names: `strategies.py`)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.errors import WorkbenchError

#: Proposals in a row that bring nothing new before a random unvisited configuration is given.
STALL = 50


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
