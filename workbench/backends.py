"""The backends a kernel can be built for, and the runtime each one runs on."""

from __future__ import annotations

from workbench.errors import UnknownBackend

#: Backend name -> runtime that executes its artifacts.
BACKENDS: dict[str, str] = {
    "cpu": "cpu",  # host cargo, cdylib through ctypes
    "nvptx": "cuda",  # rustc's NVPTX backend -> PTX
    "rust-gpu": "wgpu",  # cargo-gpu -> SPIR-V
    "rust-cuda": "cuda",  # Rust-CUDA (rustc_codegen_nvvm) -> PTX
    "cuda-c": "cuda",  # nvcc on reference/*.cu -> PTX
    "wgsl": "wgpu",  # reference/*.wgsl, compiled by naga at pipeline creation
}

#: Backends whose source is the project's Rust crate (as opposed to hand-written references).
RUST_BACKENDS = ("cpu", "nvptx", "rust-gpu", "rust-cuda")
#: Backends built from `[kernel.reference]` files.
REFERENCE_BACKENDS = ("cuda-c", "wgsl")
RUNTIMES = ("cpu", "cuda", "wgpu")


def check_backend(name: str) -> str:
    """`name` when it is a backend, else `UnknownBackend` listing the valid ones."""
    if name not in BACKENDS:
        raise UnknownBackend(f"unknown backend {name!r}; valid backends: {', '.join(BACKENDS)}")
    return name


def parse_backends(text: str | None, default: tuple[str, ...] = tuple(BACKENDS)) -> list[str]:
    """Parse a comma-separated backend list, rejecting unknown names with the valid ones."""
    if not text:
        return list(default)
    names = [check_backend(part.strip()) for part in text.split(",") if part.strip()]
    return list(dict.fromkeys(names))


def runtime_of(backend: str) -> str:
    return BACKENDS[check_backend(backend)]
