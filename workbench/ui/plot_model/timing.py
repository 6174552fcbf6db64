"""The timing plot's rows: one per result (median and quartiles, its marks, its series name), their
labels and data, the note under the compare plot, and whether a log scale is wanted (Qt-free)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from workbench.records import timing_quartiles
from workbench.ui.plot_model.marks import Marks, marks_of, result_order_key
from workbench.ui.plot_model.units import format_si


def series_name(result: Any) -> str:
    """The label of one backend × device: "wgsl @ wgpu:0"."""
    device = result.device or {}
    return f"{result.backend} @ {device.get('spec') or device.get('runtime') or '?'}"


@dataclass
class TimingRow:
    """One backend × device of a run: median, quartiles, samples and its ratio to the reference."""

    series: str
    backend: str
    device: str
    median_s: float
    q1_s: float
    q3_s: float
    iqr_s: float
    samples_s: np.ndarray
    ratio: float | None = None  # median / the reference backend's median
    fastest: bool = False
    reference: bool = False
    marks: Marks = field(default_factory=Marks)
    verdict: str = ""


def timing_rows(report: Any) -> list[TimingRow]:
    """Rows of the comparison view in series order (`plot_model.marks.order_key`: the same order whatever
    order the backends finished in); the fastest and the reference marked, stale rows and failed
    checks flagged. The fastest is a fresh result whose check did not fail."""
    rows: list[TimingRow] = []
    reference = getattr(report, "reference", "") or ""
    results = sorted(getattr(report, "results", None) or (), key=lambda r: result_order_key(r, reference))
    for result in results:
        timing = result.timing or {}
        median = timing.get("median_s")
        if median is None or result.status != "ok":
            continue
        samples = np.asarray(timing.get("samples_s") or [median], dtype=np.float64)
        q1, q3 = timing_quartiles(timing)
        q1, q3 = float(median if q1 is None else q1), float(median if q3 is None else q3)
        rows.append(
            TimingRow(
                series=series_name(result),
                backend=result.backend,
                device=str((result.device or {}).get("spec") or ""),
                median_s=float(median),
                q1_s=q1,
                q3_s=q3,
                iqr_s=float(timing.get("iqr_s", q3 - q1)),
                samples_s=samples,
                marks=marks_of(result),
                verdict=str(getattr(result, "verdict", "") or ""),
            )
        )
    if rows:
        trusted = [r for r in rows if not r.marks.stale and not r.marks.check_failed]
        if trusted:
            min(trusted, key=lambda r: r.median_s).fastest = True
        ref = next((r for r in rows if r.backend == reference), None)
        if ref is not None:
            ref.reference = True
            for row in rows:
                row.ratio = row.median_s / ref.median_s if ref.median_s > 0 else None
    return rows


def log_scale_wanted(values: list[float], spread: float = 8.0) -> bool:
    """A log axis when the values span more than `spread`× (a linear one would flatten the small)."""
    positive = [v for v in values if v and v > 0]
    return len(positive) > 1 and max(positive) / min(positive) > spread


def row_text(row: TimingRow) -> str:
    """A compare row's label: "1.2 ms · 3.1× slower than ref · ✗ check failed ★"."""
    text = format_si(row.median_s, "s")
    if row.reference:
        text += " · reference"
    elif row.ratio:
        # Say which way: "48.5× ref" read as faster as often as slower.
        if row.ratio >= 1:
            text += f" · {row.ratio:.3g}× slower than ref"
        else:
            text += f" · {1 / row.ratio:.3g}× faster than ref"
    if row.marks.check_failed:
        text += " · ✗ check failed"
    elif row.marks.disputed:
        text += " · ⚠ disputed"
    if row.marks.stale:
        text += " · stale"
    return text + (" ★" if row.fastest else "")


def row_model(row: TimingRow) -> dict[str, Any]:
    """A compare row as the plot's data (`plots_data()`, the tests): what is drawn and its label."""
    return {
        "backend": row.backend,
        "device": row.device,
        "median_s": row.median_s,
        "iqr_s": row.iqr_s,
        "q1_s": row.q1_s,
        "q3_s": row.q3_s,
        "ratio_to_reference": row.ratio,
        "fastest": row.fastest,
        "reference": row.reference,
        "stale": row.marks.stale,
        "stale_reason": row.marks.stale_reason or None,
        "check_failed": row.marks.check_failed,
        "verdict": row.verdict,
        "label": row_text(row),
    }


def compare_note(rows: list[TimingRow], failures: list[tuple[str, str]], reference: str,
                 conditions: list[str]) -> str:  # fmt: skip
    """The line under the compare plot: the pairs, the fastest, the reference, what is stale or
    wrong, what did not run ((series, why) each) and the conditions the run was measured in."""
    fastest = next((r for r in rows if r.fastest), None)
    stale = sum(r.marks.stale for r in rows)
    wrong = sum(r.marks.check_failed for r in rows)
    return (
        f"{len(rows)} backend × device pairs"
        + (f" · fastest: {fastest.series} ({format_si(fastest.median_s, 's')})" if fastest else "")
        + (f" · ratios against the reference backend {reference}" if reference else "")
        + (f" · {stale} stale (dimmed: kept from an earlier run)" if stale else "")
        + (f" · {wrong} check failed (red ring: the time of a wrong result)" if wrong else "")
        + "".join(f" · ✗ {series} did not run: {why}" for series, why in failures)
        + (f" · ⚠ measured while {' and '.join(conditions)}" if conditions else "")
    )
