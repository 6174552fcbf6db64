"""The wgpu runtime on llvmpipe: WGSL and real rust-gpu SPIR-V, the three scalar modes, timestamps,
and naga's refusals turned into readable failures."""

from __future__ import annotations

import math
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from workbench.run.runtimes import RuntimeFailure
from workbench.run.spec import make_launch_spec

EXAMPLES = Path(__file__).resolve().parents[2] / "resources" / "examples"


def _buffer(name, type_, length, direction, binding):
    return {"name": name, "kind": "buffer", "type": type_, "length": length, "direction": direction,
            "binding": binding}  # fmt: skip


def _scalar(name, type_, value):
    return {"name": name, "kind": "scalar", "type": type_, "value": value}


def _spec(path, kind, entry, args, grid, mode="uniform", params_binding=None, override_ids=None,
          constants=None):  # fmt: skip
    return {
        "runtime": "wgpu", "backend": "wgsl" if kind == "wgsl" else "rust-gpu", "device_index": 0,
        "kernel": "test", "artifact": {"kind": kind, "path": str(path), "entry": entry},
        "args": args, "threads": [1, 1, 1], "grid": [grid, 1, 1],
        "wgpu": {"mode": mode, "params_binding": params_binding, "override_ids": override_ids or {}},
        "constants": constants or {},
    }  # fmt: skip


def test_saxpy_wgsl_matches_numpy_with_timestamps(wgpu_runtime, llvmpipe_index, saxpy_kernel, saxpy_dir, rng):
    n = 5000  # not a multiple of the workgroup size: the bounds check matters
    reference = saxpy_kernel.reference["wgsl"]
    spec = make_launch_spec(
        saxpy_kernel, "wgsl", {"artifact": reference, "entry": "main", "kind": "wgsl"},
        saxpy_kernel.symbols({"n": n}), llvmpipe_index, artifact_dir=saxpy_dir,
    )  # fmt: skip
    x = rng.uniform(-1, 1, n).astype(np.float32)
    y = rng.uniform(-1, 1, n).astype(np.float32)
    with wgpu_runtime.prepare(spec, llvmpipe_index) as prepared:
        assert prepared.timer_method == "wgpu-timestamps"
        assert prepared.timer_resolution_s > 0
        prepared.upload({"x": x, "y": y})
        once = prepared.launch(1)
        out = prepared.download(["y"])["y"]
        prepared.upload({"x": x, "y": y})
        three = prepared.launch(3)
        out3 = prepared.download(["y"])["y"]
    assert once > 0 and three > 0
    a = np.float32(2.5)
    np.testing.assert_array_equal(out, a * x + y)
    np.testing.assert_array_equal(out3, a * x + (a * x + (a * x + y)))  # three launches, in order


def test_transfers_in_slices_round_trip_into_shared_memory(
    wgpu_runtime, llvmpipe_index, saxpy_kernel, saxpy_dir, rng, monkeypatch
):
    """Uploads and downloads go slice by slice through a bounded staging buffer (a partial last
    slice included), and `download_into` writes straight into a memfd segment, as a run does."""
    from workbench.run import shm
    from workbench.run.runtimes import wgpu_runtime as module

    monkeypatch.setattr(module, "TRANSFER_CHUNK", 4096)  # 1000 elements per slice
    n = 5003  # 20012 bytes: four full slices and a partial one
    spec = make_launch_spec(
        saxpy_kernel, "wgsl", {"artifact": saxpy_kernel.reference["wgsl"], "entry": "main", "kind": "wgsl"},
        saxpy_kernel.symbols({"n": n}), llvmpipe_index, artifact_dir=saxpy_dir,
    )  # fmt: skip
    x = rng.uniform(-1, 1, n).astype(np.float32)
    y = rng.uniform(-1, 1, n).astype(np.float32)
    segment = shm.SharedArray(n, np.float32, label="test-y")
    segment.array[...] = np.nan
    with wgpu_runtime.prepare(spec, llvmpipe_index) as prepared:
        prepared.upload({"x": x, "y": y})
        assert_untouched = prepared.download(["x", "y"])
        prepared.launch(1)
        prepared.download_into({"y": segment.array})
        with pytest.raises(RuntimeFailure, match="holds 5003"):
            prepared.download_into({"y": np.empty(n - 1, np.float32)})
    np.testing.assert_array_equal(assert_untouched["x"], x)
    np.testing.assert_array_equal(assert_untouched["y"], y)
    np.testing.assert_array_equal(segment.array, np.float32(2.5) * x + y)


