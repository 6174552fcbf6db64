"""Every bundled example verifies on wgpu (llvmpipe, timestamp timing) and on cpu-sim (its kernel
body with GPU semantics and checks, which find nothing) against its cpu build, and its check
fails an all-zero output (a check an idle kernel passes proves nothing)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from workbench.build.toolchains import detect
from workbench.kernel_api import uses_kernel_api
from workbench.project import Project, examples_dir
from workbench.run.service import RunService
from workbench.run.timing import TimingOptions
from workbench.run.verify import check_outputs

#: Small sizes: these tests check results, not speed.
SIZES = {
    "saxpy": ["n=65536"],
    "reduction": ["n=131072"],
    "matmul": ["m=96", "n=64", "k=80"],
    "bitonic": ["n=65536", "j=8", "k=16"],
    "histogram": ["n=65536"],
    "scan": ["n=65536"],
    "transpose": ["m=100", "n=70"],  # not multiples of the tile: partial tiles in both directions
    "stencil2d": ["width=100", "height=70"],
    "softmax": ["rows=64", "cols=1000"],
    "warp_reduce": ["n=131072"],
}

#: Every kernel of every example (scan has two: its two passes).
KERNELS = [
    (example, k.name)
    for example in sorted(SIZES)
    for k in Project.open(examples_dir() / example).manifest.kernels
]

#: One timed sample: the all-zero test needs the reference's outputs, not its speed.
ONE_SAMPLE = TimingOptions(min_n=1, min_time_s=0.0, warmup_max_n=0, warmup_max_s=0.0, max_time_s=0.1)


def test_every_bundled_example_has_test_sizes():
    bundled = {p.name for p in examples_dir().iterdir() if (p / "workbench.toml").is_file()}
    assert bundled == set(SIZES)


@pytest.mark.slow
@pytest.mark.parametrize(("example", "kernel"), KERNELS)
def test_example_verifies_on_llvmpipe_with_timestamps(example, kernel, shared_cache_dir):
    if not detect("cpu").found:
        pytest.skip("no host cargo: run packaging/bootstrap.sh setup")
    sizes = [arg for size in SIZES[example] for arg in ("--size", size)]
    proc = subprocess.run(
        [sys.executable, "-m", "workbench", "run", str(examples_dir() / example), "--backend", "cpu,cpu-sim,wgsl",
         "--kernel", kernel, "--cache-dir", str(shared_cache_dir), "--json", *sizes],
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


@pytest.mark.slow
@pytest.mark.parametrize(("example", "kernel"), KERNELS)
def test_the_check_fails_an_all_zero_output(example, kernel, shared_cache_dir):
    """The example's own tolerances, against its real cpu output at the test sizes."""
    if not detect("cpu").found:
        pytest.skip("no host cargo: run packaging/bootstrap.sh setup")
    project = Project.open(examples_dir() / example)
    sizes = {name: int(value) for name, value in (size.split("=") for size in SIZES[example])}
    service = RunService(timing=ONE_SAMPLE)
    try:
        report = service.run(
            project, backends=["cpu"], kernel=kernel, sizes=sizes, cache_dir=shared_cache_dir
        )
    finally:
        service.close()
    assert report.results[0].status == "ok", report.results[0].error
    reference = report.outputs["cpu"]
    assert reference
    check = project.manifest.kernel(kernel).check
    zeros = {name: np.zeros_like(array) for name, array in reference.items()}
    passed, record = check_outputs(zeros, reference, check.rtol, check.atol, check.max_ulp)
    assert not passed and record.bad > 0, record
    passed, record = check_outputs(dict(reference), reference, check.rtol, check.atol, check.max_ulp)
    assert passed and not record.weak, record  # the same output passes, and not weakly


@pytest.mark.slow
def test_warp_reduce_says_not_supported_on_an_adapter_without_subgroups(shared_cache_dir):
    wgpu = pytest.importorskip("wgpu")
    adapters = wgpu.gpu.enumerate_adapters_sync()
    without = [k for k, a in enumerate(adapters) if "subgroup" not in a.features]
    if not without:
        pytest.skip("every wgpu adapter here has subgroups")
    index = without[0]
    proc = subprocess.run(
        [sys.executable, "-m", "workbench", "run", str(examples_dir() / "warp_reduce"), "--backend", "cpu,wgsl",
         "--device", f"cpu,wgpu:{index}", "--size", "n=4096", "--cache-dir", str(shared_cache_dir), "--no-record",
         "--json"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    results = {r["backend"]: r for r in json.loads(proc.stdout)["results"]}
    assert results["cpu"]["status"] == "ok"
    wgsl = results["wgsl"]
    assert wgsl["status"] == "error" and wgsl["device"]["name"] == adapters[index].info["device"]
    assert wgsl["error"].startswith(f"not supported on {adapters[index].info['device']}: "), wgsl["error"]
    assert "needs the wgpu feature 'subgroup'" in wgsl["error"]
