"""Verdicts from the variation *between* invocations, and the noise floor learned from A/A history.

The unit is the invocation: one recorded `workbench run` (or one repetition of `--repeat`, each in
fresh worker processes) gives one median per backend × device. Two runs of identical code in two
processes differ by far more than the bootstrap of one run's samples admits (the between-process
part: placement, frequency, other load), so a verdict rests on these per-invocation medians
(NVBench's `nvbench_compare` robust mode compares the same distributions):

- each side is the set of its per-invocation medians, in logs (a ratio is a difference of logs);
- their spread s is pooled from both sides, and again with the noise floor's A/A history (a pooled
  variance: the history's degrees of freedom count like the sides'); the wider of the two
  intervals counts;
- the 95% interval of the change is exp(mean_b − mean_a ± t(df) · s · √(1/k_a + 1/k_b));
- "same" when the interval lies inside ±(minimum practical effect), "slower" / "faster" when it
  lies wholly beyond it, otherwise "ambiguous". With one invocation a side and no learned floor
  there is no spread at all: "ambiguous (1 invocation: run with --repeat)".
- no verdict at all unless each side has `MIN_INVOCATIONS`: a side must show its own spread (a
  floor learned in other conditions cannot stand in for it), and the floor only ever widens the
  interval the sides give;
- no faster / slower that the load could explain: a busy run had only cpus − other of the cores,
  so it may be up to cpus / (cpus − other) slower (`load_factor`), and fewer cores can also make
  a small multi-threaded launch faster; the busier side's factor must lie below the whole
  interval, whichever way it points.

The floor widens the interval rather than the margin: as a margin it would make every change
smaller than one invocation's noise undetectable however many invocations were run (and call a
real 5% change "same" on a device whose invocations scatter by 10%), which is what `--repeat` is
for.

The noise floor of a kernel on a device and backend is the pooled standard deviation (as a relative
amount) of the log medians of A/A groups: earlier runs of the same build, sizes, tunables and
flags (`comparable.aa_key`), runs on a busy machine left out, at least `MIN_FLOOR_DF` degrees of
freedom. The runs being compared are left out of it (they already count as the sides).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import numpy as np

from workbench.profile.sessions.comparable import aa_key
from workbench.run.host_load import flags

#: A change smaller than this (relative) is not worth a verdict.
MIN_EFFECT = 0.02
#: Degrees of freedom of A/A history below which no noise floor is claimed.
MIN_FLOOR_DF = 2
#: Invocations each side needs for any verdict (same, faster, slower): enough to estimate its own
#: spread between invocations from at least two differences (docs/compare.md, "How many
#: invocations a side"). A killed `--repeat` series counts the repetitions it recorded.
MIN_INVOCATIONS = 3
#: A/A history read per kernel × backend × device (the newest).
HISTORY_LIMIT = 2000

# Student's t, two-sided 95% (0.975 quantile), for 1..30 degrees of freedom.
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
    2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
    2.045, 2.042,
)  # fmt: skip


def t975(df: int) -> float:
    """The 0.975 quantile of Student's t with `df` degrees of freedom (≥ 1)."""
    if df <= len(_T975):
        return _T975[df - 1]
    z = 1.959964  # Cornish-Fisher beyond the table: within 0.001 of the exact value
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


def is_busy(run: dict[str, Any]) -> bool:
    return "busy" in flags(run.get("host"), run.get("timing_conditions"))


def usable(run: dict[str, Any]) -> bool:
    """A run with a timing: status ok and a positive median."""
    return run.get("status") == "ok" and (run.get("median_s") or 0) > 0


def noise_floor(
    history: Iterable[dict[str, Any]], exclude: set[int] = frozenset(), *, include_busy: bool = False
) -> dict[str, Any] | None:
    """{"rel", "sigma", "df", "invocations", "groups"} from A/A history, or None when too little.
    Runs on a busy machine are left out unless `include_busy`."""
    groups: dict[str, list[float]] = defaultdict(list)
    for run in history:
        if run["id"] in exclude or not usable(run) or (is_busy(run) and not include_busy):
            continue
        groups[aa_key(run)].append(math.log(run["median_s"]))
    ss, df, invocations, used = 0.0, 0, 0, 0
    for logs in groups.values():
        if len(logs) < 2:
            continue
        x = np.asarray(logs)
        ss += float(((x - x.mean()) ** 2).sum())
        df += len(x) - 1
        invocations += len(x)
        used += 1
    if df < MIN_FLOOR_DF:
        return None
    sigma = math.sqrt(ss / df)
    return {"rel": math.expm1(sigma), "sigma": sigma, "df": df, "invocations": invocations, "groups": used}


