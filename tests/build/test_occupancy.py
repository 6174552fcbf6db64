"""Occupancy from registers, shared memory and threads per block (workbench.build.occupancy).

Against the H200 driver's own answers (cuOccupancyMaxActiveBlocksPerMultiprocessor, captured on
the GPU host by benchmarks/gpu_host/counters_capture.sh: tests/build/data/occupancy-h200.json)
and against values worked by hand from NVIDIA's per-compute-capability tables."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.build.occupancy import TABLE, build_occupancy, occupancy
from workbench.project import Project

DATA = Path(__file__).parent / "data"
EXAMPLES = Path(__file__).resolve().parents[2] / "resources" / "examples"


def test_every_h200_driver_answer_is_matched():
    captured = json.loads((DATA / "occupancy-h200.json").read_text())
    attrs = captured["attributes"]
    sm = TABLE["sm_90"]
    # The table row is the device's own report.
    assert (attrs["compute_capability_major"], attrs["compute_capability_minor"]) == (9, 0)
    assert attrs["max_threads_per_multiprocessor"] // 32 == sm.max_warps
    assert attrs["max_blocks_per_multiprocessor"] == sm.max_blocks
    assert attrs["max_registers_per_multiprocessor"] == sm.registers
    assert attrs["max_shared_memory_per_multiprocessor"] == sm.shared_per_sm
    assert attrs["max_shared_memory_per_block_optin"] == sm.shared_per_block
    assert attrs["reserved_shared_memory_per_block"] == sm.shared_reserved
    rows = captured["rows"]
    # The capture spans every limit: registers 10..254, static and dynamic shared memory, 32..1024 threads.
    assert {r["registers"] for r in rows} >= {10, 14, 20, 32, 40, 56, 72, 96, 128, 168, 254}
    assert len({r["blocks_per_sm"] for r in rows}) > 10
    mismatches = [
        (r, got.blocks_per_sm)
        for r in rows
        if (got := occupancy("sm_90", r["block_threads"], r["registers"], r["shared_bytes"],
                             r["dynamic_shared_bytes"])).blocks_per_sm != r["blocks_per_sm"]
    ]  # fmt: skip
    assert mismatches == []
    limiting = {tuple(occupancy("sm_90", r["block_threads"], r["registers"], r["shared_bytes"],
                                r["dynamic_shared_bytes"]).limited_by) for r in rows}  # fmt: skip
    assert {("warps",), ("registers",), ("shared memory",), ("blocks",)} <= limiting


# (arch, threads, registers, static shared, dynamic shared) -> (blocks, warps, limited by)
# worked from the tables: registers per warp = regs x 32 rounded up to 256, warps per sub-partition
# = (registers per SM / 4) // that; shared per block = bytes + reserved, rounded up to the unit.
WORKED = [
    (("sm_80", 256, 32, 0, 0), (8, 64, ["warps", "registers"])),  # 1024/warp: 16 warps x 4 = 64
    (("sm_86", 128, 64, 0, 0), (8, 32, ["registers"])),  # 2048/warp: 8 warps x 4 = 32 of 48
    (("sm_90", 256, 37, 0, 0), (6, 48, ["registers"])),  # 37 -> 1280/warp: 12 x 4 = 48 warps, 6 blocks of 8
    (("sm_90", 256, 10, 49152, 0), (4, 32, ["shared memory"])),  # 50176 B per block: 233472 // 50176 = 4
    (("sm_90", 64, 16, 0, 0), (32, 64, ["warps", "blocks"])),  # 2 warps a block, 32 blocks
    (("sm_89", 64, 16, 0, 0), (24, 48, ["warps", "blocks"])),  # 24 resident blocks on Ada
    (("sm_75", 1024, 32, 0, 0), (1, 32, ["warps"])),  # 32 warps per SM on Turing (registers would allow 2)
    (("sm_70", 96, 10, 0, 32768), (3, 9, ["shared memory"])),  # 96 KiB // 32 KiB, no reservation before sm_80
    (("sm_90", 32, 10, 0, 0), (32, 32, ["blocks"])),  # one-warp blocks: the block limit
]


@pytest.mark.parametrize(("args", "expected"), WORKED)
def test_worked_values_from_the_tables(args, expected):
    got = occupancy(*args)
    assert (got.blocks_per_sm, got.warps_per_sm, got.limited_by) == expected
    assert got.problem is None


def test_the_text_says_warps_and_what_limits_them():
    assert (
        occupancy("sm_90", 1024, 32).text()
        == "64 of 64 warps per SM (100%); limited by: warps, registers at 1024 threads"
    )
    assert (
        occupancy("sm_90", 256, 64).text()
        == "32 of 64 warps per SM (50%); limited by: registers at 256 threads"
    )
    d = occupancy("sm_90a", 256, 64).to_dict()
    assert d["fraction"] == 0.5 and d["limits"]["registers"] == 4 and d["text"].startswith("32 of 64")


def test_a_block_that_cannot_launch_says_why():
    assert (
        occupancy("sm_90", 1024, 128)
        .text()
        .startswith("no block fits: 1024 threads × 128 registers need 131072")
    )
    assert "2048 threads per block" in occupancy("sm_90", 2048, 8).text()
    assert "240000 bytes of shared memory" in occupancy("sm_90", 128, 8, 0, 240000).text()
    with pytest.raises(ValueError, match="no occupancy table for 'sm_35'"):
        occupancy("sm_35", 128, 8)


def test_a_tunable_that_changes_the_block_size_changes_the_occupancy():
    kernel = Project.open(EXAMPLES / "saxpy").manifest.kernel()
    resources = {"saxpy": {"registers": 40, "shared_bytes": 0}}
    default = build_occupancy([kernel], "nvptx", resources, "sm_90")["saxpy"]
    big = build_occupancy([kernel], "nvptx", resources, "sm_90", tunables={"threads": 1024})["saxpy"]
    assert (default.threads, default.warps_per_sm) == (256, 48)  # 1280/warp: 48 warps, 6 blocks of 8
    assert (big.threads, big.warps_per_sm) == (1024, 32)  # 48 warps' room holds one 32-warp block
    # No ptxas report (a cpu or wgsl build): no occupancy, not a guess.
    assert build_occupancy([kernel], "cpu", {"saxpy": {"registers": None}}, None) == {}


def test_workbench_build_prints_each_cuda_builds_occupancy(example_copy, cache):
    """A real cuda-c build (nvcc + ptxas -v): the CLI's JSON and text give the occupancy of its
    registers at the launch's 256 threads, for the target asked for."""
    import shutil
    import subprocess
    import sys

    if not shutil.which("nvcc"):
        pytest.skip("nvcc is not installed here")
    root = example_copy("saxpy")
    base = [sys.executable, "-m", "workbench", "build", str(root), "--cache-dir", str(cache)]
    proc = subprocess.run([*base, "--backend", "cuda-c", "--json", "--target", "8.6"], capture_output=True, text=True,
                          timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = {r["backend"]: r for r in json.loads(proc.stdout)["results"]}
    registers = rows["cuda-c"]["resources"]["saxpy"]["registers"]
    expected = occupancy("sm_86", 256, registers, rows["cuda-c"]["resources"]["saxpy"]["shared_bytes"])
    assert rows["cuda-c"]["occupancy"]["saxpy"] == expected.to_dict()
    assert rows["cuda-c"]["occupancy"]["saxpy"]["max_warps"] == 48  # sm_86's table, not sm_90's
    text = subprocess.run([*base, "--backend", "cuda-c,cpu"], capture_output=True, text=True, timeout=600)
    assert text.returncode == 0, text.stdout + text.stderr
    assert "cpu: saxpy: occupancy" not in text.stdout  # no ptxas report: nothing claimed
    assert (
        "  cuda-c: saxpy: occupancy 64 of 64 warps per SM (100%); limited by: warps at 256 threads"
        in text.stdout
    )


def test_a_cuda_devices_context_gives_its_limits_and_the_builds_occupancy_on_it(example_copy, cache):
    """The H200's device record (as `workbench run` recorded it there) and a real cuda-c build made
    for sm_86: the device's rows use the device's sm_90 table, not the build's target."""
    import shutil

    from workbench.build import build_project
    from workbench.build.occupancy import arch_of, device_rows

    recorded = json.loads((Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "counters-h200"
                           / "run-saxpy.json").read_text())  # fmt: skip
    h200 = recorded["results"][0]["device"]
    assert (h200["name"], arch_of(h200["compute_capability"])) == ("NVIDIA H200", "sm_90")
    assert device_rows({"runtime": "cpu"}) == []
    assert device_rows({"compute_capability": "3.5"}) == [("Occupancy", "no occupancy table for sm_35")]
    assert device_rows(h200)[0] == (
        "Occupancy limits (sm_90)", "64 warps · 32 blocks · 65536 registers · 228 KiB shared per SM"
    )  # fmt: skip
    if not shutil.which("nvcc"):
        pytest.skip("nvcc is not installed here")
    root = example_copy("saxpy")
    project = Project.open(root)
    (result,) = build_project(project, ["cuda-c"], cache_dir=cache, target="8.6")
    registers = result.resources["saxpy"]["registers"]
    rows = dict(device_rows(h200, project, [result]))
    assert rows["Occupancy: cuda-c saxpy"] == occupancy("sm_90", 256, registers).text()
