"""The numbers behind the outputs plot: decimated curves, errors against the reference and mismatch
marks. numpy only (no Qt): the plots panel runs this on a worker thread."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: Most points drawn per output curve; longer arrays are decimated (min/max per bucket).
MAX_POINTS = 4000


def decimate(values: np.ndarray, max_points: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) with at most ~max_points points keeping each bucket's min and max (peaks stay visible)."""
    values = np.asarray(values).ravel()
    n = values.size
    if n <= max_points:
        return np.arange(n), values.astype(np.float64, copy=False)
    buckets = max_points // 2
    step = int(math.ceil(n / buckets))
    usable = (n // step) * step
    body = values[:usable].astype(np.float64).reshape(-1, step)
    starts = np.arange(0, usable, step)
    lo, hi = body.argmin(axis=1), body.argmax(axis=1)
    first, second = np.minimum(lo, hi), np.maximum(lo, hi)
    x = np.empty(2 * len(starts), dtype=np.int64)
    x[0::2], x[1::2] = starts + first, starts + second
    return x, values[x].astype(np.float64)


def _same_array(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    """Whether two arrays hold the same values (identity first; NaNs make them differ: recomputed)."""
    if a is None or b is None:
        return a is b
    return a is b or (a.shape == b.shape and a.dtype == b.dtype and bool(np.array_equal(a, b)))


@dataclass
class OutputsDrawing:
    """What the outputs tab draws for one buffer: decimated curves, errors and mismatch marks."""

    arg: str
    reference: str
    curves: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    errors: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    marks: tuple[np.ndarray, np.ndarray] | None = None
    mark_count: int = 0
    size: int = 0


class OutputsCache:
    """The last decimations per (buffer, backend), reused while the arrays hold the same values.

    Used by one worker thread at a time (the panel's executor has a single thread)."""

    def __init__(self):
        self._curves: dict[tuple[str, str], tuple[np.ndarray, tuple]] = {}
        self._errors: dict[tuple[str, str], tuple[np.ndarray, np.ndarray, tuple, tuple]] = {}

    def curve(self, arg: str, backend: str, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        key = (arg, backend)
        cached = self._curves.get(key)
        if cached is not None and _same_array(cached[0], values):
            return cached[1]
        points = decimate(values)
        self._curves[key] = (values, points)
        return points

    def error(
        self, arg: str, backend: str, values: np.ndarray, ref: np.ndarray, tolerances: tuple[float, float]
    ) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
        """((x, |error|) decimated, (index, |error|) of at most ~500 mismatching elements)."""
        key = (arg, backend)
        cached = self._errors.get(key)
        if (
            cached is not None
            and cached[2][1] == tolerances
            and _same_array(cached[0], values)
            and _same_array(cached[1], ref)
        ):
            return cached[2][0], cached[3]
        err = np.abs(values.astype(np.float64) - ref.astype(np.float64))
        points = decimate(err)
        rtol, atol = tolerances
        bad = np.flatnonzero(~np.isclose(values, ref, rtol=rtol, atol=atol, equal_nan=False))
        if bad.size:
            bad = bad[:: max(1, bad.size // 500)]  # marks for at most ~500 mismatches
        marks = (bad, err[bad])
        self._errors[key] = (values, ref, (points, tolerances), marks)
        return points, marks


def compute_outputs(
    outputs: dict[str, dict[str, Any]],
    arg: str,
    reference_name: str,
    tolerances: tuple[float, float],
    cache: OutputsCache | None = None,
) -> OutputsDrawing:
    """Decimate each backend's `arg` buffer and its error against the reference (numpy only:
    this runs off the GUI thread)."""
    cache = cache or OutputsCache()
    drawing = OutputsDrawing(arg=arg, reference=reference_name)
    reference = (outputs.get(reference_name) or {}).get(arg)
    ref = None if reference is None else np.asarray(reference).ravel()
    mismatch_x: list[np.ndarray] = []
    mismatch_y: list[np.ndarray] = []
    for backend, arrays in outputs.items():
        values = arrays.get(arg)
        if values is None:
            continue
        values = np.asarray(values).ravel()
        drawing.size = max(drawing.size, values.size)
        drawing.curves[backend] = cache.curve(arg, backend, values)
        if ref is None or backend == reference_name or values.shape != ref.shape:
            continue
        drawing.errors[backend], (bad, bad_err) = cache.error(arg, backend, values, ref, tolerances)
        if bad.size:
            mismatch_x.append(bad)
            mismatch_y.append(bad_err)
    if mismatch_x:
        drawing.marks = (np.concatenate(mismatch_x).astype(float), np.concatenate(mismatch_y))
        drawing.mark_count = sum(len(x) for x in mismatch_x)
    return drawing