def load_factor(run: dict[str, Any]) -> float:
    """How much slower the load on a busy run could have made it: its own work had the machine's
    cores less those other processes used, so at most cpus / (cpus − other) times slower (∞ when
    they used every core); 1 for a run not flagged busy (or whose conditions are unknown)."""
    if not is_busy(run):
        return 1.0
    host = run.get("host") if isinstance(run.get("host"), dict) else {}
    others, cpus = host.get("other_cpu_cores"), host.get("cpus")
    if not isinstance(others, int | float) or not isinstance(cpus, int) or cpus <= 0:
        return math.inf  # busy, but by how much is not known: anything could be the load
    return math.inf if others >= cpus else cpus / (cpus - others)


def between_invocations(
    baseline_medians: list[float],
    medians: list[float],
    floor: dict[str, Any] | None = None,
    min_effect: float = MIN_EFFECT,
    load: tuple[float, float] = (1.0, 1.0),
) -> dict[str, Any]:
    """The change from `baseline_medians` to `medians` (one per invocation) and its outcome.

    `load` is each side's `load_factor` (the largest of its runs'): a change no larger than the
    busier side's factor gets no faster / slower verdict, whichever side it favours. Fewer than `MIN_INVOCATIONS`
    on either side gives no verdict at all (the interval is still reported where it exists)."""
    xa = np.log(np.asarray(baseline_medians, dtype=np.float64))
    xb = np.log(np.asarray(medians, dtype=np.float64))
    ka, kb = len(xa), len(xb)
    own_ss = float(((xa - xa.mean()) ** 2).sum() + ((xb - xb.mean()) ** 2).sum())
    own_df = ka - 1 + kb - 1
    d = float(xb.mean() - xa.mean())
    margin = min_effect
    out: dict[str, Any] = {
        "baseline_median_s": math.exp(xa.mean()),
        "median_s": math.exp(xb.mean()),
        "ratio": math.exp(d),
        "invocations": [ka, kb],
        "df": own_df + (floor["df"] if floor else 0),
        "margin": margin,
        # Each side's load factor (JSON: null for one the load could explain without bound).
        "load": [x if math.isfinite(x) else None for x in load],
    }
    # The sides' own spread, and (with a learned floor) the spread pooled with the floor's: the
    # wider interval of the two counts, so history can widen an interval but never narrow it
    # below what the sides themselves show.
    halves = []
    if own_df > 0:
        halves.append(t975(own_df) * math.sqrt(own_ss / own_df))
    if floor:
        df = own_df + floor["df"]
        halves.append(t975(df) * math.sqrt((own_ss + floor["sigma"] ** 2 * floor["df"]) / df))
    if not halves:
        return {**out, "ci": None, "outcome": "ambiguous", "reason": "1 invocation: run with --repeat"}
    half = max(halves) * math.sqrt(1.0 / ka + 1.0 / kb)
    low, high = d - half, d + half
    out["ci"] = [math.exp(low), math.exp(high)]
    if min(ka, kb) < MIN_INVOCATIONS:
        return {**out, "outcome": "ambiguous", "reason": too_few(ka, kb)}
    band = math.log1p(margin)
    if low > band:
        outcome = "slower"
    elif high < -band:
        outcome = "faster"
    elif -band <= low and high <= band:
        outcome = "same"
    else:
        return {
            **out,
            "outcome": "ambiguous",
            "reason": f"the interval reaches both inside and beyond ±{margin:.1%}",
        }
    # A busy side's load could explain a change up to its factor, in either direction: the whole
    # interval must lie beyond the busier side's factor too (`explained` names that side). Load
    # does not only slow: with its helpers never scheduled, a small two-thread launch finished on
    # one thread without the hand-off, 36% faster under two burners (docs/compare.md).
    busier = 0 if load[0] >= load[1] else 1
    if outcome != "same" and abs(low if outcome == "slower" else high) <= math.log(load[busier]):
        return {**out, "outcome": "ambiguous", "reason": None, "explained": busier}
    return {**out, "outcome": outcome, "reason": None}


def too_few(ka: int, kb: int) -> str:
    """Why sides of `ka` and `kb` invocations get no verdict."""
    return f"{ka} : {kb} invocations; a verdict needs {MIN_INVOCATIONS} a side: run with --repeat {MIN_INVOCATIONS}"