def test_push_constant_scalars(wgpu_runtime, llvmpipe_index, shaders_dir, rng):
    n = 1000
    args = [_scalar("n", "u32", n), _scalar("a", "f32", -1.5), _scalar("b", "f32", 0.25),
            _buffer("x", "f32", n, "in", 0), _buffer("out", "f32", n, "out", 1)]  # fmt: skip
    spec = _spec(shaders_dir / "scale_push.wgsl", "wgsl", "main", args, math.ceil(n / 64), mode="push")
    x = rng.uniform(-1, 1, n).astype(np.float32)
    with wgpu_runtime.prepare(spec, llvmpipe_index) as prepared:
        prepared.upload({"x": x, "out": np.zeros(n, np.float32)})
        prepared.launch(1)
        out = prepared.download(["out"])["out"]
    np.testing.assert_array_equal(out, np.float32(-1.5) * x + np.float32(0.25))


def test_override_scalars_and_tunable(wgpu_runtime, llvmpipe_index, shaders_dir, rng):
    n, block = 777, 128
    args = [_scalar("n", "u32", n), _scalar("scale", "f32", 3.0), _scalar("offset", "f32", -2.0),
            _buffer("x", "f32", n, "in", 0), _buffer("out", "f32", n, "out", 1)]  # fmt: skip
    spec = _spec(
        shaders_dir / "scale_override.wgsl", "wgsl", "main", args, math.ceil(n / block),
        mode="override", override_ids={"offset": "offset_value"}, constants={"block": block},
    )  # fmt: skip
    x = rng.uniform(-1, 1, n).astype(np.float32)
    with wgpu_runtime.prepare(spec, llvmpipe_index) as prepared:
        prepared.upload({"x": x, "out": np.full(n, 9.0, np.float32)})
        prepared.launch(1)
        out = prepared.download(["out"])["out"]
    # Only covered if the tunable reached the shader: ceil(777/128) groups of 64 would miss some.
    np.testing.assert_array_equal(out, x * np.float32(3.0) + np.float32(-2.0))


def test_uniform_scalars_of_mixed_types(wgpu_runtime, llvmpipe_index, shaders_dir, rng):
    n = 300
    args = [_buffer("data", "i32", n, "inout", 0), _scalar("n", "u32", n), _scalar("s", "f32", 10.0),
            _buffer("w", "f32", n, "in", 1), _scalar("k", "i32", -3)]  # fmt: skip
    spec = _spec(shaders_dir / "mixed_uniform.wgsl", "wgsl", "main", args, math.ceil(n / 32),
                 params_binding=3)  # fmt: skip
    data = rng.integers(-1000, 1000, n).astype(np.int32)
    w = rng.uniform(-1, 1, n).astype(np.float32)
    with wgpu_runtime.prepare(spec, llvmpipe_index) as prepared:
        prepared.upload({"data": data, "w": w})
        prepared.launch(1)
        out = prepared.download(["data", "w"])
    expected = data * -3 + np.floor(w * np.float32(10.0)).astype(np.int32)
    np.testing.assert_array_equal(out["data"], expected)
    np.testing.assert_array_equal(out["w"], w)


def _fibonacci_like(v: int) -> int:
    if v < 2:
        return v
    cur, prev = 1, 1
    for _ in range(2, v):
        cur, prev = (cur + prev) & 0xFFFFFFFF, cur
    return cur


def test_rust_gpu_headless_with_spec_constant(wgpu_runtime, llvmpipe_index, rust_gpu_spirv):
    n = 32
    args = [_scalar("count", "u32", n), _buffer("values", "u32", n + 8, "inout", 0)]
    # More workgroups than elements: the spec constant (id 0) must stop the extra invocations.
    spec = _spec(rust_gpu_spirv / "headless.comp.spv", "spirv", "main_cs", args, n + 8,
                 mode="override", override_ids={"count": "0"})  # fmt: skip
    values = np.arange(n + 8, dtype=np.uint32) * 3
    with wgpu_runtime.prepare(spec, llvmpipe_index) as prepared:
        prepared.upload({"values": values})
        assert prepared.launch(1) > 0
        out = prepared.download(["values"])["values"]
    expected = [_fibonacci_like(int(v)) for v in values[:n]] + list(values[n:])
    np.testing.assert_array_equal(out, np.array(expected, dtype=np.uint32))


