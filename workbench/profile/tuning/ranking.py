"""Ranking tuning configurations on the spread between interleaved rounds, never on the samples
of one measurement (self-contained; `compare.py` judges invocations, this judges a sweep).

- Points: per backend × device (a slot), configurations whose build is identical (the same
  `build` digest, `tune.build_digest`: the artifact's bytes and, where the runtime reads it, the
  launch geometry) are one point; they are never ranked against each other. A tunable whose
  values never change the build in a slot has no effect there (`no_effect`).
- Rounds: a sweep measures every configuration once per round (round 1: each once, round 2:
  again, ...), so drift between rounds hits every configuration alike. A point's time is the
  median of its rounds' medians (identical builds pooled per round).
- Winner: the leader (lowest time) against every other point, paired by round: the 95%
  t-interval of the mean log ratio over their common rounds. The leader wins when each
  interval's upper end lies below 1 - `min_effect` (faster beyond noise by a practical margin)
  and, when confirmation was asked for, after the leaders were re-timed side by side. Otherwise
  the best is the tie set: the leader and every point it does not beat so.

Only entries that ran (`status` ok) and were verified are ranked; failed, unverified and skipped
ones are listed in the sweep (`outcome`) but never here.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

CONFIDENCE = 0.95
#: A leader must be faster than the runner-up by at least this fraction (beyond noise) to win.
MIN_EFFECT = 0.02
#: Two-sided 95% quantiles of Student's t by degrees of freedom (1..30; beyond, the normal's).
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042)  # fmt: skip
METHOD = (
    f"between-round {CONFIDENCE:.0%} t-interval of the time ratio, paired by round; identical builds are "
    f"one point; a winner is faster than every other point by more than {MIN_EFFECT:.0%} beyond noise "
    "(else the tie set)"
)
#: `best[slot]["verdict"]`: a unique winner, a tie set, one build for every configuration, one configuration.
WINNER, TIE, NO_EFFECT, SINGLE = "winner", "tie", "no effect", "single"


def outcome(entry: dict[str, Any]) -> str:
    """One word per sweep entry: ok (rankable), failed, skipped (runtime unavailable: never a
    failure), not verified (nothing trustworthy to compare with, e.g. the reference failed)."""
    if entry.get("status") == "skipped":
        return "skipped"
    if entry.get("status") != "ok" or entry.get("verified") is False:
        return "failed"
    if entry.get("verified") is not True:
        return "not verified"
    return "ok"


def counts(entries: list[dict[str, Any]]) -> dict[str, int]:
    """How many entries had each `outcome` (every key present)."""
    out = {"ok": 0, "failed": 0, "skipped": 0, "not verified": 0}
    for entry in entries:
        out[outcome(entry)] += 1
    return out


def round_medians(entry: dict[str, Any]) -> dict[int, float]:
    """{round: median_s} of an entry's measured rounds."""
    return {int(r["round"]): float(r["median_s"]) for r in entry.get("rounds") or [] if r.get("median_s")}


def rankable(entry: dict[str, Any]) -> bool:
    """Whether a sweep entry may be ranked: it ran, it was verified, it has a timed round, and
    cpu-sim's checks (where they ran) found nothing."""
    return outcome(entry) == "ok" and bool(round_medians(entry)) and not entry.get("findings")


def slot(entry: dict[str, Any]) -> str:
    """`<backend>@<device>`: where a configuration's timing is comparable with another's."""
    return f"{entry['backend']}@{entry['device']}"


def t95(df: int) -> float:
    return _T95[df - 1] if df <= len(_T95) else 1.960


def interval(logs: list[float]) -> tuple[float, float, float] | None:
    """(mean, low, high) of the 95% t-interval of a mean, back from logs; None below two values."""
    if len(logs) < 2:
        return None
    x = np.asarray(logs, dtype=np.float64)
    mean, half = float(x.mean()), t95(len(x) - 1) * float(x.std(ddof=1)) / math.sqrt(len(x))
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def paired_ratio(a: dict[int, float], b: dict[int, float]) -> dict[str, Any]:
    """a / b over their common rounds: {"ratio", "ci" ([lo, hi] or None), "rounds"}."""
    common = sorted(set(a) & set(b))
    logs = [math.log(a[r] / b[r]) for r in common]
    ci = interval(logs)
    ratio = ci[0] if ci else (math.exp(logs[0]) if logs else None)
    return {"ratio": ratio, "ci": [ci[1], ci[2]] if ci else None, "rounds": len(common)}


def _config_text(config: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in config.items()) or "(no tunables)"


def no_effect(entries: list[dict[str, Any]]) -> list[str]:
    """The tunables that never change the build among `entries` (one slot): every pair of
    configurations that differs in that tunable alone has the same build digest."""
    built = [e for e in entries if e.get("build")]
    names = sorted({name for e in built for name in e["config"]})
    out = []
    for name in names:
        groups: dict[tuple, set[str]] = {}
        values: dict[tuple, set] = {}
        for e in built:
            rest = tuple(sorted((k, v) for k, v in e["config"].items() if k != name))
            groups.setdefault(rest, set()).add(e["build"])
            values.setdefault(rest, set()).add(e["config"].get(name))
        varied = [rest for rest, vals in values.items() if len(vals) > 1]
        if varied and all(len(groups[rest]) == 1 for rest in varied):
            out.append(name)
    return out


