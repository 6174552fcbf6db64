"""The `gpu` suite: the cuda runtime against a real NVIDIA driver through real pycuda.

Every test here is marked `gpu` and skips (with the reason) where pycuda cannot be imported or the
driver reports no device, so the suite is harmless on CI and runs in full on a GPU host:

    python -m pytest tests/gpu -m gpu -v
"""

from __future__ import annotations

import pytest


def _cuda_reason() -> str:
    """Empty when real pycuda reaches a CUDA device, else why not."""
    try:
        import pycuda.driver as cuda
    except Exception as exc:  # ImportError, or libcuda.so.1 missing
        return f"pycuda cannot be imported: {exc}"
    if not hasattr(cuda, "mem_get_info"):
        return "pycuda.driver is a test double, not the real module"
    try:
        cuda.init()
        if cuda.Device.count() == 0:
            return "the CUDA driver reports no device"
    except Exception as exc:
        return f"CUDA driver initialisation failed: {exc}"
    return ""


CUDA_REASON = _cuda_reason()


def pytest_collection_modifyitems(config, items):
    here = __file__.rsplit("/", 1)[0]
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.gpu)
            if CUDA_REASON:
                item.add_marker(pytest.mark.skip(reason=f"no real CUDA here: {CUDA_REASON}"))


@pytest.fixture(scope="session")
def cuda():
    import pycuda.driver as driver

    driver.init()
    return driver


@pytest.fixture
def probe_context(cuda):
    """A context of this test process, for reading device-wide free memory (cuMemGetInfo)."""
    context = cuda.Device(0).make_context()
    context.pop()

    def free_bytes() -> int:
        context.push()
        try:
            return int(cuda.mem_get_info()[0])
        finally:
            context.pop()

    yield free_bytes
    context.detach()
