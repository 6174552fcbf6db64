"""Element-by-element comparison of a backend's outputs with the reference backend's.

Per buffer: max abs / max rel / max ULP error, the number of bad elements, the first bad index with
both values (`reference_unwritten` when the reference never wrote it), NaN/Inf counts and how many elements still hold the poison (never written). An element
passes when |got - ref| <= atol + rtol * |ref|, or when `max_ulp` is set and it is within that
many ULPs; equal NaNs and equal infinities pass. Integers must match exactly unless the
tolerances allow a difference.

This module is the one home of that rule: `bad_elements(got, ref, Tolerance)` is the mask of the
elements `compare` counts as bad, and the details view (`run/mismatches.py`) and the outputs plot
(`ui/plot_model/outputs.py`) mark exactly those.

A comparison that could hardly fail is flagged as weak (`weakness`): when most reference
elements are below `atol` (an all-zero output then passes too) or the reference output is constant.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.records import COMPARED, CheckRecord
from workbench.run.inputs import POISON_BITS, poison_mask

#: A comparison is weak when more than this fraction of the reference's elements are below atol.
WEAK_FRACTION = 0.5

_SIGNED = {4: np.int32, 8: np.int64}
_UNSIGNED = {4: np.uint32, 8: np.uint64}


@dataclass(frozen=True)
class Tolerance:
    """How far an element may be from the reference's: within `atol + rtol * |ref|`, or within
    `max_ulp` units in the last place when set (floats). Equal NaNs and equal infinities pass;
    any other NaN or infinity fails."""

    rtol: float = 0.0
    atol: float = 0.0
    max_ulp: int | None = None

    @classmethod
    def of(cls, check: Mapping[str, Any] | None) -> Tolerance:
        """The tolerance a check (a `CheckRecord`, its JSON or the manifest's `[kernel.check]`
        as a dict) judges with; missing settings are 0 / no ULP allowance."""
        check = check or {}
        max_ulp = check.get("max_ulp")
        return cls(
            float(check.get("rtol") or 0.0),
            float(check.get("atol") or 0.0),
            None if max_ulp is None else int(max_ulp),
        )


def json_number(value: Any) -> Any:
    """A JSON-safe number: NaN and infinities become the strings "nan", "inf", "-inf"."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Number of representable floats between a and b (uint64), through ordered integer views.

    NaN elements give meaningless values: callers mask them.
    """
    a = np.ascontiguousarray(a)
    b = np.ascontiguousarray(b, dtype=a.dtype)
    size = a.dtype.itemsize
    if size == 4:
        # float32: the ordered values fit in int64, so one subtraction is exact (a third of the
        # work of the general path, which the 64-bit case needs).
        def ordered32(x: np.ndarray) -> np.ndarray:
            bits = x.view(np.int32).astype(np.int64)
            return np.where(bits < 0, np.int64(-(1 << 31)) - bits, bits)

        return np.abs(ordered32(a) - ordered32(b)).astype(np.uint64)
    signed, unsigned = _SIGNED[size], _UNSIGNED[size]
    sign_bit = unsigned(1) << unsigned(8 * size - 1)

    def ordered(x: np.ndarray) -> np.ndarray:
        # Negative floats count downwards from zero: map them to two's complement order,
        # then shift into unsigned space so the difference is exact.
        bits = x.view(unsigned)
        magnitude = (bits & ~sign_bit).astype(signed)
        value = np.where(bits & sign_bit, -magnitude, magnitude)
        return value.astype(unsigned) ^ sign_bit

    oa, ob = ordered(a), ordered(b)
    return np.where(oa >= ob, oa - ob, ob - oa)


#: Elements per verification chunk: small enough for the float64 temporaries of a chunk to stay
#: in cache (2 MiB each; 2^20 elements took 3x as long on the H200 host and here), large enough
#: that numpy's per-call cost vanishes.
CHUNK = 1 << 18
#: Threads comparing chunks (numpy releases the GIL inside its loops, not between its calls: on the
#: 16-core H200 host a 2^28-element compare took 3.9 s on 1 thread, 1.25 on 4 or 8, 1.7 on 16;
#: benchmarks/host_memory.py).
THREADS = max(1, min(8, os.cpu_count() or 1))


def map_chunks(fn: Callable[[int, int], Any], size: int) -> list[Any]:
    """`fn(start, stop)` over CHUNK-sized pieces of [0, size), in order; on threads when large."""
    bounds = [(a, min(a + CHUNK, size)) for a in range(0, size, CHUNK)] or [(0, 0)]
    if len(bounds) == 1 or THREADS == 1:
        return [fn(a, b) for a, b in bounds]
    # A pool per call (threads start in microseconds): nothing lingers after a check.
    with ThreadPoolExecutor(min(THREADS, len(bounds)), thread_name_prefix="wb-verify") as pool:
        return list(pool.map(lambda ab: fn(*ab), bounds))


def compare(
    got: np.ndarray,
    ref: np.ndarray,
    rtol: float,
    atol: float,
    max_ulp: int | None = None,
    check_poison: bool = False,
) -> dict[str, Any]:
    """The check of one buffer: error metrics, bad-element count, first bad element, pass/fail.

    One pass over chunks (in parallel): every metric and the first bad index come out of the same
    pass, chunks equal bit for bit take the cheap path, and no full-size temporary is made."""
    got = np.ascontiguousarray(got).reshape(-1)
    ref = np.ascontiguousarray(ref).reshape(-1)
    result: dict[str, Any] = {
        "size": int(got.size),
        "dtype": str(got.dtype),
        "max_abs_err": 0.0,
        "max_rel_err": 0.0,
        "max_ulp_err": None,
        "bad": 0,
        "first_bad_index": None,
        "first_bad": None,
        "nan_count": 0,
        "inf_count": 0,
        "unwritten": 0,
        "passed": True,
    }
    if got.shape != ref.shape or got.dtype != ref.dtype:
        result.update(
            passed=False,
            bad=int(max(got.size, ref.size)),
            note=f"shape/dtype differ: got {got.size} × {got.dtype}, reference {ref.size} × {ref.dtype}",
        )
        return result
    poison = check_poison and (got.dtype.kind, got.dtype.itemsize) in POISON_BITS
    tolerance = Tolerance(rtol, atol, max_ulp)

    def chunk(a: int, b: int) -> dict[str, Any]:
        return _compare_chunk(got[a:b], ref[a:b], tolerance, poison, a)

    parts = map_chunks(chunk, got.size)
    is_float = got.dtype.kind == "f"
    result["max_abs_err"] = json_number(_max(p["max_abs_err"] for p in parts))
    result["max_rel_err"] = json_number(_max(p["max_rel_err"] for p in parts))
    result["max_ulp_err"] = int(max(p["max_ulp_err"] for p in parts)) if is_float else None
    for key in ("nan_count", "inf_count", "unwritten", "bad"):
        result[key] = int(sum(p[key] for p in parts))
    result["passed"] = result["bad"] == 0
    first = next((p["first"] for p in parts if p["first"] is not None), None)
    if first is not None:
        index, is_unwritten = first
        result["first_bad_index"] = index
        result["first_bad"] = {
            "index": index,
            "got": json_number(got[index]),
            "expected": json_number(ref[index]),
            "unwritten": is_unwritten,
        }
        if poison and poison_mask(ref[index : index + 1])[0]:
            # The reference's own element still holds the poison: the reference never wrote it,
            # so its "expected" value is no expectation (`result_text.check_line` says so). Only
            # when true: a sound reference's check keeps its JSON as it was.
            result["first_bad"]["reference_unwritten"] = True
    return result


def health(array: np.ndarray, check_poison: bool = False) -> dict[str, int]:
    """NaN and infinity counts and elements still poisoned (never written), chunked in parallel:
    what the reference's own outputs are checked for."""
    flat = np.ascontiguousarray(array).reshape(-1)
    poison = check_poison and (flat.dtype.kind, flat.dtype.itemsize) in POISON_BITS

    def chunk(a: int, b: int) -> tuple[int, int, int]:
        part = flat[a:b]
        unwritten = int(np.count_nonzero(poison_mask(part))) if poison else 0
        if flat.dtype.kind != "f":
            return 0, 0, unwritten
        return int(np.count_nonzero(np.isnan(part))), int(np.count_nonzero(np.isinf(part))), unwritten

    parts = map_chunks(chunk, flat.size)
    return {
        "nan_count": sum(p[0] for p in parts),
        "inf_count": sum(p[1] for p in parts),
        "unwritten": sum(p[2] for p in parts),
    }


