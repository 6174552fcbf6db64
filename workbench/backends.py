"""The backends a kernel can be built for: one row each, the one list every other module reads.

Adding a backend means a row here, its build adapter (`workbench/build/adapters/`, registered in
`ADAPTERS`) and, when it needs a runtime the table lacks, a row in `workbench.runtimes_table` and
its runtime module; `tests/test_backend_table.py` checks that the rows and those parts agree.
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench.errors import UnknownBackend
from workbench.runtimes_table import RUNTIMES  # noqa: F401  (re-exported: the runtimes' names)


@dataclass(frozen=True)
class Backend:
    name: str
    #: The runtime that executes its artifacts (`workbench.runtimes_table`).
    runtime: str
    #: "crate": built from the project's Rust crate with cargo; "reference": from the
    #: hand-written `[kernel.reference]` files.
    source: str
    #: A reference backend's source files by suffix (a crate backend reads the crate instead).
    source_suffixes: tuple[str, ...]
    #: The suffixes of those that no crate backend reads (a `.h` may be a build script's too).
    own_suffixes: tuple[str, ...]
    #: The kind of artifact it builds (one its runtime loads).
    artifact_kind: str
    #: Environment variables that change what its compiler produces: exact names, then prefixes.
    #: Both feed the build key (`build.cache.build_environment`): a missing one gives a key that
    #: ignores what the compiler read.
    env_names: tuple[str, ...]
    env_prefixes: tuple[str, ...]
    #: What builds it, as menus and messages describe it.
    title: str
    #: Whether a run nobody chose backends for includes it (`run.selection.default_backends`):
    #: cpu-sim is a checker, many times slower than cpu, run when asked for.
    by_default: bool = True


_RUST_ENV = (
    "RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "RUSTC_WRAPPER", "RUSTC_WORKSPACE_WRAPPER",
    "RUSTC_BOOTSTRAP", "RUSTUP_TOOLCHAIN", "CARGO_INCREMENTAL",
    "RUSTGPU_CODEGEN_ARGS", "RUSTGPU_RUSTFLAGS", "RUSTGPU_CARGOFLAGS",
)  # fmt: skip
_RUST_PREFIXES = ("CARGO_BUILD_", "CARGO_PROFILE_", "CARGO_TARGET_", "CARGO_UNSTABLE_")
_NVCC_ENV = ("NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "NVCC_CCBIN", "CPATH", "CPLUS_INCLUDE_PATH",
             "C_INCLUDE_PATH")  # fmt: skip

BACKEND_ROWS: tuple[Backend, ...] = (
    Backend("cpu", "cpu", "crate", (), (), "cdylib", _RUST_ENV, _RUST_PREFIXES,
            "host cargo, cdylib through ctypes"),
    Backend("cpu-sim", "cpu", "crate", (), (), "cdylib", _RUST_ENV, _RUST_PREFIXES,
            "the kernel body on the CPU with GPU semantics and race / bounds checks (kernel API crates)",
            by_default=False),
    Backend("nvptx", "cuda", "crate", (), (), "ptx", _RUST_ENV, _RUST_PREFIXES, "rustc's NVPTX backend -> PTX"),
    Backend("rust-gpu", "wgpu", "crate", (), (), "spirv", _RUST_ENV, _RUST_PREFIXES, "cargo-gpu -> SPIR-V"),
    Backend("rust-cuda", "cuda", "crate", (), (), "ptx", _RUST_ENV, _RUST_PREFIXES,
            "Rust-CUDA (rustc_codegen_nvvm) -> PTX"),
    Backend("cuda-c", "cuda", "reference", (".cu", ".cuh", ".h"), (".cu", ".cuh"), "ptx", _NVCC_ENV, (),
            "nvcc on reference/*.cu -> PTX"),
    Backend("wgsl", "wgpu", "reference", (".wgsl",), (".wgsl",), "wgsl", (), (),
            "reference/*.wgsl, compiled by naga at pipeline creation"),
)  # fmt: skip
BACKEND_TABLE: dict[str, Backend] = {row.name: row for row in BACKEND_ROWS}

#: Backend name -> runtime that executes its artifacts.
BACKENDS: dict[str, str] = {row.name: row.runtime for row in BACKEND_ROWS}
#: Backends whose source is the project's Rust crate (built with cargo).
RUST_BACKENDS = tuple(row.name for row in BACKEND_ROWS if row.source == "crate")
#: Backends built from `[kernel.reference]` files.
REFERENCE_BACKENDS = tuple(row.name for row in BACKEND_ROWS if row.source == "reference")
#: Backends a run includes only when asked for by name.
ON_DEMAND_BACKENDS = tuple(row.name for row in BACKEND_ROWS if not row.by_default)
#: Suffixes only a reference backend reads: a crate backend's sources leave them out.
REFERENCE_ONLY_SUFFIXES = frozenset(s for row in BACKEND_ROWS for s in row.own_suffixes)


def check_backend(name: str) -> str:
    """`name` when it is a backend, else `UnknownBackend` listing the valid ones."""
    if name not in BACKENDS:
        raise UnknownBackend(f"unknown backend {name!r}; valid backends: {', '.join(BACKENDS)}")
    return name


def backend_row(name: str) -> Backend:
    """The table's row of backend `name` (`UnknownBackend` listing the valid ones)."""
    return BACKEND_TABLE[check_backend(name)]


def parse_backends(text: str | None, default: tuple[str, ...] = tuple(BACKENDS)) -> list[str]:
    """Parse a comma-separated backend list, rejecting unknown names with the valid ones."""
    if not text:
        return list(default)
    names = [check_backend(part.strip()) for part in text.split(",") if part.strip()]
    return list(dict.fromkeys(names))


def runtime_of(backend: str) -> str:
    return BACKENDS[check_backend(backend)]
