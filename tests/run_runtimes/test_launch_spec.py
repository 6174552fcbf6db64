"""make_launch_spec and dtype_of on the saxpy example's manifest."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from workbench.run.spec import dtype_of, fold_grid, make_launch_spec


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
        {
            "name": "x",
            "kind": "buffer",
            "type": "f32",
            "length": 1000,
            "direction": "in",
            "binding": 1,
            "views": [3],
        },
        {
            "name": "y",
            "kind": "buffer",
            "type": "f32",
            "length": 1000,
            "direction": "inout",
            "binding": 2,
            "views": [4],
        },
    ]
    assert spec["threads"] == [256, 1, 1] and spec["grid"] == [4, 1, 1]
    assert spec["wgpu"] == {"mode": "uniform", "params_binding": 0, "override_ids": {}}
    assert spec["constants"] == {"threads": 256, "vector": 1}  # the tunables, for the WGSL overrides


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


@pytest.mark.parametrize("groups", [1, 65_535, 65_536, 70_001, 1 << 20, 1 << 28, 65_535 * 65_535 + 1])
def test_fold_grid_covers_a_1d_grid_within_the_limit(groups):
    x, y, z = fold_grid([groups], 65_535)
    assert max(x, y, z) <= 65_535
    assert groups <= x * y * z < groups + y * z  # every workgroup covered, fewer than y*z spare
    if groups <= 65_535:
        assert (x, y, z) == (groups, 1, 1)  # within the limit: dispatched as written


def test_fold_grid_refuses_what_it_cannot_fold():
    assert fold_grid([300, 300, 1], 65_535) == (300, 300, 1)
    with pytest.raises(ValueError, match=r"only a 1-D grid is folded.*\[kernel.launch.<backend>\]"):
        fold_grid([70_000, 2], 65_535)
    with pytest.raises(ValueError, match=r"exceeds 4\^3"):
        fold_grid([65], 4)


def test_a_backend_can_have_its_own_launch_geometry(tmp_path):
    """[kernel.launch.wgsl]: wgsl dispatches 64-wide workgroups while every other backend keeps 256."""
    from workbench.errors import ManifestError
    from workbench.manifest import parse_manifest

    example = Path(__file__).resolve().parents[2] / "resources/examples/saxpy"
    text = (example / "workbench.toml").read_text()
    own = text.replace(
        '[kernel.launch]\nthreads = ["threads"]\ngrid = ["ceil_div(n, threads * vector)"]\n',
        '[kernel.launch]\nthreads = ["threads"]\ngrid = ["ceil_div(n, threads * vector)"]\n\n'
        '[kernel.launch.wgsl]\nthreads = [64]\ngrid = ["ceil_div(n, 64)", 1]\n',
    )
    assert own != text
    kernel = parse_manifest(own, example / "workbench.toml").kernel("saxpy")
    symbols = kernel.symbols({"n": 1000})
    artifact = {"artifact": "k", "entry": "main", "kind": "wgsl"}
    wgsl = make_launch_spec(kernel, "wgsl", artifact, symbols, 0, artifact_dir=tmp_path)
    ptx = make_launch_spec(kernel, "nvptx", dict(artifact, kind="ptx"), symbols, 0, artifact_dir=tmp_path)
    assert (wgsl["threads"], wgsl["grid"]) == ([64, 1, 1], [16, 1, 1])
    assert (ptx["threads"], ptx["grid"]) == ([256, 1, 1], [4, 1, 1])
    values = kernel.evaluate(symbols)  # what a run evaluates once and hands to every spec
    assert values.geometry("wgsl") == kernel.geometry(symbols, "wgsl") == ((64, 1, 1), (16, 1, 1))
    assert values.geometry("nvptx") == kernel.geometry(symbols, "nvptx") == ((256, 1, 1), (4, 1, 1))
    assert make_launch_spec(kernel, "wgsl", artifact, symbols, 0, tmp_path, values=values) == wgsl
    nested = own.replace("[kernel.launch.wgsl]\n", "[kernel.launch.wgsl]\nwgsl = { threads = [1] }\n")
    with pytest.raises(ManifestError, match="unknown key 'wgsl'; valid keys: threads, grid"):
        parse_manifest(nested, example / "workbench.toml")
