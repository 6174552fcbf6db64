"""Fixtures for the runtime tests: the saxpy example's kernel, its cpu cdylib (a real cargo build,
once per session), and the llvmpipe wgpu adapter."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from workbench.project import Project

REPO = Path(__file__).resolve().parents[2]
SAXPY = REPO / "resources" / "examples" / "saxpy"
SHADERS = Path(__file__).resolve().parent / "shaders"
SHARED_SPIRV = REPO.parent / "shared" / "data" / "rust-gpu-spirv"


@pytest.fixture(scope="session")
def saxpy_dir() -> Path:
    return SAXPY


@pytest.fixture(scope="session")
def saxpy_kernel():
    return Project.open(SAXPY).manifest.kernel("saxpy")


@pytest.fixture(scope="session")
def saxpy_cdylib(tmp_path_factory, shared_cache_dir) -> Path:
    """libsaxpy.so built by host cargo from a copy of the example (the example stays untouched)."""
    from workbench.build.adapters import host_rust

    cargo, rustc = host_rust.cargo(), host_rust.rustc()
    if not cargo or not rustc:
        pytest.skip("no cargo and rustc installed")
    crate = tmp_path_factory.mktemp("saxpy-crate") / "saxpy"
    shutil.copytree(SAXPY, crate, ignore=shutil.ignore_patterns("target"))
    target = Path(shared_cache_dir) / "run-runtimes-target"
    env = dict(os.environ, RUSTC=rustc, CARGO_TARGET_DIR=str(target))
    done = subprocess.run(
        [str(cargo), "build", "--release", "--lib", "--offline"],
        cwd=crate,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    library = target / "release" / "libsaxpy.so"
    assert library.is_file()
    return library


@pytest.fixture(scope="session")
def wgpu_runtime():
    from workbench.run.runtimes import get_runtime

    runtime = get_runtime("wgpu")
    ok, reason = runtime.available()
    if not ok:
        pytest.skip(f"no wgpu adapter: {reason}")
    return runtime


@pytest.fixture(scope="session")
def llvmpipe_index(wgpu_runtime) -> int:
    """The index of the llvmpipe Vulkan adapter (the tests' real GPU stand-in)."""
    for dev in wgpu_runtime.devices():
        if "llvmpipe" in dev["name"].lower() and dev["backend_api"] == "Vulkan":
            return dev["index"]
    pytest.skip("no llvmpipe Vulkan adapter (install mesa-vulkan-drivers)")


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture(scope="session")
def shaders_dir() -> Path:
    return SHADERS


@pytest.fixture(scope="session")
def rust_gpu_spirv() -> Path:
    """The real rust-gpu output shared with this project (read in place, never copied)."""
    if not SHARED_SPIRV.is_dir():
        pytest.skip(f"{SHARED_SPIRV} is absent")
    return SHARED_SPIRV


@pytest.fixture
def fake_cuda(monkeypatch):
    """A CudaRuntime over the pycuda double (fake_pycuda.py), loaded fresh for each test."""
    import importlib.util
    import sys
    import types

    location = Path(__file__).with_name("fake_pycuda.py")
    loader = importlib.util.spec_from_file_location("fake_pycuda", location)
    fake_pycuda = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(fake_pycuda)
    package = types.ModuleType("pycuda")
    package.driver = fake_pycuda
    monkeypatch.setitem(sys.modules, "pycuda", package)
    monkeypatch.setitem(sys.modules, "pycuda.driver", fake_pycuda)
    from workbench.run.runtimes.cuda import CudaRuntime

    runtime = CudaRuntime()
    runtime.fake = fake_pycuda
    yield runtime
    runtime.close()
    assert fake_pycuda.context_stack == []  # every push was popped
