"""One kernel API on every target, compiled (issue 38, item 6): a kernel body that calls every
method of `Ctx`, `In`, `Out` and `Shared` (as the host defines them: `test_kernel_api_surface`'s
list) and every function of `gpu_kernel::math` builds for the host (cpu) and for rustc's NVPTX
backend, each with a real cargo build of a copy of the reduction example with that body added
(`data/kernel_api_surface.rs`). A method one target lacks, or one whose body does not compile or
codegen there, fails here with the compiler's own message."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from workbench.build import build_project
from workbench.build.toolchains import detect
from workbench.project import Project

from .test_kernel_api_surface import SRC, TARGETS, TYPES, surface

pytestmark = pytest.mark.slow

BODY = Path(__file__).parent / "data" / "kernel_api_surface.rs"


def _called(body: str) -> set[str]:
    return set(re.findall(r"\.(\w+)(?:::<[^>]*>)?\(", body))


def test_the_body_calls_every_method_and_math_function():
    """The compiled body is the whole API: a method added to the host (or a math function added)
    without a call here fails, so the build below keeps covering everything."""
    body = BODY.read_text(encoding="utf-8")
    host = surface(TARGETS["host (cpu, cpu-sim)"])
    missing = {t: sorted(host[t] - _called(body)) for t in TYPES if host[t] - _called(body)}
    assert not missing, f"{BODY.name} does not call {missing}"
    math = set(re.findall(r"^pub fn (\w+)", (SRC / "math.rs").read_text(encoding="utf-8"), re.M))
    assert math and not {f for f in math if f"math::{f}(" not in body}, math


def test_the_whole_api_builds_for_the_host_and_for_nvptx(example_copy, shared_cache_dir):
    for backend in ("cpu", "nvptx"):
        if not detect(backend).found:
            pytest.skip(f"{backend} toolchain not installed")
    root = example_copy("reduction", unique=True)
    lib = root / "src" / "lib.rs"
    lib.write_text(lib.read_text(encoding="utf-8") + BODY.read_text(encoding="utf-8"), encoding="utf-8")
    results = {r.backend: r for r in build_project(Project.open(root), ["cpu", "nvptx"], shared_cache_dir)}
    for backend, result in results.items():
        assert result.status == "ok", f"{backend}:\n{result.log}"

    ptx = Path(results["nvptx"].artifacts[0]).read_text(encoding="utf-8")
    entry = ptx[ptx.index(".entry api_surface") :]
    # Codegen, not only type checking: the barrier, the shuffles, both atomics and the shared
    # arrays are in the entry's PTX.
    for instruction in ("bar.sync", "shfl.sync.down", "atom.", "API_SCRATCH", "API_TALLY", "ex2.approx"):
        assert instruction in entry, f"{instruction} is not in the api_surface entry's PTX"
    ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    if shutil.which(ptxas):
        ptx_file = results["nvptx"].artifacts[0]
        done = subprocess.run(
            [ptxas, "-arch=sm_90", ptx_file, "-o", "/dev/null"], capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr

    so = Path(results["cpu"].artifacts[0])
    assert so.suffix == ".so"
    nm = shutil.which("nm")
    if nm:
        symbols = subprocess.run([nm, "-D", "--defined-only", str(so)], capture_output=True, text=True).stdout
        assert re.search(r"\bapi_surface_cpu$", symbols, re.M), symbols