def _max(values) -> float:
    """The largest of some floats where NaN wins (a NaN error is the worst error)."""
    out = 0.0
    for v in values:
        if v != v:
            return float("nan")
        out = max(out, v)
    return out


def bad_elements(
    got: np.ndarray, ref: np.ndarray, tolerance: Tolerance, check_poison: bool = False
) -> np.ndarray:
    """The boolean mask of the elements the check counts as bad: outside `tolerance`, and (with
    `check_poison`, as for an `out` buffer) still holding the poison. `compare`'s `bad` is its
    count: both go through the same chunk verdict. Arrays of one size but different element
    types are all bad, as in `compare`; arrays of different sizes have no mask (ValueError)."""
    got = np.ascontiguousarray(got).reshape(-1)
    ref = np.ascontiguousarray(ref).reshape(-1)
    if got.size != ref.size:
        raise ValueError(f"cannot compare {got.size} elements with a reference of {ref.size}")
    if got.dtype != ref.dtype:
        return np.ones(got.size, bool)
    poison = check_poison and (got.dtype.kind, got.dtype.itemsize) in POISON_BITS
    mask = np.zeros(got.size, bool)

    def chunk(a: int, b: int) -> None:
        bad, _unwritten, _metrics = _chunk_verdict(got[a:b], ref[a:b], tolerance, poison)
        if bad is not None:
            mask[a + bad] = True  # chunks are disjoint: threads never write the same element

    map_chunks(chunk, got.size)
    return mask


