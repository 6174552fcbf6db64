"""The validating loader of `workbench.toml`: TOML text -> `records.Manifest`.

Every error raised here is a `ManifestError` naming the file, the line and the key, and saying
what would be valid (`tomlpos.py` finds the lines and spells values as TOML does). `_Reader` has
one method per table (`kernel` calls `entry`, `sizes`, `tunables`, `args`, `launch`, `metrics`,
`check`, `reference`, `wgpu`, `timing`, then `bindings`, in the order their errors are reported);
the typed reads they are made of (`located.py`) do the locating.
"""

from __future__ import annotations

import math
import re
import tomllib
from pathlib import Path
from typing import Any

from workbench import expr
from workbench.backends import BACKENDS, REFERENCE_BACKENDS
from workbench.errors import ManifestError
from workbench.manifest.evaluation import MANIFEST_NAME, Where
from workbench.manifest.located import IDENT, LocatedReader, exists, missing_file
from workbench.manifest.records import (
    DIRECTIONS,
    ELEMENT_TYPES,
    INIT_KINDS,
    SCALAR_TYPES,
    WGPU_SCALAR_MODES,
    Arg,
    BufferArg,
    Check,
    Init,
    Kernel,
    Launch,
    Manifest,
    ScalarArg,
    WgpuScalars,
)
from workbench.tomlpos import open_construct_line, toml_error_line, toml_type, toml_value


