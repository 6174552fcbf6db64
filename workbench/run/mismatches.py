"""The elements behind a failed check, for the details view: first N mismatches and a window.

`verify.check_outputs` summarises a buffer (counts, worst errors, the first bad element); this
module lists the mismatching elements themselves from the arrays a `RunReport` keeps, with the
same pass rule (`verify.compare`): index, expected, got, abs / rel / ULP error, and whether the
element was never written (still holds the poison).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from workbench.run.inputs import POISON_BITS, poison_mask
from workbench.run.verify import ulp_distance


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
    g = got.astype(np.float64)
    r = ref.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        diff = np.abs(g - r)
        scale = np.abs(r)
        rel = np.where(scale > 0, diff / np.where(scale > 0, scale, 1.0), np.where(diff > 0, np.inf, 0.0))
        ok = diff <= atol + rtol * scale
    ulp = None
    if got.dtype.kind == "f":
        ulp = ulp_distance(got, ref)
        finite = np.isfinite(g) & np.isfinite(r)
        if max_ulp is not None:
            ok |= (ulp <= np.uint64(max_ulp)) & finite
        ok |= (np.isnan(g) & np.isnan(r)) | ((g == r) & ~finite)
    else:
        ok |= got == ref
    unwritten = np.zeros(got.shape, bool)
    if check_poison and (got.dtype.kind, got.dtype.itemsize) in POISON_BITS:
        unwritten = poison_mask(got)
    bad = ~ok | unwritten
    indices = np.flatnonzero(bad)
    out = BufferMismatches(name, int(got.size), int(indices.size), int(unwritten.sum()))
    for i in indices[:limit]:
        i = int(i)
        out.first.append(
            Mismatch(
                i,
                ref[i].item(),
                got[i].item(),
                float(diff[i]),
                float(rel[i]),
                int(ulp[i]) if ulp is not None and np.isfinite(g[i]) and np.isfinite(r[i]) else None,
                bool(unwritten[i]),
            )
        )
    if indices.size:
        first = int(indices[0])
        lo, hi = max(0, first - radius), min(got.size, first + radius + 1)
        out.window = (np.arange(lo, hi), r[lo:hi].copy(), g[lo:hi].copy())
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
                float(check.get("rtol") or 0.0),
                float(check.get("atol") or 0.0),
                check.get("max_ulp"),
                check_poison=name in poisoned,
                limit=limit,
            )
        )
    return out
