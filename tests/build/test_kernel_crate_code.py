"""What a kernel crate's cpu build compiles: its body, not the host executor's threads.

The edit → result loop waits for this build after every save. The executor's threads, workgroup
loop, the fibers' start and loop (`spawn`, `fiber_main`) and the barrier scheduler are compiled
once, in `gpu_kernel`; only the per-kernel part (`run_invocations`, the body on a workgroup's
loop, and `call_body`, the body on a fiber) is monomorphized for the kernel's closure. Checked on
the symbols of a real build of saxpy's cdylib: Rust's v0 mangling names a generic instance with
its type arguments, so code instantiated for a saxpy type carries the crate's name (`5saxpy`).
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from workbench.build import build_project
from workbench.build.toolchains import detect
from workbench.project import Project

pytestmark = pytest.mark.slow


def _symbols(library: str) -> list[str]:
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("nm (binutils) is not installed")
    out = subprocess.run([nm, library], capture_output=True, text=True, check=True).stdout
    return [line.split()[-1] for line in out.splitlines() if line.strip()]


def test_a_kernel_crate_monomorphizes_its_body_and_not_the_executor_threads(example_copy, cache):
    if not detect("cpu").found:
        pytest.skip("no host cargo / rustc")
    project = Project.open(example_copy("saxpy"))
    (result,) = build_project(project, ["cpu"], cache)
    assert result.status == "ok", result.log
    symbols = _symbols(result.artifacts[0])
    for_saxpy = [s for s in symbols if s.startswith("_R") and "5saxpy" in s]
    assert for_saxpy, "no symbol of the saxpy crate: the library has no symbol table?"
    # std::thread (scope, spawn, the packets) and the executor's worker, instantiated for a saxpy
    # closure: the per-kernel build would compile the thread machinery again.
    threads = [s for s in for_saxpy if re.search(r"\d+thread|\d+worker|\d+run_grid", s)]
    assert threads == []
    # Nor the fibers' start and loop: the body reaches them through `call_body::<closure>`.
    fibers = [s for s in for_saxpy if re.search(r"10fiber_main|5spawn|9switch_to|4stop", s)]
    assert fibers == []
    assert any("9call_body" in s for s in for_saxpy)
    # ... while the executor's own code is there, compiled once in gpu_kernel.
    assert any("10gpu_kernel" in s and "8run_grid" in s for s in symbols)
    assert any("15run_invocations" in s and "5saxpy" in s for s in symbols)
