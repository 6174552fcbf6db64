"""Tuning sweeps (Qt-free): the configurations of a kernel's tunables, each one built (its own
cached build), run, verified and timed by the run service on every backend × device, recorded in
the sessions store as it finishes, and ranked (`ranking.py`).

- Space: `[kernel.tunables]` (name → allowed values; `--param NAME=V1,V2` replaces a list), the
  grid of every combination, less those breaking a `constraints` condition; `random` draws `budget`
  of them (seeded), `grid` takes the first `budget`.
- Verification: the reference backend's output of each configuration is compared with its output
  at the manifest's default configuration (the baseline; same inputs, same seed), so a
  configuration that breaks the reference itself is flagged too; the other backends are compared
  with the reference of the same configuration, as in every run.
- Resume: each recorded row carries `provenance.tuning.key`, a hash of what decides the result
  (the kernel's sources but the tunables' default order, the sizes, the configuration, the
  backend); a configuration whose rows are all recorded for the requested backends (and devices)
  is read back instead of run.
- Points: a sweep runs points, each a configuration at a set of sizes; a size sweep
  (`size_sweep.py`) is the same runner over sizes at one configuration.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from workbench import expr
from workbench.errors import WorkbenchError
from workbench.manifest import Kernel
from workbench.profile import ranking
from workbench.project import Project

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


def parse_param(text: str) -> tuple[str, tuple[int | float, ...]]:
    """`NAME=V1,V2,...` → (name, values)."""
    name, sep, values = text.partition("=")
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
    """The configurations of `kernel` (each a full assignment of its tunables)."""
    if strategy not in STRATEGIES:
        raise TuneError(f"unknown strategy {strategy!r}; valid: {', '.join(STRATEGIES)}")
    params = dict(params or {})
    unknown = set(params) - set(kernel.tunables)
    if unknown:
        raise TuneError(
            f"kernel {kernel.name!r} has no tunable {', '.join(sorted(unknown))}; "
            f"its tunables: {', '.join(kernel.tunables) or 'none (add [kernel.tunables] to workbench.toml)'}"
        )
    values = {name: tuple(params.get(name, options)) for name, options in kernel.tunables.items()}
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
    elif budget is not None:
        configs = configs[:budget]
    return Space(names, configs, pruned, len(grid))


# ----------------------------------------------------------------------------- the runner


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


def entry_of(
    result: Any, config: dict[str, Any], sizes: dict[str, int], run_id: int | None, resumed: bool
) -> dict:
    """A sweep entry from a `RunResult` (or a recorded row's `detail`)."""
    timing = result.timing.to_json() if result.timing is not None else None
    throughput = dict(result.throughput or {})
    return {
        "config": dict(config),
        "sizes": dict(sizes),
        "backend": result.backend,
        "device": (result.device or {}).get("spec", ""),
        "device_name": (result.device or {}).get("name", ""),
        "verified": result.verified,
        "status": result.status,
        "error": result.error,
        "timing": timing,
        "gbps": throughput.get("gbps"),
        "run_id": run_id,
        "resumed": resumed,
    }


def entry_from_row(row: dict[str, Any], samples: np.ndarray) -> dict[str, Any]:
    detail = row.get("detail") or {}
    prov = detail.get("provenance") or {}
    tuning = prov.get("tuning") or {}
    timing = dict(detail.get("timing") or {})
    if timing:
        timing["samples_s"] = [float(s) for s in samples]
    return {
        "config": dict(tuning.get("config") or row.get("tunables") or {}),
        "sizes": dict(row.get("sizes") or {}),
        "backend": row["backend"],
        "device": row["device"],
        "device_name": row.get("device_name") or "",
        "verified": row.get("verified"),
        "status": row["status"],
        "error": row.get("error"),
        "timing": timing or None,
        "gbps": (detail.get("throughput") or {}).get("gbps"),
        "run_id": row["id"],
        "resumed": True,
    }


@dataclass
class SweepResult:
    project: str
    kernel: str
    entries: list[dict[str, Any]] = field(default_factory=list)
    pruned: list[dict[str, Any]] = field(default_factory=list)
    cancelled: bool = False
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "kernel": self.kernel,
            "configs": self.entries,
            "best": ranking.rank(self.entries),
            "pruned": self.pruned,
            "ranking": ranking.METHOD,
            "cancelled": self.cancelled,
            "seconds": self.seconds,
        }


