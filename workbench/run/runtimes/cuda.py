"""The cuda runtime: PTX modules launched through pycuda, timed with CUDA events.

pycuda is imported only when the runtime is used, so machines without it (or without the NVIDIA
driver, libcuda.so.1) report the runtime unavailable with the reason instead of crashing.
Each device gets one context, created on first use and kept off the context stack between calls
(every operation pushes it and pops it again), so several devices can live in one worker.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from workbench.run.runtimes.base import Prepared, Runtime, RuntimeFailure, check_arrays
from workbench.run.spec import buffer_args, dtype_of

#: struct format characters for `Function.prepare` (pointers are "P").
_FORMATS = {"f32": "f", "f64": "d", "i32": "i", "u32": "I", "i64": "q", "u64": "Q"}
#: FP32 lanes per SM by compute capability major (minor where it differs), for peak GFLOP/s.
_FP32_PER_SM = {(6, 0): 64, 6: 128, 7: 64, (8, 0): 64, 8: 128, 9: 128, 10: 128, 12: 128}
#: CUDA events resolve about half a microsecond (CUDA Runtime API, cudaEventElapsedTime).
EVENT_RESOLUTION_S = 0.5e-6
#: Inputs at least this large are page-locked (cuMemHostRegister) before their copy to the device:
#: a copy from pageable memory went at about 2 GB/s on the H200 host, a pinned one is DMA.
PIN_MIN_BYTES = 32 << 20
#: cuMemHostRegister flags: PORTABLE (every context) | READ_ONLY (the worker maps inputs read-only).
_PIN_FLAGS = 0x01 | 0x08


class HostPins:
    """Page-locked ranges of host memory (the worker's cached mappings of the shared inputs), kept
    across prepared kernels so a second backend on the same device copies at DMA speed at once.
    Through libcuda directly: pycuda's register_host_memory wants a writable buffer. Any failure
    (no READ_ONLY support, no libcuda) leaves the memory pageable: the copy is slower, not wrong."""

    def __init__(self) -> None:
        self._pinned: dict[int, int] = {}  # address -> bytes
        self._lib: Any = None
        self._failed = False

    def _libcuda(self) -> Any:
        if self._lib is None and not self._failed:
            import ctypes

            try:
                lib = ctypes.CDLL("libcuda.so.1")
                register = getattr(lib, "cuMemHostRegister_v2", None) or lib.cuMemHostRegister
                register.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint]
                lib.cuMemHostUnregister.argtypes = [ctypes.c_void_p]
                self._lib = (register, lib.cuMemHostUnregister)
            except (OSError, AttributeError):
                self._failed = True
        return self._lib

    def pin(self, array: np.ndarray) -> bool:
        """Page-lock `array`'s memory (a context must be current); True when it is pinned."""
        address, nbytes = int(array.ctypes.data), int(array.nbytes)
        if self._pinned.get(address) == nbytes:
            return True
        if nbytes < PIN_MIN_BYTES or self._failed or address in self._pinned:
            return False
        lib = self._libcuda()
        if lib is None or lib[0](address, nbytes, _PIN_FLAGS) != 0:
            return False
        self._pinned[address] = nbytes
        return True

    def release(self, array: np.ndarray) -> None:
        """Unlock `array`'s memory before its mapping goes away."""
        address = int(array.ctypes.data)
        if self._pinned.pop(address, None) is not None and self._lib is not None:
            self._lib[1](address)

    def pinned_bytes(self) -> int:
        return sum(self._pinned.values())

    def forget(self) -> None:
        """The contexts are gone, and their registrations with them."""
        self._pinned.clear()


def _driver():
    """pycuda.driver, initialised; RuntimeFailure saying why when it cannot be."""
    try:
        import pycuda.driver as cuda
    except ImportError as exc:
        if getattr(exc, "name", None) in ("pycuda", "pycuda.driver") and "libcuda" not in str(exc):
            from workbench.build.install_hints import CUDA_BUNDLE_HINT, CUDA_RUNTIME_HINT
            from workbench.frozen import is_frozen

            hint = CUDA_BUNDLE_HINT if is_frozen() else CUDA_RUNTIME_HINT
            raise RuntimeFailure(f"pycuda is not installed; to run on NVIDIA GPUs: {hint}") from None
        raise RuntimeFailure(f"pycuda cannot load the NVIDIA driver: {exc}") from None
    except Exception as exc:  # a broken install
        raise RuntimeFailure(f"pycuda cannot be imported: {exc}") from None
    try:
        cuda.init()
    except Exception as exc:
        raise RuntimeFailure(f"CUDA driver initialisation failed: {exc}") from None
    return cuda


def _cuda_error(what: str, exc: BaseException, fatal: bool = False) -> RuntimeFailure:
    # pycuda's messages name the driver call and CUDA's error string, e.g.
    # "cuModuleGetFunction failed: named symbol not found".
    return RuntimeFailure(f"{what}: {type(exc).__name__}: {exc}", fatal=fatal)


def device_properties(cuda: Any, index: int) -> dict[str, Any]:
    """Name, compute capability, memory, SMs, clocks and theoretical peaks of one CUDA device."""
    dev = cuda.Device(index)
    attr = cuda.device_attribute
    major, minor = dev.compute_capability()
    sms = dev.get_attribute(attr.MULTIPROCESSOR_COUNT)
    clock_khz = dev.get_attribute(attr.CLOCK_RATE)
    mem_clock_khz = dev.get_attribute(attr.MEMORY_CLOCK_RATE)
    bus_bits = dev.get_attribute(attr.GLOBAL_MEMORY_BUS_WIDTH)
    # Double data rate: two transfers per memory clock.
    peak_gbps = 2 * mem_clock_khz * 1e3 * bus_bits / 8 / 1e9 if mem_clock_khz and bus_bits else None
    lanes = _FP32_PER_SM.get((major, minor), _FP32_PER_SM.get(major))
    peak_gflops = 2 * sms * lanes * clock_khz * 1e3 / 1e9 if lanes and clock_khz else None
    return {
        "runtime": "cuda",
        "index": index,
        "name": dev.name(),
        "spec": f"cuda:{index}",
        "compute_capability": f"{major}.{minor}",
        "total_memory_bytes": int(dev.total_memory()),
        "sm_count": int(sms),
        "clock_mhz": clock_khz / 1e3,
        "memory_clock_mhz": mem_clock_khz / 1e3,
        "memory_bus_width_bits": int(bus_bits),
        "peak_gbps": peak_gbps,
        "peak_gflops": peak_gflops,
    }


class CudaPrepared(Prepared):
    timer_method = "cuda-events"
    timer_resolution_s = EVENT_RESOLUTION_S

    def __init__(self, spec: dict[str, Any], cuda: Any, context: Any, pins: HostPins | None = None):
        self.spec = spec
        self._cuda = cuda
        self._context = context
        self._pins = pins
        self._allocations: dict[str, Any] = {}
        self._lengths: dict[str, tuple[int, np.dtype]] = {}
        artifact = spec["artifact"]
        path = Path(artifact["path"])
        if artifact["kind"] != "ptx":
            raise RuntimeFailure(f"the cuda runtime runs ptx artifacts, not {artifact['kind']!r}")
        try:
            ptx = path.read_bytes()
        except OSError as exc:
            raise RuntimeFailure(f"cannot read PTX {path}: {exc.strerror or exc}") from None
        if not ptx.endswith(b"\0"):
            ptx += b"\0"  # cuModuleLoadData reads PTX as a C string
        self.block = tuple(int(t) for t in spec["threads"])
        self.grid = tuple(int(g) for g in spec["grid"])
        with self._current():
            try:
                self._module = cuda.module_from_buffer(ptx)
            except Exception as exc:
                raise _cuda_error(f"loading {path.name} failed (PTX JIT)", exc) from None
            entry = artifact["entry"]
            try:
                self._function = self._module.get_function(entry)
            except Exception as exc:
                origin = artifact.get("entry_origin") or "from the build"
                raise _cuda_error(
                    f"{path.name} has no kernel {entry!r} (the name looked up: {origin})", exc
                ) from None
            formats = []
            for arg in spec["args"]:
                if arg["kind"] == "buffer":
                    formats.append("P")
                elif arg["type"] in _FORMATS:
                    formats.append(_FORMATS[arg["type"]])
                else:
                    raise RuntimeFailure(f"scalar {arg['name']!r} has unknown type {arg['type']!r}")
            self._function.prepare("".join(formats))
            try:
                for arg in buffer_args(spec):
                    length, dtype = int(arg["length"]), dtype_of(arg["type"])
                    self._lengths[arg["name"]] = (length, dtype)
                    self._allocations[arg["name"]] = cuda.mem_alloc(max(length * dtype.itemsize, 1))
            except Exception as exc:
                self._free()
                raise _cuda_error("allocating device buffers failed", exc) from None
            self._start, self._end = cuda.Event(), cuda.Event()
        self._flush: Any = None
        self.flush_bytes: int | None = None

    @contextlib.contextmanager
    def _current(self) -> Iterator[None]:
        """This device's context is current inside the block."""
        self._context.push()
        try:
            yield
        finally:
            self._context.pop()

    def _arguments(self) -> list[Any]:
        values: list[Any] = []
        for arg in self.spec["args"]:
            if arg["kind"] == "buffer":
                values.append(int(self._allocations[arg["name"]]))
            elif arg["type"].startswith("f"):
                values.append(float(arg["value"]))
            else:
                values.append(int(arg["value"]))
        return values

    def upload(self, arrays: dict[str, np.ndarray]) -> None:
        checked = check_arrays(self.spec, arrays)
        with self._current():
            try:
                for name, array in checked.items():
                    if array.nbytes:
                        if self._pins is not None and not array.flags.writeable:
                            self._pins.pin(array)  # the shared inputs: the next backend reuses it
                        self._cuda.memcpy_htod(self._allocations[name], array)
                # A copy from pageable memory can return before its last DMA lands; a launch timed
                # right after (timing restores inout buffers between samples) would count the tail.
                self._cuda.Context.synchronize()
            except Exception as exc:
                raise _cuda_error("copying inputs to the device failed", exc) from None

    def launch(self, count: int = 1) -> float:
        if count < 1:
            raise RuntimeFailure(f"launch count must be at least 1, got {count}")
        args = self._arguments()
        with self._current():
            try:
                self._start.record()
                for _ in range(count):
                    self._function.prepared_call(self.grid, self.block, *args)
                self._end.record()
                self._end.synchronize()
                return self._start.time_till(self._end) * 1e-3  # ms -> s
            except Exception as exc:
                # Errors like an illegal address poison the context: the worker must restart.
                raise _cuda_error("kernel launch failed", exc, fatal=True) from None

    def flush_caches(self) -> None:
        """Evict the L2 before a cold sample: write a scratch buffer of twice the L2 size
        (cuMemsetD32, as nvbench does) and wait for it, so none of it lands in a timed region."""
        with self._current():
            try:
                if self._flush is None:
                    l2 = self._context.get_device().get_attribute(self._cuda.device_attribute.L2_CACHE_SIZE)
                    self.flush_bytes = max(2 * int(l2), 1 << 20)
                    self._flush = self._cuda.mem_alloc(self.flush_bytes)
                self._cuda.memset_d32(self._flush, 0, self.flush_bytes // 4)
                self._cuda.Context.synchronize()
            except Exception as exc:
                raise _cuda_error("flushing the L2 failed", exc, fatal=True) from None

    def nvml_device(self) -> dict[str, Any]:
        """How NVML finds this device (by PCI bus id: NVML and CUDA may number devices apart)."""
        try:
            # Context.get_device() reads the *current* context's device: make ours current first.
            with self._current():
                return {"pci_bus_id": self._context.get_device().pci_bus_id()}
        except Exception:
            return {}

    def download(self, names: list[str]) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        with self._current():
            for name in names:
                if name not in self._lengths:
                    raise RuntimeFailure(f"no buffer named {name!r}; buffers: {', '.join(self._lengths)}")
                length, dtype = self._lengths[name]
                array = np.empty(length, dtype)
                try:
                    if length:
                        self._cuda.memcpy_dtoh(array, self._allocations[name])
                except Exception as exc:
                    raise _cuda_error(f"copying {name!r} back failed", exc, fatal=True) from None
                out[name] = array
        return out

    def download_into(self, arrays: dict[str, np.ndarray]) -> None:
        """Copy the named buffers back into the given host arrays (shared memory): one DMA each."""
        with self._current():
            for name, array in arrays.items():
                if name not in self._lengths:
                    raise RuntimeFailure(f"no buffer named {name!r}; buffers: {', '.join(self._lengths)}")
                try:
                    if array.size:
                        self._cuda.memcpy_dtoh(array, self._allocations[name])
                except Exception as exc:
                    raise _cuda_error(f"copying {name!r} back failed", exc, fatal=True) from None

    def _free(self) -> None:
        if self._flush is not None:
            self._allocations["__flush__"] = self._flush
            self._flush = None
        for allocation in self._allocations.values():
            try:
                allocation.free()
            except Exception:
                pass
        self._allocations = {}

    def close(self) -> None:
        if not self._allocations and getattr(self, "_module", None) is None:
            return
        try:
            with self._current():
                self._free()
                self._module = None
                self._function = None
        except Exception:
            pass


class CudaRuntime(Runtime):
    name = "cuda"

    def __init__(self) -> None:
        self._contexts: dict[int, Any] = {}
        self.pins = HostPins()

    def available(self) -> tuple[bool, str]:
        try:
            cuda = _driver()
            count = cuda.Device.count()
        except RuntimeFailure as exc:
            return False, str(exc)
        except Exception as exc:
            return False, f"CUDA device query failed: {exc}"
        if count == 0:
            return False, "the CUDA driver reports no device"
        return True, ""

    def devices(self) -> list[dict[str, Any]]:
        cuda = _driver()
        return [device_properties(cuda, i) for i in range(cuda.Device.count())]

    def prepare(self, spec: dict[str, Any], device_index: int) -> Prepared:
        cuda = _driver()
        count = cuda.Device.count()
        if not 0 <= device_index < count:
            raise RuntimeFailure(f"no CUDA device {device_index}; this machine has {count}")
        if device_index not in self._contexts:
            try:
                context = cuda.Device(device_index).make_context()
            except Exception as exc:
                raise _cuda_error(f"creating a context on cuda:{device_index} failed", exc) from None
            context.pop()  # make_context leaves it current; operations push it when needed
            self._contexts[device_index] = context
        return CudaPrepared(spec, cuda, self._contexts[device_index], self.pins)

    def release_host(self, array: np.ndarray) -> None:
        """The worker drops a mapping it kept: unlock it first (a context current for the call)."""
        context = next(iter(self._contexts.values()), None)
        if context is None:
            return
        try:
            context.push()
        except Exception:
            return
        try:
            self.pins.release(array)
        finally:
            context.pop()

    def close(self) -> None:
        """Destroy the contexts (the worker calls this before it exits)."""
        for context in self._contexts.values():
            try:
                context.detach()
            except Exception:
                pass
        self._contexts = {}
        self.pins.forget()


RUNTIME = CudaRuntime()
