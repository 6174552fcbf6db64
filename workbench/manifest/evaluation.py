"""A kernel's arguments and launch evaluated at one set of sizes, and checked.

`KernelEvaluation` is the half of `records.Kernel` that evaluates expressions (lengths, scalars,
launch dimensions, metrics) at a set of symbols; it lives apart from the records so that the
records read as data and this module imports nothing from them (`Kernel` inherits from it). What
each element type holds (`TYPE_BYTES`, `INT_RANGES`, `FLOAT_MAX`) is here, where it is checked.
Every error is a `ManifestError` at the line of the key (`Where`), naming the argument.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from workbench import expr
from workbench.errors import ManifestError
from workbench.tomlpos import toml_value
from workbench.units import format_bytes

MANIFEST_NAME = "workbench.toml"

#: Bytes per element of each type, and the range of each integer type.
TYPE_BYTES = {"f32": 4, "f64": 8, "i32": 4, "u32": 4, "i64": 8, "u64": 8}
INT_RANGES = {
    "i32": (-(2**31), 2**31 - 1),
    "u32": (0, 2**32 - 1),
    "i64": (-(2**63), 2**63 - 1),
    "u64": (0, 2**64 - 1),
}
FLOAT_MAX = {"f32": 3.4028234663852886e38, "f64": 1.7976931348623157e308}


@dataclass(frozen=True)
class Where:
    """Where a kernel's keys are in workbench.toml, for errors found after loading (at run sizes)."""

    path: str = MANIFEST_NAME
    #: ("arg", name, "length"), ("launch", "grid"), ("metrics", "bytes") ... -> (line, key)
    keys: dict[tuple[str, ...], tuple[int | None, str]] = field(default_factory=dict)

    def error(self, what: tuple[str, ...], message: str) -> ManifestError:
        line, key = self.keys.get(what, (None, None))
        return ManifestError(self.path, line, key, message)


@dataclass(frozen=True)
class Values:
    """A kernel's arguments and launch evaluated at one set of sizes (`Kernel.evaluate`)."""

    lengths: dict[str, int]
    scalars: dict[str, int | float]
    threads: tuple[int, int, int]
    grid: tuple[int, int, int]
    metrics: dict[str, float]
    buffer_bytes: int
    #: `[kernel.launch.<backend>]`: (threads, grid) of each backend with a launch table of its own.
    backend_launch: dict[str, tuple[tuple[int, int, int], tuple[int, int, int]]] = field(default_factory=dict)

    def geometry(self, backend: str | None = None) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """(threads per block, blocks) as 3-tuples; `backend`'s own launch table where it has one."""
        return self.backend_launch.get(backend or "", (self.threads, self.grid))


