"""Measured device ceilings on the real cpu runtime and the llvmpipe wgpu adapter."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.waits import HANG_GUARD_S
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
        assert ceilings.write_gbps and ceilings.write_gbps > 0.1, ceilings  # the write stream
        # Each stream's figure names the variant that won it.
        assert {"copy", "read", "write", "f32"} <= set(ceilings.variants or {}), ceilings.variants
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
            "write",
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
    real = ceilings_kernels.wgsl_stream
    monkeypatch.setattr(
        ceilings_kernels, "wgsl_stream", lambda s: "this is not WGSL" if s.what == "copy" else real(s)
    )
    result = measure(device, cache_dir=tmp_path)
    assert result.copy_gbps is None and "copy:" in result.notes and "wgsl" in result.notes.lower()
    assert result.notes.count("copy:") == 1 and "copy" not in result.variants  # one note, not one per variant
    assert result.read_gbps and result.write_gbps  # the other streams still ran
    assert result.fma_gflops_f32 and result.fma_gflops_f32 > 0  # the other kernels still ran


def test_cuda_probes_are_ptx_that_ptxas_accepts(tmp_path):
    """CUDA ceilings run where CUDA exists; here the PTX is at least assembled by the real ptxas."""
    import shutil

    ptxas = shutil.which("ptxas")
    if ptxas is None:
        pytest.skip("ptxas not installed")
    device = {"runtime": "cuda", "index": 0, "spec": "cuda:0", "name": "test"}
    found = probes(device, tmp_path)
    whats = [p.what for p in found]
    assert set(whats) == {"copy", "read", "write", "f32", "f64"}
    # Every access width and the grid-stride forms of each stream, each a different launch.
    assert whats.count("copy") == whats.count("read") == whats.count("write") == 15
    for path in {p.spec["artifact"]["path"] for p in found}:
        done = subprocess.run([ptxas, "-arch=sm_80", path, "-o", str(tmp_path / "o")],
                              capture_output=True, text=True)  # fmt: skip
        assert done.returncode == 0, done.stderr
    for probe in found:
        assert probe.spec["artifact"]["kind"] == "ptx" and probe.work > 0
        entry = probe.spec["artifact"]["entry"]
        text = open(probe.spec["artifact"]["path"]).read()
        assert f".entry {entry}(" in text, entry


def test_the_cuda_streams_are_the_ptx_nvcc_makes_of_their_source(tmp_path):
    """`resources/ceilings/ceilings.ptx` is what nvcc makes of `ceilings.cu` (with the header the
    source's comment says), so the source and the kernels the workbench runs never drift."""
    import shutil

    from tests.conftest import REPO

    nvcc = shutil.which("nvcc") or (
        "/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").exists() else None
    )
    if nvcc is None:
        pytest.skip("nvcc not installed")
    folder = REPO / "resources" / "ceilings"
    out = tmp_path / "ceilings.ptx"
    done = subprocess.run([nvcc, "-ptx", "-arch=compute_75", "-O3", "-o", str(out), str(folder / "ceilings.cu")],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    made = (
        out.read_text()
        .replace(".version 9.0\n", ".version 7.0\n")
        .replace(".target sm_75\n", ".target sm_52\n")
    )
    committed = (folder / "ceilings.ptx").read_text()
    entries = lambda text: re.findall(r"^\.visible \.entry (\w+)\(", text, re.M)  # noqa: E731
    assert entries(made) == entries(committed) and len(entries(made)) == 18
    release = lambda text: re.search(r"^// Cuda compilation tools, (.*)$", text, re.M).group(1)  # noqa: E731
    if release(made) == release(committed):  # the same nvcc: the same code, line for line
        strip = lambda text: [ln for ln in text.splitlines() if not ln.startswith("//")]  # noqa: E731
        assert strip(made) == strip(committed)


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
    bad = subprocess.run([*command[:-1], "nosuch:3"], capture_output=True, text=True, timeout=HANG_GUARD_S)
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


def test_datasheets_name_known_gpus_and_estimate_the_cpu():
    from workbench.run.datasheets import cpu_estimate, gpu_datasheet

    h200 = gpu_datasheet("NVIDIA H200")
    assert h200 is not None and h200.memory_gbps == 4800 and h200.fp32_gflops == 67000
    assert gpu_datasheet("NVIDIA H100 PCIe").memory_gbps == 2000  # the PCIe form, not the SXM's
    assert gpu_datasheet("llvmpipe (LLVM 15.0.6, 256 bits)") is None
    info = "processor\t: 0\ncpu MHz\t\t: 3000.000\nflags\t\t: fpu sse avx2 fma\n"
    estimate = cpu_estimate(threads=4, cpuinfo=info)
    assert estimate.fp32_gflops == 4 * 3.0 * 8 * 2 * 2 and estimate.fp64_gflops == estimate.fp32_gflops / 2
    assert "4 threads" in estimate.source and estimate.memory_gbps is None
    assert cpu_estimate(threads=2, cpuinfo="flags : avx512f\n") is None  # no clock reported: no guess
