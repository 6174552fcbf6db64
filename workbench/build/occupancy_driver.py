"""The CUDA driver's own occupancy answer, through `libcuda` and ctypes (no pycuda, no toolkit).

`workbench.build.occupancy` computes occupancy from a build's registers, shared memory and block
size with no GPU; this module asks the driver the same question where one is present
(`cuOccupancyMaxActiveBlocksPerMultiprocessor` on a PTX module it loads), so the calculator can be
checked against it: `tests/gpu/test_occupancy_driver.py`, and the committed H200 answers
(`tests/build/data/occupancy-h200.json`, written by `benchmarks/gpu_host/counters_capture.py`).
"""

from __future__ import annotations

import ctypes
from typing import Any

# CUdevice_attribute / CUfunction_attribute values (cuda.h).
DEVICE_ATTRIBUTES = {
    "warp_size": 10,
    "max_registers_per_block": 12,
    "multiprocessor_count": 16,
    "max_threads_per_multiprocessor": 39,
    "compute_capability_major": 75,
    "compute_capability_minor": 76,
    "max_shared_memory_per_multiprocessor": 81,
    "max_registers_per_multiprocessor": 82,
    "max_shared_memory_per_block_optin": 97,
    "max_blocks_per_multiprocessor": 106,
    "reserved_shared_memory_per_block": 111,
}
FUNC_MAX_THREADS_PER_BLOCK, FUNC_SHARED_SIZE_BYTES, FUNC_NUM_REGS = 0, 1, 4
FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8


class DriverError(RuntimeError):
    pass


class Driver:
    """One device's primary context, for occupancy questions and small launches."""

    def __init__(self, device_index: int = 0) -> None:
        try:
            self.lib = ctypes.CDLL("libcuda.so.1")
        except OSError as exc:
            raise DriverError(f"no CUDA driver (libcuda.so.1): {exc}") from None
        self._check(self.lib.cuInit(0), "cuInit")
        self.device = ctypes.c_int()
        self._check(self.lib.cuDeviceGet(ctypes.byref(self.device), device_index), "cuDeviceGet")
        self.context = ctypes.c_void_p()
        self._check(
            self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(self.context), self.device),
            "cuDevicePrimaryCtxRetain",
        )
        self._check(self.lib.cuCtxSetCurrent(self.context), "cuCtxSetCurrent")

    def _check(self, code: int, what: str) -> None:
        if code != 0:
            name = ctypes.c_char_p()
            self.lib.cuGetErrorName(code, ctypes.byref(name))
            raise DriverError(f"{what} failed: {(name.value or b'?').decode()} ({code})")

    def name(self) -> str:
        buf = ctypes.create_string_buffer(256)
        self._check(self.lib.cuDeviceGetName(buf, 256, self.device), "cuDeviceGetName")
        return buf.value.decode()

    def attributes(self) -> dict[str, int]:
        out = {}
        for key, number in DEVICE_ATTRIBUTES.items():
            value = ctypes.c_int()
            self._check(self.lib.cuDeviceGetAttribute(ctypes.byref(value), number, self.device), key)
            out[key] = value.value
        return out

    def load_ptx(self, ptx: bytes) -> ctypes.c_void_p:
        module = ctypes.c_void_p()
        self._check(
            self.lib.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(ptx + b"\0")), "cuModuleLoadData"
        )
        return module

    def function(self, module: ctypes.c_void_p, name: str) -> ctypes.c_void_p:
        func = ctypes.c_void_p()
        self._check(
            self.lib.cuModuleGetFunction(ctypes.byref(func), module, name.encode()), f"function {name}"
        )
        return func

    def function_attribute(self, func: ctypes.c_void_p, attribute: int) -> int:
        value = ctypes.c_int()
        self._check(self.lib.cuFuncGetAttribute(ctypes.byref(value), attribute, func), "cuFuncGetAttribute")
        return value.value

    def function_resources(self, func: ctypes.c_void_p) -> dict[str, int]:
        return {
            "registers": self.function_attribute(func, FUNC_NUM_REGS),
            "shared_bytes": self.function_attribute(func, FUNC_SHARED_SIZE_BYTES),
            "max_threads_per_block": self.function_attribute(func, FUNC_MAX_THREADS_PER_BLOCK),
        }

    def allow_dynamic_shared(self, func: ctypes.c_void_p, nbytes: int) -> None:
        """Opt the function in to `nbytes` of dynamic shared memory (beyond 48 KiB needs it)."""
        self._check(
            self.lib.cuFuncSetAttribute(func, FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(nbytes)),
            "cuFuncSetAttribute",
        )

    def max_active_blocks(self, func: ctypes.c_void_p, block_threads: int, dynamic_shared: int) -> int:
        blocks = ctypes.c_int()
        self._check(
            self.lib.cuOccupancyMaxActiveBlocksPerMultiprocessor(
                ctypes.byref(blocks), func, int(block_threads), ctypes.c_size_t(int(dynamic_shared))
            ),
            "cuOccupancyMaxActiveBlocksPerMultiprocessor",
        )
        return blocks.value

    def close(self) -> None:
        self.lib.cuDevicePrimaryCtxRelease_v2(self.device)


def driver_answers(
    ptx: bytes, functions: list[str], block_sizes: list[int], dynamic_shared: list[int], device_index: int = 0
) -> dict[str, Any]:
    """For each function × block size × dynamic shared bytes the driver allows: its resources and
    the driver's blocks per SM. Combinations the function cannot launch are left out."""
    driver = Driver(device_index)
    try:
        attrs = driver.attributes()
        module = driver.load_ptx(ptx)
        rows = []
        for name in functions:
            func = driver.function(module, name)
            resources = driver.function_resources(func)
            room = attrs["max_shared_memory_per_block_optin"] - resources["shared_bytes"]
            driver.allow_dynamic_shared(func, room)
            for threads in block_sizes:
                if threads > resources["max_threads_per_block"]:
                    continue
                for dynamic in dynamic_shared:
                    if dynamic > room:
                        continue
                    rows.append({
                        "function": name, **resources, "block_threads": threads, "dynamic_shared_bytes": dynamic,
                        "blocks_per_sm": driver.max_active_blocks(func, threads, dynamic),
                    })  # fmt: skip
        return {"device": driver.name(), "attributes": attrs, "rows": rows}
    finally:
        driver.close()
