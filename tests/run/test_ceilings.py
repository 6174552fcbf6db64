"""Measured device ceilings on the real cpu runtime and the llvmpipe wgpu adapter."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from workbench.run import ceilings_kernels
from workbench.run.ceilings import Ceilings, cached, ceilings_for, device_key, measure, probes
from workbench.run.devices import list_devices


def _device(runtime: str, name: str = "") -> dict:
    entry = list_devices()[runtime]
    if not entry["available"]:
        pytest.skip(f"{runtime}: {entry['reason']}")
    for device in entry["devices"]:
        if (
            name.lower() in str(device.get("name", "")).lower()
            and device.get("backend_api", "Vulkan") == "Vulkan"
        ):
            return device
    pytest.skip(f"no {runtime} device named {name!r}")


def test_cpu_and_llvmpipe_ceilings_are_positive_and_cached(tmp_path):
    devices = [_device("cpu"), _device("wgpu", "llvmpipe")]
    first = ceilings_for(devices, cache_dir=tmp_path)
    for ceilings in first:
        assert ceilings.copy_gbps and ceilings.copy_gbps > 0.1, ceilings
        assert ceilings.read_gbps and ceilings.read_gbps > 0.1, ceilings  # the read stream
        assert ceilings.fma_gflops_f32 and ceilings.fma_gflops_f32 > 0.1, ceilings
        assert ceilings.measured.endswith("Z") and ceilings.method
    assert first[0].fma_gflops_f64 and first[0].fma_gflops_f64 > 0  # every x86/ARM CPU has f64 FMA
    # Each figure is the best of several variants (access widths, workgroup sizes or counts,
    # threads), and the ceilings name the one that won.
    for device, ceilings in zip(devices, first, strict=True):
        forms: dict[str, set[str]] = {}
        for probe in probes(device, tmp_path):
            forms.setdefault(probe.what, set()).add(probe.variant)
        one_core = device["runtime"] == "cpu" and int(device.get("cores") or os.cpu_count() or 1) == 1
        assert all(len(v) >= 2 for v in forms.values()) or one_core, forms
        assert set(ceilings.variants) == {
            "copy",
            "read",
            "f32",
            *(["f64"] if ceilings.fma_gflops_f64 else []),
        }
        assert all(ceilings.variants[what] in forms[what] for what in ceilings.variants), ceilings.variants
    # Cached per device + driver: read back without measuring (same time stamp), refresh re-measures.
    again = ceilings_for(devices, cache_dir=tmp_path)
    assert [c.to_json() for c in again] == [c.to_json() for c in first]
    assert cached(devices[1], tmp_path).copy_gbps == first[1].copy_gbps
    other_driver = {**devices[1], "description": "another driver"}
    assert device_key(other_driver) != device_key(devices[1]) and cached(other_driver, tmp_path) is None
    remeasured = []
    ceilings_for(devices[:1], refresh=True, cache_dir=tmp_path, on_measure=remeasured.append)
    assert remeasured == devices[:1]


def test_a_failing_kernel_is_a_note_not_a_crash(tmp_path, monkeypatch):
    device = _device("wgpu", "llvmpipe")
    monkeypatch.setattr(ceilings_kernels, "wgsl_copy", lambda width, group: "this is not WGSL")
    result = measure(device, cache_dir=tmp_path)
    assert result.copy_gbps is None and "copy:" in result.notes and "wgsl" in result.notes.lower()
    assert result.notes.count("copy:") == 1 and "copy" not in result.variants  # one note, not one per variant
    assert result.fma_gflops_f32 and result.fma_gflops_f32 > 0  # the other kernels still ran


def test_cuda_probes_are_ptx_that_ptxas_accepts(tmp_path):
    """CUDA ceilings run where CUDA exists; here the PTX is at least assembled by the real ptxas."""
    import shutil

    ptxas = shutil.which("ptxas")
    if ptxas is None:
        pytest.skip("ptxas not installed")
    device = {"runtime": "cuda", "index": 0, "spec": "cuda:0", "name": "test"}
    found = probes(device, tmp_path)
    assert [p.what for p in found] == ["copy", "read", "f32", "f64"]
    for probe in found:
        assert probe.spec["artifact"]["kind"] == "ptx" and probe.work > 0
        done = subprocess.run([ptxas, "-arch=sm_80", probe.spec["artifact"]["path"], "-o", str(tmp_path / "o")],
                              capture_output=True, text=True)  # fmt: skip
        assert done.returncode == 0, done.stderr


def test_cli_ceilings_json(tmp_path):
    command = [sys.executable, "-m", "workbench", "ceilings", "--json", "--cache-dir", str(tmp_path),
               "--device", "cpu"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    (entry,) = data["devices"]
    assert entry["spec"] == "cpu" and entry["copy_gbps"] > 0 and entry["fma_gflops_f32"] > 0
    assert set(entry) >= {
        "spec",
        "name",
        "copy_gbps",
        "read_gbps",
        "fma_gflops_f32",
        "fma_gflops_f64",
        "measured",
        "method",
    }
    assert Ceilings.from_dict(entry).name == entry["name"]
    bad = subprocess.run([*command[:-1], "nosuch:3"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "nosuch" in bad.stderr


def test_the_memory_roof_of_a_read_stream_is_the_read_ceiling():
    """A kernel that writes at most 1/16 of what it reads (the reduction's partial sums) is held
    against the read ceiling; one that writes as much as it reads (saxpy) against the copy ceiling."""
    from workbench.manifest import load_manifest
    from workbench.project import examples_dir
    from workbench.run.ceilings import memory_roof

    for example, sizes, roof in (("reduction", {"n": 1 << 20}, "read"), ("saxpy", {"n": 1 << 20}, "copy"),
                                 ("matmul", {"m": 64, "n": 64, "k": 64}, "copy")):  # fmt: skip
        kernel = load_manifest(examples_dir() / example).kernel()
        values = kernel.evaluate(kernel.symbols(sizes))
        assert memory_roof(kernel, values) == roof, example