def _points(rows: list[dict[str, Any]], defaults: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Entries of one slot grouped by build: {"configs", "rounds": {round: pooled median}, "time"}."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for e in rows:
        groups.setdefault(e.get("build") or f"unbuilt:{id(e)}", []).append(e)
    points = []
    for members in groups.values():
        members.sort(key=lambda e: e["config"] != defaults)  # the default configuration speaks first
        per_round: dict[int, list[float]] = {}
        for e in members:
            for r, m in round_medians(e).items():
                per_round.setdefault(r, []).append(m)
        rounds = {r: float(np.median(ms)) for r, ms in per_round.items()}
        points.append({"configs": [e["config"] for e in members], "rounds": rounds,
                       "time": float(np.median(list(rounds.values())))})  # fmt: skip
    points.sort(key=lambda p: p["time"])
    return points


def _point_json(point: dict[str, Any]) -> dict[str, Any]:
    ci = interval([math.log(m) for m in point["rounds"].values()])
    return {
        "config": point["configs"][0],
        "same_build_as": point["configs"][1:],
        "median_s": point["time"],
        "ci_s": [ci[1], ci[2]] if ci else None,
        "rounds_s": [point["rounds"][r] for r in sorted(point["rounds"])],
    }


def rank(
    entries: list[dict[str, Any]],
    *,
    min_effect: float = MIN_EFFECT,
    confirmed: set[str] | None = None,
    defaults: dict[str, Any] | None = None,
) -> dict[str, dict[str, Any]]:
    """The best per backend × device (see the module docstring). `confirmed`: the slots whose
    leaders were re-timed side by side (None: confirmation was not asked for, a winner may be
    named from the sweep's rounds alone)."""
    by_slot: dict[str, list[dict[str, Any]]] = {}
    for entry in entries:
        by_slot.setdefault(slot(entry), []).append(entry)
    best: dict[str, dict[str, Any]] = {}
    for key in sorted(by_slot):
        rows = [e for e in by_slot[key] if rankable(e)]
        if not rows:
            continue
        unread = no_effect(by_slot[key])
        points = _points(rows, defaults)
        leader = points[0]
        out = {**_point_json(leader), "winner": None, "ties": [], "tied_with": [], "runner_up": None,
               "points": len(points), "ranked": len(rows), "no_effect": unread,
               "identical": [p["configs"] for p in points if len(p["configs"]) > 1],
               "confirmed": confirmed is None or key in confirmed}  # fmt: skip
        backend = by_slot[key][0]["backend"]
        if len(points) == 1:
            out["verdict"] = SINGLE if len(rows) == 1 else NO_EFFECT
            if out["verdict"] == SINGLE:
                out["winner"] = leader["configs"][0]
            out["note"] = (
                "the only configuration" if len(rows) == 1
                else f"every configuration builds the same {backend} code: one point, not ranked"
                + (f" ({', '.join(unread)} {'has' if len(unread) == 1 else 'have'} no effect on {backend})" if unread else "")
            )  # fmt: skip
            out["ties"] = list(leader["configs"]) if len(rows) > 1 else []
            best[key] = out
            continue
        beaten_all = True
        for other in points[1:]:
            versus = paired_ratio(leader["rounds"], other["rounds"])
            row = {**_point_json(other), "ratio": versus["ratio"], "ratio_ci": versus["ci"],
                   "common_rounds": versus["rounds"]}  # fmt: skip
            beats = versus["ci"] is not None and versus["ci"][1] < 1.0 - min_effect
            if other is points[1]:
                out["runner_up"] = row
            if not beats:
                beaten_all = False
                out["tied_with"].append(row)
        if beaten_all and out["confirmed"]:
            out["verdict"], out["winner"] = WINNER, leader["configs"][0]
            out["note"] = f"faster than every other point by more than {min_effect:.0%} beyond noise"
        else:
            out["verdict"] = TIE
            out["ties"] = [leader["configs"][0], *(t["config"] for t in out["tied_with"])]
            out["note"] = (
                "no unique winner: " + ", ".join(_config_text(c) for c in out["ties"]) + " tied within noise"
                if out["tied_with"]
                else "leader not yet re-timed side by side with the runner-up: no winner named"
            )
        if unread:
            out["note"] += (
                f"; {', '.join(unread)} {'has' if len(unread) == 1 else 'have'} no effect on {backend}"
            )
        best[key] = out
    return best


def leaders(best: dict[str, dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Per slot, the configurations to re-time side by side before a winner is named: the leader
    and the runner-up, where the sweep's rounds make the leader look like a winner."""
    out = {}
    for key, b in best.items():
        if b["runner_up"] is not None and not b["tied_with"]:
            out[key] = [b["config"], b["runner_up"]["config"]]
    return out