def test_rust_gpu_particle_integrate_with_uniform_block(wgpu_runtime, llvmpipe_index, rust_gpu_spirv, rng):
    count, delta_t = 1000, 0.0125
    args = [_scalar("delta_t", "f32", delta_t), _scalar("count", "u32", count),
            _buffer("particles", "f32", 8 * count, "inout", 0)]  # fmt: skip
    spec = _spec(rust_gpu_spirv / "particle_integrate.comp.spv", "spirv", "main_cs", args,
                 math.ceil(count / 256), params_binding=1)  # fmt: skip
    particles = rng.uniform(-10, 10, 8 * count).astype(np.float32)
    with wgpu_runtime.prepare(spec, llvmpipe_index) as prepared:
        prepared.upload({"particles": particles})
        prepared.launch(1)
        out = prepared.download(["particles"])["particles"].reshape(count, 8)
    expected = particles.reshape(count, 8).copy()
    expected[:, 0:3] += expected[:, 4:7] * np.float32(delta_t)  # pos.xyz += vel.xyz * dt
    np.testing.assert_array_equal(out, expected)


def test_naga_refusal_names_the_capability(wgpu_runtime, llvmpipe_index, shaders_dir, tmp_path):
    """A valid Vulkan SPIR-V module that naga refuses (glslang output, not rust-gpu's): the
    failure carries naga's own reason."""
    glslang = shutil.which("glslangValidator")
    if glslang is None:
        pytest.skip("glslangValidator (glslang-tools) is not installed")
    module = tmp_path / "refused.spv"
    subprocess.run(
        [glslang, "-V", "--target-env", "vulkan1.2", str(shaders_dir / "refused_device_scope.comp"),
         "-o", str(module)], check=True, capture_output=True,
    )  # fmt: skip
    spec = _spec(module, "spirv", "main", [_buffer("data", "u32", 4, "inout", 0)], 4)
    with pytest.raises(RuntimeFailure) as failure:
        wgpu_runtime.prepare(spec, llvmpipe_index)
    message = str(failure.value)
    assert "refused.spv" in message
    assert "unsupported capability VulkanMemoryModelDeviceScope" in message


def test_wgsl_error_carries_naga_diagnostic(wgpu_runtime, llvmpipe_index, tmp_path):
    shader = tmp_path / "broken.wgsl"
    shader.write_text(
        "@group(0) @binding(0) var<storage, read_write> v: array<u32>;\n"
        "@compute @workgroup_size(1) fn main() { v[0] = 1.5; }\n"
    )
    spec = _spec(shader, "wgsl", "main", [_buffer("v", "u32", 4, "inout", 0)], 1)
    with pytest.raises(RuntimeFailure, match="naga/wgpu rejected the wgsl module broken.wgsl") as failure:
        wgpu_runtime.prepare(spec, llvmpipe_index)
    assert "wgsl:2" in str(failure.value)  # naga's location in the source


def test_readable_interface_mismatches(wgpu_runtime, llvmpipe_index, shaders_dir):
    n = 16
    good = [_scalar("n", "u32", n), _scalar("a", "f32", 1.0), _scalar("b", "f32", 0.0),
            _buffer("x", "f32", n, "in", 0), _buffer("out", "f32", n, "out", 1)]  # fmt: skip
    path = shaders_dir / "scale_push.wgsl"
    with pytest.raises(RuntimeFailure, match="no compute entry point 'kernel'; its entry points: main"):
        wgpu_runtime.prepare(_spec(path, "wgsl", "kernel", good, 1, mode="push"), llvmpipe_index)
    wrong_binding = good[:3] + [_buffer("x", "f32", n, "in", 5), good[4]]
    with pytest.raises(RuntimeFailure, match="declares binding.s. 0 in group 0 but no kernel argument"):
        wgpu_runtime.prepare(_spec(path, "wgsl", "main", wrong_binding, 1, mode="push"), llvmpipe_index)
    writes_read_only = good[:3] + [_buffer("x", "f32", n, "inout", 0), good[4]]
    with pytest.raises(RuntimeFailure, match="'x' is 'inout' but the shader declares binding 0 read-only"):
        wgpu_runtime.prepare(_spec(path, "wgsl", "main", writes_read_only, 1, mode="push"), llvmpipe_index)
    with pytest.raises(RuntimeFailure, match="params_binding is not set"):
        wgpu_runtime.prepare(_spec(path, "wgsl", "main", good, 1, mode="uniform"), llvmpipe_index)
    two_d = _spec(path, "wgsl", "main", good, 70_000, mode="push")
    two_d["grid"] = [70_000, 2, 1]  # only a 1-D grid is folded: a 2-D one needs its own geometry
    with pytest.raises(
        RuntimeFailure, match=r"exceeds this device's 65535 workgroups.*\[kernel.launch.<backend>\]"
    ):
        wgpu_runtime.prepare(two_d, llvmpipe_index)


