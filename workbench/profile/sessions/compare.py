"""Compare recorded runs: only what is comparable, with verdicts that survive between-process noise.

`compare_runs(store, baseline_id, run_id)` takes run ids (rows, as `sessions list` shows them) and
compares those two rows; `invocation=True` pairs the rows of the two whole invocations per
backend × device. A pair that measured different things (`comparable.differences`: sizes,
tunables, backend, device, flags, …) is "not comparable" with what differs, unless forced. The
verdict (faster / slower / same / ambiguous) rests on the per-invocation medians of both sides and
the A/A noise floor (`noise.py`): none with fewer than `noise.MIN_INVOCATIONS` a side, no faster /
slower that the busier side's load could explain (`noise.load_factor`), and a verdict that rests on
a run made on a busy machine says so.

Kept beside it, per row under "within": the older within-run statistic, a percentile bootstrap 95%
interval of the ratio of the two runs' sample medians. Each bootstrap replicate of a median is drawn
exactly and in O(1): the median of n values resampled with replacement from sorted data x is
x[ceil(n * U)] where U is the m-th order statistic of n uniforms, U ~ Beta(m, n - m + 1) (for even n
the upper middle is U + (1 - U) * Beta(1, n - m) and the two are averaged, as `np.median` does).
It only says how precisely one run measured its own median: identical code in two processes is
routinely "significantly" different by it, which is why verdicts no longer come from it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from workbench.profile.sessions.comparable import differences, series_of
from workbench.profile.sessions.noise import (
    HISTORY_LIMIT,
    MIN_EFFECT,
    between_invocations,
    is_busy,
    load_factor,
    noise_floor,
    usable,
)
from workbench.profile.sessions.store import SessionStore, SessionStoreError
from workbench.units import format_time

RESAMPLES = 10_000
CONFIDENCE = 0.95
#: The within-run statistic (kept per row under "within"; not what the verdict rests on).
WITHIN_METHOD = f"bootstrap {CONFIDENCE:.0%} CI of the ratio of medians ({RESAMPLES} resamples)"
METHOD = (
    "95% t-interval of the change in per-invocation medians (logs), spread pooled with the A/A noise "
    "floor; same / faster / slower against ±(minimum effect), else ambiguous "
    f"(docs/compare.md); within-run: {WITHIN_METHOD}"
)


def bootstrap_medians(samples: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """`resamples` bootstrap replicates of the median of `samples` (order-statistic sampling)."""
    x = np.sort(np.asarray(samples, dtype=np.float64))
    n = len(x)
    if n == 1:
        return np.full(resamples, x[0])
    m = (n + 1) // 2 if n % 2 else n // 2
    u = rng.beta(m, n - m + 1, size=resamples)
    lower = x[np.clip(np.ceil(n * u).astype(np.int64), 1, n) - 1]
    if n % 2:
        return lower
    u2 = u + (1.0 - u) * rng.beta(1, n - m, size=resamples)
    upper = x[np.clip(np.ceil(n * u2).astype(np.int64), 1, n) - 1]
    return (lower + upper) / 2.0


def ratio_of_medians(
    baseline: np.ndarray,
    run: np.ndarray,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
    seed: int = 0,
) -> tuple[float, float, float]:
    """(median(run) / median(baseline), CI low, CI high). Deterministic for a given seed."""
    rng = np.random.default_rng(seed)
    base_star = bootstrap_medians(baseline, resamples, rng)
    run_star = bootstrap_medians(run, resamples, rng)
    ratios = run_star / base_star
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(ratios, [tail, 1.0 - tail])
    return float(np.median(run) / np.median(baseline)), float(low), float(high)


def verdict(low: float, high: float) -> str:
    if high < 1.0:
        return "faster"
    if low > 1.0:
        return "slower"
    return "no significant change"


def compare_samples(baseline: np.ndarray, run: np.ndarray) -> dict[str, Any]:
    """The statistics of one comparison row (verdict from the samples' bootstrap CI)."""
    out: dict[str, Any] = {
        "baseline_median_s": float(np.median(baseline)) if len(baseline) else None,
        "median_s": float(np.median(run)) if len(run) else None,
        "n_baseline": len(baseline),
        "n": len(run),
        "method": WITHIN_METHOD,
    }
    if len(baseline) < 2 or len(run) < 2 or out["baseline_median_s"] <= 0:
        out.update(ratio=None, ci=None, verdict="not comparable (fewer than 2 timing samples)")
        return out
    ratio, low, high = ratio_of_medians(baseline, run)
    out.update(ratio=ratio, ci=[low, high], verdict=verdict(low, high))
    return out


def _side(store: SessionStore, run: dict[str, Any], partner: dict[str, Any]) -> list[dict[str, Any]]:
    """The invocations that stand for `run`: the repetitions of its `--repeat` series that measured
    the same thing (itself alone outside a series, or when both runs share one series)."""
    series = (series_of(run) or {}).get("id")
    if not series or series == (series_of(partner) or {}).get("id"):
        return [run]
    members = [
        m for m in store.records(series=series)
        if usable(m) and not differences(run, m) and m.get("build_key") == run.get("build_key")
    ]  # fmt: skip
    return sorted(members, key=lambda m: m["id"]) or [run]


def _load_reason(side: list[dict[str, Any]]) -> str:
    """Why a change the busier side's load could explain gets no verdict: "the load could explain
    it: busy run #12 (other processes 1.00 of 2 cores) could be up to 2× slower or faster"."""
    worst = max(side, key=load_factor)
    factor = load_factor(worst)
    host = worst.get("host") if isinstance(worst.get("host"), dict) else {}
    used = host.get("other_cpu_cores")
    what = f" (other processes {used:.2f} of {host.get('cpus')} cores)" if used is not None else ""
    could = "any amount" if factor == float("inf") else f"up to {factor:.2g}×"
    return f"the load could explain it: busy run #{worst['id']}{what} could be {could} slower or faster"


def _not_comparable(a: dict[str, Any] | None, b: dict[str, Any] | None, differs: list[str]) -> dict[str, Any]:
    some = b or a or {}
    return {
        "backend": _pair(a, b, "backend"), "device": _pair(a, b, "device"),
        "baseline_id": a["id"] if a else None, "run_id": b["id"] if b else None,
        "baseline_median_s": a.get("median_s") if a else None, "median_s": b.get("median_s") if b else None,
        "n_baseline": a.get("n") if a else None, "n": b.get("n") if b else None,
        "ratio": None, "ci": None, "outcome": "not comparable", "comparable": False, "forced": False,
        "differs": differs, "verdict": "not comparable: " + "; ".join(differs), "method": METHOD,
        "kernel": some.get("kernel"),
    }  # fmt: skip


def _pair(a: dict[str, Any] | None, b: dict[str, Any] | None, key: str) -> str:
    left, right = (a or b or {}).get(key, "-"), (b or a or {}).get(key, "-")
    return left if left == right else f"{left} → {right}"


def compare_pair(
    store: SessionStore,
    a: dict[str, Any],
    b: dict[str, Any],
    *,
    force: bool = False,
    min_effect: float = MIN_EFFECT,
) -> dict[str, Any]:
    """One comparison row: run `b` against baseline `a` (full records, `SessionStore.records()`)."""
    differs = differences(a, b)
    if differs and not force:
        return _not_comparable(a, b, differs)
    for run in (a, b):
        if not usable(run):
            reason = f"run #{run['id']} has no timing (status {run.get('status')})"
            return _not_comparable(a, b, [*differs, reason])
    side_a, side_b = _side(store, a, b), _side(store, b, a)
    history = store.records(
        project=b["project"],
        kernel=b["kernel"],
        backend=b["backend"],
        device=b["device"],
        limit=HISTORY_LIMIT,
    )
    floor = noise_floor(history, exclude={r["id"] for r in (*side_a, *side_b)})
    load = (max(map(load_factor, side_a)), max(map(load_factor, side_b)))
    stats = between_invocations(
        [r["median_s"] for r in side_a], [r["median_s"] for r in side_b], floor, min_effect, load
    )
    busy = [r["id"] for r in (*side_a, *side_b) if is_busy(r)]
    if "explained" in stats:
        stats["reason"] = _load_reason((side_a, side_b)[stats["explained"]])
    text = stats["outcome"] + (f" ({stats['reason']})" if stats["outcome"] == "ambiguous" else "")
    if busy and "explained" not in stats:
        text += " — rests on a busy run (" + ", ".join(f"#{i}" for i in busy) + ")"
        if stats["outcome"] in ("faster", "slower"):
            text += ", beyond what its load could explain"
    if differs:
        text = "forced: " + text
    within = compare_samples(store.samples(a["id"]), store.samples(b["id"]))
    return {
        "backend": _pair(a, b, "backend"), "device": _pair(a, b, "device"),
        "baseline_id": a["id"], "run_id": b["id"],
        "baseline_ids": [r["id"] for r in side_a], "run_ids": [r["id"] for r in side_b],
        "n_baseline": a.get("n"), "n": b.get("n"),
        **{k: stats[k] for k in ("baseline_median_s", "median_s", "ratio", "ci", "outcome", "invocations", "margin", "load")},
        "comparable": not differs, "forced": bool(differs), "differs": differs,
        "noise_floor": floor, "min_effect": min_effect, "busy_runs": busy,
        "same_build": a.get("build_key") == b.get("build_key") and a.get("build_key") is not None,
        "within": {k: within[k] for k in ("ratio", "ci", "verdict")},
        "verdict": text, "method": METHOD, "kernel": b.get("kernel"),
    }  # fmt: skip


def compare_runs(
    store: SessionStore,
    baseline_id: int,
    run_id: int,
    *,
    invocation: bool = False,
    force: bool = False,
    min_effect: float = MIN_EFFECT,
) -> dict[str, Any]:
    """Compare run `run_id` with run `baseline_id` (run ids: rows, as `sessions list` shows them).

    By default the two rows themselves are compared. `invocation=True` takes each id for its whole
    recorded invocation and pairs their rows by backend × device (a row without a partner says so).
    A run recorded with `--repeat` brings its series' other repetitions along as further
    invocations. Rows that measured different things are "not comparable", with what differs
    (`comparable.differences`), unless `force`.
    """
    found = {r["id"]: r for r in store.records(ids=[baseline_id, run_id])}
    for wanted in (baseline_id, run_id):
        if wanted not in found:
            raise SessionStoreError(f"no run #{wanted} in {store.path}")
    base, run = found[baseline_id], found[run_id]
    if invocation:
        rows = _invocation_rows(store, base, run, force, min_effect)
    else:
        rows = [compare_pair(store, base, run, force=force, min_effect=min_effect)]
    return {
        "baseline": int(baseline_id), "run": int(run_id), "mode": "invocations" if invocation else "runs",
        "method": METHOD, "min_effect": min_effect, "rows": rows,
    }  # fmt: skip


def _invocation_rows(store, base, run, force, min_effect) -> list[dict[str, Any]]:
    def rows_of(record):
        ids = [r["id"] for r in store.invocation_runs(record["invocation"])]
        return sorted(store.records(ids=ids), key=lambda r: r["id"])

    left = {(r["backend"], r["device"]): r for r in rows_of(base)}
    right = {(r["backend"], r["device"]): r for r in rows_of(run)}
    out = []
    for key in dict.fromkeys([*left, *right]):
        a, b = left.get(key), right.get(key)
        if a is None or b is None:
            where = "baseline" if a is None else "compared"
            out.append(
                _not_comparable(a, b, [f"no result of {key[0]} on {key[1]} in the {where} invocation"])
            )
        else:
            out.append(compare_pair(store, a, b, force=force, min_effect=min_effect))
    return out


#: The columns of a comparison table (CLI and the Sessions panel).
COLUMNS = (
    "backend",
    "device",
    "baseline",
    "median",
    "change",
    "95% CI of change",
    "invocations",
    "noise floor",
    "verdict",
)


def cells(row: dict[str, Any]) -> tuple[str, ...]:
    """One comparison row as the text of `COLUMNS` (the one formatter the CLI and the panel use)."""
    ratio, ci, floor = row.get("ratio"), row.get("ci"), row.get("noise_floor")
    invocations = row.get("invocations")
    return (
        row["backend"], row["device"], format_time(row.get("baseline_median_s")), format_time(row.get("median_s")),
        f"{(ratio - 1) * 100:+.1f}%" if ratio is not None else "-",
        f"{(ci[0] - 1) * 100:+.1f}% … {(ci[1] - 1) * 100:+.1f}%" if ci else "-",
        f"{invocations[0]} : {invocations[1]}" if invocations else "-",
        f"±{floor['rel'] * 100:.1f}% ({floor['invocations']} A/A)" if floor else "-",
        "not comparable (differences below)" if row["differs"] and not row["forced"] else row["verdict"],
    )  # fmt: skip
