"""A sweep's space (Qt-free): the configurations of a kernel's tunables (`space`, from
`[kernel.tunables]` and `--param`, less those breaking a constraint), a search strategy's choice
among them (`Search`), the points a sweep runs (`Point`: a configuration at a set of sizes), the
key that decides whether a recorded result can be read back (`resume_key`) and a finished sweep
(`SweepResult`). The runner's rounds and resume reads are in `tune.py`; a sweep on a thread of its
own in `background.py`.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from workbench import expr
from workbench.errors import WorkbenchError
from workbench.manifest import Kernel
from workbench.profile.tuning import ranking, tune_entries
from workbench.profile.tuning import strategies as strategies_mod
from workbench.project import Project

#: Strategies that pick the whole space before the sweep; the others search (`Search`).
STRATEGIES = ("grid", "random")


class TuneError(WorkbenchError):
    """A sweep that cannot start: an unknown tunable, a bad value list, no valid configuration."""


# ----------------------------------------------------------------------------- the space


def parse_number(text: str) -> int | float:
    text = text.strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        raise TuneError(f"{text!r} is not a number") from None
    return int(value) if value.is_integer() and "." not in text and "e" not in text.lower() else value


def parse_param(text: str) -> tuple[str, tuple[int | float, ...] | None]:
    """`NAME=V1,V2,...` → (name, values); `NAME` alone → (name, None): its manifest values."""
    name, sep, values = text.partition("=")
    if not sep and name.strip() and name.strip().isidentifier():
        return name.strip(), None
    if not sep or not name.strip() or not values.strip():
        raise TuneError(f"--param {text!r}: expected NAME=V1,V2,... (e.g. threads=64,128,256)")
    try:
        parsed = tuple(parse_number(v) for v in values.split(",") if v.strip())
    except TuneError as exc:
        raise TuneError(f"--param {text!r}: {exc}") from None
    return name.strip(), tuple(dict.fromkeys(parsed))


@dataclass
class Space:
    """The configurations to sweep, and those the constraints removed."""

    names: list[str]
    configs: list[dict[str, int | float]]
    pruned: list[dict[str, Any]] = field(default_factory=list)  # {"config", "constraint"}
    total: int = 0  # the grid's size before constraints and budget


def space(
    kernel: Kernel,
    params: dict[str, tuple[int | float, ...]] | None = None,
    sizes: dict[str, int] | None = None,
    strategy: str = "grid",
    budget: int | None = None,
    seed: int = 0,
) -> Space:
    """The configurations of `kernel` (each a full assignment of its tunables). With `params`, only
    the tunables named there are swept (a None list: over the manifest's values), the others stay
    at their defaults. A search strategy's space is every valid configuration (`budget` is its)."""
    if strategy not in STRATEGIES and strategy not in strategies_mod.NAMES:
        raise TuneError(f"unknown strategy {strategy!r}; valid: {', '.join(strategies_mod.NAMES)}")
    params = dict(params or {})
    unknown = set(params) - set(kernel.tunables)
    if unknown:
        raise TuneError(
            f"kernel {kernel.name!r} has no tunable {', '.join(sorted(unknown))}; "
            f"its tunables: {', '.join(kernel.tunables) or 'none (add [kernel.tunables] to workbench.toml)'}"
        )
    defaults = kernel.default_tunables()
    values = {
        name: tuple(params.get(name) or options) if (not params or name in params) else (defaults[name],)
        for name, options in kernel.tunables.items()
    }
    names = list(values)
    grid = [dict(zip(names, combo, strict=True)) for combo in itertools.product(*values.values())]
    try:
        base = kernel.symbols(sizes)
    except ValueError as exc:
        raise TuneError(str(exc)) from None
    configs, pruned = [], []
    for config in grid:
        broken = next((c for c in kernel.constraints if not expr.condition(c, {**base, **config})), None)
        if broken is None:
            configs.append(config)
        else:
            pruned.append({"config": config, "constraint": broken})
    if not configs and grid:
        raise TuneError(
            f"no configuration of {kernel.name!r} meets the constraints {list(kernel.constraints)}"
        )
    if budget is not None and budget < 1:
        raise TuneError("--budget must be at least 1")
    if strategy == "random":
        configs = random.Random(seed).sample(configs, min(budget or len(configs), len(configs)))
    elif strategy == "grid" and budget is not None:
        configs = configs[:budget]
    return Space(names, configs, pruned, len(grid))


@dataclass
class Search:
    """A search strategy choosing round 1's configurations among `space`'s (`strategies.search`)."""

    space: Space
    sizes: dict[str, int] | None
    strategy: str = strategies_mod.DEFAULT
    budget: int | None = None
    budget_s: float | None = None
    seed: int = 0

    def search_space(self) -> strategies_mod.SearchSpace:
        return strategies_mod.SearchSpace.of(self.space.names, self.space.configs)


def objective_of(entries: list[dict[str, Any]]) -> float | None:
    """A configuration's time for a search: the geometric mean of its ranked results' medians over
    the backends × devices; None (failed, Kernel Tuner's failed configuration) when one failed
    or none can be ranked. Skipped ones (a runtime not here) do not count either way."""
    outcomes = [ranking.outcome(e) for e in entries]
    if "failed" in outcomes:
        return None
    medians = [
        (e.get("timing") or {}).get("median_s") for e, o in zip(entries, outcomes, strict=True) if o == "ok"
    ]
    medians = [m for m in medians if m]
    return float(np.exp(np.mean(np.log(medians)))) if medians else None


@dataclass
class Point:
    """One run of a sweep: a configuration of the tunables at a set of sizes."""

    config: dict[str, int | float]
    sizes: dict[str, int]


def resume_key(project: Project, kernel: Kernel, point: Point, backend: str, sources: dict[str, str]) -> str:
    """What decides a recorded result: the sources (the manifest less its tunables' lists, whose
    order sets only the defaults), the kernel's other settings, the sizes, the configuration, the
    backend. The same in a later sweep, also after `--apply` rewrote the defaults."""
    files = {path: text for path, text in sources.items() if Path(path).name != "workbench.toml"}
    settings = replace(kernel, tunables={k: sorted(v) for k, v in kernel.tunables.items()})
    symbols = kernel.symbols(point.sizes)
    data = {
        "files": files,
        "kernel": repr(settings),
        "sizes": {name: int(symbols[name]) for name in kernel.sizes},
        "config": {k: point.config[k] for k in sorted(point.config)},
        "backend": backend,
    }
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


@dataclass
class SweepResult:
    """A finished (or cancelled) sweep: every round's entries (`runs`) and their merge (`entries`)."""

    project: str
    kernel: str
    runs: list[dict[str, Any]] = field(default_factory=list)
    pruned: list[dict[str, Any]] = field(default_factory=list)
    cancelled: bool = False
    seconds: float = 0.0
    rounds: int = 1
    confirm_rounds: int = 0
    confirmed: set[str] | None = None  # slots whose leaders were re-timed side by side
    min_effect: float = ranking.MIN_EFFECT
    defaults: dict[str, Any] = field(default_factory=dict)
    search: dict[str, Any] | None = None  # a search strategy's trace (`strategies.Trace.to_json`)

    @property
    def entries(self) -> list[dict[str, Any]]:
        return tune_entries.merge(self.runs, self.rounds + 1 if self.confirm_rounds else None)

    def best(self) -> dict[str, dict[str, Any]]:
        return ranking.rank(self.entries, min_effect=self.min_effect, confirmed=self.confirmed,
                            defaults=self.defaults)  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        entries = self.entries
        return {
            "project": self.project,
            "kernel": self.kernel,
            "configs": entries,
            "best": ranking.rank(
                entries, min_effect=self.min_effect, confirmed=self.confirmed, defaults=self.defaults
            ),  # fmt: skip
            "counts": ranking.counts(entries),
            "rounds": {
                "sweep": self.rounds,
                "confirm": self.confirm_rounds,
                "confirmed": sorted(self.confirmed or ()),
            },  # fmt: skip
            "pruned": self.pruned,
            "ranking": ranking.METHOD,
            "min_effect": self.min_effect,
            "cancelled": self.cancelled,
            "seconds": self.seconds,
            **({"search": self.search} if self.search is not None else {}),
        }


@dataclass
class SweepPlan:
    """What a sweep runs: its space, the points (a configuration each, at the sizes) and, when a
    strategy chooses round 1's configurations one by one, the `Search`."""

    space: Space
    points: list[Point]
    search: Search | None


def plan(
    kernel: Kernel,
    params: dict[str, tuple[int | float, ...]] | None = None,
    sizes: dict[str, int] | None = None,
    strategy: str = "grid",
    budget: int | None = None,
    budget_s: float | None = None,
    seed: int = 0,
) -> SweepPlan:
    """The sweep `workbench tune` and the Tuning panel start: `space`'s configurations; a search
    strategy, or a time budget for any strategy, searches them (`Search`)."""
    sp = space(kernel, params, sizes, strategy, budget, seed)
    search = None
    if strategy not in STRATEGIES or budget_s is not None:
        search = Search(sp, sizes, strategy, budget, budget_s, seed)
    return SweepPlan(sp, [Point(config, sizes) for config in sp.configs], search)
