"""The elements behind a failed check, for the details view: first N mismatches and a window.

`verify.check_outputs` summarises a buffer (counts, worst errors, the first bad element); this
module lists the mismatching elements themselves from the arrays a `RunReport` keeps, picked by
the check's own rule (`verify.bad_elements`): index, expected, got, abs / rel / ULP error, and
whether the element was never written (still holds the poison).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from workbench.run.inputs import POISON_BITS, poison_mask
from workbench.run.verify import Tolerance, bad_elements, ulp_distance


@dataclass
class Mismatch:
    index: int
    expected: float | int
    got: float | int
    abs_err: float
    rel_err: float
    ulp_err: int | None
    unwritten: bool


@dataclass
class BufferMismatches:
    """One buffer's mismatches: the first `limit` of `bad`, plus values around the first one."""

    name: str
    size: int
    bad: int
    unwritten: int
    first: list[Mismatch] = field(default_factory=list)
    window: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # index, expected, got
    note: str = ""


def buffer_mismatches(
    name: str,
    got: np.ndarray,
    ref: np.ndarray,
    rtol: float,
    atol: float,
    max_ulp: int | None = None,
    check_poison: bool = False,
    limit: int = 50,
    radius: int = 32,
) -> BufferMismatches:
    """Mismatches of one buffer under the check's tolerances (see `verify.compare`)."""
    got = np.ascontiguousarray(got).reshape(-1)
    ref = np.ascontiguousarray(ref).reshape(-1)
    if got.shape != ref.shape or got.dtype != ref.dtype:
        note = f"shape/dtype differ: got {got.size} × {got.dtype}, reference {ref.size} × {ref.dtype}"
        return BufferMismatches(name, int(got.size), int(max(got.size, ref.size)), 0, note=note)
    unwritten = np.zeros(got.shape, bool)
    if check_poison and (got.dtype.kind, got.dtype.itemsize) in POISON_BITS:
        unwritten = poison_mask(got)
    indices = np.flatnonzero(bad_elements(got, ref, Tolerance(rtol, atol, max_ulp), check_poison))
    out = BufferMismatches(name, int(got.size), int(indices.size), int(unwritten.sum()))
    listed = indices[:limit]
    g, r = got[listed].astype(np.float64), ref[listed].astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        diff = np.abs(g - r)
        scale = np.abs(r)
        rel = np.where(scale > 0, diff / np.where(scale > 0, scale, 1.0), np.where(diff > 0, np.inf, 0.0))
    finite = np.isfinite(g) & np.isfinite(r)
    ulp = ulp_distance(got[listed], ref[listed]) if got.dtype.kind == "f" else None
    for k, i in enumerate(listed.tolist()):
        out.first.append(
            Mismatch(
                i,
                ref[i].item(),
                got[i].item(),
                float(diff[k]),
                float(rel[k]),
                int(ulp[k]) if ulp is not None and finite[k] else None,
                bool(unwritten[i]),
            )
        )
    if indices.size:
        first = int(indices[0])
        lo, hi = max(0, first - radius), min(got.size, first + radius + 1)
        out.window = (np.arange(lo, hi), ref[lo:hi].astype(np.float64), got[lo:hi].astype(np.float64))
    return out


def result_mismatches(report: Any, result: Any, limit: int = 50) -> list[BufferMismatches]:
    """Every checked buffer of `result` against the report's reference outputs (empty when the
    report kept no arrays for either side)."""
    check = result.check or {}
    reference = check.get("reference") or getattr(report, "reference", "")
    outputs = getattr(report, "outputs", {}) or {}
    spec = str((result.device or {}).get("spec", ""))
    got = outputs.get(f"{result.backend}@{spec}") or outputs.get(result.backend)
    ref = outputs.get(reference)
    if got is None or ref is None:
        return []
    poisoned = {n for n, b in (check.get("buffers") or {}).items() if b.get("unwritten") is not None}
    tolerance = Tolerance.of(check)
    out = []
    for name in check.get("buffers") or ref:
        if name not in ref or name not in got:
            out.append(BufferMismatches(name, 0, 0, 0, note=f"buffer {name!r} was not read back"))
            continue
        out.append(
            buffer_mismatches(
                name,
                got[name],
                ref[name],
                tolerance.rtol,
                tolerance.atol,
                tolerance.max_ulp,
                check_poison=name in poisoned,
                limit=limit,
            )
        )
    return out
