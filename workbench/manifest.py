"""The kernel project manifest (`workbench.toml`): typed records and a validating loader.

The format is documented in docs/manifest.md. Every error raised here is a `ManifestError`
naming the file, the line and the key, and saying what would be valid.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench import expr
from workbench.backends import BACKENDS, REFERENCE_BACKENDS
from workbench.errors import ManifestError
from workbench.tomlpos import KeyLines, open_construct_line, toml_error_line, toml_type, toml_value

MANIFEST_NAME = "workbench.toml"
SCALAR_TYPES = ("f32", "f64", "i32", "u32", "i64", "u64")
ELEMENT_TYPES = SCALAR_TYPES
DIRECTIONS = ("in", "out", "inout")
INIT_KINDS = ("random", "linspace", "constant", "zeros", "npy")
WGPU_SCALAR_MODES = ("uniform", "push", "override")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

#: Bytes per element of each type, and the range of each integer type.
TYPE_BYTES = {"f32": 4, "f64": 8, "i32": 4, "u32": 4, "i64": 8, "u64": 8}
INT_RANGES = {
    "i32": (-(2**31), 2**31 - 1),
    "u32": (0, 2**32 - 1),
    "i64": (-(2**63), 2**63 - 1),
    "u64": (0, 2**64 - 1),
}
FLOAT_MAX = {"f32": 3.4028234663852886e38, "f64": 1.7976931348623157e308}


def host_memory_bytes() -> int | None:
    """This machine's physical memory, or None where the OS does not say."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


def format_bytes(count: float) -> str:
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count >= scale:
            return f"{count / scale:.3g} {unit}"
    return f"{int(count)} B"


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


@dataclass(frozen=True)
class Init:
    """How a buffer is filled before each launch."""

    kind: str  # one of INIT_KINDS
    low: float = -1.0  # random
    high: float = 1.0  # random
    seed: int | None = None  # random; None -> the run's recorded seed
    start: float = 0.0  # linspace
    stop: float = 1.0  # linspace
    value: float = 0.0  # constant
    path: str | None = None  # npy, relative to the project root


@dataclass(frozen=True)
class BufferArg:
    name: str
    type: str  # element type, one of ELEMENT_TYPES
    length: str  # expression
    direction: str  # in | out | inout
    init: Init
    binding: int | None = None  # wgpu binding in group 0
    kind: str = "buffer"

    @property
    def is_output(self) -> bool:
        return self.direction in ("out", "inout")


@dataclass(frozen=True)
class ScalarArg:
    name: str
    type: str  # one of SCALAR_TYPES
    value: str  # expression
    kind: str = "scalar"


Arg = BufferArg | ScalarArg


@dataclass(frozen=True)
class Launch:
    threads: tuple[str, ...]  # expressions, 1 to 3
    grid: tuple[str, ...]  # expressions, 1 to 3
    #: `[kernel.launch.<backend>]`: a backend's own geometry, where one grid cannot fit them all.
    backends: dict[str, Launch] = field(default_factory=dict)


@dataclass(frozen=True)
class Check:
    reference: str = "cpu"
    rtol: float = 1e-5
    atol: float = 1e-6
    max_ulp: int | None = None


