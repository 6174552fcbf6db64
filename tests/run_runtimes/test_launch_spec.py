"""make_launch_spec and dtype_of on the saxpy example's manifest."""

from __future__ import annotations

import json

import numpy as np
import pytest

from workbench.run.spec import dtype_of, make_launch_spec


def test_saxpy_spec_is_plain_json(saxpy_kernel, tmp_path):
    symbols = saxpy_kernel.symbols({"n": 1000})
    spec = make_launch_spec(
        saxpy_kernel, "wgsl", {"artifact": "saxpy.wgsl", "entry": "main", "kind": "wgsl"}, symbols, 0,
        artifact_dir=tmp_path,
    )  # fmt: skip
    assert json.loads(json.dumps(spec)) == spec
    assert spec["runtime"] == "wgpu" and spec["backend"] == "wgsl" and spec["kernel"] == "saxpy"
    assert spec["artifact"] == {
        "kind": "wgsl",
        "path": str(tmp_path / "saxpy.wgsl"),
        "entry": "main",
        "entry_origin": "from [kernel.entry] wgsl",
    }
    assert spec["args"] == [
        {"name": "n", "kind": "scalar", "type": "u32", "value": 1000},
        {"name": "a", "kind": "scalar", "type": "f32", "value": 2.5},
        {"name": "x", "kind": "buffer", "type": "f32", "length": 1000, "direction": "in", "binding": 1},
        {"name": "y", "kind": "buffer", "type": "f32", "length": 1000, "direction": "inout", "binding": 2},
    ]
    assert spec["threads"] == [256, 1, 1] and spec["grid"] == [4, 1, 1]
    assert spec["wgpu"] == {"mode": "uniform", "params_binding": 0, "override_ids": {}}
    assert spec["constants"] == {}


def test_spec_maps_backends_to_runtimes(saxpy_kernel):
    symbols = saxpy_kernel.symbols()
    cpu = make_launch_spec(saxpy_kernel, "cpu", {"path": "/x/libsaxpy.so", "kind": "cdylib"}, symbols, 0)
    assert cpu["runtime"] == "cpu"
    assert cpu["artifact"]["entry"] == "saxpy_cpu"  # from [kernel.entry] when build.json has none
    ptx = make_launch_spec(saxpy_kernel, "nvptx", {"path": "/x/s.ptx", "kind": "ptx"}, symbols, 3)
    assert ptx["runtime"] == "cuda" and ptx["device_index"] == 3
    assert ptx["grid"] == [1048576 // 256, 1, 1]


def test_spec_rejects_unknown_artifact_kind(saxpy_kernel):
    with pytest.raises(ValueError, match="kind 'cubin'.*cdylib, ptx, spirv, wgsl"):
        make_launch_spec(saxpy_kernel, "nvptx", {"path": "/x", "kind": "cubin"}, saxpy_kernel.symbols(), 0)


def test_dtype_of():
    assert dtype_of("f32") == np.float32 and dtype_of("u64") == np.uint64 and dtype_of("i32") == np.int32
    with pytest.raises(ValueError, match="unknown element type 'f16'"):
        dtype_of("f16")
