"""Reading a shader's declarations (entry points, bindings and their access, overrides)."""

from __future__ import annotations

import pytest

from workbench.run.runtimes.shader_info import spirv_info, wgsl_info


def test_spirv_info_of_real_rust_gpu_modules(rust_gpu_spirv):
    headless = spirv_info((rust_gpu_spirv / "headless.comp.spv").read_bytes())
    assert headless.entry_points == ["main_cs"]
    assert headless.bindings == {0: "storage"} and headless.overrides == ["0"]
    particles = spirv_info((rust_gpu_spirv / "particle_integrate.comp.spv").read_bytes())
    assert particles.entry_points == ["main_cs"]
    assert particles.bindings == {0: "storage", 1: "uniform"} and not particles.uses_immediates


def test_wgsl_info_of_saxpy(saxpy_dir, shaders_dir):
    info = wgsl_info((saxpy_dir / "reference" / "saxpy.wgsl").read_text())
    assert info.entry_points == ["main"]
    assert info.bindings == {
        0: "uniform",
        1: "read-only-storage",
        2: "storage",
        3: "read-only-storage",
        4: "storage",
    }
    assert info.names == {0: "params", 1: "x", 2: "y", 3: "x4", 4: "y4"}  # x4, y4: the vec4 views
    push = wgsl_info((shaders_dir / "scale_push.wgsl").read_text())
    assert push.uses_immediates and push.bindings == {0: "read-only-storage", 1: "storage"}
    overrides = wgsl_info((shaders_dir / "scale_override.wgsl").read_text())
    assert overrides.overrides == ["n", "scale", "offset_value", "block"]


def test_wgsl_info_ignores_comments_and_other_groups():
    info = wgsl_info(
        "// @group(0) @binding(7) var<storage, read_write> gone: array<f32>;\n"
        "@binding(2) @group(0) var<storage> implicit_read: array<f32>;\n"
        "@group(1) @binding(0) var<uniform> elsewhere: vec4<f32>;\n"
    )
    assert info.bindings == {2: "read-only-storage"}


def test_spirv_info_rejects_non_spirv():
    with pytest.raises(ValueError, match="bad magic number"):
        spirv_info(b"\0" * 40)
    with pytest.raises(ValueError, match="multiple of 4"):
        spirv_info(b"\x03\x02\x23\x07" + b"\0" * 17)