@dataclass(frozen=True)
class WgpuScalars:
    mode: str = "uniform"  # one of WGPU_SCALAR_MODES
    params_binding: int | None = None
    override_ids: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Kernel:
    name: str
    args: tuple[Arg, ...]
    launch: Launch
    description: str = ""
    entry: dict[str, str] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)
    metrics: dict[str, str] = field(default_factory=dict)  # "bytes", "flops"
    check: Check = field(default_factory=Check)
    tunables: dict[str, tuple[int | float, ...]] = field(default_factory=dict)
    #: `[kernel.tunables] constraints`: conditions every configuration meets (`expr.condition`).
    constraints: tuple[str, ...] = ()
    reference: dict[str, str] = field(default_factory=dict)  # backend -> path
    wgpu: WgpuScalars = field(default_factory=WgpuScalars)
    #: `[kernel.timing] fresh_inputs`: restore inout buffers before every timed sample, for kernels
    #: whose work depends on the data they rewrite (off by default: the upload leaves GPU caches
    #: cold and dirty, which slows memory-bound kernels measurably).
    fresh_inputs: bool = False
    where: Where = field(default_factory=Where, compare=False, repr=False)

    def entry_for(self, backend: str) -> str:
        """The entry-point name a backend calls (defaults to the kernel name)."""
        return self.entry.get(backend, self.name)

    def entry_origin(self, backend: str) -> str:
        """Why `entry_for(backend)` is that name, for a symbol error."""
        if backend in self.entry:
            return f"from [kernel.entry] {backend}"
        return f"the kernel's name, as workbench.toml sets no [kernel.entry] {backend}"

    @property
    def buffers(self) -> tuple[BufferArg, ...]:
        return tuple(a for a in self.args if isinstance(a, BufferArg))

    @property
    def scalars(self) -> tuple[ScalarArg, ...]:
        return tuple(a for a in self.args if isinstance(a, ScalarArg))

    def default_tunables(self) -> dict[str, int | float]:
        return {name: values[0] for name, values in self.tunables.items()}

    def symbols(
        self,
        sizes: dict[str, int] | None = None,
        tunables: dict[str, int | float] | None = None,
    ) -> dict[str, int | float]:
        """Sizes (defaults overridden by `sizes`) and tunables, for evaluating expressions."""
        unknown = set(sizes or {}) - set(self.sizes)
        if unknown:
            raise ValueError(
                f"kernel {self.name!r} has no size {', '.join(sorted(unknown))}; "
                f"its sizes: {', '.join(self.sizes) or 'none'}"
            )
        values: dict[str, int | float] = dict(self.sizes)
        values.update(sizes or {})
        values.update(self.default_tunables())
        values.update(tunables or {})
        return values

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
                if not backend:
                    dims[key] = tuple(values + [1] * (3 - len(values)))  # type: ignore[assignment]
        metrics: dict[str, float] = {}
        for name, text in self.metrics.items():
            try:
                metrics[name] = float(expr.evaluate(text, symbols))
            except expr.ExprError as exc:
                raise self.where.error(("metrics", name), f"metric {name}: {exc}{at}") from None
        return Values(lengths, scalars, dims["threads"], dims["grid"], metrics, total)

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


def fit_scalar(arg: ScalarArg, value: int | float) -> int | float:
    """`value` as `arg`'s type holds it; ValueError when it does not fit (out of range, not a
    whole number for an integer type, beyond the float type's largest finite value)."""
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


def _exists(path: Path) -> bool:
    """Whether `path` is a file; a name the OS cannot even look up is not one."""
    try:
        return path.is_file()
    except (OSError, ValueError):  # a name too long, or with a NUL byte
        return False


def _sizes_text(kernel: Kernel, symbols: dict[str, int | float]) -> str:
    shown = [f"{name}={symbols[name]}" for name in (*kernel.sizes, *kernel.tunables) if name in symbols]
    return f" at {', '.join(shown)}" if shown else ""


@dataclass(frozen=True)
class Manifest:
    path: Path  # the workbench.toml file
    name: str
    crate: str  # folder of the Cargo crate, relative to the manifest
    kernels: tuple[Kernel, ...]
    backends: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def root(self) -> Path:
        return self.path.parent

    @property
    def crate_dir(self) -> Path:
        return (self.root / self.crate).resolve()

    def kernel(self, name: str | None = None) -> Kernel:
        """A kernel by name; the first one when `name` is None."""
        if name is None:
            return self.kernels[0]
        for k in self.kernels:
            if k.name == name:
                return k
        names = ", ".join(k.name for k in self.kernels)
        raise ManifestError(self.path, None, "kernel", f"no kernel named {name!r}; kernels: {names}")

    def backend_settings(self, backend: str) -> dict[str, Any]:
        return self.backends.get(backend, {})


# --------------------------------------------------------------------------- loading


