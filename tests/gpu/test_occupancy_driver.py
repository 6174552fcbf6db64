"""The occupancy calculator against the driver's own answer on this machine's GPU.

cuOccupancyMaxActiveBlocksPerMultiprocessor (through libcuda, workbench.build.occupancy_driver) on
the probe kernels' PTX (tests/build/data/occupancy_probe.cu): registers 10..254, static and dynamic
shared memory, 32..1024 threads per block, each answer compared with workbench.build.occupancy for
the device's compute capability. The H200's answers are also committed
(tests/build/data/occupancy-h200.json) and checked on every machine by tests/build/test_occupancy.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.build.occupancy import limits_for, occupancy
from workbench.build.occupancy_driver import Driver, driver_answers

PTX = Path(__file__).resolve().parents[1] / "build" / "data" / "occupancy_probe.ptx"


def test_the_calculator_matches_the_driver():
    driver = Driver(0)
    attrs = driver.attributes()
    driver.close()
    arch = f"sm_{attrs['compute_capability_major']}{attrs['compute_capability_minor']}"
    if limits_for(arch) is None:
        pytest.skip(f"no occupancy table for this GPU's {arch}")
    answers = driver_answers(
        PTX.read_bytes(),
        ["saxpy", "reduce_shared", "pressure_28", "pressure_72", "pressure_168", "shared_40960"],
        [32, 96, 256, 640, 1024],
        [0, 4096, 65536, 160000],
    )
    assert len(answers["rows"]) > 60
    wrong = [
        r for r in answers["rows"]
        if occupancy(arch, r["block_threads"], r["registers"], r["shared_bytes"],
                     r["dynamic_shared_bytes"]).blocks_per_sm != r["blocks_per_sm"]
    ]  # fmt: skip
    assert wrong == []