def _chunk_verdict(
    got, ref, tolerance: Tolerance, poison: bool
) -> tuple[np.ndarray | None, np.ndarray | None, dict[str, Any]]:
    """(indices of the bad elements or None when there are none, indices still poisoned or None
    when not checked, error metrics) of one chunk: the element pass rule, applied."""
    unwritten = np.flatnonzero(poison_mask(got)) if poison else None
    if _bitwise_equal(got, ref):
        # The common case, and ~50x cheaper than the metrics below.
        bad = None
        metrics = {"max_abs_err": 0.0, "max_rel_err": 0.0, "max_ulp_err": 0, "nan_count": 0, "inf_count": 0}
        if got.dtype.kind == "f":
            metrics["nan_count"] = int(np.count_nonzero(np.isnan(got)))
            metrics["inf_count"] = int(np.count_nonzero(np.isinf(got)))
    elif got.dtype.kind == "f":
        bad, metrics = _compare_floats(got, ref, tolerance)
    else:
        bad = np.flatnonzero(_compare_ints(got, ref, tolerance, metrics := {}))
    if unwritten is not None:
        bad = unwritten if bad is None else np.union1d(bad, unwritten)
    return bad, unwritten, metrics


def _compare_chunk(got, ref, tolerance: Tolerance, poison: bool, offset: int) -> dict[str, Any]:
    bad, unwritten, metrics = _chunk_verdict(got, ref, tolerance, poison)
    count = int(bad.size) if bad is not None else 0
    metrics["bad"] = count
    metrics["unwritten"] = int(unwritten.size) if unwritten is not None else 0
    metrics["first"] = None
    if count:
        index = int(bad[0])
        is_unwritten = unwritten is not None and bool(np.isin(index, unwritten))
        metrics["first"] = (offset + index, is_unwritten)
    return metrics