class _Reader(LocatedReader):
    """Validates one parsed manifest, table by table."""

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
        # Of a manifest in a folder (not a text read alone): else every build failed with
        # "[Errno 2] No such file or directory: PosixPath(...)".
        folder = self.path.parent
        if folder.is_dir() and not (folder / crate).is_dir():
            raise self.fail(
                ("project", "crate"),
                f"folder {crate!r} does not exist (the kernel's Cargo crate, relative to {self.path.name})",
            )
        return Manifest(self.path, name, crate, kernels, backends)

    def kernel(self, data: Any, at: tuple) -> Kernel:
        """One `[[kernel]]`, read table by table in the order its errors are reported."""
        if not isinstance(data, dict):
            raise self.fail(at, f"expected a [[kernel]] table, got {toml_type(data)} {toml_value(data)}")
        allowed = ("name", "description", "entry", "sizes", "arg", "launch", "metrics", "check",
                   "tunables", "reference", "wgpu", "timing")  # fmt: skip
        self.check_keys(data, at, allowed)
        name = self.string(data, at, "name")
        if not IDENT.match(name):
            raise self.fail((*at, "name"), f"{toml_value(name)} is not an identifier (letters, digits, _)")
        description = self.string(data, at, "description", "")
        entry = self.entry(self.table(data, at, "entry"), (*at, "entry"))
        sizes = self.sizes(self.table(data, at, "sizes"), (*at, "sizes"))
        tunables_data = self.table(data, at, "tunables")
        tunables = self.tunables(tunables_data, (*at, "tunables"), sizes)
        symbols = set(sizes) | set(tunables)
        constraints = self.constraints(
            tunables_data.get("constraints", []), (*at, "tunables", "constraints"), tunables, symbols
        )
        args = self.args(data.get("arg"), (*at, "arg"), symbols)
        launch = self.launch(self.table(data, at, "launch", required=True), (*at, "launch"), symbols)
        metrics = self.metrics(self.table(data, at, "metrics"), (*at, "metrics"), symbols)
        check = self.check(self.table(data, at, "check"), (*at, "check"))
        reference = self.reference(self.table(data, at, "reference"), (*at, "reference"))
        wgpu = self.wgpu(self.table(data, at, "wgpu"), (*at, "wgpu"), args)
        fresh_inputs = self.timing(self.table(data, at, "timing"), (*at, "timing"))
        self.bindings(args, (*at, "arg"), wgpu)
        return Kernel(
            name=name, args=args, launch=launch, description=description, entry=entry,
            sizes=sizes, metrics=metrics, check=check, tunables=tunables,
            constraints=constraints, reference=reference, wgpu=wgpu, fresh_inputs=fresh_inputs,
            where=Where(str(self.path), self.key_lines(at, args, launch, metrics)),
        )  # fmt: skip

    def entry(self, data: dict, at: tuple) -> dict[str, str]:
        """`[kernel.entry]`: backend -> the entry point's name."""
        self.check_backend_keys(data, at)
        for backend in data:
            self.string(data, at, backend)
        return dict(data)

    def sizes(self, data: dict, at: tuple) -> dict[str, int]:
        """`[kernel.sizes]`: symbol -> a non-negative integer."""
        for size, value in data.items():
            self.natural(value, (*at, size))
            if not IDENT.match(size):
                raise self.fail((*at, size), f"{toml_value(size)} is not an identifier (letters, digits, _)")
        return dict(data)

    def tunables(self, data: dict, at: tuple, sizes: dict) -> dict[str, tuple[int | float, ...]]:
        """`[kernel.tunables]` but its `constraints`: name -> the values a sweep may give it."""
        tunables: dict[str, tuple[int | float, ...]] = {}
        for tname, values in data.items():
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
                    (*at, tname), f"expected a non-empty array of finite numbers, got {toml_value(values)}"
                )
            if not IDENT.match(tname):
                raise self.fail(
                    (*at, tname), f"{toml_value(tname)} is not an identifier (letters, digits, _)"
                )
            if tname in sizes:
                raise self.fail((*at, tname), f"{toml_value(tname)} is also a size symbol")
            tunables[tname] = tuple(values)
        return tunables

    def args(self, data: Any, at: tuple, symbols: set[str]) -> tuple[Arg, ...]:
        """`[[kernel.arg]]`: at least one, names unique, at least one output buffer."""
        if not isinstance(data, list) or not data:
            raise self.fail(at, "missing [[kernel.arg]]: a kernel takes at least one argument")
        args = tuple(self.arg(a, (*at, i), symbols) for i, a in enumerate(data))
        names: set[str] = set()
        for i, a in enumerate(args):
            if a.name in names:
                raise self.fail((*at, i, "name"), f"argument name {a.name!r} is used twice")
            names.add(a.name)
        if not any(isinstance(a, BufferArg) and a.is_output for a in args):
            raise self.fail(at, "no output: at least one buffer needs direction out or inout")
        return args

    def metrics(self, data: dict, at: tuple, symbols: set[str]) -> dict[str, str]:
        """`[kernel.metrics]`: bytes and flops as expressions."""
        self.check_keys(data, at, ("bytes", "flops"))
        return {k: self.expression(v, (*at, k), symbols) for k, v in data.items()}

    def reference(self, data: dict, at: tuple) -> dict[str, str]:
        """`[kernel.reference]`: backend -> a reference source file that exists."""
        self.check_backend_keys(data, at, REFERENCE_BACKENDS)
        for backend in data:
            rel = self.string(data, at, backend)
            if not exists(self.path.parent / rel):
                raise self.fail((*at, backend), missing_file(self.path.parent / rel, rel))
        return dict(data)

    def timing(self, data: dict, at: tuple) -> bool:
        """`[kernel.timing]`: its `fresh_inputs` flag."""
        self.check_keys(data, at, ("fresh_inputs",))
        return self.flag(data, at, "fresh_inputs")

    def bindings(self, args: tuple[Arg, ...], at: tuple, wgpu: WgpuScalars) -> None:
        """Each buffer's `binding` and `views`: views need a binding, no number used twice (nor the
        wgpu parameters' binding)."""
        taken: dict[int, str] = {}
        for i, a in enumerate(args):
            if not isinstance(a, BufferArg):
                continue
            if a.views and a.binding is None:
                raise self.fail((*at, i, "views"), "views are further bindings: set `binding` too")
            for key, number in [("binding", a.binding)] + [("views", v) for v in a.views]:
                if number is None:
                    continue
                if number in taken or number == wgpu.params_binding:
                    raise self.fail((*at, i, key), f"binding {number} is used twice")
                taken[number] = a.name

    def key_lines(
        self, at: tuple, args: tuple[Arg, ...], launch: Launch, metrics: dict[str, str]
    ) -> dict[tuple[str, ...], tuple[int | None, str]]:
        """Where the keys an evaluation may fail on stand (`Where`: line, key as named)."""
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
        return keys

    def arg(self, data: Any, at: tuple, symbols: set[str]) -> Arg:
        """One `[[kernel.arg]]`: a scalar or a buffer."""
        if not isinstance(data, dict):
            raise self.fail(at, "expected a table")
        name = self.string(data, at, "name")
        if not IDENT.match(name):
            raise self.fail((*at, "name"), f"{toml_value(name)} is not an identifier (letters, digits, _)")
        kind = self.string(data, at, "kind")
        if kind == "scalar":
            return self.scalar(data, at, name, symbols)
        if kind == "buffer":
            return self.buffer(data, at, name, symbols)
        raise self.fail((*at, "kind"), f"unknown kind {toml_value(kind)}; valid: buffer, scalar")

    def scalar(self, data: dict, at: tuple, name: str, symbols: set[str]) -> ScalarArg:
        self.check_keys(data, at, ("name", "kind", "type", "value"))
        type_ = self.one_of(data, at, "type", SCALAR_TYPES, "type")
        if "value" not in data:
            raise self.fail(at, f"scalar {name!r} is missing key 'value' (an expression)")
        value = self.expression(data["value"], (*at, "value"), symbols)
        return ScalarArg(name=name, type=type_, value=value)

    def buffer(self, data: dict, at: tuple, name: str, symbols: set[str]) -> BufferArg:
        self.check_keys(data, at, ("name", "kind", "type", "length", "direction", "binding", "views", "init"))
        type_ = self.one_of(data, at, "type", ELEMENT_TYPES, "type")
        if "length" not in data:
            raise self.fail(at, f"buffer {name!r} is missing key 'length' (an expression)")
        length = self.expression(data["length"], (*at, "length"), symbols)
        direction = self.one_of(data, at, "direction", DIRECTIONS, "direction", "in")
        binding = data.get("binding")
        if binding is not None:
            self.natural(binding, (*at, "binding"))
        views = data.get("views", [])
        if not isinstance(views, list):
            raise self.fail((*at, "views"), f"expected an array of bindings, got {toml_value(views)}")
        for view in views:
            self.natural(view, (*at, "views"))
        init = self.init(data.get("init"), (*at, "init"), direction)
        return BufferArg(
            name=name, type=type_, length=length, direction=direction, init=init, binding=binding,
            views=tuple(views),
        )  # fmt: skip

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
        values = self.init_values(data, at, fields[kind])
        if kind == "random" and values.get("low", -1.0) > values.get("high", 1.0):
            raise self.fail((*at, "low"), "low must not be above high")
        return Init(kind, **values)

    def init_values(self, data: dict, at: tuple, fields: tuple[str, ...]) -> dict[str, Any]:
        """The fields of one initializer kind that `data` gives, each checked."""
        values: dict[str, Any] = {}
        for key in fields:
            if key == "path":
                rel = self.string(data, at, "path")
                if not exists(self.path.parent / rel):
                    raise self.fail((*at, "path"), missing_file(self.path.parent / rel, rel))
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
        return values

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
        self.check_keys(data, at, ("reference", "rtol", "atol", "max_ulp", "outputs_follow_tunables"))
        reference = self.one_of(data, at, "reference", tuple(BACKENDS), "backend", "cpu")
        rtol = self.number(data, at, "rtol", 1e-5)
        atol = self.number(data, at, "atol", 1e-6)
        max_ulp = data.get("max_ulp")
        if max_ulp is not None:
            self.natural(max_ulp, (*at, "max_ulp"))
        for key, value in (("rtol", rtol), ("atol", atol)):
            if value < 0:
                raise self.fail((*at, key), "must not be negative")
        follow = self.flag(data, at, "outputs_follow_tunables")
        return Check(
            reference=reference,
            rtol=float(rtol),
            atol=float(atol),
            max_ulp=max_ulp,
            outputs_follow_tunables=follow,
        )

    def wgpu(self, data: dict, at: tuple, args: tuple[Arg, ...]) -> WgpuScalars:
        self.check_keys(data, at, ("scalars", "params_binding", "override_ids"))
        mode = self.one_of(data, at, "scalars", WGPU_SCALAR_MODES, "mode", "uniform")
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
        data = path.read_bytes()
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:  # at its line, so the editor's gutter and the message agree
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ManifestError(
            path,
            line,
            None,
            f"not UTF-8 text: byte 0x{data[exc.start]:02x} at column {column} ({exc.reason})",
        ) from None
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
