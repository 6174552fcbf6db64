"""Kernel inputs from the manifest's initializers, and poisoned output buffers.

Every backend gets the same arrays: they are made once per run from the manifest (`random`,
`linspace`, `constant`, `zeros`, `npy`) with a recorded seed. Buffers with direction `out` are
filled with a poison pattern before every verification launch, so elements a kernel never writes
are caught: a quiet NaN with a distinctive payload for floats, 0xDEADBEEF for integers.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

import numpy as np

from workbench.errors import WorkbenchError
from workbench.manifest import BufferArg, Kernel
from workbench.run.spec import dtype_of

#: The run seed when none is given (recorded in provenance either way).
DEFAULT_SEED = 0

#: Bit patterns of the poison per element size: quiet NaNs with payload 0x0DEAD5 / 0xDEADBEEF
#: for floats (a kernel's own NaNs almost never carry them), 0xDEADBEEF for integers.
POISON_BITS = {
    ("f", 4): 0x7FCDEAD5,
    ("f", 8): 0x7FF80000DEADBEEF,
    ("i", 4): 0xDEADBEEF,
    ("u", 4): 0xDEADBEEF,
    ("i", 8): 0xDEADBEEFDEADBEEF,
    ("u", 8): 0xDEADBEEFDEADBEEF,
}
_UINT = {4: np.uint32, 8: np.uint64}


class InputError(WorkbenchError):
    """An initializer cannot produce its buffer (bad npy file, wrong length ...)."""


def buffer_seed(init_seed: int | None, run_seed: int, name: str) -> Any:
    """The seed of one random buffer: its own when the manifest gives one, else the run's seed
    mixed with the buffer's name (so two buffers never get the same numbers)."""
    if init_seed is not None:
        return int(init_seed)
    return [int(run_seed) & 0xFFFFFFFFFFFFFFFF, zlib.crc32(name.encode())]


def make_buffer(arg: BufferArg, length: int, run_seed: int, root: str | Path) -> np.ndarray:
    """The initial contents of one buffer."""
    dtype = dtype_of(arg.type)
    init = arg.init
    if init.kind == "zeros":
        return np.zeros(length, dtype)
    if init.kind == "constant":
        return np.full(length, init.value).astype(dtype)
    if init.kind == "linspace":
        return np.linspace(init.start, init.stop, length).astype(dtype)
    if init.kind == "random":
        rng = np.random.default_rng(buffer_seed(init.seed, run_seed, arg.name))
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            low = max(int(np.ceil(init.low)), int(info.min))
            high = min(int(np.floor(init.high)), int(info.max))
            if low > high:
                raise InputError(
                    f"buffer {arg.name!r}: random range [{init.low}, {init.high}] holds no {arg.type} value"
                )
            return rng.integers(low, high, size=length, dtype=dtype, endpoint=True)
        return rng.uniform(init.low, init.high, size=length).astype(dtype)
    if init.kind == "npy":
        path = Path(root) / (init.path or "")
        try:
            data = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise InputError(f"buffer {arg.name!r}: cannot read {path}: {exc}") from None
        if data.size != length:
            raise InputError(
                f"buffer {arg.name!r}: {path} holds {data.size} elements, the buffer needs {length}"
            )
        if data.dtype.kind not in "biuf":
            raise InputError(f"buffer {arg.name!r}: {path} has dtype {data.dtype}, not numbers")
        return np.ascontiguousarray(data.reshape(-1)).astype(dtype)
    raise InputError(f"buffer {arg.name!r}: unknown initializer {init.kind!r}")


def make_inputs(
    kernel: Kernel, symbols: dict[str, int | float], seed: int | None, root: str | Path
) -> dict[str, np.ndarray]:
    """Initial contents of every buffer of `kernel` (by name), for these sizes and this seed."""
    run_seed = DEFAULT_SEED if seed is None else int(seed)
    lengths = kernel.lengths(symbols)
    return {b.name: make_buffer(b, lengths[b.name], run_seed, root) for b in kernel.buffers}


def poison_value(dtype: np.dtype) -> np.ndarray:
    """A one-element array holding the poison of `dtype`."""
    dtype = np.dtype(dtype)
    bits = POISON_BITS[(dtype.kind, dtype.itemsize)]
    return np.array([bits], _UINT[dtype.itemsize]).view(dtype)


def poisoned(length: int, dtype: np.dtype) -> np.ndarray:
    """An array of `length` poison elements."""
    dtype = np.dtype(dtype)
    uint = _UINT[dtype.itemsize]
    return np.full(length, POISON_BITS[(dtype.kind, dtype.itemsize)], uint).view(dtype)


def poison_mask(array: np.ndarray) -> np.ndarray:
    """True where `array` still holds the poison bit pattern (compared as integers, so NaN works)."""
    array = np.ascontiguousarray(array)
    bits = POISON_BITS[(array.dtype.kind, array.dtype.itemsize)]
    return array.view(_UINT[array.dtype.itemsize]) == _UINT[array.dtype.itemsize](bits)


def verification_inputs(kernel: Kernel, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """What to upload before a verification launch: fresh copies of in/inout buffers, poison
    for out buffers."""
    out: dict[str, np.ndarray] = {}
    for arg in kernel.buffers:
        array = inputs[arg.name]
        out[arg.name] = poisoned(array.size, array.dtype) if arg.direction == "out" else array.copy()
    return out


def output_names(kernel: Kernel) -> list[str]:
    """The buffers read back and compared: direction out or inout."""
    return [b.name for b in kernel.buffers if b.is_output]
