"""Durations, tolerances, sizes, byte counts and rates as text for tables, summaries and messages
(Qt-free: the command line and the window share them).

`format_fixed` is the one formatter of a measured quantity at a fixed number of decimals (GB/s,
GFLOP/s, percentages: `format_rate`, `result_text.format_percent`): a value under 1 gets the
decimals its 3 significant digits need, so no non-zero value ever reads "0.00"."""

from __future__ import annotations

import math


def format_time(seconds: float | None, missing: str = "-") -> str:
    """`seconds` in s, ms, µs or ns with three decimals (one for ns); `missing` when unknown."""
    if seconds is None:
        return missing
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3f} {unit}"
    return f"{seconds * 1e9:.1f} ns"


def format_tolerance(check: dict | None) -> str:
    """A check's tolerance as people read it: "rtol 1e-05, atol 1e-06, max ULP 4"; a bound that is
    not set reads "none" (never Python's "None")."""
    check = check or {}
    parts = []
    for key, label in (("rtol", "rtol"), ("atol", "atol"), ("max_ulp", "max ULP")):
        value = check.get(key)
        parts.append(f"{label} {'none' if value is None else f'{value:g}'}")
    return ", ".join(parts)


def format_sizes(values: dict | None) -> str:
    """Sizes or tunables as "n=1000000, m=64" ("none" when empty), never a dict's repr."""
    if not values:
        return "none"
    return ", ".join(f"{name}={value}" for name, value in values.items())


def format_bytes(count: float) -> str:
    """A byte count in B, KiB, MiB, GiB or TiB with three significant digits ("1.5 GiB")."""
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count >= scale:
            return f"{count / scale:.3g} {unit}"
    return f"{int(count)} B"


def format_fixed(value: float, decimals: int) -> str:
    """`value` with `decimals` decimals from 1 up ("12.35"); below 1, as many as 3 significant
    digits need ("0.00412"), scientific under 1e-6 ("4.12e-07"); zero as "0.00"."""
    v = float(value)
    if v == 0 or not math.isfinite(v) or abs(v) >= 1:
        return f"{v:.{decimals}f}" if math.isfinite(v) else str(v)
    if abs(v) < 1e-6:
        return f"{v:.2e}"
    needed = 2 - math.floor(math.log10(abs(v)))
    return f"{v:.{max(decimals, needed)}f}"


def format_rate(value: float | None, missing: str = "") -> str:
    """A rate (GB/s, GFLOP/s) with 2 decimals, never a non-zero "0.00" (`format_fixed`)."""
    return missing if value is None else format_fixed(value, 2)
