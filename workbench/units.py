"""Durations as text for tables and summaries (Qt-free: the command line and the window share it)."""

from __future__ import annotations


def format_time(seconds: float | None, missing: str = "-") -> str:
    """`seconds` in s, ms, µs or ns with three decimals (one for ns); `missing` when unknown."""
    if seconds is None:
        return missing
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3f} {unit}"
    return f"{seconds * 1e9:.1f} ns"
