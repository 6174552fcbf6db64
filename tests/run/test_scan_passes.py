"""The scan example's two kernels, run one after the other as its README says (pass 1's outputs
fed to pass 2 through `npy` initializers), give the inclusive prefix sum numpy computes; the
wgsl reference of each pass matches the cpu run of the same inputs."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.build.toolchains import detect
from workbench.run.service import RunService
from workbench.run.timing import TimingOptions

pytestmark = pytest.mark.slow

#: Not a multiple of the 2304-element tile: the last tile is partial (70,000 = 30 * 2304 + 880).
N = 70_000
ONE_SAMPLE = TimingOptions(min_n=1, min_time_s=0.0, warmup_max_n=0, warmup_max_s=0.0, max_time_s=0.1)


def run_pass(service: RunService, root, kernel: str, cache) -> dict[str, np.ndarray]:
    report = service.run(root, kernel=kernel, backends=["cpu", "wgsl"], sizes={"n": N}, cache_dir=cache)
    results = {r.backend: r for r in report.results}
    assert results["cpu"].status == "ok", results["cpu"].error
    assert results["wgsl"].status == "ok", results["wgsl"].error
    assert results["wgsl"].check.passed, results["wgsl"].check
    return report.outputs["cpu"]


def test_pass_one_then_pass_two_is_the_inclusive_prefix_sum(example_copy, shared_cache_dir):
    if not detect("cpu").found:
        pytest.skip("no host cargo: run packaging/bootstrap.sh setup")
    root = example_copy("scan")
    x = np.random.default_rng(7).integers(0, 100, N, dtype=np.uint32, endpoint=True)
    np.save(root / "x.npy", x)
    manifest = root / "workbench.toml"
    random_x = 'init = { kind = "random", low = 0, high = 100 }'
    random_pass_two = 'init = { kind = "random", low = 0, high = 230400 }'
    text = manifest.read_text()
    assert text.count(random_x) == 1 and text.count(random_pass_two) == 2
    manifest.write_text(text.replace(random_x, 'init = { kind = "npy", path = "x.npy" }'))
    service = RunService(timing=ONE_SAMPLE)
    try:
        first = run_pass(service, root, "scan", shared_cache_dir)
        tiles = -(-N // 2304)
        assert first["sums"].shape == (tiles,) and int(first["sums"].sum()) == int(x.sum())
        np.save(root / "sums.npy", first["sums"])
        np.save(root / "y.npy", first["y"])
        text = manifest.read_text()
        text = text.replace(random_pass_two, 'init = { kind = "npy", path = "sums.npy" }', 1)
        manifest.write_text(text.replace(random_pass_two, 'init = { kind = "npy", path = "y.npy" }', 1))
        second = run_pass(service, root, "scan_add", shared_cache_dir)
    finally:
        service.close()
    expected = np.cumsum(x, dtype=np.uint64).astype(np.uint32)
    assert not np.array_equal(first["y"], expected)  # pass 1 alone scans tiles only
    np.testing.assert_array_equal(second["y"], expected)