def _bitwise_equal(got: np.ndarray, ref: np.ndarray) -> bool:
    size = got.dtype.itemsize
    if size not in _UNSIGNED:
        return False
    return bool(np.array_equal(got.view(_UNSIGNED[size]), ref.view(_UNSIGNED[size])))


def _compare_floats(got, ref, tolerance: Tolerance) -> tuple[np.ndarray, dict[str, Any]]:
    """(indices of the bad elements, metrics) of one chunk of floats.

    Only the elements whose bits differ are compared in float64: equal bits are equal values (or
    the same NaN), with no error. Backends that round differently still agree on most elements,
    and the float64 temporaries of a chunk stay in cache."""
    size = got.dtype.itemsize
    if size in _UNSIGNED:
        differ = np.flatnonzero(got.view(_UNSIGNED[size]) != ref.view(_UNSIGNED[size]))
    else:
        differ = np.arange(got.size)
    metrics = {
        "max_abs_err": 0.0,
        "max_rel_err": 0.0,
        "max_ulp_err": 0,
        "nan_count": int(np.count_nonzero(np.isnan(got))),
        "inf_count": int(np.count_nonzero(np.isinf(got))),
    }
    if differ.size == 0:
        return differ, metrics
    g32, r32 = got[differ], ref[differ]
    g = g32.astype(np.float64)
    r = r32.astype(np.float64)
    g_nan, r_nan = np.isnan(g), np.isnan(r)
    finite = np.isfinite(g) & np.isfinite(r)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(finite, np.abs(g - r), 0.0)
        scale = np.abs(r)
        within = diff <= tolerance.atol + tolerance.rtol * scale
    same_special = (g_nan & r_nan) | ((g == r) & ~finite)  # equal infinities, or both NaN
    ulp = ulp_distance(g32, r32)
    max_ulp = tolerance.max_ulp
    ulp_ok = np.zeros(g32.shape, bool) if max_ulp is None else (ulp <= np.uint64(max_ulp)) & finite
    ok = (finite & within) | ulp_ok | same_special
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(finite & (scale > 0), diff / np.where(scale > 0, scale, 1.0), 0.0)
        rel = np.where(finite & (scale == 0) & (diff > 0), np.inf, rel)
    finite_ulp = ulp[finite]
    metrics["max_abs_err"] = float(diff.max())
    metrics["max_rel_err"] = float(rel.max())
    metrics["max_ulp_err"] = int(finite_ulp.max()) if finite_ulp.size else 0
    return differ[~ok], metrics


def _compare_ints(got, ref, tolerance: Tolerance, metrics: dict[str, Any]) -> np.ndarray:
    """The bad-element mask of one chunk of integers; fills `metrics`."""
    exact = got == ref
    # Differences of 64-bit integers overflow in their own type, so they are taken in float64;
    # elements that differ differ by at least 1 even where float64 rounds the difference away.
    g = got.astype(np.float64)
    r = ref.astype(np.float64)
    diff = np.maximum(np.abs(g - r), (~exact).astype(np.float64))
    within = diff <= tolerance.atol + tolerance.rtol * np.abs(r)
    ok = exact | within
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(r != 0, diff / np.abs(np.where(r != 0, r, 1.0)), np.where(diff > 0, np.inf, 0.0))
    metrics.update(
        max_abs_err=float(diff.max()) if diff.size else 0.0,
        max_rel_err=float(rel.max()) if rel.size else 0.0,
        max_ulp_err=0,
        nan_count=0,
        inf_count=0,
    )
    return ~ok


