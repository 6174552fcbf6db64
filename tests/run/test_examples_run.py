"""Every bundled example verifies on wgpu (llvmpipe, timestamp timing) and on cpu-sim (its kernel
body with GPU semantics and checks, which find nothing) against its cpu build."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from workbench.build.toolchains import detect
from workbench.kernel_api import uses_kernel_api
from workbench.project import examples_dir

#: Small sizes: these tests check results, not speed.
SIZES = {
    "saxpy": ["n=65536"],
    "reduction": ["n=131072"],
    "matmul": ["m=96", "n=64", "k=80"],
    "bitonic": ["n=65536", "j=8", "k=16"],
}


@pytest.mark.slow
@pytest.mark.parametrize("example", sorted(SIZES))
def test_example_verifies_on_llvmpipe_with_timestamps(example, shared_cache_dir):
    if not detect("cpu").found:
        pytest.skip("no host cargo: run packaging/bootstrap.sh setup")
    sizes = [arg for size in SIZES[example] for arg in ("--size", size)]
    proc = subprocess.run(
        [sys.executable, "-m", "workbench", "run", str(examples_dir() / example), "--backend", "cpu,cpu-sim,wgsl",
         "--cache-dir", str(shared_cache_dir), "--json", *sizes],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.stdout, proc.stderr
    report = json.loads(proc.stdout)
    results = {r["backend"]: r for r in report["results"]}
    assert results["cpu"]["status"] == "ok", results["cpu"]["error"]
    wgsl = results["wgsl"]
    assert wgsl["status"] == "ok", wgsl["error"]
    assert "llvmpipe" in wgsl["device"]["name"]
    assert wgsl["verified"] is True, wgsl["check"]
    assert wgsl["timing"]["method"] == "wgpu-timestamps" and wgsl["timing"]["median_s"] > 0
    sim = results["cpu-sim"]
    assert uses_kernel_api(examples_dir() / example)  # one kernel body, on the kernel API
    assert sim["status"] == "ok", sim["error"]
    assert sim["verified"] is True, sim["check"]
    assert sim["findings"]["findings"] == [], sim["findings"]  # no false positives
    assert proc.returncode == 0, proc.stderr
