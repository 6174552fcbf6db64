"""The plots' units: SI scaling and formatting of values and counts, and log-axis ticks (Qt-free)."""

from __future__ import annotations

import math

#: SI prefixes from nano to peta (µ for micro).
_PREFIXES = (
    (1e-9, "n"),
    (1e-6, "µ"),
    (1e-3, "m"),
    (1.0, ""),
    (1e3, "k"),
    (1e6, "M"),
    (1e9, "G"),
    (1e12, "T"),
    (1e15, "P"),
)


def si_scale(value: float) -> tuple[float, str]:
    """(scale, prefix) that writes `value` with 1 to 3 digits before the point (1.5e-4 -> 1e-6, "µ")."""
    magnitude = abs(value)
    if not math.isfinite(magnitude) or magnitude == 0:
        return 1.0, ""
    chosen = _PREFIXES[0]
    for scale, prefix in _PREFIXES:
        if magnitude >= scale * 0.9995:
            chosen = (scale, prefix)
    return chosen


def format_si(value: float | None, unit: str, digits: int = 3) -> str:
    """`value` in base units with an SI prefix: 0.00153, "s" -> "1.53 ms"."""
    if value is None or not math.isfinite(value):
        return "–"
    if value == 0:
        return f"0 {unit}"
    scale, prefix = si_scale(value)
    return f"{value / scale:.{digits}g} {prefix}{unit}"


def format_count(value: float) -> str:
    """A plain number on a log axis (sizes, FLOP/byte): "0.1", "16", "100", "1k", "16k", "1M"."""
    if abs(value) < 1000:
        return f"{value:.3g}"
    scale, prefix = si_scale(value)
    return f"{value / scale:.3g}{prefix}"


def log_ticks(lo: float, hi: float, max_labels: int = 12) -> list[tuple[float, list[float]]]:
    """Tick levels for an axis drawn in log10 units, as `(spacing, [log10 values])` per level; the
    first level is labelled and holds at most `max_labels` values: decades (every 2nd, 3rd …
    when they do not fit) over 3+ decades, 1-2-5 steps over 1 to 3 decades when they fit (2…9 as
    minor ticks), round values in real units below one decade."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return []
    max_labels = max(2, int(max_labels))
    decades = range(int(math.floor(lo)), int(math.ceil(hi)) + 1)

    def within(values):
        return [v for v in values if lo <= v <= hi]

    every_decade = within(float(d) for d in decades)
    if hi - lo >= 3.0 or (hi - lo >= 1.0 and len(every_decade) > max_labels):
        step = max(1, int(math.ceil((hi - lo) / min(7, max_labels - 1))))
        majors = within(float(d) for d in decades if d % step == 0)
        minors = within(d + math.log10(k) for d in decades for k in range(2, 10)) if hi - lo <= 5 else []
        return [(float(step), majors), (0.1, minors)]
    if hi - lo >= 1.0 and 3 * (hi - lo) > max_labels:  # no room for 1-2-5: decades only
        return [(1.0, every_decade), (0.1, within(d + math.log10(k) for d in decades for k in range(2, 10)))]
    if hi - lo >= 1.0:
        majors = within(d + math.log10(k) for d in decades for k in (1, 2, 5))
        minors = within(d + math.log10(k) for d in decades for k in (3, 4, 6, 7, 8, 9))
        return [(0.3, majors), (0.1, minors)]
    a, b = 10.0**lo, 10.0**hi
    raw = (b - a) / min(4, max_labels - 1)
    base = 10.0 ** math.floor(math.log10(raw))
    candidates = [m * base for m in (0.1, 0.2, 0.25, 0.5, 1, 2, 2.5, 5, 10)]
    # The smallest round step at least `raw`, else (a narrow range: none lands inside) a smaller one.
    preferred = [c for c in candidates if c >= raw] + [c for c in reversed(candidates) if c < raw]
    for step in preferred:
        first = math.ceil(a / step) * step
        values = [v for v in (first + i * step for i in range(int((b - first) / step) + 1)) if 0 < v <= b]
        if values:
            break
    return [(step, [math.log10(v) for v in values])]
