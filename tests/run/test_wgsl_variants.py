"""benchmarks/wgsl_variants.py, the experiment behind issue 13's WGSL gap: every variant of the
matmul reference WGSL builds as the GPU host gets it (an exported artifact folder), runs on llvmpipe
through the RunService, verifies against the CPU build and gives C bit for bit equal to V0's; so
does V0 created with some of wgpu's shader runtime checks off (the start-up hook in
benchmarks/wgsl_variants/runtime_checks/)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.run.conftest import FAST_TIMING

REPO = Path(__file__).resolve().parents[2]


def _script():
    path = REPO / "benchmarks" / "wgsl_variants.py"
    spec = importlib.util.spec_from_file_location("wgsl_variants", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


VARIANTS = _script()


def test_each_variant_says_what_it_changes():
    found = VARIANTS.variants()
    assert found[0][0] == VARIANTS.V0 and found[0][1].name == "matmul.wgsl"
    assert len(found) >= 5, [name for name, _ in found]
    reference = found[0][1].read_text()
    for name, path in found[1:]:
        assert VARIANTS.header(path).startswith(name[:2].upper() + ":"), (name, VARIANTS.header(path))
        assert path.read_text() != reference


@pytest.mark.slow
def test_variants_verify_and_equal_v0_bit_for_bit(tmp_path, shared_cache_dir):
    info = VARIANTS.prepare(tmp_path / "artifacts", str(shared_cache_dir), ["cpu"])
    assert info["reference_backends"] == ["cpu"]
    for entry in info["variants"]:
        assert (tmp_path / "artifacts" / entry["name"] / "wgsl" / "build.json").is_file()
        assert (tmp_path / "artifacts" / entry["name"] / "cpu" / "build.json").is_file()
    # 40 is not a multiple of the 16 x 16 tile: partial tiles (the zero padding) are exercised too.
    rows = VARIANTS.measure(tmp_path / "artifacts", {"m": 40, "n": 48, "k": 40}, "cpu", None, seed=3,
                            timing=FAST_TIMING)  # fmt: skip
    modes = [name for name, _, _ in VARIANTS.CHECK_MODES]
    assert [r["variant"] for r in rows] == [e["name"] for e in info["variants"]] + modes
    for row in rows:
        assert row["status"] == "ok", row
        assert row["verified"] is True, row
        assert row["bit_identical_to_v0"] is True, row
        assert row["median_s"] > 0 and row["ratio_to_v0"] > 0
    # The V0 reruns went through wgpu-native's trusted module creation with their checks.
    for row in rows[-len(modes) :]:
        assert row["modules_created_with_these_checks"] >= 1, row
