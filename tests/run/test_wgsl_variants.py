"""benchmarks/wgsl_variants.py, the experiment behind issue 13's WGSL gap: every variant of the
matmul, reduction, softmax, scan, warp_reduce and stencil2d reference WGSL builds as the GPU host gets it (an exported
artifact folder), runs on llvmpipe through the RunService, verifies against the CPU build and gives
output bit for bit equal to V0's (the reference); so does the loop form it replaced (v0_loop)
created with some of wgpu's shader runtime checks off (the start-up hook in
benchmarks/wgsl_variants/runtime_checks/)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from tests.run.conftest import FAST_TIMING

REPO = Path(__file__).resolve().parents[2]


def _script():
    path = REPO / "benchmarks" / "wgsl_variants.py"
    spec = importlib.util.spec_from_file_location("wgsl_variants", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


VARIANTS = _script()

#: Small sizes that are not multiples of the tile / block: partial tiles and blocks are exercised.
SIZES = {
    "matmul": {"m": 40, "n": 48, "k": 40},
    "reduction": {"n": 5000},
    "softmax": {"rows": 6, "cols": 1000},
    "scan": {"n": 70000},
    "warp_reduce": {"n": 70000},  # a partial last block of 4096: its tested loop runs too
    # Neither a multiple of the 64-wide block nor of the 16 rows a workgroup computes: the last
    # workgroups' loads, halo and stores are cut off in both directions.
    "stencil2d": {"width": 101, "height": 75},
}


@pytest.mark.parametrize("name", sorted(VARIANTS.EXAMPLES))
def test_each_variant_says_what_it_changes(name):
    found = VARIANTS.variants(VARIANTS.EXAMPLES[name])
    assert found[0][0] == VARIANTS.V0 and found[0][1].name == f"{name}.wgsl"
    assert len(found) >= 2, [n for n, _ in found]
    # The loop form the reference replaced is kept: the runtime-check reruns start from it.
    assert VARIANTS.CHECKED in dict(found), [n for n, _ in found]
    reference = found[0][1].read_text()
    for variant, path in found[1:]:
        assert VARIANTS.header(path).startswith(variant[:2].upper() + ":"), (variant, VARIANTS.header(path))
        assert path.read_text() != reference


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(VARIANTS.EXAMPLES))
def test_variants_verify_and_equal_v0_bit_for_bit(name, tmp_path, shared_cache_dir):
    example = VARIANTS.EXAMPLES[name]
    artifacts = tmp_path / "artifacts"
    info = VARIANTS.prepare(example, artifacts, str(shared_cache_dir), ["cpu"])
    assert info["reference_backends"] == ["cpu"]
    for entry in info["variants"]:
        assert (artifacts / entry["name"] / "wgsl" / "build.json").is_file()
        assert (artifacts / entry["name"] / "cpu" / "build.json").is_file()
    rows = VARIANTS.measure(artifacts, SIZES[name], "cpu", None, seed=3, timing=FAST_TIMING)
    modes = [mode for mode, _, _ in VARIANTS.CHECK_MODES]
    assert [r["variant"] for r in rows] == [e["name"] for e in info["variants"]] + modes
    for row in rows:
        assert row["status"] == "ok", row
        assert row["verified"] is True, row
        assert row["bit_identical_to_v0"] is True, row
        assert row["median_s"] > 0 and row["ratio_to_v0"] > 0
    # The v0_loop reruns went through wgpu-native's trusted module creation with their checks.
    for row in rows[-len(modes) :]:
        assert row["modules_created_with_these_checks"] >= 1, row


def test_sizes_from_the_command_line():
    stencil = VARIANTS.EXAMPLES["stencil2d"]
    assert VARIANTS.kernel_sizes(stencil, ["8192"]) == ({"width": 8192, "height": 8192}, "8192")
    assert VARIANTS.kernel_sizes(stencil, ["width=8193", "height=1031"]) == (
        {"width": 8193, "height": 1031},
        "8193x1031",
    )
    assert VARIANTS.kernel_sizes(stencil, ["512", "height=75"]) == ({"width": 512, "height": 75}, "512x75")
    default = VARIANTS.DEFAULT_SIZE["stencil2d"]
    assert VARIANTS.kernel_sizes(stencil, None) == ({"width": default, "height": default}, str(default))
    assert VARIANTS.kernel_sizes(VARIANTS.EXAMPLES["matmul"], ["40"])[0] == {"m": 40, "n": 40, "k": 40}
    for bad in (["depth=3"], ["8", "9"], ["width=x"]):
        with pytest.raises(VARIANTS.WorkbenchError):
            VARIANTS.kernel_sizes(stencil, bad)
