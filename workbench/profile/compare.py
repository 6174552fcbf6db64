"""Compare a run against a baseline from the raw timing samples, never from two medians alone.

Method: a percentile bootstrap 95% confidence interval of the ratio of medians (run / baseline).
Each bootstrap replicate of a median is drawn exactly and in O(1): the median of n values resampled
with replacement from sorted data x is x[ceil(n * U)] where U is the m-th order statistic of n
uniforms, U ~ Beta(m, n - m + 1) (for even n the upper middle is U + (1 - U) * Beta(1, n - m) and the
two are averaged, as `np.median` does). This gives the same distribution as resampling the whole
array, at a cost independent of the sample count, so runs of 10,000 samples compare in
milliseconds. Verdict: "faster" when the whole interval lies below 1, "slower" when above, else
"no significant change".
"""

from __future__ import annotations

from typing import Any

import numpy as np

from workbench.profile.store import SessionStore

RESAMPLES = 10_000
CONFIDENCE = 0.95
METHOD = f"bootstrap {CONFIDENCE:.0%} CI of the ratio of medians ({RESAMPLES} resamples)"


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
        "method": METHOD,
    }
    if len(baseline) < 2 or len(run) < 2 or out["baseline_median_s"] <= 0:
        out.update(ratio=None, ci=None, verdict="not comparable (fewer than 2 timing samples)")
        return out
    ratio, low, high = ratio_of_medians(baseline, run)
    out.update(ratio=ratio, ci=[low, high], verdict=verdict(low, high))
    return out


def compare_runs(store: SessionStore, baseline_id: int, run_id: int) -> dict[str, Any]:
    """Compare two recorded runs per backend x device.

    Each id stands for its whole recorded `workbench run` (its invocation): the rows pair the
    results of both invocations that share a backend and a device. When they share none (or both
    ids belong to one invocation, e.g. cpu against wgsl), the two runs themselves are compared.
    """
    base = store.get_run(baseline_id, samples=False)
    run = store.get_run(run_id, samples=False)
    pairs: list[tuple[dict, dict]] = []
    if base["invocation"] != run["invocation"]:
        base_by_key = {(r["backend"], r["device"]): r for r in store.invocation_runs(base["invocation"])}
        for other in store.invocation_runs(run["invocation"]):
            match = base_by_key.get((other["backend"], other["device"]))
            if match is not None:
                pairs.append((match, other))
    if not pairs:
        pairs = [(base, run)]
    rows = []
    for a, b in pairs:
        row = {
            "backend": a["backend"] if a["backend"] == b["backend"] else f"{a['backend']} → {b['backend']}",
            "device": a["device"] if a["device"] == b["device"] else f"{a['device']} → {b['device']}",
            "baseline_id": a["id"],
            "run_id": b["id"],
        }
        row.update(compare_samples(store.samples(a["id"]), store.samples(b["id"])))
        rows.append(row)
    return {"baseline": int(baseline_id), "run": int(run_id), "method": METHOD, "rows": rows}
