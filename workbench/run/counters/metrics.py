"""The documented Nsight Compute metric set `workbench run --counters` asks for, and what each says.

One row per metric: the ncu name, the label the CLI and the Counters view print, its unit kind
(`time`, `pct`, `hz`) and whether a higher value is better (None: neither; the view highlights
differences, not winners). Warp-stall reasons come from one regex (every
`smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio`: the cycles a warp spends
stalled for that reason per issued instruction, Nsight Compute's Warp State section); the
record keeps the top few.

How these relate to the event timing: ncu replays the kernel once per pass, with the caches
flushed before each (`--cache-control all`) and the SM clock locked to base (`--clock-control
base`) by its defaults, so its duration is a cold-cache, base-clock time of ONE launch, while the
workbench's median is of warm, boost-clock launches back to back (issue 27). The SM clock ncu saw
is recorded (`sm_hz`) beside it so the two can be related.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    key: str  # the record's field name
    name: str  # ncu's metric name
    label: str
    unit: str  # time | pct | hz
    higher_is_better: bool | None = None


METRICS: tuple[Metric, ...] = (
    Metric("duration_s", "gpu__time_duration.sum", "duration (ncu)", "time", False),
    Metric("sm_hz", "sm__cycles_elapsed.avg.per_second", "SM clock (ncu)", "hz"),
    Metric("dram_hz", "dram__cycles_elapsed.avg.per_second", "DRAM clock (ncu)", "hz"),
    Metric(
        "dram_pct", "dram__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM throughput % of peak", "pct"
    ),
    Metric("l2_pct", "lts__throughput.avg.pct_of_peak_sustained_elapsed", "L2 throughput % of peak", "pct"),
    Metric("sm_pct", "sm__throughput.avg.pct_of_peak_sustained_elapsed", "SM throughput % of peak", "pct"),
    Metric(
        "achieved_occupancy_pct",
        "sm__warps_active.avg.pct_of_peak_sustained_active",
        "achieved occupancy",
        "pct",
        True,
    ),  # fmt: skip
    Metric(
        "theoretical_occupancy_pct", "sm__maximum_warps_per_active_cycle_pct", "theoretical occupancy", "pct"
    ),
    Metric("l1_hit_pct", "l1tex__t_sector_hit_rate.pct", "L1 hit rate", "pct", True),
    Metric("l2_hit_pct", "lts__t_sector_hit_rate.pct", "L2 hit rate", "pct", True),
)
BY_NAME = {m.name: m for m in METRICS}
BY_KEY = {m.key: m for m in METRICS}

STALL_PREFIX = "smsp__average_warps_issue_stalled_"
STALL_SUFFIX = "_per_issue_active.ratio"
STALL_REGEX = r"regex:^smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$"
#: How many stall reasons a record keeps (largest first).
TOP_STALLS = 4


def stall_reason(metric_name: str) -> str | None:
    """'long_scoreboard' for smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio."""
    if metric_name.startswith(STALL_PREFIX) and metric_name.endswith(STALL_SUFFIX):
        return metric_name[len(STALL_PREFIX) : -len(STALL_SUFFIX)]
    return None


def ncu_metrics_argument() -> str:
    """The value of ncu's --metrics: the set above and the stall regex."""
    return ",".join([m.name for m in METRICS] + [STALL_REGEX])


def format_value(key: str, value: float | None) -> str:
    """One metric's value as the CLI and the Counters view print it ('61.4 %', '1.47 GHz', '61.95 µs')."""
    from workbench.units import format_time

    if value is None:
        return "–"
    unit = BY_KEY[key].unit if key in BY_KEY else ""
    if unit == "time":
        return format_time(value)
    if unit == "hz":
        return f"{value / 1e9:.2f} GHz"
    if unit == "pct":
        return f"{value:.1f} %"
    return f"{value:.2f}"


def differs(values: list[float | None], key: str = "", ratio: float = 1.1, points: float = 5.0) -> bool:
    """Whether backends' values of one metric (`key`: a Metric.key, '' for a plain quantity)
    differ enough to be highlighted: percentages more than `points` apart, other quantities the
    largest beyond `ratio` × the smallest (10% by default)."""
    known = [v for v in values if v is not None]
    if len(known) < 2:
        return False
    low, high = min(known), max(known)
    if key in BY_KEY and BY_KEY[key].unit == "pct":
        return high - low > points
    return high > ratio * low if low > 0 else high != low
