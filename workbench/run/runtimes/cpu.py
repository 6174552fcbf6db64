"""The cpu runtime: a cdylib loaded with ctypes, its entry called with pointers to numpy arrays.

The entry is `extern "C" fn(args...)` in launch order (buffers as pointers, scalars by value) and
covers the whole grid itself. An entry of a library built on the kernel API (it exports
`gpu_kernel_host_abi`) takes a launch record first (`cpu_launch.py`): the grid, the threads and
every buffer's length, and with cpu-sim's checks a report of what they found.
A crash inside it kills the worker process; the worker layer reports that, this module cannot.
"""

from __future__ import annotations

import ctypes
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from workbench.kernel_api import ELEMENT_CTYPES
from workbench.run.runtimes.base import Prepared, Runtime, RuntimeFailure, check_arrays
from workbench.run.runtimes.cpu_launch import LaunchRecord, host_abi
from workbench.run.spec import buffer_args, dtype_of

_CTYPES = ELEMENT_CTYPES


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (the platform's processor string elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Model", "Hardware") and value.strip():
                return value.strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine() or "cpu"


class CpuPrepared(Prepared):
    timer_method = "wall-clock"

    def __init__(self, spec: dict[str, Any], function: Any, library: ctypes.CDLL, kernel_api: bool):
        self.spec = spec
        self._launch = LaunchRecord(spec) if kernel_api else None
        self._function = function
        self._library = library  # keeps the .so loaded while the function is used
        self.timer_resolution_s = time.get_clock_info("perf_counter").resolution
        self._arrays: dict[str, np.ndarray] = {
            a["name"]: np.zeros(int(a["length"]), dtype_of(a["type"])) for a in buffer_args(spec)
        }

    def upload(self, arrays: dict[str, np.ndarray]) -> None:
        # Copies: the kernel writes in place, the caller's arrays stay untouched.
        self._arrays = {name: array.copy() for name, array in check_arrays(self.spec, arrays).items()}

    def bind(self, arrays: dict[str, np.ndarray]) -> None:
        """Run in the caller's arrays themselves (shared memory mapped by the worker): no copy.
        Read-only arrays (inputs) fault when the kernel writes them."""
        self._arrays = dict(check_arrays(self.spec, arrays))

    def _call_args(self) -> list[Any]:
        values: list[Any] = [self._launch.pointer()] if self._launch is not None else []
        for arg in self.spec["args"]:
            if arg["kind"] == "buffer":
                values.append(ctypes.c_void_p(self._arrays[arg["name"]].ctypes.data))
            else:
                ctype = _CTYPES[arg["type"]]
                values.append(ctype(arg["value"]))
        return values

    def launch(self, count: int = 1) -> float:
        args = self._call_args()
        function = self._function
        start = time.perf_counter()
        for _ in range(count):
            function(*args)
        return time.perf_counter() - start

    def findings(self) -> dict[str, Any] | None:
        """What cpu-sim's checks found in the last launch (None: no checks ran)."""
        return self._launch.findings(self.spec) if self._launch is not None else None

    def use_workers(self, workers: int) -> None:
        """Worker threads of the next launches (0: one per core; `workbench debug` runs one)."""
        if self._launch is not None:
            self._launch.record.workers = int(workers)

    def buffer(self, name: str) -> np.ndarray:
        """The array the kernel computes in (its address is what a debugger watches)."""
        return self._arrays[name]

    def writers(self) -> dict[str, np.ndarray] | None:
        """cpu-sim's writer arrays of the last launch, when asked for (`LaunchRecord.writers`)."""
        return self._launch.writers() if self._launch is not None else None

    def download(self, names: list[str]) -> dict[str, np.ndarray]:
        missing = [n for n in names if n not in self._arrays]
        if missing:
            raise RuntimeFailure(f"no buffer named {', '.join(missing)}; buffers: {', '.join(self._arrays)}")
        return {name: self._arrays[name].copy() for name in names}

    def close(self) -> None:
        self._arrays = {}


class CpuRuntime(Runtime):
    name = "cpu"

    def available(self) -> tuple[bool, str]:
        return True, ""

    def devices(self) -> list[dict[str, Any]]:
        return [
            {
                "runtime": "cpu",
                "index": 0,
                "name": cpu_model(),
                "spec": "cpu",
                "cores": os.cpu_count(),
                "peak_gbps": None,
                "peak_gflops": None,
            }
        ]

    def prepare(self, spec: dict[str, Any], device_index: int = 0) -> Prepared:
        if device_index != 0:
            raise RuntimeFailure(f"the cpu runtime has one device (cpu); got index {device_index}")
        artifact = spec["artifact"]
        if artifact["kind"] != "cdylib":
            raise RuntimeFailure(f"the cpu runtime runs cdylib artifacts, not {artifact['kind']!r}")
        path = artifact["path"]
        if not Path(path).is_file():
            raise RuntimeFailure(f"shared library {path} does not exist")
        try:
            # RTLD_LOCAL: two kernels' libraries may export the same symbol names.
            library = ctypes.CDLL(path, mode=os.RTLD_LOCAL)
        except OSError as exc:
            raise RuntimeFailure(f"cannot load {path}: {exc}") from None
        entry = artifact["entry"]
        try:
            function = getattr(library, entry)
        except AttributeError:
            raise RuntimeFailure(
                f"{Path(path).name} has no symbol {entry!r} (the name looked up: "
                f"{artifact.get('entry_origin') or 'from the build'}); is it "
                '`#[unsafe(no_mangle)] pub extern "C"`?'
            ) from None
        kernel_api = host_abi(library, path)
        argtypes = [ctypes.c_void_p] if kernel_api else []
        for arg in spec["args"]:
            if arg["kind"] == "buffer":
                argtypes.append(ctypes.c_void_p)
            else:
                if arg["type"] not in _CTYPES:
                    raise RuntimeFailure(f"scalar {arg['name']!r} has unknown type {arg['type']!r}")
                argtypes.append(_CTYPES[arg["type"]])
        function.argtypes = argtypes
        function.restype = None
        return CpuPrepared(spec, function, library, kernel_api)


RUNTIME = CpuRuntime()