class SweepRunner:
    """Runs points one after another through one `RunService` (its workers stay warm).

    `on_event(dict)` is called from the calling thread: {"kind": "point", "index", "total",
    "point"} before a point, {"kind": "entries", "index", "total", "entries", "resumed"} after it,
    {"kind": "done", "result": SweepResult}. `cancel()` (any thread) stops the point in flight
    and the rest; what finished stays recorded."""

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
    ) -> None:
        from workbench.run import RunService

        self.project = project
        self.kernel = project.manifest.kernel(kernel)
        self.devices = list(devices or [])
        self.store = store
        self.resume = resume
        self.seed = seed
        self.timeout_s = timeout_s
        self.cache_dir = cache_dir
        self._own_service = run_service is None
        self.service = run_service or RunService()
        self.backends = list(backends or self.service.default_backends(project, None))
        self._cancel = threading.Event()
        self._baseline: dict[tuple, dict[str, np.ndarray]] = {}

    def cancel(self) -> None:
        self._cancel.set()
        self.service.cancel()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def close(self) -> None:
        if self._own_service:
            self.service.close()

    def run(
        self, points: list[Point], on_event: Callable[[dict[str, Any]], None] | None = None
    ) -> SweepResult:
        from workbench.profile.sources import snapshot

        emit = on_event or (lambda event: None)
        # The default configuration first: its reference output is the others' baseline, which
        # would otherwise cost a run of its own.
        defaults = self.kernel.default_tunables()
        points = sorted(points, key=lambda p: p.config != defaults)
        started = time.perf_counter()
        result = SweepResult(self.project.name, self.kernel.name)
        snap = snapshot(self.project)
        for index, point in enumerate(points):
            if self._cancel.is_set():
                result.cancelled = True
                break
            emit({"kind": "point", "index": index, "total": len(points), "point": point})
            keys = {b: resume_key(self.project, self.kernel, point, b, snap[1]) for b in self.backends}
            entries = self._recorded(keys) if self.resume and self.store is not None else None
            resumed = entries is not None
            if entries is None:
                entries = self._run_point(point, keys, snap)
                if entries is None:  # cancelled part-way: nothing of this point is kept
                    result.cancelled = True
                    break
            result.entries.extend(entries)
            emit(
                {
                    "kind": "entries",
                    "index": index,
                    "total": len(points),
                    "entries": entries,
                    "resumed": resumed,
                }
            )
        result.seconds = time.perf_counter() - started
        emit({"kind": "done", "result": result})
        return result

    # ------------------------------------------------------------------ one point

    def _run_point(self, point: Point, keys: dict[str, str], snap) -> list[dict[str, Any]] | None:
        from workbench.run.service import RunError

        try:
            report = self.service.run(
                self.project, self.kernel.name, self.backends, self.devices or None, point.sizes,
                timeout_s=self.timeout_s, seed=self.seed, cache_dir=self.cache_dir, tunables=point.config,
            )  # fmt: skip
        except RunError as exc:
            raise TuneError(str(exc)) from None
        if report.cancelled or self._cancel.is_set():
            return None
        self._verify_reference(point, report)
        for r in report.results:
            r.provenance["tuning"] = {"key": keys.get(r.backend), "config": dict(point.config)}
        ids: list[int | None] = [None] * len(report.results)
        if self.store is not None:
            from workbench.profile.record import record_report

            ids = list(record_report(self.store, report, snapshot=snap))
        return [
            entry_of(r, point.config, report.sizes, i, False)
            for r, i in zip(report.results, ids, strict=True)
        ]

    def _verify_reference(self, point: Point, report: Any) -> None:
        """The reference backend's result is checked against its output at the default
        configuration (same sizes and seed): no configuration is ranked unverified."""
        from workbench.run.verify import check_outputs

        ref = report.reference
        mine = [r for r in report.results if r.backend == ref and r.status == "ok"]
        if not mine or ref not in report.outputs:
            return
        defaults = self.kernel.default_tunables()
        sizes_key = tuple(sorted(report.sizes.items()))
        if point.config == defaults:
            self._baseline.setdefault(sizes_key, report.outputs[ref])
            for r in mine:
                r.verified = True  # the baseline itself: the reference at the default configuration
            return
        baseline = self._baseline.get(sizes_key)
        if baseline is None:
            base = self.service.run(
                self.project, self.kernel.name, [ref], None, point.sizes,
                timeout_s=self.timeout_s, seed=self.seed, cache_dir=self.cache_dir, tunables=defaults,
            )  # fmt: skip
            baseline = base.outputs.get(ref)
            if baseline is None:
                return
            self._baseline[sizes_key] = baseline
        check = self.kernel.check
        passed, record = check_outputs(
            report.outputs[ref], baseline, check.rtol, check.atol, check.max_ulp,
            reference_name=f"{ref} at the default configuration {defaults}",
        )  # fmt: skip
        for r in mine:
            r.verified = passed
            r.check = record

    def _recorded(self, keys: dict[str, str]) -> list[dict[str, Any]] | None:
        """The recorded entries of a point, when every backend (and device) asked for has one."""
        from workbench.backends import runtime_of

        entries = []
        for backend, key in keys.items():
            rows = self.store.tuning_runs(key)
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
            entries += [entry_from_row(row, self.store.samples(row["id"])) for row in latest.values()]
        return entries


