"""The cuda runtime where there is no pycuda / NVIDIA driver: unavailable, with a reason, and no
crash anywhere."""

from __future__ import annotations

import pytest

from workbench.run.runtimes import RuntimeFailure, get_runtime


@pytest.fixture
def cuda_runtime():
    runtime = get_runtime("cuda")
    if runtime.available()[0]:
        pytest.skip("this machine has a working CUDA setup")
    return runtime


def test_cuda_unavailable_with_reason(cuda_runtime):
    ok, reason = cuda_runtime.available()
    assert ok is False
    assert "pycuda" in reason or "driver" in reason or "CUDA" in reason


def test_cuda_prepare_and_devices_fail_readably(cuda_runtime, tmp_path):
    ptx = tmp_path / "k.ptx"
    ptx.write_text(".version 8.0\n.target sm_90\n.address_size 64\n")
    spec = {
        "runtime": "cuda", "backend": "nvptx", "device_index": 0, "kernel": "k",
        "artifact": {"kind": "ptx", "path": str(ptx), "entry": "k"}, "args": [],
        "threads": [1, 1, 1], "grid": [1, 1, 1],
        "wgpu": {"mode": "uniform", "params_binding": None, "override_ids": {}}, "constants": {},
    }  # fmt: skip
    reason = cuda_runtime.available()[1]
    with pytest.raises(RuntimeFailure) as failure:
        cuda_runtime.prepare(spec, 0)
    assert str(failure.value) == reason
    with pytest.raises(RuntimeFailure):
        cuda_runtime.devices()


def test_unknown_runtime_is_named():
    with pytest.raises(RuntimeFailure, match="unknown runtime 'metal'; runtimes: ") as caught:
        get_runtime("metal")
    # Every runtime there is, named once (in the runtime table's order).
    named = str(caught.value).split("runtimes: ", 1)[1].split(", ")
    assert sorted(named) == ["cpu", "cuda", "wgpu"]


_SAXPY_PTX = """.version 8.0
.target sm_90
.address_size 64
.visible .entry saxpy(.param .u32 n, .param .f32 a, .param .u64 x, .param .u64 y)
{ ret; }
"""


def test_cuda_flow_against_a_pycuda_double(fake_cuda, saxpy_kernel, tmp_path):
    import numpy as np

    from workbench.run.spec import make_launch_spec

    assert fake_cuda.available() == (True, "")
    [device] = fake_cuda.devices()
    assert device["spec"] == "cuda:0" and device["compute_capability"] == "9.0"
    assert device["peak_gbps"] == pytest.approx(2 * 2.619e9 * 6144 / 8 / 1e9)  # 4022.8 GB/s
    assert device["peak_gflops"] == pytest.approx(2 * 132 * 128 * 1.98)
    ptx = tmp_path / "saxpy.ptx"
    ptx.write_text(_SAXPY_PTX)
    n = 1000
    spec = make_launch_spec(
        saxpy_kernel, "nvptx", {"path": str(ptx), "kind": "ptx", "entry": "saxpy"},
        saxpy_kernel.symbols({"n": n}), 0,
    )  # fmt: skip
    x = np.linspace(-1, 1, n, dtype=np.float32)
    y = np.linspace(2, 3, n, dtype=np.float32)
    with fake_cuda.prepare(spec, 0) as prepared:
        assert prepared.timer_method == "cuda-events" and prepared.timer_resolution_s == 0.5e-6
        prepared.upload({"x": x, "y": y})
        assert prepared.launch(2) == pytest.approx(0.25e-3)
        out = prepared.download(["y"])["y"]
    np.testing.assert_array_equal(out, np.float32(2.5) * x + (np.float32(2.5) * x + y))
    assert fake_cuda.fake.calls[-1] == ((4, 1, 1), (256, 1, 1), "IfPP")
    spec["artifact"]["entry"] = "saxpy_missing"
    with pytest.raises(RuntimeFailure, match="has no kernel 'saxpy_missing'.*named symbol not found"):
        fake_cuda.prepare(spec, 0)
