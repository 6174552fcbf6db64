"""The new examples' cpu results against numpy on the same inputs (fed through `npy`
initializers): the cpu backend is every other backend's reference, and it runs the same kernel
body, so this is what ties the body itself to the intended computation. wgsl (llvmpipe) runs in
the same run and must verify against the cpu."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from workbench.build.toolchains import detect
from workbench.run.service import RunService
from workbench.run.timing import TimingOptions

pytestmark = pytest.mark.slow

ONE_SAMPLE = TimingOptions(min_n=1, min_time_s=0.0, warmup_max_n=0, warmup_max_s=0.0, max_time_s=0.1)


def run_with_input(
    root: Path, cache: Path, init: str, array: np.ndarray, sizes: dict[str, int]
) -> dict[str, np.ndarray]:
    """Replace the manifest's `init` (once) with `array` as x.npy; the cpu backend's outputs."""
    np.save(root / "input.npy", array)
    manifest = root / "workbench.toml"
    text = manifest.read_text()
    assert text.count(init) == 1, init
    manifest.write_text(text.replace(init, 'init = { kind = "npy", path = "input.npy" }'))
    service = RunService(timing=ONE_SAMPLE)
    try:
        report = service.run(root, backends=["cpu", "wgsl"], sizes=sizes, cache_dir=cache)
    finally:
        service.close()
    results = {r.backend: r for r in report.results}
    assert results["cpu"].status == "ok", results["cpu"].error
    assert results["wgsl"].status == "ok" and results["wgsl"].check.passed, results["wgsl"].check
    return report.outputs["cpu"]


@pytest.fixture(autouse=True)
def host_cargo():
    if not detect("cpu").found:
        pytest.skip("no host cargo: run packaging/bootstrap.sh setup")


# 100,000: seven workgroups of 512 × 32 on every backend. 2^20 + 12,345: 65 tiles, so the cpu's
# own grid (`[kernel.launch.cpu]`: at most 64 workgroups) has each invocation count 33 elements
# (the 63rd workgroup's partly past n, the 64th's all), where wgsl runs the GPUs' 65 of 32 each.
@pytest.mark.parametrize("n", [100_000, 2**20 + 12_345])
def test_histogram_counts_what_bincount_counts(example_copy, shared_cache_dir, n):
    # Values beyond a byte too: the kernel bins v % 256; a skewed draw so the bins differ.
    x = (np.random.default_rng(3).zipf(1.5, n) % 100_000).astype(np.uint32)
    init = 'init = { kind = "random", low = 0, high = 255 }'
    out = run_with_input(example_copy("histogram"), shared_cache_dir, init, x, {"n": n})
    np.testing.assert_array_equal(out["bins"], np.bincount(x % 256, minlength=256).astype(np.uint32))


def test_transpose_is_numpys_transpose(example_copy, shared_cache_dir):
    m, n = 77, 45
    a = np.random.default_rng(4).standard_normal((m, n)).astype(np.float32)
    init = 'init = { kind = "random", low = -1.0, high = 1.0 }'
    out = run_with_input(example_copy("transpose"), shared_cache_dir, init, a.reshape(-1), {"m": m, "n": n})
    np.testing.assert_array_equal(out["b"].reshape(n, m), a.T)


def test_stencil2d_is_the_five_point_mean_inside_and_a_copy_on_the_boundary(example_copy, shared_cache_dir):
    width, height = 45, 77  # partial workgroups in both directions
    grid = np.random.default_rng(5).uniform(-1, 1, (height, width)).astype(np.float32)
    init = 'init = { kind = "random", low = -1.0, high = 1.0 }'
    sizes = {"width": width, "height": height}
    out = run_with_input(example_copy("stencil2d"), shared_cache_dir, init, grid.reshape(-1), sizes)
    expected = grid.copy()
    c = grid[1:-1, 1:-1]
    # The kernel's order of additions, in f32: ((((c + w) + e) + s) + n) / 5.
    expected[1:-1, 1:-1] = (
        c + grid[1:-1, :-2] + grid[1:-1, 2:] + grid[2:, 1:-1] + grid[:-2, 1:-1]
    ) / np.float32(5)
    np.testing.assert_array_equal(out["x_new"].reshape(height, width), expected)


def test_softmax_is_within_a_few_ulp_of_numpys_float64_softmax(example_copy, shared_cache_dir):
    rows, cols = 20, 700
    x = np.random.default_rng(6).uniform(-4, 4, (rows, cols)).astype(np.float32)
    init = 'init = { kind = "random", low = -4.0, high = 4.0 }'
    out = run_with_input(
        example_copy("softmax"), shared_cache_dir, init, x.reshape(-1), {"rows": rows, "cols": cols}
    )
    shifted = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    expected = (shifted / shifted.sum(axis=1, keepdims=True)).astype(np.float32)
    got = out["y"].reshape(rows, cols)
    ulps = np.abs(got.view(np.int32).astype(np.int64) - expected.view(np.int32).astype(np.int64))
    # expf within 1 ULP; the f32 sum rounds at most 11 times along any path (3 terms per
    # invocation, 8 tree levels: 5.5 ULP); the division 0.5 ULP.
    assert ulps.max() <= 8, ulps.max()
    assert ulps.mean() < 2, ulps.mean()
