"""A stand-in for `pycuda.driver`, which cannot be installed here (no NVIDIA driver).

Shaped after pycuda's documented API (pycuda.driver: init, Device, device_attribute,
Context.push/pop/detach/synchronize, module_from_buffer, Module.get_function, Function.prepare /
prepared_call, mem_alloc, memcpy_htod / memcpy_dtoh, Event.record / synchronize / time_till,
LogicError). "Device memory" is host memory addressed by fake pointers; the one kernel it knows,
`saxpy(u32 n, f32 a, f32* x, f32* y)`, is run with numpy so the runtime's data flow can be checked.

Fault mode: a module whose PTX contains `FAKE_FAULT` faults like a kernel that touched an illegal
address on a real device: the launch itself returns (launches are asynchronous), the next call that
waits for the device raises `LaunchError` ("an illegal memory access was encountered"), and every
later call in this process raises it too (CUDA's sticky error: the context is unusable until the
process ends). Placed on PYTHONPATH as `pycuda/driver.py`, it serves worker processes as well.
"""

from __future__ import annotations

import struct
import types

import numpy as np


class Error(Exception):
    pass


class LogicError(Error):
    pass


class LaunchError(Error):
    pass


ILLEGAL_ADDRESS = "cuCtxSynchronize failed: an illegal memory access was encountered"
#: Set once a FAKE_FAULT kernel ran: every later call raises, as on a poisoned CUDA context.
poisoned = False
_pending_fault = False


def _check_sticky():
    global poisoned, _pending_fault
    if _pending_fault:
        _pending_fault, poisoned = False, True
    if poisoned:
        raise LaunchError(ILLEGAL_ADDRESS)


device_attribute = types.SimpleNamespace(
    MULTIPROCESSOR_COUNT="MULTIPROCESSOR_COUNT",
    CLOCK_RATE="CLOCK_RATE",
    MEMORY_CLOCK_RATE="MEMORY_CLOCK_RATE",
    GLOBAL_MEMORY_BUS_WIDTH="GLOBAL_MEMORY_BUS_WIDTH",
    L2_CACHE_SIZE="L2_CACHE_SIZE",
)
# What an H200 reports (kHz, bits).
_ATTRIBUTES = {"MULTIPROCESSOR_COUNT": 132, "CLOCK_RATE": 1_980_000, "MEMORY_CLOCK_RATE": 2_619_000,
               "GLOBAL_MEMORY_BUS_WIDTH": 6144, "L2_CACHE_SIZE": 62_914_560}  # fmt: skip
_memory: dict[int, bytearray] = {}
context_stack: list[Context] = []
calls: list[tuple] = []


def init(flags=0):
    pass


class Context:
    def push(self):
        context_stack.append(self)

    def pop(self):
        assert context_stack, "pop with an empty context stack"
        context_stack.pop()

    def detach(self):
        pass

    def get_device(self):
        return Device(0)

    @staticmethod
    def synchronize():
        assert context_stack, "Context.synchronize with no current context"
        calls.append(("synchronize",))
        _check_sticky()


class Device:
    def __init__(self, index):
        self.index = index

    @staticmethod
    def count():
        return 1

    def name(self):
        return "NVIDIA H200"

    def compute_capability(self):
        return (9, 0)

    def total_memory(self):
        return 150_000_000_000

    def get_attribute(self, attribute):
        return _ATTRIBUTES[attribute]

    def pci_bus_id(self):
        return "00000000:19:00.0"

    def make_context(self, flags=0):
        context = Context()
        context.push()
        return context


class DeviceAllocation:
    def __init__(self, size):
        self.pointer = 0x1000 * (len(_memory) + 1)
        _memory[self.pointer] = bytearray(size)

    def __int__(self):
        return self.pointer

    def free(self):
        _memory.pop(self.pointer, None)


def mem_alloc(size):
    assert context_stack, "mem_alloc without a current context"
    _check_sticky()
    return DeviceAllocation(size)


def memcpy_htod(dest, src):
    _check_sticky()
    data = np.ascontiguousarray(src).tobytes()
    _memory[int(dest)][: len(data)] = data


def memset_d32(dest, value, count):
    _check_sticky()
    calls.append(("memset_d32", int(dest), value, count))  # recorded, not written: nothing reads it


def memcpy_dtoh(dest, src):
    _check_sticky()
    raw = _memory[int(src)]
    dest[...] = np.frombuffer(bytes(raw[: dest.nbytes]), dtype=dest.dtype).reshape(dest.shape)


class Function:
    def __init__(self, name, faults=False):
        self.name = name
        self.faults = faults
        self.arg_format = None

    def prepare(self, arg_types):
        self.arg_format = arg_types
        return self

    def prepared_call(self, grid, block, *args, shared_size=0):
        global _pending_fault
        assert context_stack, "launch without a current context"
        _check_sticky()
        if self.faults:
            _pending_fault = True  # reported by the next call that waits, like the real driver
            return
        buf = struct.pack(self.arg_format, *args)  # pycuda packs the arguments exactly like this
        n, a, x_ptr, y_ptr = struct.unpack(self.arg_format, buf)
        calls.append((grid, block, self.arg_format))
        covered = grid[0] * block[0]
        x = np.frombuffer(bytes(_memory[x_ptr]), np.float32)[:n]
        y = np.frombuffer(bytes(_memory[y_ptr]), np.float32)[:n].copy()
        m = min(n, covered)
        y[:m] = np.float32(a) * x[:m] + y[:m]
        _memory[y_ptr][: 4 * n] = y.tobytes()


class Module:
    def __init__(self, ptx):
        self.ptx = ptx

    def get_function(self, name):
        if f".entry {name}(".encode() not in self.ptx:
            raise LogicError("cuModuleGetFunction failed: named symbol not found")
        return Function(name, faults=b"FAKE_FAULT" in self.ptx)


def module_from_buffer(buffer, options=None, message_handler=None):
    assert context_stack, "module load without a current context"
    _check_sticky()
    if not buffer.endswith(b"\0"):
        raise LogicError("cuModuleLoadDataEx failed: PTX is not NUL-terminated")
    return Module(buffer)


class Event:
    def __init__(self, flags=0):
        self.recorded = False

    def record(self, stream=None):
        self.recorded = True
        return self

    def synchronize(self):
        _check_sticky()
        return self

    def time_till(self, end):
        assert self.recorded and end.recorded
        return 0.25  # milliseconds
