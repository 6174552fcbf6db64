"""The numbers behind the outputs plot: decimated curves, errors against the reference and mismatch
marks (the elements the check counts as bad: `verify.bad_elements`, under the check's whole
`Tolerance`: `check_tolerance`), ulp errors and the scatter sample, each output's marks and the note
under the plot. numpy only (no Qt): the plots panel runs this on a worker thread."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from workbench.manifest import Check
from workbench.run.inputs import POISON_BITS, poison_mask
from workbench.run.verify import Tolerance, bad_elements, ulp_distance
from workbench.ui.plot_model.marks import Marks, marks_of

#: Most points drawn per output curve; longer arrays are decimated (min/max per bucket).
MAX_POINTS = 4000


def decimate(
    values: np.ndarray, max_points: int = MAX_POINTS, lo: int = 0, hi: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) of `values[lo:hi]` with at most ~max_points points keeping each bucket's min and max
    (peak mode: spikes stay visible at every zoom); NaNs (never-written elements) are kept as gaps."""
    values = np.asarray(values).ravel()
    hi = values.size if hi is None else max(lo, min(int(hi), values.size))
    lo = max(0, min(int(lo), hi))
    n = hi - lo
    if n <= max_points:
        return np.arange(lo, hi), values[lo:hi].astype(np.float64)
    buckets = max_points // 2
    step = int(math.ceil(n / buckets))
    usable = (n // step) * step
    body = values[lo : lo + usable].astype(np.float64).reshape(-1, step)
    starts = np.arange(lo, lo + usable, step)
    nan = np.isnan(body)
    if nan.any():
        lo_i = np.where(nan, np.inf, body).argmin(axis=1)
        hi_i = np.where(nan, -np.inf, body).argmax(axis=1)
    else:
        lo_i, hi_i = body.argmin(axis=1), body.argmax(axis=1)
    first, second = np.minimum(lo_i, hi_i), np.maximum(lo_i, hi_i)
    x = np.empty(2 * len(starts), dtype=np.int64)
    x[0::2], x[1::2] = starts + first, starts + second
    if lo + usable < hi:  # the tail bucket, shorter than the others
        tail = values[lo + usable : hi].astype(np.float64)
        finite = np.where(np.isnan(tail), np.inf, tail)
        a, b = int(np.argmin(finite)), int(np.argmax(np.where(np.isnan(tail), -np.inf, tail)))
        x = np.append(x, [lo + usable + min(a, b), lo + usable + max(a, b)])
    return x, values[x].astype(np.float64)


def envelope(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Peak-mode points (a min and a max per bucket) as two lines, the upper and the lower
    envelope, separated by a NaN (drawn with connect="finite"). A zigzag between each bucket's
    min and max fills the plot with a solid block; two envelope lines leave the space between them
    empty, so overlaid backends stay visible and readable."""
    n = len(x) - len(x) % 2
    first, second = y[0:n:2], y[1:n:2]
    upper = np.where(second >= first, 1, 0) + np.arange(0, n, 2)
    lower = np.where(second >= first, 0, 1) + np.arange(0, n, 2)
    nan = np.array([np.nan])
    return (
        np.concatenate([x[upper].astype(np.float64), nan, x[lower].astype(np.float64)]),
        np.concatenate([y[upper], nan, y[lower]]),
    )


def _same_array(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    """Whether two arrays hold the same values (identity first; NaNs make them differ: recomputed)."""
    if a is None or b is None:
        return a is b
    return a is b or (a.shape == b.shape and a.dtype == b.dtype and bool(np.array_equal(a, b)))


@dataclass
class Comparison:
    """One backend's buffer against the reference, over all elements (computed once per arrays)."""

    abs_err: np.ndarray
    ulp_err: np.ndarray
    bad: np.ndarray  # indices the check counts as bad, the never-written ones excluded
    unwritten: np.ndarray  # indices still holding the poison
    max_abs: float
    max_ulp: float
    scatter: tuple[np.ndarray, np.ndarray]

    @property
    def exact(self) -> bool:
        return self.max_abs == 0 and not self.unwritten.size and not self.bad.size


@dataclass
class OutputsDrawing:
    """What the outputs tab draws for one buffer over the visible index range."""

    arg: str
    reference: str
    curves: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    errors: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)  # |error|
    ulps: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    scatter: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)  # (ref, backend)
    marks: tuple[np.ndarray, np.ndarray] | None = None  # (index, |error|) of mismatches
    ulp_marks: tuple[np.ndarray, np.ndarray] | None = None  # (index, ULP) of mismatches
    unwritten: tuple[np.ndarray, np.ndarray] | None = None  # (index, reference value)
    mark_count: int = 0
    unwritten_count: int = 0
    first_bad: int | None = None
    exact: dict[str, bool] = field(default_factory=dict)
    max_abs: dict[str, float] = field(default_factory=dict)
    max_ulp: dict[str, float] = field(default_factory=dict)
    size: int = 0
    x_range: tuple[int, int] = (0, 0)  # the index range [lo, hi) the curves were decimated over
    decimated: bool = False
    #: A 2-D buffer (`plot_model.image.buffer_shape`): (rows, cols), each backend's values and errors as
    #: row-major matrices (views of the arrays, no copies).
    shape: tuple[int, int] | None = None
    images: dict[str, np.ndarray] = field(default_factory=dict)
    abs_images: dict[str, np.ndarray] = field(default_factory=dict)
    ulp_images: dict[str, np.ndarray] = field(default_factory=dict)