@pytest.mark.parametrize("example", ["saxpy", "bitonic"])
def test_a_grid_beyond_65535_workgroups_is_folded_and_verifies(
    example, wgpu_runtime, llvmpipe_index, rng, tmp_path
):
    """The examples' own WGSL, with 1 invocation per workgroup so 70,001 workgroups stay cheap: the
    dispatch is folded to 2-D and the shader's num_workgroups indexing covers every element once."""
    from workbench.run.runtimes.wgpu_runtime import WgpuPrepared

    source = (EXAMPLES / example / "reference" / f"{example}.wgsl").read_text()
    # saxpy's workgroup is its `threads` tunable (an override, default 256); bitonic's is 256.
    shader = source.replace("override threads: u32 = 256u;", "override threads: u32 = 1u;")
    shader = shader.replace("@workgroup_size(256)", "@workgroup_size(1)").replace("* 256u", "* 1u")
    assert shader.count("* 1u") + shader.count("threads: u32 = 1u;") == 1, (
        "the example no longer computes its index as group * 256u (or group * threads)"
    )
    n = 70_001
    if example == "saxpy":
        # x and y also at their vec4 views (the manifest's `views`: bindings 3 and 4)
        args = [_scalar("n", "u32", n), _scalar("a", "f32", 2.5),
                {**_buffer("x", "f32", n, "in", 1), "views": [3]},
                {**_buffer("y", "f32", n, "inout", 2), "views": [4]}]  # fmt: skip
        inputs = {
            "x": rng.uniform(-1, 1, n).astype(np.float32),
            "y": rng.uniform(-1, 1, n).astype(np.float32),
        }
        expected = np.float32(2.5) * inputs["x"] + inputs["y"]
        name = "y"
    else:
        j, k = 1, 2
        args = [_scalar("n", "u32", n), _scalar("j", "u32", j), _scalar("k", "u32", k),
                _buffer("data", "u32", n, "inout", 1)]  # fmt: skip
        inputs = {"data": rng.integers(0, 1_000_000, n).astype(np.uint32)}
        expected = inputs["data"].copy()
        for i in range(n):
            partner = i ^ j
            if partner > i and partner < n:
                a, b = expected[i], expected[partner]
                if ((i & k) == 0 and a > b) or ((i & k) != 0 and a < b):
                    expected[i], expected[partner] = b, a
        name = "data"
    path = tmp_path / f"{example}.wgsl"
    path.write_text(shader)
    spec = _spec(path, "wgsl", "main", args, n, params_binding=0)
    with wgpu_runtime.prepare(spec, llvmpipe_index) as prepared:
        assert isinstance(prepared, WgpuPrepared)
        assert prepared.grid == (35_001, 2, 1)  # folded: 70,002 workgroups, the last one spare
        prepared.upload(inputs)
        prepared.launch(1)
        out = prepared.download([name])[name]
    np.testing.assert_array_equal(out, expected)


def test_wgpu_devices_describe_adapters(wgpu_runtime, llvmpipe_index):
    devices = wgpu_runtime.devices()
    dev = devices[llvmpipe_index]
    assert dev["spec"] == f"wgpu:{llvmpipe_index}" and dev["runtime"] == "wgpu"
    assert dev["adapter_type"] == "CPU" and dev["timestamp_query"] is True
    assert dev["limits"]["max-compute-invocations-per-workgroup"] >= 256
    assert "max-immediate-size" in dev["limits"] and "immediates" in dev["features"]
    assert dev["peak_gbps"] is None and dev["peak_gflops"] is None


def test_wall_clock_when_the_device_has_no_timestamps(llvmpipe_index, saxpy_kernel, saxpy_dir, rng):
    """A real llvmpipe device opened without 'timestamp-query' times with the wall clock."""
    from workbench.run.runtimes.wgpu_runtime import WgpuRuntime

    runtime = WgpuRuntime()
    adapter = runtime.adapters()[llvmpipe_index]
    runtime._devices[llvmpipe_index] = adapter.request_device_sync(required_features=[])
    n = 1000
    spec = make_launch_spec(
        saxpy_kernel, "wgsl", {"artifact": "reference/saxpy.wgsl", "entry": "main", "kind": "wgsl"},
        saxpy_kernel.symbols({"n": n}), llvmpipe_index, artifact_dir=saxpy_dir,
    )  # fmt: skip
    x = rng.uniform(-1, 1, n).astype(np.float32)
    y = rng.uniform(-1, 1, n).astype(np.float32)
    try:
        with runtime.prepare(spec, llvmpipe_index) as prepared:
            assert prepared.timer_method == "wall-clock"
            prepared.upload({"x": x, "y": y})
            assert prepared.launch(2) > 0
            out = prepared.download(["y"])["y"]
    finally:
        runtime._devices.pop(llvmpipe_index).destroy()  # stops the device's poll thread
    np.testing.assert_array_equal(out, np.float32(2.5) * x + (np.float32(2.5) * x + y))
