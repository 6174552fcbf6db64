"""Toolchain adapters, one per backend: detect, build, parse diagnostics, list artifacts."""

from __future__ import annotations

from workbench.build.adapters.base import Adapter, AdapterOutput, BuildRequest
from workbench.build.adapters.cpu import CpuAdapter
from workbench.build.adapters.cpu_sim import CpuSimAdapter
from workbench.build.adapters.cuda_c import CudaCAdapter
from workbench.build.adapters.nvptx import NvptxAdapter
from workbench.build.adapters.rust_cuda import RustCudaAdapter
from workbench.build.adapters.rust_gpu import RustGpuAdapter
from workbench.build.adapters.wgsl import WgslAdapter

ADAPTERS: dict[str, Adapter] = {
    a.name: a
    for a in (
        CpuAdapter(),
        CpuSimAdapter(),
        NvptxAdapter(),
        RustGpuAdapter(),
        RustCudaAdapter(),
        CudaCAdapter(),
        WgslAdapter(),
    )
}

__all__ = ["ADAPTERS", "Adapter", "AdapterOutput", "BuildRequest"]