#: Mismatch marks drawn per backend at most.
MAX_MARKS = 500


class OutputsCache:
    """Comparisons per (buffer, backend) and the last decimations, reused while the arrays hold the
    same values (an unchanged rerun draws the very same points: nothing repaints).

    Used by one worker thread at a time (the panel's executor has a single thread)."""

    def __init__(self):
        self._comparisons: dict[tuple[str, str], tuple[np.ndarray, np.ndarray, tuple, Comparison]] = {}
        self._points: dict[tuple, tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]] = {}

    def points(
        self, key: tuple, source: np.ndarray, lo: int, hi: int, as_envelope: bool = False
    ) -> tuple[np.ndarray, np.ndarray]:
        """decimate(source, lo, hi) (as two envelope lines when decimated and `as_envelope`), the
        cached points object when nothing changed."""
        cached = self._points.get((*key, lo, hi))
        if cached is not None and _same_array(cached[0], source):
            return cached[1]
        if as_envelope and hi - lo > MAX_POINTS:
            points = envelope(*decimate(source, MAX_POINTS - 2, lo, hi))  # + the NaN: ≤ MAX_POINTS
        else:
            points = decimate(source, MAX_POINTS, lo, hi)
        self._points[(*key, lo, hi)] = (source, points)
        return points

    def comparison(
        self, arg: str, backend: str, values: np.ndarray, ref: np.ndarray, tolerance: Tolerance
    ) -> Comparison:
        key = (arg, backend)
        cached = self._comparisons.get(key)
        if (
            cached is not None
            and cached[2] == tolerance
            and _same_array(cached[0], values)
            and _same_array(cached[1], ref)
        ):
            return cached[3]
        with np.errstate(invalid="ignore", over="ignore"):
            abs_err = np.abs(values.astype(np.float64) - ref.astype(np.float64))
        ulp = ulp_error(values, ref)
        floats = values.dtype.kind == "f" and (values.dtype.kind, values.dtype.itemsize) in POISON_BITS
        poisoned = poison_mask(values) if floats else np.zeros(values.shape, bool)
        unwritten = np.flatnonzero(poisoned)
        bad = np.flatnonzero(bad_elements(values, ref, tolerance) & ~poisoned)  # unwritten: marked apart
        finite = abs_err[np.isfinite(abs_err)]
        finite_ulp = ulp[np.isfinite(ulp)]
        comparison = Comparison(
            abs_err=abs_err,
            ulp_err=ulp,
            bad=bad,
            unwritten=unwritten,
            max_abs=float(finite.max()) if finite.size else 0.0,
            max_ulp=float(finite_ulp.max()) if finite_ulp.size else 0.0,
            scatter=scatter_sample(values, ref, bad[:MAX_MARKS]),
        )
        self._comparisons[key] = (values, ref, tolerance, comparison)
        return comparison


