"""The classic strategies, as Kernel Tuner defines them: random, grid (its brute force), simulated
annealing, a genetic algorithm and differential evolution (Qt-free; the interface: `search_space.py`)."""

from __future__ import annotations

import math

from workbench.profile.tuning.search_space import Config, SearchSpace, Strategy


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
