"""What the Tuning panel shows, as data (Qt-free; the panel draws it, tests read it).

- `pick_slot`: the backend × device to open on: the one where the most tunables change the build
  (not cpu@cpu when `threads` has no effect there), preferring one with a winner.
- `grid`: the heatmap (two tunables that vary) or line (one) of a slot: axes whose ticks are the
  tunables' values, each cell's median (of the rounds' medians; with more tunables, the best over
  the others, said in `over`), and the identical builds (cells whose configurations build the
  same code) merged under one label (A, B, ...).
- `verdict`: the line above the plot: the winner beyond noise, or the tie set, or "one build".
- `apply_reason`: why Apply is disabled (None when it is enabled).
- `convergence`: a search's best so far against evaluations, with random search's expectation
  estimated from the times measured (as if they were the whole space: the panel knows no more).
"""

from __future__ import annotations

from typing import Any

from workbench.profile.tuning import ranking, strategies
from workbench.units import format_time

#: Cells up to this many print their value (more: hover shows it).
PRINT_CELLS = 36


def config_text(config: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in config.items()) or "(no tunables)"


def pick_slot(best: dict[str, dict[str, Any]], slots: list[str], current: str | None = None) -> str | None:
    """The slot to show: the one where the most tunables change the build (a slot where none does
    last), one with a winner before one without; `current` among equals (no flipping), then the
    first in order."""

    def rank(slot: str) -> tuple:
        b = best.get(slot)
        if b is None:
            return (2, 1 << 16, True)
        return (int(b["verdict"] == ranking.NO_EFFECT), len(b["no_effect"]), b.get("winner") is None)

    ordered = sorted(slots, key=lambda s: (rank(s), s != current, slots.index(s)))
    return ordered[0] if ordered else None


def grid(entries: list[dict[str, Any]], slot: str, tunables: list[str]) -> dict[str, Any]:
    """The heatmap or line of one slot (see the module docstring)."""
    mine = [e for e in entries if ranking.slot(e) == slot]
    varying = [n for n in tunables if len({e["config"].get(n) for e in mine}) > 1]
    axes = varying[:2] or tunables[:1]
    over = [n for n in varying if n not in axes]
    values = {n: sorted({e["config"].get(n) for e in mine}, key=_order) for n in axes}
    cells: dict[tuple, dict[str, Any]] = {}
    for e in mine:
        if not ranking.rankable(e):
            continue
        key = tuple(values[n].index(e["config"].get(n)) for n in axes)
        median = (e.get("timing") or {}).get("median_s")
        if median is None:
            continue
        if key not in cells or median < cells[key]["median_s"]:
            cells[key] = {"median_s": median, "config": e["config"], "build": e.get("build")}
    # Identical builds across cells: one label each (A, B, ...), in the order of the first cell.
    by_build: dict[str, list[tuple]] = {}
    for key in sorted(cells):
        build = cells[key]["build"]
        if build:
            by_build.setdefault(build, []).append(key)
    groups = [keys for keys in by_build.values() if len(keys) > 1]
    labels = {}
    for i, keys in enumerate(groups):
        for key in keys:
            labels[key] = chr(ord("A") + i % 26)
    failed = [e["config"] for e in mine if ranking.outcome(e) == "failed"]
    shape = tuple(len(values[n]) for n in axes)
    median = _filled(shape, {k: c["median_s"] for k, c in cells.items()})
    return {
        "mode": "heatmap" if len(axes) == 2 else "line",
        "slot": slot,
        "axes": axes,
        "ticks": [[str(v) for v in values[n]] for n in axes],
        "values": [values[n] for n in axes],
        "median_s": median,
        "cells": {
            _key_text(k): {**c, "label": labels.get(k, ""), "text": cell_text(c, labels.get(k, ""))}
            for k, c in cells.items()
        },  # fmt: skip
        "same_build": [
            {"label": chr(ord("A") + i % 26), "configs": [cells[k]["config"] for k in keys]}
            for i, keys in enumerate(groups)
        ],  # fmt: skip
        "over": over,
        "failed": failed,
        "print_values": len(cells) <= PRINT_CELLS,
    }


def cell_text(cell: dict[str, Any], label: str = "") -> str:
    text = format_time(cell["median_s"])
    return f"{text} ≡{label}" if label else text


def hover_text(data: dict[str, Any], index: tuple[int, ...]) -> str:
    """The tooltip of a cell (or a line's point): its configuration, median and build group."""
    cell = data["cells"].get(_key_text(index))
    where = ", ".join(f"{n}={data['values'][d][i]}" for d, (n, i) in enumerate(zip(data["axes"], index,
                                                                                    strict=True)))  # fmt: skip
    if cell is None:
        return f"{where}: no ranked result"
    text = f"{where}: median {format_time(cell['median_s'])}"
    if data["over"]:
        text += f" (best over {', '.join(data['over'])}: {config_text(cell['config'])})"
    if cell["label"]:
        same = next(g for g in data["same_build"] if g["label"] == cell["label"])
        text += f"; same build as {', '.join(config_text(c) for c in same['configs'] if c != cell['config'])}"
    return text


def verdict(best: dict[str, Any] | None, slot: str) -> str:
    """The line above the plot for one slot."""
    if not best:
        return f"{slot}: no verified configuration yet"
    if best["verdict"] == ranking.WINNER:
        return (
            f"{slot}: winner {config_text(best['winner'])} ({format_time(best['median_s'])}), {best['note']}"
        )
    if best["verdict"] == ranking.SINGLE:
        return f"{slot}: only {config_text(best['winner'])} was ranked"
    if best["verdict"] == ranking.NO_EFFECT:
        return f"{slot}: {best['note']}"
    ties = best.get("ties") or [best["config"]]
    return f"{slot}: no winner beyond noise; tie set: " + "; ".join(config_text(c) for c in ties)


def apply_reason(best: dict[str, dict[str, Any]], slot: str, running: bool) -> str | None:
    """Why Apply is disabled for `slot` (None: it can apply)."""
    if running:
        return "a sweep is running"
    if not best:
        return "no sweep has ranked a configuration yet"
    chosen = best.get(slot)
    if chosen is None:
        return f"{slot or 'this backend × device'} has no ranked configuration"
    if chosen["verdict"] == ranking.NO_EFFECT:
        names = ", ".join(chosen["no_effect"]) or "the tunables"
        return f"{names} {'has' if len(chosen['no_effect']) == 1 else 'have'} no effect on {slot}: nothing to apply"
    if chosen.get("winner") is None:
        return f"no unique winner on {slot} (a tie within noise): nothing to apply"
    return None


def convergence(evaluations: list[Any]) -> dict[str, list]:
    """{"n", "best", "random"}: the best so far per counted evaluation (`strategies.Evaluation`),
    and random search's expected best after as many draws from the times measured."""
    n = [e.n for e in evaluations]
    best = [e.best for e in evaluations]
    values = [e.value for e in evaluations if e.value is not None]
    expected = strategies.expected_best(values, len(values)) if values else []
    return {"n": n, "best": best, "random": expected}


def _order(value: Any) -> tuple:
    return (
        (0, value, "")
        if isinstance(value, (int, float)) and not isinstance(value, bool)
        else (1, 0, str(value))
    )


def _key_text(key: tuple) -> str:
    return ",".join(str(i) for i in key)


def _filled(shape: tuple[int, ...], known: dict[tuple, float]) -> list:
    if len(shape) == 1:
        return [known.get((i,)) for i in range(shape[0])]
    return [[known.get((i, j)) for j in range(shape[1])] for i in range(shape[0])]
