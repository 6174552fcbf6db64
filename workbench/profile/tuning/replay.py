"""A Kernel Tuner cache replayed (Qt-free): a search strategy run against recorded times, with no
device, so strategies are compared offline and reproducibly (`workbench tune --replay`).

Read: Kernel Tuner's cache JSON (`tune_params_keys`, `tune_params`, `cache`: one entry per
configuration with its `time` in ms, or a failure string), also a cache still open (Kernel
Tuner appends entries and closes the braces at the end: an interrupted run leaves none), the T4
results format (`results`: `configuration`, `invalidity`, `measurements`), plain or gzipped.

- The space: the configurations the cache records. A configuration of the `tune_params` grid the
  cache lacks was never measured (a restriction removed it, or the run stopped): it is invalid
  here, as a restriction-breaking one is to Kernel Tuner.
- A recorded failure (`CompilationFailedConfig`, `RuntimeFailedConfig`, `InvalidConfig`, T4's
  invalidity other than "correct") is a failed evaluation: counted, never the best.
- The cost of an evaluation (the time budget): its recorded `compile_time` + `verification_time`
  + `benchmark_time` (ms), as Kernel Tuner's simulation mode counts it; 0 when not recorded.
"""

from __future__ import annotations

import gzip
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from workbench.errors import WorkbenchError
from workbench.profile.tuning import strategies


class ReplayError(WorkbenchError):
    """A cache file that cannot be read (the message names the file and what is wrong)."""


@dataclass
class Cache:
    """A recorded space: each configuration's time in ms (None: it failed), its cost in s."""

    path: str
    kernel: str
    device: str
    names: list[str]
    grid: dict[str, list[Any]]
    times: dict[tuple, float | None]
    costs: dict[tuple, float]

    @property
    def space(self) -> strategies.SearchSpace:
        return strategies.SearchSpace(
            self.names, {n: tuple(v) for n, v in self.grid.items()}, list(self.times)
        )

    def values(self) -> list[float]:
        return [t for t in self.times.values() if t is not None]

    def objective(self, config: dict[str, Any]) -> tuple[float | None, float | None]:
        key = tuple(config[n] for n in self.names)
        return self.times[key], self.costs.get(key, 0.0)


def _text(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ReplayError(f"cannot read {path}: {exc.strerror or exc}") from None
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise ReplayError(f"{path}: not a readable gzip file ({exc})") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ReplayError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def _parse(path: Path) -> dict[str, Any]:
    text = _text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as first:
        # Kernel Tuner writes its cache open: entries end in ",\n" until the tuning closes it.
        closed = text.rstrip().rstrip(",") + "\n}\n}"
        try:
            return json.loads(closed)
        except json.JSONDecodeError:
            raise ReplayError(
                f"{path}: not JSON ({first.msg} at line {first.lineno} column {first.colno})"
            ) from None


def _number(value: Any) -> float | None:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        return None
    return float(value)


def _cost(entry: dict[str, Any]) -> float:
    total = sum(float(entry.get(k) or 0.0) for k in ("compile_time", "verification_time", "benchmark_time")
                if isinstance(entry.get(k), (int, float)))  # fmt: skip
    return total / 1e3


def read(path: str | Path, objective: str = "time") -> Cache:
    """The recorded space of a Kernel Tuner cache file (see the module docstring)."""
    path = Path(path)
    data = _parse(path)
    if not isinstance(data, dict):
        raise ReplayError(f"{path}: not a Kernel Tuner cache (a JSON object with 'cache' or 'results')")
    if "results" in data and "cache" not in data:
        return _read_t4(path, data, objective)
    for key in ("tune_params_keys", "tune_params", "cache"):
        if key not in data:
            raise ReplayError(f"{path}: not a Kernel Tuner cache: no {key!r}")
    names = list(data["tune_params_keys"])
    objective = data.get("objective") or objective
    times: dict[tuple, float | None] = {}
    costs: dict[tuple, float] = {}
    for key, entry in data["cache"].items():
        missing = [n for n in names if n not in entry]
        if missing:
            raise ReplayError(f"{path}: cache entry {key!r} has no {', '.join(missing)}")
        config = tuple(entry[n] for n in names)
        value = entry.get(objective)
        times[config] = _number(value)
        costs[config] = _cost(entry)
    return _cache(path, data, names, times, costs)


def _read_t4(path: Path, data: dict[str, Any], objective: str) -> Cache:
    results = data["results"]
    if not results:
        raise ReplayError(f"{path}: the T4 file has no results")
    names = list(results[0].get("configuration") or {})
    times: dict[tuple, float | None] = {}
    costs: dict[tuple, float] = {}
    for i, r in enumerate(results):
        config = r.get("configuration")
        if not isinstance(config, dict) or set(config) != set(names):
            raise ReplayError(f"{path}: result {i} has configuration {config!r}; expected the keys {names}")
        key = tuple(config[n] for n in names)
        value = next(
            (m.get("value") for m in r.get("measurements") or [] if m.get("name") == objective), None
        )
        times[key] = _number(value) if r.get("invalidity", "correct") == "correct" else None
        t = r.get("times") or {}
        # Kernel Tuner writes "compilation" / "benchmark" / "validation" (the schema says *_time).
        spent = [t.get(k) for k in ("compilation", "compilation_time", "benchmark", "validation")]
        costs[key] = sum(float(x) for x in spent if isinstance(x, (int, float))) / 1e3
    grid = {n: list(dict.fromkeys(k[i] for k in times)) for i, n in enumerate(names)}
    return _cache(path, {"tune_params": grid, **data}, names, times, costs)


def _cache(path: Path, data: dict[str, Any], names: list[str], times, costs) -> Cache:
    if not times:
        raise ReplayError(f"{path}: the cache records no configuration")
    if not any(t is not None for t in times.values()):
        raise ReplayError(f"{path}: every recorded configuration failed; nothing to search for")
    grid = {n: list(data["tune_params"].get(n) or dict.fromkeys(k[i] for k in times))
            for i, n in enumerate(names)}  # fmt: skip
    for i, n in enumerate(names):  # values recorded but not listed (a hand-edited file): kept
        for k in times:
            if k[i] not in grid[n]:
                grid[n].append(k[i])
    return Cache(str(path), str(data.get("kernel_name") or ""), str(data.get("device_name") or ""),
                 names, grid, times, costs)  # fmt: skip


def replay(
    cache: Cache,
    strategy: str = strategies.DEFAULT,
    *,
    budget: int | None = None,
    budget_s: float | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """One strategy run against the cache: its trace scored against the space's optimum."""
    values = cache.values()
    goal = strategies.targets(values)
    trace = strategies.search(cache.space, cache.objective, strategy, budget=budget, budget_s=budget_s,
                              seed=seed)  # fmt: skip
    bests = [e.best for e in trace.evaluations]
    out = trace.to_json()
    grid = math.prod(len(v) for v in cache.grid.values())
    out.update(
        cache=cache.path, kernel=cache.kernel, device=cache.device, tunables=cache.names,
        space={"recorded": len(cache.times), "failed": sum(t is None for t in cache.times.values()),
               "grid": grid},
        targets=goal,
        reached={name: strategies.reached(bests, goal[name]) for name in ("p95", "within5")},
        random_expected={name: strategies.random_expectation(values, goal[name], len(cache.times))
                         for name in ("p95", "within5")},
        median_of_space=float(np.median(values)),
    )  # fmt: skip
    return out
