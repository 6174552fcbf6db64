"""The numbers behind the outputs plot: decimated curves, errors against the reference and mismatch
marks (the elements the check counts as bad: `verify.bad_elements`, under the check's whole
`Tolerance`). numpy only (no Qt): the plots panel runs this on a worker thread."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from workbench.records import timing_quartiles
from workbench.run.inputs import POISON_BITS, poison_mask
from workbench.run.verify import Tolerance, bad_elements, ulp_distance
from workbench.ui.plot_model.marks import Marks, marks_of, result_order_key

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


# ------------------------------------------------------------------------------------------ units

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


# ------------------------------------------------------------------------------------------ timing


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


# ------------------------------------------------------------------------------------------ roofline


@dataclass
class RoofPoint:
    """One backend × device on the roofline (base units)."""

    series: str
    backend: str
    device: str
    intensity: float  # FLOP per byte
    flops_per_s: float
    bytes_per_s: float
    roof_flops_per_s: float | None = None  # what the device's roofs allow at this intensity
    fraction_of_roof: float | None = None
    roof_source: str = ""  # "measured" (ceilings) or "datasheet"
    roof_memory: str = ""  # the memory roof it is held against: "copy" or "read" (a read stream)
    marks: Marks = field(default_factory=Marks)


@dataclass
class Roof:
    """A device's memory and compute roofs (from its measured ceilings). `memory` names the memory
    roof: "copy" (bytes read + written), or "read" for kernels that mostly read (`memory_roof`)."""

    device: str
    name: str
    bytes_per_s: float | None
    flops_per_s: float | None
    source: str = "measured"
    memory: str = "copy"

    @property
    def key(self) -> str:
        """One curve per device and memory roof: "cuda:0", "cuda:0 read"."""
        return self.device if self.memory == "copy" else f"{self.device} {self.memory}"

    def attainable(self, intensity: float) -> float | None:
        limits = [v for v in (self.bytes_per_s and self.bytes_per_s * intensity, self.flops_per_s) if v]
        return min(limits) if limits else None

    @property
    def ridge(self) -> float | None:
        """The intensity where the memory roof meets the compute roof."""
        if self.bytes_per_s and self.flops_per_s:
            return self.flops_per_s / self.bytes_per_s
        return None


def roof_of(device: dict[str, Any], ceilings: Any, memory: str = "copy") -> Roof | None:
    """The roofs of a result's device: its measured ceilings, else its datasheet peaks. `memory`
    "read" takes the measured read ceiling where there is one (a read stream's roof)."""
    spec = str(device.get("spec") or device.get("runtime") or "?")
    if ceilings is not None and (ceilings.copy_gbps or ceilings.fma_gflops_f32):
        read = getattr(ceilings, "read_gbps", None) if memory == "read" else None
        bandwidth = read or ceilings.copy_gbps
        return Roof(
            spec,
            str(device.get("name") or ""),
            bandwidth * 1e9 if bandwidth else None,
            ceilings.fma_gflops_f32 * 1e9 if ceilings.fma_gflops_f32 else None,
            "measured",
            "read" if read else "copy",
        )
    if device.get("peak_gbps") or device.get("peak_gflops"):
        bw, fl = device.get("peak_gbps"), device.get("peak_gflops")
        return Roof(spec, str(device.get("name") or ""), bw and bw * 1e9, fl and fl * 1e9, "datasheet")
    return None


def roofline_model(report: Any, ceilings_of) -> tuple[list[RoofPoint], list[Roof]]:
    """Points (from each result's throughput) and the roofs of their devices.

    `ceilings_of(device dict) -> Ceilings | None` looks the measured ceilings up."""
    points: list[RoofPoint] = []
    roofs: dict[str, Roof] = {}
    reference = getattr(report, "reference", "") or ""
    for result in sorted(
        getattr(report, "results", None) or (), key=lambda r: result_order_key(r, reference)
    ):
        throughput = result.throughput or {}
        gflops, gbps = throughput.get("gflops"), throughput.get("gbps")
        if result.status != "ok" or not gflops or not gbps:
            continue
        device = result.device or {}
        memory = throughput.get("memory_roof") or "copy"
        slot = (str(device.get("spec")), memory)
        roof = roofs.get(slot)
        if roof is None:
            roof = roof_of(device, ceilings_of(device), memory)
            if roof is not None:
                roofs[slot] = roof
        point = RoofPoint(
            series_name(result),
            result.backend,
            str(device.get("spec") or ""),
            intensity=gflops / gbps,
            flops_per_s=gflops * 1e9,
            bytes_per_s=gbps * 1e9,
            marks=marks_of(result),
        )
        if roof is not None:
            point.roof_source = roof.source
            point.roof_memory = roof.memory
            point.roof_flops_per_s = roof.attainable(point.intensity)
            if point.roof_flops_per_s:
                point.fraction_of_roof = point.flops_per_s / point.roof_flops_per_s
        points.append(point)
    unique = {roof.key: roof for roof in roofs.values()}  # a read roof not measured is the copy roof
    return points, list(unique.values())


def roofline_ranges(
    points: list[RoofPoint], roofs: list[Roof]
) -> tuple[tuple[float, float], tuple[float, float]]:
    """(x, y) ranges in base units holding every point, each roof's ridge and a margin."""
    xs = [p.intensity for p in points] + [r.ridge for r in roofs if r.ridge]
    if not xs:
        return (0.01, 100.0), (1e6, 1e12)
    x_lo, x_hi = min(xs) / 4, max(xs) * 4
    ys = [p.flops_per_s for p in points] + [r.flops_per_s for r in roofs if r.flops_per_s]
    ys += [r.attainable(x_lo) for r in roofs if r.attainable(x_lo)]
    y_lo, y_hi = min(ys) / 3, max(ys) * 3
    return (x_lo, x_hi), (y_lo, y_hi)


# ------------------------------------------------------------------------------------------ outputs


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