def spec_matches(row: dict[str, Any], spec: str) -> bool:
    """Whether a recorded row's device answers to a `--device` spec (spec or part of the name)."""
    return row["device"] == spec or spec.lower() in (row.get("device_name") or "").lower()


class BackgroundSweep:
    """A sweep on a thread of its own (Qt-free; the window's tuning panel drives one).

    It opens its own sessions store and `RunService` on that thread (SQLite connections and
    workers stay with the thread that made them), runs `points`, and hands every runner event to
    `on_event` from that thread; a final {"kind": "finished", "result": SweepResult | None,
    "error": str | None} always comes. `cancel()` stops it; `join()` waits."""

    def __init__(
        self,
        project: Project,
        kernel: str | None,
        points: list[Point],
        on_event: Callable[[dict[str, Any]], None],
        *,
        backends: list[str] | None = None,
        devices: list[str] | None = None,
        db_path: str | Path | None = None,
        timing: Any = None,
        cache_dir: str | Path | None = None,
    ) -> None:
        self._args = (project, kernel, points, backends, devices, db_path, timing, cache_dir)
        self._on_event = on_event
        self._runner: SweepRunner | None = None
        self._cancelled = threading.Event()
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self._body, name="tuning-sweep", daemon=True)

    def start(self) -> BackgroundSweep:
        self.thread.start()
        return self

    def cancel(self) -> None:
        self._cancelled.set()
        with self._lock:
            if self._runner is not None:
                self._runner.cancel()

    def join(self, timeout: float | None = None) -> bool:
        self.thread.join(timeout)
        return not self.thread.is_alive()

    def _body(self) -> None:
        from workbench.profile.store import SessionStore
        from workbench.run.service import RunService

        project, kernel, points, backends, devices, db_path, timing, cache_dir = self._args
        result, error = None, None
        service = RunService(timing=timing) if timing is not None else RunService()
        store = None
        try:
            store = SessionStore(db_path)
            with self._lock:
                self._runner = SweepRunner(project, kernel, backends, devices, store=store,
                                           run_service=service, cache_dir=cache_dir)  # fmt: skip
                if self._cancelled.is_set():
                    self._runner.cancel()
            result = self._runner.run(points, on_event=self._on_event)
        except Exception as exc:  # noqa: BLE001 - reported to the panel, never raised on a thread
            error = str(exc) or type(exc).__name__
        finally:
            service.close()
            if store is not None:
                store.close()
        self._on_event({"kind": "finished", "result": result, "error": error})
