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
from workbench.run.ceilings import (
    CEILINGS_FILE,
    FORMAT,
    Ceilings,
    cached,
    ceilings_for,
    device_key,
    measure,
    probes,
)
from workbench.run.ceilings_kernels import STREAMS
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
        assert ceilings.update_gbps and ceilings.update_gbps > 0.1, ceilings  # the in-place stream
        # Each stream's figure names the variant that won it.
        assert {*STREAMS, "f32"} <= set(ceilings.variants or {}), ceilings.variants
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
        assert set(ceilings.variants) == {*STREAMS, "f32", *(["f64"] if ceilings.fma_gflops_f64 else [])}
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
    # A cache file from before the update stream (format 3, entries without `update_gbps`) is not
    # read: its devices are measured again.
    path = tmp_path / CEILINGS_FILE
    data = json.loads(path.read_text())
    for entry in data["devices"].values():
        del entry["update_gbps"]
    path.write_text(json.dumps({**data, "format": 3}))
    assert cached(devices[0], tmp_path) is None
    remeasured.clear()
    (fresh,) = ceilings_for(devices[:1], cache_dir=tmp_path, on_measure=remeasured.append)
    assert remeasured == devices[:1] and fresh.update_gbps and fresh.update_gbps > 0.1


def test_an_entry_without_the_update_stream_reads_against_copy(tmp_path):
    """A cache entry that has no update figure (written by hand, or one whose update variants all
    failed) holds an in-place kernel to the copy ceiling, named "copy", not to nothing."""
    from workbench.run.ceilings_roof import read_roof, roof_cell

    device = {"runtime": "cpu", "spec": "cpu", "name": "Some CPU", "cores": 4}
    entry = Ceilings("cpu", "Some CPU", 20.0, 400.0, None, "2026-12-05T08:00:00Z", "test", read_gbps=30.0)
    stored = {k: v for k, v in entry.to_dict().items() if k != "update_gbps"}
    (tmp_path / CEILINGS_FILE).write_text(
        json.dumps({"format": FORMAT, "devices": {device_key(device): stored}})
    )
    found = cached(device, tmp_path)
    assert found is not None and found.copy_gbps == 20.0 and found.update_gbps is None
    bitonic = {"gbps": 18.0, "gflops": None, "memory_roof": "update"}
    reading = read_roof(bitonic, device, found)
    assert reading["roof"] == "copy" and reading["fraction"] == pytest.approx(18.0 / 20.0)
    assert roof_cell(reading) == "90.0 % copy"
    found.update_gbps = 24.0  # measured: the in-place kernel reads against it
    assert roof_cell(read_roof(bitonic, device, found)) == "75.0 % update"


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
    assert set(whats) == {*STREAMS, "f32", "f64"}
    # Every access width and the grid-stride forms of each stream, each a different launch.
    assert [whats.count(stream) for stream in STREAMS] == [15] * len(STREAMS)
    for probe in found:  # an update launch rewrites one buffer: read + written, like copy
        if probe.what == "update":
            (dst,) = [a for a in probe.spec["args"] if a["name"] == "dst"]
            assert probe.work == 2 * 4 * dst["length"], probe.variant
            assert probe.spec["artifact"]["entry"].startswith("wb_update_"), probe.spec["artifact"]
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
    assert entries(made) == entries(committed) and len(entries(made)) == 6 * len(STREAMS)
    assert {e.split("_")[1] for e in entries(committed)} == set(STREAMS)
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
        "write_gbps",
        "update_gbps",
        "fma_gflops_f32",
        "fma_gflops_f64",
        "measured",
        "method",
    }
    assert Ceilings.from_dict(entry).name == entry["name"]
    bad = subprocess.run([*command[:-1], "nosuch:3"], capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert bad.returncode == 2 and "nosuch" in bad.stderr


def test_the_memory_roof_of_every_example_kernel():
    """A kernel that writes at most 1/16 of what it reads (the reduction's partial sums) is held
    against the read ceiling; one rewriting its buffers in place (bitonic: one inout buffer; scan's
    block-offset pass: y inout beside a few sums read) against the update ceiling; one that reads a
    buffer and writes another (saxpy: x in, y inout; transpose; the scan itself) against the copy
    ceiling. Every kernel of the real example manifests."""
    from workbench.manifest import load_manifest
    from workbench.project import examples_dir
    from workbench.run.ceilings import memory_roof

    expected = {
        ("saxpy", "saxpy"): "copy",
        ("reduction", "reduction"): "read",
        ("warp_reduce", "warp_reduce"): "read",
        ("histogram", "histogram"): "read",  # the bins are inout, but 1 KiB beside n bytes read
        ("bitonic", "bitonic"): "update",
        ("scan", "scan"): "copy",
        ("scan", "scan_add"): "update",
        ("matmul", "matmul"): "copy",
        ("softmax", "softmax"): "copy",
        ("stencil2d", "stencil2d"): "copy",
        ("transpose", "transpose"): "copy",
    }
    seen = {}
    for folder in sorted(p for p in examples_dir().iterdir() if (p / "workbench.toml").is_file()):
        for kernel in load_manifest(folder).kernels:
            values = kernel.evaluate(kernel.symbols())  # at the manifest's default sizes
            seen[(folder.name, kernel.name)] = memory_roof(kernel, values)
    assert seen == expected


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


@pytest.mark.parametrize("gpu_like", [True, False])
def test_every_wgpu_stream_variant_is_wgsl_naga_accepts(tmp_path, gpu_like):
    """Every wgpu ceiling variant, the GPU-only ones too (none of them runs here on llvmpipe),
    validated by naga in the workbench's validator child."""
    from workbench.build.shader_check import validate

    streams = ceilings_kernels.wgpu_streams(gpu_like)
    assert {s.what for s in streams} == set(STREAMS)
    for index, stream in enumerate(streams):
        path = tmp_path / f"{index}-{stream.what}.wgsl"
        path.write_text(ceilings_kernels.wgsl_stream(stream), encoding="utf-8")
        verdict = validate("wgsl", path)
        if verdict["shader_check"] == "skipped":  # no wgpu or no adapter: nothing validates here
            pytest.skip(verdict.get("reason", "naga validator unavailable"))
        assert verdict["shader_check"] == "ok", (stream.label, verdict)