def _thin(index: np.ndarray) -> np.ndarray:
    return index[:: max(1, index.size // MAX_MARKS)] if index.size else index


def compute_outputs(
    outputs: dict[str, dict[str, Any]],
    arg: str,
    reference_name: str,
    tolerance: Tolerance,
    cache: OutputsCache | None = None,
    x_range: tuple[float, float] | None = None,
    shape: tuple[int, int] | None = None,
) -> OutputsDrawing:
    """Decimate each backend's `arg` buffer over the visible index range `x_range` (all when None)
    and compare it with the reference under the check's `tolerance` (numpy only: this runs off
    the GUI thread). With a 2-D `shape` (rows, cols) the values and errors come as matrices too."""
    cache = cache or OutputsCache()
    drawing = OutputsDrawing(arg=arg, reference=reference_name)
    reference = (outputs.get(reference_name) or {}).get(arg)
    ref = None if reference is None else np.asarray(reference).ravel()
    arrays = {b: np.asarray(a[arg]).ravel() for b, a in outputs.items() if a.get(arg) is not None}
    drawing.size = max((v.size for v in arrays.values()), default=0)
    lo, hi = 0, drawing.size
    if x_range is not None:
        lo = max(0, int(math.floor(x_range[0])))
        hi = min(drawing.size, int(math.ceil(x_range[1])) + 1)
        if hi - lo < 2:
            lo, hi = 0, drawing.size
    drawing.x_range = (lo, hi)
    drawing.decimated = hi - lo > MAX_POINTS
    marks: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    unwritten: list[np.ndarray] = []
    firsts: list[int] = []
    if shape is not None and all(v.size == shape[0] * shape[1] for v in arrays.values()):
        drawing.shape = shape
    for backend, values in arrays.items():
        drawing.curves[backend] = cache.points((arg, backend, "value"), values, lo, hi, as_envelope=True)
        if drawing.shape is not None:
            drawing.images[backend] = values.reshape(drawing.shape)
        if ref is None or backend == reference_name or values.shape != ref.shape:
            continue
        comparison = cache.comparison(arg, backend, values, ref, tolerance)
        if drawing.shape is not None:
            drawing.abs_images[backend] = comparison.abs_err.reshape(drawing.shape)
            drawing.ulp_images[backend] = comparison.ulp_err.reshape(drawing.shape)
        drawing.errors[backend] = cache.points((arg, backend, "abs"), comparison.abs_err, lo, hi)
        drawing.ulps[backend] = cache.points((arg, backend, "ulp"), comparison.ulp_err, lo, hi)
        drawing.scatter[backend] = comparison.scatter
        drawing.exact[backend] = comparison.exact
        drawing.max_abs[backend] = comparison.max_abs
        drawing.max_ulp[backend] = comparison.max_ulp
        bad = _thin(comparison.bad)
        if bad.size:
            marks.append((bad, comparison.abs_err[bad], comparison.ulp_err[bad]))
            firsts.append(int(comparison.bad[0]))
            drawing.mark_count += int(comparison.bad.size)
        if comparison.unwritten.size:
            unwritten.append(_thin(comparison.unwritten))
            firsts.append(int(comparison.unwritten[0]))
            drawing.unwritten_count += int(comparison.unwritten.size)
    if marks:
        index = np.concatenate([m[0] for m in marks]).astype(float)
        drawing.marks = (index, np.concatenate([m[1] for m in marks]))
        drawing.ulp_marks = (index, np.concatenate([m[2] for m in marks]))
    if unwritten and ref is not None:
        index = np.unique(np.concatenate(unwritten))
        drawing.unwritten = (index.astype(float), ref[index].astype(np.float64))
    drawing.first_bad = min(firsts) if firsts else None
    return drawing


def ulp_error(values: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Distance in units of the last place (floats) or absolute difference (integers), as float64;
    NaN where either side is NaN."""
    if values.dtype.kind == "f" and values.dtype.itemsize in (4, 8):
        ulps = ulp_distance(values, ref.astype(values.dtype)).astype(np.float64)
        ulps[np.isnan(values) | np.isnan(ref)] = np.nan
        return ulps
    return np.abs(values.astype(np.float64) - ref.astype(np.float64))


def scatter_sample(
    values: np.ndarray, ref: np.ndarray, bad: np.ndarray, max_points: int = MAX_POINTS
) -> tuple[np.ndarray, np.ndarray]:
    """(reference, backend) pairs for the scatter: an even sample of at most `max_points`, plus every
    marked mismatch (those matter most)."""
    n = min(values.size, ref.size)
    index = np.arange(0, n, max(1, -(-n // max_points)))
    if bad.size:
        index = np.union1d(index, bad)
    return ref[index].astype(np.float64), values[index].astype(np.float64)


def check_tolerance(report: Any) -> Tolerance:
    """The tolerance the run's check judged with (max_ulp included): the plot marks what the
    check counted; a report without a check gets the manifest's default `[kernel.check]`."""
    for result in report.results:
        check = result.check or {}
        if "rtol" in check:
            return Tolerance.of(check)
    default = Check()
    return Tolerance(default.rtol, default.atol, default.max_ulp)


def marks_by_output(report: Any) -> dict[str, Marks]:
    """The marks of each output key ("wgsl", or "wgsl@wgpu:1" for a second device)."""
    out: dict[str, Marks] = {}
    for result in getattr(report, "results", None) or ():
        spec = str((result.device or {}).get("spec") or "")
        for key in (f"{result.backend}@{spec}", result.backend):
            out.setdefault(key, marks_of(result))
    return out


def outputs_note(drawing: OutputsDrawing) -> str:
    reference = drawing.reference
    lo, hi = drawing.x_range
    note = f"{drawing.size:,} elements"
    if (lo, hi) != (0, drawing.size):
        note += f" · showing [{lo:,}, {hi:,})"
    if drawing.shape is not None:
        note += f" · a {drawing.shape[0]} × {drawing.shape[1]} image (rows × columns, row-major)"
    elif drawing.decimated:
        note += " · min/max envelope per bucket (zoom in for every element)"
    note += f" · reference {reference}" if reference else " · no reference"
    if drawing.mark_count:
        note += f" · {drawing.mark_count:,} mismatches (✕)"
    if drawing.unwritten_count:
        note += f" · {drawing.unwritten_count:,} never written (□)"
    exact = [b for b, same in drawing.exact.items() if same]
    if exact:
        note += f" · {', '.join(exact)} = {reference} exactly (the curves overlap)"
    elif drawing.errors and not drawing.mark_count and not drawing.unwritten_count:
        note += " · all within tolerance"
    return note