def weakness(ref: np.ndarray, atol: float) -> str:
    """Why comparing with `ref` proves little ("" when it does not): most reference elements are
    below `atol`, so a kernel that writes zeros passes, or the reference output is constant.
    Chunked in parallel like `compare`; `ReferencePolicy` computes it once per reference."""
    flat = np.ascontiguousarray(ref).reshape(-1)
    if flat.size == 0:
        return ""
    if flat.dtype.kind in "fiu" and atol > 0:

        def small_in(a: int, b: int) -> int:
            with np.errstate(invalid="ignore"):
                return int(np.count_nonzero(np.abs(flat[a:b].astype(np.float64)) < atol))

        small = sum(map_chunks(small_in, flat.size))
        if small > WEAK_FRACTION * flat.size:
            return f"{100.0 * small / flat.size:.0f}% of the reference's elements are below atol {atol:g}"
    if flat.size > 1:
        first = flat[:1]
        nan_first = flat.dtype.kind == "f" and bool(np.isnan(first[0]))

        def constant_in(a: int, b: int) -> bool:
            part = flat[a:b]
            return bool(np.all(np.isnan(part) if nan_first else part == first))

        if all(map_chunks(constant_in, flat.size)):
            return f"the reference output is constant ({json_number(first[0])})"
    return ""


def check_outputs(
    outputs: dict[str, np.ndarray],
    reference: dict[str, np.ndarray],
    rtol: float,
    atol: float,
    max_ulp: int | None = None,
    poisoned: tuple[str, ...] | list[str] = (),
    reference_name: str = "",
    weak: dict[str, str] | None = None,
) -> tuple[bool, dict[str, Any]]:
    """Compare every output buffer; (passed, the CheckRecord a RunResult carries).

    The record has the settings, the worst metrics over all buffers, the first bad element
    (of the first buffer that has one), the per-buffer details under "buffers", and `weak` when
    every buffer's comparison is weak (see `weakness`; `weak` gives it per buffer when the
    caller has it already, so a reference is judged once, not once per backend).
    """
    buffers: dict[str, Any] = {}
    for name, ref in reference.items():
        if name not in outputs:
            buffers[name] = {
                "passed": False,
                "bad": int(ref.size),
                "note": f"buffer {name!r} was not read back",
            }
            continue
        buffers[name] = compare(outputs[name], ref, rtol, atol, max_ulp, check_poison=name in poisoned)
        why = weak[name] if weak is not None and name in weak else weakness(ref, atol)
        if why:
            buffers[name]["weak"] = why
    passed = all(b["passed"] for b in buffers.values())
    summary = CheckRecord(
        role=COMPARED,
        reference=reference_name,
        rtol=rtol,
        atol=atol,
        max_ulp=max_ulp,
        passed=passed,
        max_abs_err=_worst(buffers, "max_abs_err"),
        max_rel_err=_worst(buffers, "max_rel_err"),
        max_ulp_err=_worst(buffers, "max_ulp_err"),
        bad=sum(int(b.get("bad", 0)) for b in buffers.values()),
        nan_count=sum(int(b.get("nan_count", 0)) for b in buffers.values()),
        inf_count=sum(int(b.get("inf_count", 0)) for b in buffers.values()),
        unwritten=sum(int(b.get("unwritten", 0)) for b in buffers.values()),
        buffers=buffers,
    )
    for name, b in buffers.items():
        if not b["passed"]:
            summary.first_bad_index = b.get("first_bad_index")
            summary.first_bad = dict(b.get("first_bad") or {}, buffer=name)
            break
    weak = [f"{name}: {b['weak']}" for name, b in buffers.items() if b.get("weak")]
    if passed and buffers and len(weak) == len(buffers):
        summary.weak = "; ".join(weak) if len(buffers) > 1 else weak[0].split(": ", 1)[1]
    return passed, summary


def _worst(buffers: dict[str, Any], key: str) -> Any:
    values = [b.get(key) for b in buffers.values() if b.get(key) is not None]
    if not values:
        return None
    if any(v == "nan" for v in values):
        return "nan"
    if any(v == "inf" for v in values):
        return "inf"
    return max(values)
