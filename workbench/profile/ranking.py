"""Noise-aware ranking of tuning configurations: the median of each configuration's raw samples
with a bootstrap confidence interval (`compare.bootstrap_medians`), the leader per backend × device,
and the configurations whose interval overlaps the leader's, reported as tied with it.

Only configurations that ran (`status` "ok") and were verified (`verified` True) are ranked; a
failed or unverified one is listed in the sweep but never here."""

from __future__ import annotations

from typing import Any

import numpy as np

from workbench.profile.compare import CONFIDENCE, bootstrap_medians

#: Resamples per configuration: the interval's ends move by well under 1% between seeds at this
#: count, and a sweep of hundreds of configurations ranks in milliseconds.
RESAMPLES = 4000
METHOD = (
    f"bootstrap {CONFIDENCE:.0%} CI of the median ({RESAMPLES} resamples); overlapping intervals are ties"
)


def median_ci(samples: Any, seed: int = 0) -> tuple[float, float, float]:
    """(median, CI low, CI high) of the median of `samples`, deterministic for a seed."""
    x = np.asarray(samples, dtype=np.float64)
    rng = np.random.default_rng(seed)
    star = bootstrap_medians(x, RESAMPLES, rng)
    tail = (1.0 - CONFIDENCE) / 2.0
    low, high = np.quantile(star, [tail, 1.0 - tail])
    return float(np.median(x)), float(low), float(high)


def rankable(entry: dict[str, Any]) -> bool:
    """Whether a sweep entry may be ranked: it ran, it was verified, it has timing samples."""
    timing = entry.get("timing") or {}
    return entry.get("status") == "ok" and entry.get("verified") is True and bool(timing.get("samples_s"))


def slot(entry: dict[str, Any]) -> str:
    """`<backend>@<device>`: where a configuration's timing is comparable with another's."""
    return f"{entry['backend']}@{entry['device']}"


def rank(entries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The best configuration per backend × device, with its ties (see the module docstring).

    Each entry is a sweep entry (`{"config", "backend", "device", "status", "verified",
    "timing": {"samples_s": [...]}}`); its `timing` gains `median_s` and `ci_s` when missing."""
    groups: dict[str, list[tuple[dict[str, Any], float, float, float]]] = {}
    for entry in entries:
        if not rankable(entry):
            continue
        timing = entry["timing"]
        if timing.get("ci_s") is None:
            median, low, high = median_ci(timing["samples_s"])
            timing["ci_s"] = [low, high]
            timing.setdefault("median_s", median)
        low, high = timing["ci_s"]
        groups.setdefault(slot(entry), []).append((entry, float(timing["median_s"]), low, high))
    best: dict[str, dict[str, Any]] = {}
    for key, rows in sorted(groups.items()):
        rows.sort(key=lambda row: row[1])
        leader, median, low, high = rows[0]
        tied = [
            {"config": e["config"], "median_s": m, "ci_s": [lo, hi]}
            for e, m, lo, hi in rows[1:]
            if lo <= high and low <= hi  # the intervals overlap
        ]
        best[key] = {
            "config": leader["config"],
            "median_s": median,
            "ci_s": [low, high],
            "tied_with": tied,
            "ranked": len(rows),
        }
    return best
