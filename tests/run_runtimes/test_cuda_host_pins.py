"""HostPins: the cuda runtime's page locks of the worker's shared inputs. The real registration
needs libcuda (tests/gpu covers it on a GPU host); here its bookkeeping runs against recorded calls
of the two driver entry points."""

from __future__ import annotations

import numpy as np

from workbench.run.runtimes import cuda as cuda_mod


class _Driver:
    """cuMemHostRegister / cuMemHostUnregister stand-ins that record their calls."""

    def __init__(self, result: int = 0):
        self.result = result
        self.calls: list[tuple] = []

    def register(self, address, nbytes, flags):
        self.calls.append(("register", address, nbytes, flags))
        return self.result

    def unregister(self, address):
        self.calls.append(("unregister", address))
        return 0


def _pins(driver: _Driver) -> cuda_mod.HostPins:
    pins = cuda_mod.HostPins()
    pins._lib = (driver.register, driver.unregister)
    return pins


def test_large_arrays_are_pinned_once_read_only_and_released(monkeypatch):
    monkeypatch.setattr(cuda_mod, "PIN_MIN_BYTES", 4096)
    driver = _Driver()
    pins = _pins(driver)
    big, small = np.zeros(2048, np.float32), np.zeros(16, np.float32)
    assert pins.pin(big) and pins.pin(big)  # the second call finds it pinned
    assert not pins.pin(small)  # below the threshold: a pageable copy is as quick
    (call,) = driver.calls
    assert call == ("register", big.ctypes.data, big.nbytes, 0x01 | 0x08)  # PORTABLE | READ_ONLY
    assert pins.pinned_bytes() == big.nbytes
    pins.release(big)
    pins.release(big)  # twice: nothing left to unlock
    assert driver.calls[1:] == [("unregister", big.ctypes.data)] and pins.pinned_bytes() == 0


def test_a_refused_registration_leaves_the_memory_pageable(monkeypatch):
    monkeypatch.setattr(cuda_mod, "PIN_MIN_BYTES", 4096)
    driver = _Driver(result=1)  # CUDA_ERROR_INVALID_VALUE, e.g. no READ_ONLY support
    pins = _pins(driver)
    array = np.zeros(4096, np.float32)
    assert not pins.pin(array) and pins.pinned_bytes() == 0
    pins.release(array)  # nothing to unlock: no driver call
    assert [c[0] for c in driver.calls] == ["register"]


def test_without_libcuda_nothing_is_pinned(monkeypatch):
    monkeypatch.setattr(cuda_mod, "PIN_MIN_BYTES", 4096)
    pins = cuda_mod.HostPins()
    monkeypatch.setattr("ctypes.CDLL", lambda name: (_ for _ in ()).throw(OSError(f"{name}: not found")))
    assert not pins.pin(np.zeros(4096, np.float32)) and pins.pinned_bytes() == 0