class _Reader:
    """Validates one parsed manifest, raising errors located by `KeyLines`."""

    def __init__(self, path: Path, text: str):
        self.path = path
        self.lines = KeyLines(text)

    def locate(self, at: tuple) -> tuple[int | None, str]:
        """(line, key as the message names it) of a key path."""
        key = ".".join(str(p) if not isinstance(p, int) else f"[{p}]" for p in at).replace(".[", "[")
        return self.lines.line(at), key

    def fail(self, at: tuple, message: str) -> ManifestError:
        line, key = self.locate(at)
        return ManifestError(self.path, line, key or None, message)

    def table(self, data: dict, at: tuple, key: str, required: bool = False) -> dict:
        value = data.get(key)
        if value is None:
            if required:
                raise self.fail(at, f"missing table [{'.'.join(map(str, (*at, key)))}]")
            return {}
        if not isinstance(value, dict):
            raise self.fail((*at, key), f"expected a table, got {toml_type(value)} {toml_value(value)}")
        return value

    def string(self, data: dict, at: tuple, key: str, default: str | None = None) -> str:
        value = data.get(key, default)
        if value is None:
            raise self.fail((*at, key) if at else (key,), f"missing key {key!r} (a string)")
        if not isinstance(value, str):
            raise self.fail((*at, key), f"expected a string, got {toml_value(value)}")
        return value

    def number(
        self, data: dict, at: tuple, key: str, default: float | None = None, finite: bool = True
    ) -> float:
        value = data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail((*at, key), f"expected a number, got {toml_value(value)}")
        if finite and not math.isfinite(value):
            raise self.fail((*at, key), f"expected a finite number, got {toml_value(value)}")
        return value

    def natural(self, value: Any, at: tuple) -> int:
        """`value` when it is a non-negative integer (a boolean is not), else a located error."""
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self.fail(at, f"expected a non-negative integer, got {toml_value(value)}")
        return value

    def expression(self, value: Any, at: tuple, symbols: set[str]) -> str:
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise self.fail(at, f"expected a number or an expression string, got {toml_value(value)}")
        if isinstance(value, float) and not math.isfinite(value):
            raise self.fail(at, f"expected a finite number, got {toml_value(value)}")
        try:
            used = expr.names(value)
        except expr.ExprError as exc:
            raise self.fail(at, str(exc)) from None
        unknown = used - symbols
        if unknown:
            known = ", ".join(sorted(symbols)) or "none"
            raise self.fail(
                at, f"unknown name {sorted(unknown)[0]!r} in {toml_value(value)}; known names: {known}"
            )
        return str(value)

    def check_keys(self, data: dict, at: tuple, allowed: tuple[str, ...]) -> None:
        for key in data:
            if key not in allowed:
                raise self.fail((*at, key), f"unknown key {key!r}; valid keys: {', '.join(allowed)}")

    def check_backend_keys(self, data: dict, at: tuple, allowed=tuple(BACKENDS)) -> None:
        for key in data:
            if key not in allowed:
                raise self.fail(
                    (*at, key), f"unknown backend {toml_value(key)}; valid backends: {', '.join(allowed)}"
                )

    # ----------------------------------------------------------------------- sections

    def manifest(self, data: dict) -> Manifest:
        self.check_keys(data, (), ("project", "kernel", "backends"))
        project = self.table(data, (), "project", required=True)
        self.check_keys(project, ("project",), ("name", "crate", "description"))
        name = self.string(project, ("project",), "name")
        crate = self.string(project, ("project",), "crate", ".")
        if "\0" in crate or len(crate) > 1024:
            raise self.fail(("project", "crate"), f"{toml_value(crate)} is not a folder name")
        kernels_data = data.get("kernel")
        if not isinstance(kernels_data, list) or not kernels_data:
            raise self.fail(("kernel",), "missing [[kernel]]: a project declares at least one kernel")
        kernels = tuple(self.kernel(k, ("kernel", i)) for i, k in enumerate(kernels_data))
        seen: set[str] = set()
        for i, k in enumerate(kernels):
            if k.name in seen:
                raise self.fail(("kernel", i, "name"), f"kernel name {k.name!r} is used twice")
            seen.add(k.name)
        backends = self.table(data, (), "backends")
        self.check_backend_keys(backends, ("backends",))
        for backend, settings in backends.items():
            if not isinstance(settings, dict):
                raise self.fail(("backends", backend), "expected a table of settings")
        return Manifest(self.path, name, crate, kernels, backends)

    def kernel(self, data: Any, at: tuple) -> Kernel:
        if not isinstance(data, dict):
            raise self.fail(at, f"expected a [[kernel]] table, got {toml_type(data)} {toml_value(data)}")
        allowed = ("name", "description", "entry", "sizes", "arg", "launch", "metrics", "check",
                   "tunables", "reference", "wgpu", "timing")  # fmt: skip
        self.check_keys(data, at, allowed)
        name = self.string(data, at, "name")
        if not _IDENT.match(name):
            raise self.fail((*at, "name"), f"{toml_value(name)} is not an identifier (letters, digits, _)")
        description = self.string(data, at, "description", "")

        entry = self.table(data, at, "entry")
        self.check_backend_keys(entry, (*at, "entry"))
        for backend in entry:
            self.string(entry, (*at, "entry"), backend)

        sizes = self.table(data, at, "sizes")
        for size, value in sizes.items():
            self.natural(value, (*at, "sizes", size))
            if not _IDENT.match(size):
                raise self.fail(
                    (*at, "sizes", size), f"{toml_value(size)} is not an identifier (letters, digits, _)"
                )

        tunables_data = self.table(data, at, "tunables")
        tunables: dict[str, tuple[int | float, ...]] = {}
        constraints_data = tunables_data.get("constraints", [])
        for tname, values in tunables_data.items():
            if tname == "constraints":
                continue
            ok = (
                isinstance(values, list)
                and values
                and all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
                and all(math.isfinite(v) for v in values)
            )
            if not ok:
                raise self.fail(
                    (*at, "tunables", tname),
                    f"expected a non-empty array of finite numbers, got {toml_value(values)}",
                )
            if not _IDENT.match(tname):
                raise self.fail(
                    (*at, "tunables", tname), f"{toml_value(tname)} is not an identifier (letters, digits, _)"
                )
            if tname in sizes:
                raise self.fail((*at, "tunables", tname), f"{toml_value(tname)} is also a size symbol")
            tunables[tname] = tuple(values)
        symbols = set(sizes) | set(tunables)
        constraints = self.constraints(constraints_data, (*at, "tunables", "constraints"), tunables, symbols)

        args_data = data.get("arg")
        if not isinstance(args_data, list) or not args_data:
            raise self.fail((*at, "arg"), "missing [[kernel.arg]]: a kernel takes at least one argument")
        args = tuple(self.arg(a, (*at, "arg", i), symbols) for i, a in enumerate(args_data))
        names: set[str] = set()
        for i, a in enumerate(args):
            if a.name in names:
                raise self.fail((*at, "arg", i, "name"), f"argument name {a.name!r} is used twice")
            names.add(a.name)
        if not any(isinstance(a, BufferArg) and a.is_output for a in args):
            raise self.fail((*at, "arg"), "no output: at least one buffer needs direction out or inout")

        launch = self.launch(self.table(data, at, "launch", required=True), (*at, "launch"), symbols)

        metrics = self.table(data, at, "metrics")
        self.check_keys(metrics, (*at, "metrics"), ("bytes", "flops"))
        metrics = {k: self.expression(v, (*at, "metrics", k), symbols) for k, v in metrics.items()}

        check = self.check(self.table(data, at, "check"), (*at, "check"))

        reference = self.table(data, at, "reference")
        self.check_backend_keys(reference, (*at, "reference"), REFERENCE_BACKENDS)
        for backend in reference:
            rel = self.string(reference, (*at, "reference"), backend)
            if not _exists(self.path.parent / rel):
                raise self.fail((*at, "reference", backend), f"file {rel!r} does not exist")

        wgpu = self.wgpu(self.table(data, at, "wgpu"), (*at, "wgpu"), args)
        timing = self.table(data, at, "timing")
        self.check_keys(timing, (*at, "timing"), ("fresh_inputs",))
        fresh_inputs = timing.get("fresh_inputs", False)
        if not isinstance(fresh_inputs, bool):
            raise self.fail(
                (*at, "timing", "fresh_inputs"), f"expected true or false, got {toml_value(fresh_inputs)}"
            )
        bindings: dict[int, str] = {}
        for i, a in enumerate(args):
            if isinstance(a, BufferArg) and a.binding is not None:
                if a.binding in bindings or a.binding == wgpu.params_binding:
                    raise self.fail((*at, "arg", i, "binding"), f"binding {a.binding} is used twice")
                bindings[a.binding] = a.name
        keys: dict[tuple[str, ...], tuple[int | None, str]] = {}
        for i, a in enumerate(args):
            for key in ("length", "value", "init", "binding"):
                keys[("arg", a.name, key)] = self.locate((*at, "arg", i, key))
        for key in ("threads", "grid"):
            keys[("launch", key)] = self.locate((*at, "launch", key))
            for backend in launch.backends:
                keys[("launch", backend, key)] = self.locate((*at, "launch", backend, key))
        for key in metrics:
            keys[("metrics", key)] = self.locate((*at, "metrics", key))
        return Kernel(
            name=name, args=args, launch=launch, description=description, entry=dict(entry),
            sizes=dict(sizes), metrics=metrics, check=check, tunables=tunables,
            constraints=constraints, reference=dict(reference), wgpu=wgpu, fresh_inputs=fresh_inputs,
            where=Where(str(self.path), keys),
        )  # fmt: skip

    def arg(self, data: Any, at: tuple, symbols: set[str]) -> Arg:
        if not isinstance(data, dict):
            raise self.fail(at, "expected a table")
        name = self.string(data, at, "name")
        if not _IDENT.match(name):
            raise self.fail((*at, "name"), f"{toml_value(name)} is not an identifier (letters, digits, _)")
        kind = self.string(data, at, "kind")
        if kind == "scalar":
            self.check_keys(data, at, ("name", "kind", "type", "value"))
            type_ = self.string(data, at, "type")
            if type_ not in SCALAR_TYPES:
                raise self.fail(
                    (*at, "type"), f"unknown type {toml_value(type_)}; valid: {', '.join(SCALAR_TYPES)}"
                )
            if "value" not in data:
                raise self.fail(at, f"scalar {name!r} is missing key 'value' (an expression)")
            value = self.expression(data["value"], (*at, "value"), symbols)
            return ScalarArg(name=name, type=type_, value=value)
        if kind == "buffer":
            self.check_keys(data, at, ("name", "kind", "type", "length", "direction", "binding", "init"))
            type_ = self.string(data, at, "type")
            if type_ not in ELEMENT_TYPES:
                raise self.fail(
                    (*at, "type"), f"unknown type {toml_value(type_)}; valid: {', '.join(ELEMENT_TYPES)}"
                )
            if "length" not in data:
                raise self.fail(at, f"buffer {name!r} is missing key 'length' (an expression)")
            length = self.expression(data["length"], (*at, "length"), symbols)
            direction = self.string(data, at, "direction", "in")
            if direction not in DIRECTIONS:
                raise self.fail(
                    (*at, "direction"), f"unknown direction {toml_value(direction)}; valid: in, out, inout"
                )
            binding = data.get("binding")
            if binding is not None:
                self.natural(binding, (*at, "binding"))
            init = self.init(data.get("init"), (*at, "init"), direction)
            return BufferArg(
                name=name, type=type_, length=length, direction=direction, init=init, binding=binding
            )
        raise self.fail((*at, "kind"), f"unknown kind {toml_value(kind)}; valid: buffer, scalar")

    def init(self, data: Any, at: tuple, direction: str) -> Init:
        if data is None:
            return Init("zeros")
        if isinstance(data, str):
            data = {"kind": data}
        if not isinstance(data, dict):
            raise self.fail(at, f'expected a table such as {{ kind = "random" }}, got {toml_value(data)}')
        kind = self.string(data, at, "kind")
        fields = {"random": ("low", "high", "seed"), "linspace": ("start", "stop"), "constant": ("value",),
                  "zeros": (), "npy": ("path",)}  # fmt: skip
        if kind not in fields:
            raise self.fail(
                (*at, "kind"), f"unknown initializer {toml_value(kind)}; valid: {', '.join(INIT_KINDS)}"
            )
        self.check_keys(data, at, ("kind", *fields[kind]))
        values: dict[str, Any] = {}
        for key in fields[kind]:
            if key == "path":
                rel = self.string(data, at, "path")
                if not _exists(self.path.parent / rel):
                    raise self.fail((*at, "path"), f"file {rel!r} does not exist")
                values["path"] = rel
            elif key == "seed":
                if "seed" in data:
                    seed = data["seed"]
                    if isinstance(seed, bool) or not isinstance(seed, int):
                        raise self.fail((*at, "seed"), f"expected an integer, got {toml_value(seed)}")
                    values["seed"] = seed
            elif key in data:
                # A range (random low/high, linspace start/stop) must be finite; a constant
                # may be NaN or infinite (for a float buffer: `Kernel.evaluate` checks the type).
                values[key] = self.number(data, at, key, finite=key != "value")
        if kind == "random" and values.get("low", -1.0) > values.get("high", 1.0):
            raise self.fail((*at, "low"), "low must not be above high")
        return Init(kind, **values)

    def constraints(self, data: Any, at: tuple, tunables: dict, symbols: set[str]) -> tuple[str, ...]:
        """`constraints = ["block_x * block_y <= 1024", ...]`: conditions over tunables and sizes,
        each naming at least one tunable (a sweep skips the configurations that break one)."""
        if not isinstance(data, list) or not all(isinstance(c, str) for c in data):
            raise self.fail(at, f"expected an array of condition strings, got {toml_value(data)}")
        for i, text in enumerate(data):
            try:
                used = expr.condition_names(text)
            except expr.ExprError as exc:
                raise self.fail((*at, i), str(exc)) from None
            unknown = used - symbols
            if unknown:
                raise self.fail(
                    (*at, i),
                    f"unknown name {', '.join(sorted(unknown))} in {toml_value(text)}; "
                    f"known: {', '.join(sorted(symbols)) or 'none'}",
                )
            if not used & set(tunables):
                raise self.fail((*at, i), f"{toml_value(text)} names no tunable")
        return tuple(data)

    def launch(self, data: dict, at: tuple, symbols: set[str], nested: bool = False) -> Launch:
        self.check_keys(data, at, ("threads", "grid") if nested else ("threads", "grid", *BACKENDS))
        own = {
            backend: self.launch(self.table(data, at, backend), (*at, backend), symbols, nested=True)
            for backend in BACKENDS
            if backend in data and not nested
        }
        out = []
        for key in ("threads", "grid"):
            value = data.get(key)
            if value is None and key == "threads" and not nested and "block_size_x" in symbols:
                # Kernel Tuner's convention: block_size_x/y/z are the launch's threads.
                value = [n for n in ("block_size_x", "block_size_y", "block_size_z") if n in symbols]
            if value is None:
                raise self.fail(at, f"missing key {key!r}: 1 to 3 integers or expressions")
            if not isinstance(value, list):
                value = [value]
            if not 1 <= len(value) <= 3:
                raise self.fail((*at, key), f"expected 1 to 3 dimensions, got {len(value)}")
            out.append(tuple(self.expression(v, (*at, key), symbols) for v in value))
        return Launch(threads=out[0], grid=out[1], backends=own)

    def check(self, data: dict, at: tuple) -> Check:
        self.check_keys(data, at, ("reference", "rtol", "atol", "max_ulp"))
        reference = self.string(data, at, "reference", "cpu")
        if reference not in BACKENDS:
            raise self.fail(
                (*at, "reference"), f"unknown backend {toml_value(reference)}; valid: {', '.join(BACKENDS)}"
            )
        rtol = self.number(data, at, "rtol", 1e-5)
        atol = self.number(data, at, "atol", 1e-6)
        max_ulp = data.get("max_ulp")
        if max_ulp is not None:
            self.natural(max_ulp, (*at, "max_ulp"))
        for key, value in (("rtol", rtol), ("atol", atol)):
            if value < 0:
                raise self.fail((*at, key), "must not be negative")
        return Check(reference=reference, rtol=float(rtol), atol=float(atol), max_ulp=max_ulp)

    def wgpu(self, data: dict, at: tuple, args: tuple[Arg, ...]) -> WgpuScalars:
        self.check_keys(data, at, ("scalars", "params_binding", "override_ids"))
        mode = self.string(data, at, "scalars", "uniform")
        if mode not in WGPU_SCALAR_MODES:
            raise self.fail(
                (*at, "scalars"), f"unknown mode {toml_value(mode)}; valid: {', '.join(WGPU_SCALAR_MODES)}"
            )
        binding = data.get("params_binding")
        if binding is not None:
            self.natural(binding, (*at, "params_binding"))
        overrides = self.table(data, at, "override_ids")
        scalar_names = {a.name for a in args if isinstance(a, ScalarArg)}
        for key, value in overrides.items():
            if key not in scalar_names:
                raise self.fail((*at, "override_ids", key), f"{key!r} is not a scalar argument")
            if not isinstance(value, str | int) or isinstance(value, bool):
                raise self.fail((*at, "override_ids", key), "expected a string or an integer id")
        return WgpuScalars(mode, binding, {k: str(v) for k, v in overrides.items()})


def load_manifest(path: str | Path) -> Manifest:
    """Load and validate a `workbench.toml` (or the one inside a project folder)."""
    path = Path(path)
    if path.is_dir():
        path = path / MANIFEST_NAME
    if not path.is_file():
        raise ManifestError(path, None, None, "file not found: a kernel project needs a workbench.toml")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ManifestError(path, None, None, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise ManifestError(path, None, None, f"cannot read it: {exc.strerror or exc}") from None
    return parse_manifest(text, path)


def parse_manifest(text: str, path: str | Path) -> Manifest:
    path = Path(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        line = toml_error_line(message)
        opened = open_construct_line(text, message, line)
        message = re.sub(r"\s*\(at (line \d+, column \d+|end of document)\)", "", message)
        if opened is not None and opened != line:
            stopped = f"line {line}" if line is not None else "the end of the file"
            message += f" (opened at line {opened}, still open at {stopped})"
            line = opened
        raise ManifestError(path, line, None, f"not valid TOML: {message}") from None
    return _Reader(path, text).manifest(data)
