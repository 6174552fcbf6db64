"""The records of a kernel project manifest (`workbench.toml`): what `reader.py` builds from the file.

The format is documented in docs/manifest.md. `Kernel` evaluates its expressions at a set of sizes
through `evaluation.KernelEvaluation`; the records themselves hold text and numbers only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.errors import ManifestError
from workbench.manifest.evaluation import KernelEvaluation, Where

SCALAR_TYPES = ("f32", "f64", "i32", "u32", "i64", "u64")
ELEMENT_TYPES = SCALAR_TYPES
DIRECTIONS = ("in", "out", "inout")
INIT_KINDS = ("random", "linspace", "constant", "zeros", "npy")
WGPU_SCALAR_MODES = ("uniform", "push", "override")


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
    #: Further wgpu bindings of the same buffer: a shader may view it under another type there
    #: (`array<vec4<f32>>` beside `array<f32>`: 16-byte accesses where a binding has one type).
    views: tuple[int, ...] = ()
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
    #: The outputs' layout follows the tunables (a reduction's partials, one per workgroup): `tune`
    #: then checks each configuration against its own reference only, never against the default's.
    outputs_follow_tunables: bool = False


@dataclass(frozen=True)
class WgpuScalars:
    mode: str = "uniform"  # one of WGPU_SCALAR_MODES
    params_binding: int | None = None
    override_ids: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Kernel(KernelEvaluation):
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
