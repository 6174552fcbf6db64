"""A sweep judges only what the run engine could not: the reference's own output against the
reference at the default configuration. Every result the engine compared keeps the engine's
verdict (or becomes "not verified (reference failed)" when that reference fails), on real wgpu
devices (llvmpipe through Vulkan and through OpenGL)."""

from __future__ import annotations

import pytest

from workbench.profile.tuning.sweep_space import Point
from workbench.profile.tuning.tune import SweepRunner
from workbench.project import Project


def test_a_second_device_of_the_reference_keeps_the_engines_verdict(
    example_copy, tune_service, shared_cache_dir, break_wgsl_at
):
    devices = ["wgpu:0", "wgpu:1"]
    root = example_copy("saxpy", tunables=("threads",))
    toml = root / "workbench.toml"
    toml.write_text(toml.read_text().replace('reference = "cpu"', 'reference = "wgsl"', 1))
    break_wgsl_at(root, 64)  # wrong at threads=64 on every device alike
    project = Project.open(root)
    kernel = project.manifest.kernel()
    assert kernel.check.reference == "wgsl" and kernel.default_tunables() == {"threads": 256}
    runner = SweepRunner(
        project, None, ["wgsl"], devices, run_service=tune_service, cache_dir=shared_cache_dir
    )
    points = [Point({"threads": t}, {"n": 2048}) for t in (256, 64)]
    result = runner.run(points)
    by = {(e["config"]["threads"], e["device"]): e for e in result.runs}
    if set(by) != {(t, d) for t in (256, 64) for d in devices} or any(
        e["status"] != "ok" for e in by.values()
    ):
        pytest.skip(
            f"two wgpu devices are needed here: {[(k, e['status'], e['error']) for k, e in by.items()]}"
        )

    # The default configuration: the reference device is the baseline; the other device keeps the
    # engine's comparison with it.
    assert by[(256, "wgpu:0")]["verified"] is True and by[(256, "wgpu:0")]["verdict"] == "reference"
    assert by[(256, "wgpu:1")]["verified"] is True and by[(256, "wgpu:1")]["verdict"] == "verified"
    # threads=64: the reference's output differs from its own at the default configuration, so it
    # fails; the second device agrees with it (the engine's check passed) but was compared with a
    # wrong output: not verified (reference failed), never failed by the first device's check.
    assert by[(64, "wgpu:0")]["verified"] is False and by[(64, "wgpu:0")]["verdict"] == "failed"
    second = by[(64, "wgpu:1")]
    assert second["verified"] is None and second["verdict"] == "not verified (reference failed)", second
