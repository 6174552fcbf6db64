"""list_devices (probed in a child process) and resolve_device_spec, on this machine's real
runtimes: cpu, llvmpipe through wgpu, and cuda unavailable (no pycuda / driver here)."""

from __future__ import annotations

import pytest

from workbench.run.devices import DeviceNotFound, list_devices, resolve_device_spec


@pytest.fixture(scope="module")
def devices():
    return list_devices(refresh=True)


def test_list_devices_lists_llvmpipe_and_cpu(devices):
    assert set(devices) == {"cpu", "wgpu", "cuda"}
    cpu = devices["cpu"]
    assert cpu["available"] and cpu["devices"][0]["spec"] == "cpu" and cpu["devices"][0]["name"]
    wgpu = devices["wgpu"]
    assert wgpu["available"], wgpu["reason"]
    names = [d["name"].lower() for d in wgpu["devices"]]
    assert any("llvmpipe" in name for name in names)
    for index, dev in enumerate(wgpu["devices"]):
        assert dev["index"] == index and dev["spec"] == f"wgpu:{index}"
        assert {"backend_api", "adapter_type", "limits", "features", "timestamp_query"} <= set(dev)
        assert "peak_gbps" in dev and "peak_gflops" in dev


def test_list_devices_reports_cuda_unavailable_with_reason(devices):
    cuda = devices["cuda"]
    if cuda["available"]:
        pytest.skip("this machine has a working CUDA setup")
    assert cuda["devices"] == []
    assert "pycuda" in cuda["reason"] or "CUDA" in cuda["reason"]


def test_list_devices_is_cached_and_copied(devices):
    first = list_devices()
    first["cpu"]["devices"].clear()
    assert list_devices()["cpu"]["devices"]  # the cache was not changed by the caller


def test_resolve_device_specs(devices):
    assert resolve_device_spec("cpu", devices) == ("cpu", 0)
    assert resolve_device_spec("wgpu:0", devices) == ("wgpu", 0)
    runtime, index = resolve_device_spec("wgpu:LLVMpipe", devices)
    assert runtime == "wgpu"
    assert devices["wgpu"]["devices"][index]["backend_api"] == "Vulkan"  # preferred among matches


def test_resolve_device_spec_errors_list_the_devices(devices):
    with pytest.raises(DeviceNotFound, match=r"no wgpu device whose name contains 'radeon'.*wgpu:0 \("):
        resolve_device_spec("wgpu:radeon", devices)
    with pytest.raises(DeviceNotFound, match="no device wgpu:99"):
        resolve_device_spec("wgpu:99", devices)
    with pytest.raises(DeviceNotFound, match="unknown device 'metal:0'.*cpu, cuda:N, wgpu:N"):
        resolve_device_spec("metal:0", devices)
    if not devices["cuda"]["available"]:
        with pytest.raises(DeviceNotFound, match="the cuda runtime is unavailable"):
            resolve_device_spec("cuda:0", devices)


def test_probe_survives_a_broken_child(monkeypatch):
    """A probe that cannot run (here: a Python that does not exist) reports every runtime
    unavailable with the reason instead of raising."""
    import workbench.run.devices as registry

    monkeypatch.setattr(registry.sys, "executable", "/nonexistent/python")
    result = registry.list_devices(refresh=True)
    assert all(not entry["available"] for entry in result.values())
    assert "could not start" in result["wgpu"]["reason"]
    monkeypatch.undo()
    assert registry.list_devices(refresh=True)["wgpu"]["available"]
