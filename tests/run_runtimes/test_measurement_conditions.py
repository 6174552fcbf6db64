"""What every timed result records about how it was measured: the cache policy (`--l2 warm|cold`),
NVML's clocks before and after, whether they were locked, and energy per launch. Cold L2 runs for
real on llvmpipe; NVML cannot be reached here (no NVIDIA driver), so its readings are checked with
a double of `pynvml` shaped after its documented calls, and against nothing (absent -> null)."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from workbench.run import nvml
from workbench.run.runtimes import RuntimeFailure
from workbench.run.spec import make_launch_spec
from workbench.run.timing import TimingOptions, measure, options_from_dict, options_to_dict
from workbench.run.worker import WorkerState

QUICK = {"min_n": 5, "min_time_s": 0.0, "warmup_max_n": 3, "energy_batch_s": 0.05}


def test_cold_samples_hold_one_launch_and_warm_ones_batch():
    calls = []

    def launch(count: int) -> float:
        calls.append(count)
        return 1e-7 * count  # far below 100 ticks of a 1 µs timer: warm batches it

    warm = measure(launch, 1e-6, "synthetic", TimingOptions(min_n=3, min_time_s=0))
    assert warm.batch > 1
    calls.clear()
    cold = measure(launch, 1e-6, "synthetic", TimingOptions(min_n=3, min_time_s=0, l2="cold"))
    assert cold.batch == 1 and set(calls) == {1}
    with pytest.raises(ValueError, match="unknown L2 policy 'hot'; valid: warm, cold, both"):
        options_from_dict({"l2": "hot"})


def _saxpy_state(runtime_name, kernel, backend, artifact, n, device_index=0):
    spec = make_launch_spec(kernel, backend, artifact, kernel.symbols({"n": n}), device_index)
    state = WorkerState(runtime_name)
    state.handle({"op": "prepare", "spec": spec, "device_index": device_index}, {})
    x = np.linspace(-1, 1, n, dtype=np.float32)
    state.handle({"op": "upload"}, {"x": x, "y": np.zeros(n, np.float32)})
    return state


def test_cold_l2_on_llvmpipe_clears_a_scratch_buffer_before_every_sample(
    wgpu_runtime, llvmpipe_index, saxpy_kernel, saxpy_dir
):
    artifact = {"path": str(saxpy_dir / "reference" / "saxpy.wgsl"), "kind": "wgsl", "entry": "main"}
    state = _saxpy_state("wgpu", saxpy_kernel, "wgsl", artifact, 4096, llvmpipe_index)
    try:
        state.prepared.FLUSH_BYTES = 16 << 20  # the real size is 256 MiB: slow to clear on a CPU
        flushes = []
        original = state.prepared.flush_caches
        state.prepared.flush_caches = lambda: (flushes.append(1), original())[1]
        reply, _ = state.handle(
            {"op": "measure", "options": options_to_dict(TimingOptions(l2="cold", **QUICK))}, {}
        )
        conditions = reply["conditions"]
        assert conditions["l2"] == "cold" and conditions["l2_flush_bytes"] == 16 << 20
        assert len(flushes) == reply["stats"]["warmup"] + reply["stats"]["n"]  # one per launch call
        assert reply["stats"]["batch"] == 1
        # No NVIDIA device here: clocks and energy are unknown, said as null.
        assert conditions["clocks_before"] is None and conditions["clock_source"] is None
        assert conditions["energy_per_launch_j"] is None
        warm, _ = state.handle({"op": "measure", "options": options_to_dict(TimingOptions(**QUICK))}, {})
        assert warm["conditions"]["l2"] == "warm" and warm["conditions"]["l2_flush_bytes"] is None
        assert warm["conditions"]["l2_cold"] is None
        flushes.clear()
        both, _ = state.handle(
            {"op": "measure", "options": options_to_dict(TimingOptions(l2="both", **QUICK))}, {}
        )
        cold_part = both["conditions"]["l2_cold"]
        assert both["conditions"]["l2"] == "both" and cold_part["median_s"] > 0 and cold_part["batch"] == 1
        assert len(flushes) >= cold_part["n"]  # the warm part flushed nothing, the cold part every sample
    finally:
        state.close_prepared()


def test_cold_l2_on_the_cpu_says_it_is_for_gpus(saxpy_kernel, saxpy_cdylib):
    artifact = {"path": str(saxpy_cdylib), "kind": "cdylib", "entry": "saxpy_cpu"}
    state = _saxpy_state("cpu", saxpy_kernel, "cpu", artifact, 1024)
    try:
        with pytest.raises(RuntimeFailure, match="--l2 cold flushes GPU caches; the cpu runtime has none"):
            state.handle({"op": "measure", "options": {"l2": "cold"}}, {})
    finally:
        state.close_prepared()


@pytest.fixture
def pynvml_double(monkeypatch):
    """`pynvml` as nvidia-ml-py documents it, over one device whose energy counter advances 50 mJ
    per read; clocks held by an applications-clocks setting (reason bit 0x2)."""
    energy = [1_000_000]

    def total_energy(handle):
        energy[0] += 50
        return energy[0]

    double = types.SimpleNamespace(
        NVML_CLOCK_SM=1, NVML_CLOCK_MEM=2,
        nvmlInit=lambda: None,
        nvmlDeviceGetHandleByPciBusId=lambda bus: f"handle:{bus}",
        nvmlDeviceGetClockInfo=lambda h, kind: {1: 1980, 2: 3201}[kind],
        nvmlDeviceGetMaxClockInfo=lambda h, kind: {1: 1980, 2: 3201}[kind],
        nvmlDeviceGetCurrentClocksEventReasons=lambda h: 0x2,
        nvmlDeviceGetTotalEnergyConsumption=total_energy,
        NVML_TEMPERATURE_GPU=0, nvmlDeviceGetTemperature=lambda h, sensor: {0: 47}[sensor],
    )  # fmt: skip
    monkeypatch.setitem(sys.modules, "pynvml", double)
    return double


def test_nvml_absent_reads_as_unknown(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails
    assert nvml.find_device({"pci_bus_id": "00000000:19:00.0"}) is None
    assert nvml.clocks(None) is None and nvml.locked(None) is None and nvml.energy_mj(None) is None


def test_cuda_results_record_clocks_lock_and_energy_from_nvml(
    pynvml_double, fake_cuda, saxpy_kernel, tmp_path
):
    ptx = tmp_path / "saxpy.ptx"
    ptx.write_text(
        ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry saxpy(.param .u32 n) { ret; }\n"
    )
    spec = make_launch_spec(
        saxpy_kernel,
        "nvptx",
        {"path": str(ptx), "kind": "ptx", "entry": "saxpy"},
        saxpy_kernel.symbols({"n": 64}),
        0,
    )
    state = WorkerState("cuda")
    state._runtime = fake_cuda
    state.handle({"op": "prepare", "spec": spec, "device_index": 0}, {})
    state.handle({"op": "upload"}, {"x": np.ones(64, np.float32), "y": np.ones(64, np.float32)})
    try:
        reply, _ = state.handle(
            {"op": "measure", "options": options_to_dict(TimingOptions(l2="cold", **QUICK))}, {}
        )
    finally:
        state.close_prepared()
    c = reply["conditions"]
    assert c["clock_source"] == "nvml" and c["clocks_locked"] is True
    assert c["clocks_before"] == c["clocks_after"] == {
        "sm_mhz": 1980, "mem_mhz": 3201, "sm_max_mhz": 1980, "mem_max_mhz": 3201,
        "reasons": ["applications_clocks_setting"], "temperature_c": 47,
    }  # fmt: skip
    # 0.05 s batch of 0.25 ms launches (the double's event time): 201 launches, one 50 mJ step.
    assert c["energy_batch"]["launches"] == 201
    assert c["energy_per_launch_j"] == pytest.approx(0.050 / 201)
    # Cold: twice the L2 (60 MiB on the double's H200) written before every sample.
    assert c["l2"] == "cold" and c["l2_flush_bytes"] == 2 * 62_914_560
    memsets = [call for call in fake_cuda.fake.calls if call[0] == "memset_d32"]
    assert len(memsets) == reply["stats"]["warmup"] + reply["stats"]["n"]
    assert memsets[0][3] == 2 * 62_914_560 // 4
