"""The cuda runtime on a real NVIDIA device: devices, module loading, launches, timing, errors,
fault containment (illegal address, endless loop) and release of contexts and memory."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from tests.gpu import ptx as kernels
from tests.waits import HANG_GUARD_S, wait_until
from workbench.project import Project
from workbench.run import RunService
from workbench.run.pool import WorkerProcess
from workbench.run.runtimes import RuntimeFailure
from workbench.run.runtimes.cuda import CudaRuntime
from workbench.run.spec import make_launch_spec

REPO = Path(__file__).resolve().parents[2]
SAXPY = REPO / "resources" / "examples" / "saxpy"
A = np.float32(2.5)  # the saxpy example's `a`


@pytest.fixture(scope="module")
def saxpy_kernel():
    return Project.open(SAXPY).manifest.kernel("saxpy")


def _spec(kernel, ptx_path: Path, n: int, backend: str = "nvptx") -> dict:
    return make_launch_spec(
        kernel, backend, {"path": str(ptx_path), "kind": "ptx", "entry": "saxpy"}, kernel.symbols({"n": n}), 0
    )


def _fma(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """a*x + y rounded once, as fma.rn.f32 (the f32 product is exact in f64)."""
    return (np.float64(A) * x.astype(np.float64) + y.astype(np.float64)).astype(np.float32)


@pytest.fixture
def runtime():
    rt = CudaRuntime()
    yield rt
    rt.close()


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / f"{name}.ptx"
    path.write_text(text)
    return path


def test_devices_describe_the_real_gpu(runtime, cuda):
    assert runtime.available() == (True, "")
    devices = runtime.devices()
    assert len(devices) == cuda.Device.count()
    dev = devices[0]
    assert dev["spec"] == "cuda:0" and dev["name"] == cuda.Device(0).name()
    major, minor = cuda.Device(0).compute_capability()
    assert dev["compute_capability"] == f"{major}.{minor}"
    assert dev["sm_count"] > 0 and dev["total_memory_bytes"] > 1 << 30
    assert dev["peak_gbps"] > 100 and dev["peak_gflops"] > 1000


def test_saxpy_launches_verify_and_time_with_events(runtime, saxpy_kernel, tmp_path):
    # Not a multiple of 256 (the bounds check matters), and large enough that a launch's own time
    # (about 0.3 ms on an H100) outweighs the host's submission, which an event pair also times
    # (at n = 1,000,003 one launch read 71 µs and three 64 µs: H100, 2026-12-05).
    n = (1 << 26) + 3
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, n).astype(np.float32)
    y = rng.uniform(-1, 1, n).astype(np.float32)
    with runtime.prepare(_spec(saxpy_kernel, _write(tmp_path, "saxpy", kernels.SAXPY), n), 0) as prepared:
        assert prepared.timer_method == "cuda-events"
        assert prepared.grid == (-(-n // 256), 1, 1) and prepared.block == (256, 1, 1)
        prepared.launch(1)  # the first launch also loads the module: not what is compared below
        prepared.upload({"x": x, "y": y})
        once = prepared.launch(1)
        out = prepared.download(["y"])["y"]
        prepared.upload({"x": x, "y": y})
        three = prepared.launch(3)
        out3 = prepared.download(["y"])["y"]
    np.testing.assert_array_equal(out, _fma(x, y))
    np.testing.assert_array_equal(out3, _fma(x, _fma(x, _fma(x, y))))  # three launches, in order
    assert 0 < once < 0.1 and 2 * once < three < 1.0  # three launches timed, not one


def _read_only_register_supported() -> bool:
    """CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED (113) of device 0, from libcuda."""
    import ctypes

    value = ctypes.c_int(0)
    lib = ctypes.CDLL("libcuda.so.1")
    return lib.cuDeviceGetAttribute(ctypes.byref(value), 113, 0) == 0 and value.value == 1


def test_read_only_shared_inputs_are_page_locked_once_and_copied_right(runtime, saxpy_kernel, tmp_path):
    """Inputs arrive as read-only memfd mappings; large ones are page-locked (cuMemHostRegister,
    READ_ONLY) once for every kernel prepared after, and released before their mapping goes."""
    from workbench.run import shm
    from workbench.run.runtimes import cuda as cuda_mod

    n = cuda_mod.PIN_MIN_BYTES // 4 + 5  # just over the threshold
    rng = np.random.default_rng(3)
    segments = {}
    for name in ("x", "y"):
        segment = shm.SharedArray(n, np.float32, label=f"test-{name}")
        segment.array[:] = rng.uniform(-1, 1, n).astype(np.float32)
        segments[name] = segment
    views = {k: shm.map_fd(s.fd, np.float32, n, writable=False) for k, s in segments.items()}
    ptx = _write(tmp_path, "saxpy", kernels.SAXPY)
    for _ in range(2):  # a second prepared kernel finds them pinned already
        with runtime.prepare(_spec(saxpy_kernel, ptx, n), 0) as prepared:
            prepared.upload(views)
            prepared.launch(1)
            out = prepared.download(["y"])["y"]
        np.testing.assert_array_equal(out, _fma(segments["x"].array, segments["y"].array))
        if not _read_only_register_supported():
            pytest.skip("this device cannot page-lock read-only memory: inputs are copied pageable")
        assert runtime.pins.pinned_bytes() == 2 * n * 4, "both inputs page-locked"
    for view in views.values():
        runtime.release_host(view)
    assert runtime.pins.pinned_bytes() == 0


def test_load_failures_are_readable(runtime, saxpy_kernel, tmp_path):
    spec = _spec(saxpy_kernel, _write(tmp_path, "saxpy", kernels.SAXPY), 16)
    spec["artifact"]["entry"] = "no_such_kernel"
    with pytest.raises(RuntimeFailure, match="has no kernel 'no_such_kernel'.*named symbol not found"):
        runtime.prepare(spec, 0)
    broken = _write(tmp_path, "broken", kernels.HEADER + ".visible .entry saxpy() { this is not ptx }\n")
    with pytest.raises(RuntimeFailure, match=r"loading broken.ptx failed \(PTX JIT\)"):
        runtime.prepare(_spec(saxpy_kernel, broken, 16), 0)
    with pytest.raises(RuntimeFailure, match="no CUDA device 99"):
        runtime.prepare(_spec(saxpy_kernel, _write(tmp_path, "saxpy", kernels.SAXPY), 16), 99)


def test_close_frees_device_memory_and_contexts(runtime, saxpy_kernel, tmp_path, cuda, probe_context):
    n = 64 << 20  # two buffers of 256 MiB
    runtime.prepare(_spec(saxpy_kernel, _write(tmp_path, "tiny", kernels.SAXPY), 16), 0).close()
    free_before = probe_context()  # with the runtime's context already made (it holds memory too)
    prepared = runtime.prepare(_spec(saxpy_kernel, _write(tmp_path, "saxpy", kernels.SAXPY), n), 0)
    assert free_before - probe_context() >= 2 * 4 * n
    prepared.close()
    prepared.close()  # twice is harmless
    assert free_before - probe_context() < 64 << 20  # the buffers are back (the context stays)
    runtime.close()
    assert runtime._contexts == {}
    assert cuda.Context.get_current() is None  # nothing left on this thread's context stack
    # A closed runtime opens a fresh context on demand.
    with runtime.prepare(_spec(saxpy_kernel, _write(tmp_path, "saxpy2", kernels.SAXPY), 256), 0) as again:
        again.upload({"x": np.ones(256, np.float32), "y": np.zeros(256, np.float32)})
        again.launch(1)
        assert again.download(["y"])["y"][0] == A


def test_a_worker_process_releases_its_context_when_it_ends(saxpy_kernel, tmp_path, probe_context):
    n = 64 << 20
    free_before = probe_context()
    worker = WorkerProcess("cuda")
    try:
        worker.request({"op": "prepare", "spec": _spec(saxpy_kernel, _write(tmp_path, "s", kernels.SAXPY), n),
                        "device_index": 0}, timeout_s=HANG_GUARD_S)  # fmt: skip
        assert free_before - probe_context() >= 2 * 4 * n
    finally:
        worker.shutdown()
    # The worker's context and buffers are gone (the driver frees them as the process ends).
    assert wait_until(lambda: free_before - probe_context() <= 64 << 20)


def _artifacts(root: Path, ptx_by_backend: dict[str, str]) -> Path:
    for backend, text in ptx_by_backend.items():
        folder = root / backend
        folder.mkdir(parents=True)
        (folder / "saxpy.ptx").write_text(text)
        (folder / "build.json").write_text(json.dumps({
            "format": 1, "project": "saxpy", "backend": backend, "key": backend, "source_hash": "",
            "kernels": {"saxpy": {"artifact": "saxpy.ptx", "entry": "saxpy", "kind": "ptx"}},
        }))  # fmt: skip
    return root


@pytest.mark.parametrize(
    ("faulty", "expected"),
    [
        (kernels.ILLEGAL_ADDRESS, "illegal memory access|illegal address|unspecified launch failure"),
        (kernels.ENDLESS, "timed out after 3 s"),
    ],
    ids=["illegal-address", "endless-loop"],
)
def test_a_faulting_kernel_is_contained_and_the_next_backend_runs(faulty, expected, tmp_path):
    """cuda-c runs first (the reference), nvptx faults or hangs, and rust-cuda, in the restarted
    worker, runs and verifies against cuda-c."""
    artifacts = _artifacts(
        tmp_path / "artifacts", {"cuda-c": kernels.SAXPY, "nvptx": faulty, "rust-cuda": kernels.SAXPY}
    )
    service = RunService()
    try:
        report = service.run(
            SAXPY, backends=["cuda-c", "nvptx", "rust-cuda"], sizes={"n": 1 << 20}, timeout_s=3.0,
            artifacts_dir=artifacts, devices=["cuda:0"], reference="cuda-c",
        )  # fmt: skip
    finally:
        service.close()
    results = {r.backend: r for r in report.results}
    assert results["cuda-c"].status == "ok" and results["cuda-c"].check.get("is_reference")
    assert results["nvptx"].status == "error", results["nvptx"]
    assert re.search(expected, results["nvptx"].error), results["nvptx"].error
    assert results["rust-cuda"].status == "ok", results["rust-cuda"].error
    assert results["rust-cuda"].verified is True and results["rust-cuda"].check["reference"] == "cuda-c"


def test_cold_l2_and_nvml_conditions_on_the_real_device(saxpy_kernel, tmp_path, cuda):
    """`measure` with l2 = cold: twice the device's L2 written before every sample; NVML's clocks and
    energy where nvidia-ml-py is installed (else null, said so)."""
    from workbench.run.timing import TimingOptions, options_to_dict
    from workbench.run.worker import WorkerState

    n = 1 << 24
    state = WorkerState("cuda")
    try:
        state.handle({"op": "prepare", "spec": _spec(saxpy_kernel, _write(tmp_path, "s", kernels.SAXPY), n),
                      "device_index": 0}, {})  # fmt: skip
        state.handle({"op": "upload"}, {"x": np.ones(n, np.float32), "y": np.zeros(n, np.float32)})
        options = TimingOptions(min_n=10, min_time_s=0.05, l2="cold", energy_batch_s=0.25)
        cold, _ = state.handle({"op": "measure", "options": options_to_dict(options)}, {})
        warm, _ = state.handle({"op": "measure", "options": options_to_dict(TimingOptions(min_n=10))}, {})
    finally:
        state.close()
    l2 = cuda.Device(0).get_attribute(cuda.device_attribute.L2_CACHE_SIZE)
    assert cold["conditions"]["l2"] == "cold" and cold["conditions"]["l2_flush_bytes"] == 2 * l2
    assert cold["stats"]["batch"] == 1 and warm["conditions"]["l2"] == "warm"
    # A 128 MiB-moving kernel barely notices the cache; a cold one is never much faster than warm.
    assert cold["stats"]["median_s"] > 0.9 * warm["stats"]["median_s"]
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # not installed, or no NVML library: the readings say unknown
        assert cold["conditions"]["clocks_before"] is None and cold["conditions"]["clock_source"] is None
        return
    before = cold["conditions"]["clocks_before"]
    assert cold["conditions"]["clock_source"] == "nvml" and before["sm_mhz"] > 0 and before["mem_mhz"] > 0
    assert cold["conditions"]["clocks_locked"] in (True, False)
    energy = cold["conditions"]["energy_per_launch_j"]
    assert energy is None or 0 < energy < 1.0  # a saxpy launch takes well under a joule
