"""The kernel project manifest (`workbench.toml`): typed records and a validating loader.

The format is documented in docs/manifest.md. Every error raised here is a `ManifestError`
naming the file, the line and the key, and saying what would be valid.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench import expr
from workbench.backends import BACKENDS, REFERENCE_BACKENDS
from workbench.errors import ManifestError
from workbench.tomlpos import KeyLines, toml_error_line

MANIFEST_NAME = "workbench.toml"
SCALAR_TYPES = ("f32", "f64", "i32", "u32", "i64", "u64")
ELEMENT_TYPES = SCALAR_TYPES
DIRECTIONS = ("in", "out", "inout")
INIT_KINDS = ("random", "linspace", "constant", "zeros", "npy")
WGPU_SCALAR_MODES = ("uniform", "push", "override")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


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
    reference: dict[str, str] = field(default_factory=dict)  # backend -> path
    wgpu: WgpuScalars = field(default_factory=WgpuScalars)
    #: `[kernel.timing] fresh_inputs`: restore inout buffers before every timed sample, for kernels
    #: whose work depends on the data they rewrite (off by default: the upload leaves GPU caches
    #: cold and dirty, which slows memory-bound kernels measurably).
    fresh_inputs: bool = False

    def entry_for(self, backend: str) -> str:
        """The entry-point name a backend calls (defaults to the kernel name)."""
        return self.entry.get(backend, self.name)

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
        out: dict[str, int | float] = {}
        for s in self.scalars:
            value = expr.evaluate(s.value, symbols)
            out[s.name] = float(value) if s.type.startswith("f") else int(value)
        return out

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

    def fail(self, at: tuple, message: str) -> ManifestError:
        key = ".".join(str(p) if not isinstance(p, int) else f"[{p}]" for p in at).replace(".[", "[")
        return ManifestError(self.path, self.lines.line(at), key or None, message)

    def table(self, data: dict, at: tuple, key: str, required: bool = False) -> dict:
        value = data.get(key)
        if value is None:
            if required:
                raise self.fail(at, f"missing table [{'.'.join(map(str, (*at, key)))}]")
            return {}
        if not isinstance(value, dict):
            raise self.fail((*at, key), f"expected a table, got {type(value).__name__}")
        return value

    def string(self, data: dict, at: tuple, key: str, default: str | None = None) -> str:
        value = data.get(key, default)
        if value is None:
            raise self.fail((*at, key) if at else (key,), f"missing key {key!r} (a string)")
        if not isinstance(value, str):
            raise self.fail((*at, key), f"expected a string, got {value!r}")
        return value

    def number(self, data: dict, at: tuple, key: str, default: float | None = None) -> float:
        value = data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail((*at, key), f"expected a number, got {value!r}")
        return value

    def natural(self, value: Any, at: tuple) -> int:
        """`value` when it is a non-negative integer (a boolean is not), else a located error."""
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self.fail(at, f"expected a non-negative integer, got {value!r}")
        return value

    def expression(self, value: Any, at: tuple, symbols: set[str]) -> str:
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise self.fail(at, f"expected a number or an expression string, got {value!r}")
        try:
            used = expr.names(value)
        except expr.ExprError as exc:
            raise self.fail(at, str(exc)) from None
        unknown = used - symbols
        if unknown:
            known = ", ".join(sorted(symbols)) or "none"
            raise self.fail(at, f"unknown name {sorted(unknown)[0]!r} in {value!r}; known names: {known}")
        return str(value)

    def check_keys(self, data: dict, at: tuple, allowed: tuple[str, ...]) -> None:
        for key in data:
            if key not in allowed:
                raise self.fail((*at, key), f"unknown key {key!r}; valid keys: {', '.join(allowed)}")

    def check_backend_keys(self, data: dict, at: tuple, allowed=tuple(BACKENDS)) -> None:
        for key in data:
            if key not in allowed:
                raise self.fail((*at, key), f"unknown backend {key!r}; valid backends: {', '.join(allowed)}")

    # ----------------------------------------------------------------------- sections

    def manifest(self, data: dict) -> Manifest:
        self.check_keys(data, (), ("project", "kernel", "backends"))
        project = self.table(data, (), "project", required=True)
        self.check_keys(project, ("project",), ("name", "crate", "description"))
        name = self.string(project, ("project",), "name")
        crate = self.string(project, ("project",), "crate", ".")
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

    def kernel(self, data: dict, at: tuple) -> Kernel:
        allowed = ("name", "description", "entry", "sizes", "arg", "launch", "metrics", "check",
                   "tunables", "reference", "wgpu", "timing")  # fmt: skip
        self.check_keys(data, at, allowed)
        name = self.string(data, at, "name")
        if not _IDENT.match(name):
            raise self.fail((*at, "name"), f"{name!r} is not an identifier (letters, digits, _)")
        description = self.string(data, at, "description", "")

        entry = self.table(data, at, "entry")
        self.check_backend_keys(entry, (*at, "entry"))
        for backend in entry:
            self.string(entry, (*at, "entry"), backend)

        sizes = self.table(data, at, "sizes")
        for size, value in sizes.items():
            self.natural(value, (*at, "sizes", size))

        tunables_data = self.table(data, at, "tunables")
        tunables: dict[str, tuple[int | float, ...]] = {}
        for tname, values in tunables_data.items():
            ok = (
                isinstance(values, list)
                and values
                and all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
            )
            if not ok:
                raise self.fail((*at, "tunables", tname), "expected a non-empty list of numbers")
            if tname in sizes:
                raise self.fail((*at, "tunables", tname), f"{tname!r} is also a size symbol")
            tunables[tname] = tuple(values)
        symbols = set(sizes) | set(tunables)

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
            if not (self.path.parent / rel).is_file():
                raise self.fail((*at, "reference", backend), f"file {rel!r} does not exist")

        wgpu = self.wgpu(self.table(data, at, "wgpu"), (*at, "wgpu"), args)
        timing = self.table(data, at, "timing")
        self.check_keys(timing, (*at, "timing"), ("fresh_inputs",))
        fresh_inputs = timing.get("fresh_inputs", False)
        if not isinstance(fresh_inputs, bool):
            raise self.fail((*at, "timing", "fresh_inputs"), f"expected true or false, got {fresh_inputs!r}")
        bindings: dict[int, str] = {}
        for i, a in enumerate(args):
            if isinstance(a, BufferArg) and a.binding is not None:
                if a.binding in bindings or a.binding == wgpu.params_binding:
                    raise self.fail((*at, "arg", i, "binding"), f"binding {a.binding} is used twice")
                bindings[a.binding] = a.name
        return Kernel(
            name=name, args=args, launch=launch, description=description, entry=dict(entry),
            sizes=dict(sizes), metrics=metrics, check=check, tunables=tunables,
            reference=dict(reference), wgpu=wgpu, fresh_inputs=fresh_inputs,
        )  # fmt: skip

    def arg(self, data: Any, at: tuple, symbols: set[str]) -> Arg:
        if not isinstance(data, dict):
            raise self.fail(at, "expected a table")
        name = self.string(data, at, "name")
        if not _IDENT.match(name):
            raise self.fail((*at, "name"), f"{name!r} is not an identifier (letters, digits, _)")
        kind = self.string(data, at, "kind")
        if kind == "scalar":
            self.check_keys(data, at, ("name", "kind", "type", "value"))
            type_ = self.string(data, at, "type")
            if type_ not in SCALAR_TYPES:
                raise self.fail((*at, "type"), f"unknown type {type_!r}; valid: {', '.join(SCALAR_TYPES)}")
            if "value" not in data:
                raise self.fail(at, f"scalar {name!r} is missing key 'value' (an expression)")
            value = self.expression(data["value"], (*at, "value"), symbols)
            return ScalarArg(name=name, type=type_, value=value)
        if kind == "buffer":
            self.check_keys(data, at, ("name", "kind", "type", "length", "direction", "binding", "init"))
            type_ = self.string(data, at, "type")
            if type_ not in ELEMENT_TYPES:
                raise self.fail((*at, "type"), f"unknown type {type_!r}; valid: {', '.join(ELEMENT_TYPES)}")
            if "length" not in data:
                raise self.fail(at, f"buffer {name!r} is missing key 'length' (an expression)")
            length = self.expression(data["length"], (*at, "length"), symbols)
            direction = self.string(data, at, "direction", "in")
            if direction not in DIRECTIONS:
                raise self.fail((*at, "direction"), f"unknown direction {direction!r}; valid: in, out, inout")
            binding = data.get("binding")
            if binding is not None:
                self.natural(binding, (*at, "binding"))
            init = self.init(data.get("init"), (*at, "init"), direction)
            return BufferArg(
                name=name, type=type_, length=length, direction=direction, init=init, binding=binding
            )
        raise self.fail((*at, "kind"), f"unknown kind {kind!r}; valid: buffer, scalar")

    def init(self, data: Any, at: tuple, direction: str) -> Init:
        if data is None:
            return Init("zeros")
        if isinstance(data, str):
            data = {"kind": data}
        if not isinstance(data, dict):
            raise self.fail(at, f'expected a table such as {{ kind = "random" }}, got {data!r}')
        kind = self.string(data, at, "kind")
        fields = {"random": ("low", "high", "seed"), "linspace": ("start", "stop"), "constant": ("value",),
                  "zeros": (), "npy": ("path",)}  # fmt: skip
        if kind not in fields:
            raise self.fail((*at, "kind"), f"unknown initializer {kind!r}; valid: {', '.join(INIT_KINDS)}")
        self.check_keys(data, at, ("kind", *fields[kind]))
        values: dict[str, Any] = {}
        for key in fields[kind]:
            if key == "path":
                rel = self.string(data, at, "path")
                if not (self.path.parent / rel).is_file():
                    raise self.fail((*at, "path"), f"file {rel!r} does not exist")
                values["path"] = rel
            elif key == "seed":
                if "seed" in data:
                    seed = data["seed"]
                    if isinstance(seed, bool) or not isinstance(seed, int):
                        raise self.fail((*at, "seed"), f"expected an integer, got {seed!r}")
                    values["seed"] = seed
            elif key in data:
                values[key] = self.number(data, at, key)
        if kind == "random" and values.get("low", -1.0) > values.get("high", 1.0):
            raise self.fail((*at, "low"), "low must not be above high")
        return Init(kind, **values)

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
                (*at, "reference"), f"unknown backend {reference!r}; valid: {', '.join(BACKENDS)}"
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
            raise self.fail((*at, "scalars"), f"unknown mode {mode!r}; valid: {', '.join(WGPU_SCALAR_MODES)}")
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
        message = re.sub(r"\s*\(at line \d+, column \d+\)", "", message)
        raise ManifestError(path, line, None, f"not valid TOML: {message}") from None
    return _Reader(path, text).manifest(data)