class KernelEvaluation:
    """The evaluating methods of `records.Kernel`, which reads its fields `buffers`, `scalars`,
    `launch`, `metrics`, `sizes`, `tunables` and `where`."""

    def lengths(self, symbols: dict[str, int | float]) -> dict[str, int]:
        return {b.name: expr.evaluate_int(b.length, symbols) for b in self.buffers}

    def scalar_values(self, symbols: dict[str, int | float]) -> dict[str, int | float]:
        """Every scalar's value at `symbols`; a value its type cannot hold is a ValueError (the
        same on every backend: nothing is wrapped or rounded to infinity)."""
        out: dict[str, int | float] = {}
        for s in self.scalars:
            out[s.name] = fit_scalar(s, expr.evaluate(s.value, symbols))
        return out

    def evaluate(self, symbols: dict[str, int | float], memory_bytes: int | None = None) -> Values:
        """Every length, scalar, launch dimension and metric at `symbols`, checked: lengths are
        whole and not negative, buffers the kernel writes are not empty, scalars fit their type,
        launch dimensions are at least 1, and the buffers fit in `memory_bytes` (when given).
        Errors are `ManifestError`s at the line of the key, naming the argument."""
        at = _sizes_text(self, symbols)
        lengths: dict[str, int] = {}
        total = 0
        for b in self.buffers:
            what = ("arg", b.name, "length")
            try:
                length = expr.evaluate_int(b.length, symbols)
            except expr.ExprError as exc:
                raise self.where.error(what, f"buffer {b.name!r}: length: {exc}{at}") from None
            if length < 0:
                raise self.where.error(
                    what, f"buffer {b.name!r}: length {toml_value(b.length)} is {length}{at}; "
                    "a length must not be negative"
                )  # fmt: skip
            if length == 0 and b.is_output:
                raise self.where.error(
                    what, f"buffer {b.name!r}: length {toml_value(b.length)} is 0{at}, but the kernel "
                    f"writes it (direction {b.direction}): nothing would be checked"
                )  # fmt: skip
            size = length * TYPE_BYTES[b.type]
            if memory_bytes is not None and size > memory_bytes:
                raise self.where.error(
                    what, f"buffer {b.name!r}: length {toml_value(b.length)} is {length}{at}: "
                    f"{format_bytes(size)}, more than the {format_bytes(memory_bytes)} of memory here"
                )  # fmt: skip
            if b.init.kind == "constant" and b.type in INT_RANGES:
                low, high = INT_RANGES[b.type]
                value = b.init.value
                whole = isinstance(value, int) or (math.isfinite(value) and float(value).is_integer())
                if not whole or not low <= value <= high:
                    raise self.where.error(
                        ("arg", b.name, "init"),
                        f"buffer {b.name!r}: constant {toml_value(value)} is not a {b.type} value",
                    )
            lengths[b.name] = length
            total += size
        if memory_bytes is not None and total > memory_bytes and self.buffers:
            largest = max(self.buffers, key=lambda b: lengths[b.name] * TYPE_BYTES[b.type])
            raise self.where.error(
                ("arg", largest.name, "length"),
                f"the buffers need {format_bytes(total)} together{at}, more than the "
                f"{format_bytes(memory_bytes)} of memory here (the largest is {largest.name!r})",
            )
        scalars: dict[str, int | float] = {}
        for s in self.scalars:
            what = ("arg", s.name, "value")
            try:
                scalars[s.name] = fit_scalar(s, expr.evaluate(s.value, symbols))
            except ValueError as exc:  # ExprError included
                raise self.where.error(what, f"scalar {s.name!r}: {exc}{at}") from None
        dims: dict[str, tuple[int, int, int]] = {}
        launches = [("", self.launch), *self.launch.backends.items()]  # and each backend's own
        for backend, launch in launches:
            for key, texts in (("threads", launch.threads), ("grid", launch.grid)):
                what = ("launch", backend, key) if backend else ("launch", key)
                name = f"launch.{backend}" if backend else "launch"
                values = []
                for text in texts:
                    try:
                        value = expr.evaluate_int(text, symbols)
                    except expr.ExprError as exc:
                        raise self.where.error(what, f"{name} {key}: {exc}{at}") from None
                    if value < 1:
                        raise self.where.error(
                            what, f"{name} {key}: {toml_value(text)} is {value}{at}; it must be at least 1"
                        )
                    values.append(value)
                dims[f"{backend}.{key}"] = tuple(values + [1] * (3 - len(values)))  # type: ignore[assignment]
        metrics: dict[str, float] = {}
        for name, text in self.metrics.items():
            try:
                metrics[name] = float(expr.evaluate(text, symbols))
            except expr.ExprError as exc:
                raise self.where.error(("metrics", name), f"metric {name}: {exc}{at}") from None
        own = {b: (dims[f"{b}.threads"], dims[f"{b}.grid"]) for b in self.launch.backends}
        return Values(lengths, scalars, dims[".threads"], dims[".grid"], metrics, total, own)

    def geometry(
        self, symbols: dict[str, int | float], backend: str | None = None
    ) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(threads per block, blocks) as 3-tuples; `backend`'s own launch table where it has one."""
        launch = self.launch.backends.get(backend or "", self.launch)
        threads = [expr.evaluate_int(t, symbols) for t in launch.threads]
        grid = [expr.evaluate_int(g, symbols) for g in launch.grid]
        pad = lambda xs: tuple(xs + [1] * (3 - len(xs)))  # noqa: E731
        return pad(threads), pad(grid)

    def metric(self, name: str, symbols: dict[str, int | float]) -> float | None:
        if name not in self.metrics:
            return None
        return float(expr.evaluate(self.metrics[name], symbols))


def fit_scalar(arg, value: int | float) -> int | float:
    """`value` as `arg`'s type holds it (`arg`: a `ScalarArg`, its `type` and its `value` text for
    the message); ValueError when it does not fit (out of range, not a whole number for an
    integer type, beyond the float type's largest finite value)."""
    if arg.type in INT_RANGES:
        if isinstance(value, float):
            if not value.is_integer():
                raise ValueError(
                    f"{toml_value(arg.value)} gives {value}, not a whole number for a {arg.type}"
                )
            value = int(value)
        low, high = INT_RANGES[arg.type]
        if not low <= value <= high:
            raise ValueError(
                f"{toml_value(arg.value)} gives {value}, which does not fit a {arg.type} ({low} to {high})"
            )
        return int(value)
    value = float(value)
    if not math.isfinite(value) or abs(value) > FLOAT_MAX[arg.type]:
        raise ValueError(f"{toml_value(arg.value)} gives {value}, which does not fit a finite {arg.type}")
    return value


def _sizes_text(kernel: KernelEvaluation, symbols: dict[str, int | float]) -> str:
    shown = [f"{name}={symbols[name]}" for name in (*kernel.sizes, *kernel.tunables) if name in symbols]
    return f" at {', '.join(shown)}" if shown else ""
