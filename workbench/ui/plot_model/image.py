"""2-D output buffers as images (Qt-free): which buffers are 2-D, their values and errors as
row-major matrices, and the hover text of one element.

A buffer is 2-D when its manifest `length` is a product of two factors that each name a size or
tunable: `length = "m * n"` is m rows of n columns (row-major, as the kernels index `c[row * n +
col]`). Anything else (`n`, `4 * n`, `m * n * k`) stays 1-D: a guessed shape would draw a wrong
picture. The factors are evaluated at the run's sizes with the manifest's own evaluator.
"""

from __future__ import annotations

import ast
import math
from typing import Any

import numpy as np

from workbench import expr


def factors(length: str) -> tuple[str, str] | None:
    """The two factors of a `length` expression "A * B" when each names a symbol, else None."""
    try:
        node = expr.parse(length)
    except expr.ExprError:
        return None
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult)):
        return None
    left, right = ast.unparse(node.left), ast.unparse(node.right)
    if isinstance(node.left, ast.BinOp) and isinstance(node.left.op, ast.Mult):
        return None  # three factors or more: no one shape
    if not expr.names(left) or not expr.names(right):
        return None  # "4 * n": a constant factor is not a dimension
    return left, right


def buffer_shape(kernel: Any, arg: str, symbols: dict[str, Any], size: int) -> tuple[int, int] | None:
    """(rows, cols) of `kernel`'s buffer `arg` at `symbols` when it is 2-D and holds `size` elements."""
    buffer = next((a for a in getattr(kernel, "args", ()) if a.name == arg and a.kind == "buffer"), None)
    pair = factors(str(buffer.length)) if buffer is not None else None
    if pair is None:
        return None
    try:
        rows, cols = (expr.evaluate_int(f, symbols) for f in pair)
    except (expr.ExprError, KeyError, TypeError, ValueError):
        return None
    if rows < 2 or cols < 2 or rows * cols != size:
        return None
    return rows, cols


def run_symbols(report: Any) -> dict[str, Any]:
    """The sizes (and tunables) a report's buffers were sized with."""
    tunables: dict[str, Any] = {}
    for result in getattr(report, "results", None) or ():
        tunables = dict((result.provenance or {}).get("tunables") or {})
        if tunables:
            break
    return {**tunables, **dict(getattr(report, "sizes", None) or {})}


def as_image(values: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """The buffer as a (rows, cols) float64 matrix (a view where the dtype allows)."""
    return np.asarray(values).reshape(shape).astype(np.float64, copy=False)


def finite_range(image: np.ndarray) -> tuple[float, float]:
    """(lo, hi) of the finite values; a constant image gets a unit-wide range around its value."""
    finite = image[np.isfinite(image)]
    if not finite.size:
        return 0.0, 1.0
    lo, hi = float(finite.min()), float(finite.max())
    if hi <= lo:
        pad = max(abs(lo) * 0.01, 1e-12) if lo else 1.0
        return lo - pad, hi + pad
    return lo, hi


def element_at(x: float, y: float, shape: tuple[int, int]) -> tuple[int, int] | None:
    """The (row, col) under the plotted point (x = column, y = row; pixel k spans [k, k + 1))."""
    row, col = math.floor(y), math.floor(x)
    if 0 <= row < shape[0] and 0 <= col < shape[1]:
        return row, col
    return None


def hover_text(arg: str, image: np.ndarray, row: int, col: int, what: str = "") -> str:
    """ "c[3, 17] = 0.25" (what: "" for the value, "|error|" or "error (ULP)")."""
    value = float(image[row, col])
    index = f"{arg}[{row}, {col}]"
    shown = f"{value:.6g}" if math.isfinite(value) else str(value)
    return f"{what} at {index} = {shown}" if what else f"{index} = {shown}"
