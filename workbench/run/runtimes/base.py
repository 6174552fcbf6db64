"""What every runtime offers a worker process: devices, and a prepared kernel to upload, launch, read.

A `Runtime` (cpu, cuda, wgpu) turns a launch spec (`workbench/run/spec.py`) into a `Prepared`
kernel on one device. The worker drives it:

    prepared = get_runtime(spec["runtime"]).prepare(spec, device_index)
    prepared.upload({"x": x, "y": y})          # every buffer arg, numpy arrays of the spec's dtype
    seconds = prepared.launch(count=10)        # total time of 10 back-to-back launches
    out = prepared.download(["y"])
    prepared.close()

Every failure a user can act on is a `RuntimeFailure` with a readable message (the validator's
text, the CUDA error name, the missing symbol ...).
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from workbench.errors import WorkbenchError
from workbench.runtimes_table import RUNTIME_TABLE


class RuntimeFailure(WorkbenchError):
    """A kernel could not be loaded, launched or read back; the message says why.

    `fatal` marks failures that leave the device unusable in this process (a CUDA kernel fault
    poisons its context): the worker should be restarted before the next kernel."""

    def __init__(self, message: str, fatal: bool = False):
        super().__init__(message)
        self.fatal = fatal


class Prepared:
    """One kernel loaded on one device, with its buffers allocated."""

    #: How `launch` measures time: "wall-clock", "wgpu-timestamps", "cuda-events".
    timer_method: str = "wall-clock"
    #: The smallest time step the timer can tell apart, in seconds.
    timer_resolution_s: float = 1e-9

    def upload(self, arrays: dict[str, np.ndarray]) -> None:
        """Copy every buffer arg's contents (by arg name) to the device."""
        raise NotImplementedError

    def launch(self, count: int = 1) -> float:
        """Run `count` launches back to back; return their TOTAL time in seconds (device time
        where the runtime can measure it)."""
        raise NotImplementedError

    def download(self, names: list[str]) -> dict[str, np.ndarray]:
        """Copy the named buffers back from the device."""
        raise NotImplementedError

    def close(self) -> None:
        """Free device resources; safe to call twice."""

    def __enter__(self) -> Prepared:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Runtime:
    """A way of executing kernels (cpu, cuda, wgpu) and the devices it reaches."""

    name: str = ""

    def available(self) -> tuple[bool, str]:
        """(True, "") when this runtime can run here, else (False, the reason)."""
        raise NotImplementedError

    def devices(self) -> list[dict[str, Any]]:
        """One dict per device: at least "runtime", "index", "name", "spec", "peak_gbps",
        "peak_gflops" (None when unknown)."""
        raise NotImplementedError

    def prepare(self, spec: dict[str, Any], device_index: int) -> Prepared:
        """Load the spec's artifact on device `device_index` and allocate its buffers."""
        raise NotImplementedError


def get_runtime(name: str) -> Runtime:
    """The runtime called `name` (a row of `workbench.runtimes_table`); its GPU library is imported lazily."""
    if name not in RUNTIME_TABLE:
        raise RuntimeFailure(f"unknown runtime {name!r}; runtimes: {', '.join(RUNTIME_TABLE)}")
    module = importlib.import_module(f"workbench.run.runtimes.{RUNTIME_TABLE[name].module}")
    return module.RUNTIME


def check_arrays(spec: dict[str, Any], arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Check that `arrays` has every buffer of the spec with the right dtype and length; return
    them as C-contiguous arrays."""
    from workbench.run.spec import buffer_args, dtype_of

    out: dict[str, np.ndarray] = {}
    for arg in buffer_args(spec):
        name = arg["name"]
        if name not in arrays:
            raise RuntimeFailure(f"no data uploaded for buffer {name!r}")
        array = np.asarray(arrays[name])
        dtype = dtype_of(arg["type"])
        if array.dtype != dtype:
            raise RuntimeFailure(f"buffer {name!r} has dtype {array.dtype}, expected {dtype} ({arg['type']})")
        if array.size != int(arg["length"]):
            raise RuntimeFailure(f"buffer {name!r} has {array.size} elements, expected {arg['length']}")
        out[name] = np.ascontiguousarray(array.reshape(-1))
    return out
