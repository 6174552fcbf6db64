"""Kernel inputs from the manifest's initializers, and poisoned output buffers.

Every backend gets the same arrays: they are made once per run from the manifest (`random`,
`linspace`, `constant`, `zeros`, `npy`) with a recorded seed. Buffers with direction `out` are
filled with a poison pattern before every verification launch, so elements a kernel never writes
are caught: a quiet NaN with a distinctive payload for floats, 0xDEADBEEF for integers.
"""

from __future__ import annotations

import os
import threading
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from workbench.errors import WorkbenchError
from workbench.manifest import BufferArg, Kernel, Values
from workbench.run import shm
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


#: Elements per generation chunk: each chunk has its own random stream (SeedSequence.spawn), so
#: the values depend on the seed and this constant only, never on the number of threads.
CHUNK = 1 << 22
#: Threads that fill chunks (numpy's generators release the GIL).
THREADS = max(1, min(8, os.cpu_count() or 1))
#: Elements drawn and scaled at a time inside a chunk (fits in L2); the values do not depend on it.
_BLOCK = 1 << 15


def copy_parallel(out: np.ndarray, source: np.ndarray) -> None:
    """`out[...] = source` in chunks on threads (a large copy into fresh pages is not one core's
    memory bandwidth)."""

    def copy(_i: int, a: int, b: int) -> None:
        out[a:b] = source[a:b]

    _parallel(out.size, copy)


def _chunks(length: int) -> list[tuple[int, int]]:
    return [(start, min(start + CHUNK, length)) for start in range(0, length, CHUNK)] or [(0, 0)]


def _parallel(length: int, fill) -> None:
    """Call `fill(index, start, stop)` for every chunk, on threads when there is more than one."""
    chunks = _chunks(length)
    if len(chunks) == 1 or THREADS == 1:
        for i, (a, b) in enumerate(chunks):
            fill(i, a, b)
        return
    with ThreadPoolExecutor(THREADS, thread_name_prefix="wb-inputs") as pool:
        list(pool.map(lambda job: fill(job[0], *job[1]), enumerate(chunks)))


def fill_buffer(arg: BufferArg, out: np.ndarray, run_seed: int, root: str | Path) -> None:
    """Write the initial contents of one buffer into `out` (1-D, the buffer's dtype).

    Random values are drawn directly in the element type (`Generator.random(dtype=float32)`,
    `integers(dtype=...)`), chunk by chunk from independent streams spawned from the buffer's
    seed: deterministic per seed, the same on every machine and thread count."""
    dtype = out.dtype
    length = out.size
    init = arg.init
    if init.kind == "zeros":
        out[...] = 0
    elif init.kind == "constant":
        out[...] = np.array(init.value).astype(dtype)
    elif init.kind == "linspace":
        start, stop = float(init.start), float(init.stop)
        step = (stop - start) / (length - 1) if length > 1 else 0.0

        def fill_linspace(_i: int, a: int, b: int) -> None:
            out[a:b] = (start + step * np.arange(a, b, dtype=np.float64)).astype(dtype)

        _parallel(length, fill_linspace)
        if length > 1:
            out[-1] = np.array(stop).astype(dtype)
    elif init.kind == "random":
        streams = np.random.SeedSequence(buffer_seed(init.seed, run_seed, arg.name)).spawn(
            len(_chunks(length))
        )
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            low = max(int(np.ceil(init.low)), int(info.min))
            high = min(int(np.floor(init.high)), int(info.max))
            if low > high:
                raise InputError(
                    f"buffer {arg.name!r}: random range [{init.low}, {init.high}] holds no {arg.type} value"
                )

            def fill_ints(i: int, a: int, b: int) -> None:
                rng = np.random.default_rng(streams[i])
                out[a:b] = rng.integers(low, high, size=b - a, dtype=dtype, endpoint=True)

            _parallel(length, fill_ints)
        else:
            low, span = dtype.type(init.low), dtype.type(init.high - init.low)

            def fill_floats(i: int, a: int, b: int) -> None:
                rng = np.random.default_rng(streams[i])
                # Drawn and scaled in cache-sized blocks: one pass over memory, not three.
                for start in range(a, b, _BLOCK):
                    block = out[start : min(start + _BLOCK, b)]
                    rng.random(out=block, dtype=dtype)
                    block *= span
                    block += low

            _parallel(length, fill_floats)
    elif init.kind == "npy":
        path = Path(root) / (init.path or "")
        try:
            data = np.load(path, mmap_mode="r", allow_pickle=False)  # read straight into `out`
        except (OSError, ValueError) as exc:
            raise InputError(f"buffer {arg.name!r}: cannot read {path}: {exc}") from None
        if data.size != length:
            raise InputError(
                f"buffer {arg.name!r}: {path} holds {data.size} elements, the buffer needs {length}"
            )
        if data.dtype.kind not in "biuf":
            raise InputError(f"buffer {arg.name!r}: {path} has dtype {data.dtype}, not numbers")
        out[...] = data.reshape(-1)
    else:
        raise InputError(f"buffer {arg.name!r}: unknown initializer {init.kind!r}")


def make_buffer(arg: BufferArg, length: int, run_seed: int, root: str | Path) -> np.ndarray:
    """The initial contents of one buffer, in private memory."""
    out = np.empty(length, dtype_of(arg.type))
    fill_buffer(arg, out, run_seed, root)
    return out


def _cache_key(arg: BufferArg, length: int, run_seed: int, root: str | Path) -> tuple:
    init = arg.init
    seed = buffer_seed(init.seed, run_seed, arg.name) if init.kind == "random" else None
    source: Any = None
    if init.kind == "npy":
        path = Path(root) / (init.path or "")
        try:
            stat = path.stat()
            source = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
        except OSError:
            source = str(path)
    params = (init.kind, init.value, init.start, init.stop, init.low, init.high, source)
    return (repr(params), repr(seed), int(length), arg.type)


class InputCache:
    """Inputs made once per (initializer, seed, length, type) and reused by every backend of a run
    and by the next runs of a sweep in this process. The arrays are read-only and, where the
    platform allows, live in shared memory (`shm.SharedArray`) that workers map directly.

    Only what the latest run used is kept: a size sweep does not pile up every size's inputs."""

    def __init__(self, shared: bool | None = None):
        self.shared = shm.available() if shared is None else shared
        self._entries: dict[tuple, Any] = {}
        self._segments: dict[int, shm.SharedArray] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def make(
        self, kernel: Kernel, values: Values, seed: int | None, root: str | Path
    ) -> dict[str, np.ndarray]:
        """Every buffer's initial contents at the lengths of `values` (`Kernel.evaluate`)."""
        run_seed = DEFAULT_SEED if seed is None else int(seed)
        lengths = values.lengths
        with self._lock:
            keys = {b.name: _cache_key(b, lengths[b.name], run_seed, root) for b in kernel.buffers}
            # Drop what this run does not use before allocating what it needs.
            for key in [k for k in self._entries if k not in keys.values()]:
                entry = self._entries.pop(key)
                self._segments.pop(id(_array_of(entry)), None)
            out: dict[str, np.ndarray] = {}
            for b in kernel.buffers:
                key = keys[b.name]
                entry = self._entries.get(key)
                if entry is None:
                    self.misses += 1
                    entry = self._new(b, lengths[b.name], run_seed, root)
                    self._entries[key] = entry
                else:
                    self.hits += 1
                out[b.name] = _array_of(entry)
            return out

    def _new(self, arg: BufferArg, length: int, run_seed: int, root: str | Path) -> Any:
        dtype = dtype_of(arg.type)
        if self.shared:
            segment = shm.SharedArray(length, dtype, label=f"input-{arg.name}")
            fill_buffer(arg, segment.array, run_seed, root)
            segment.array.flags.writeable = False
            self._segments[id(segment.array)] = segment
            return segment
        array = make_buffer(arg, length, run_seed, root)
        array.flags.writeable = False
        return array

    def segment_of(self, array: np.ndarray) -> shm.SharedArray | None:
        """The shared segment holding `array` (one of this cache's arrays), if any."""
        return self._segments.get(id(array))

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._segments.clear()


def _array_of(entry: Any) -> np.ndarray:
    return entry.array if isinstance(entry, shm.SharedArray) else entry


def make_inputs(kernel: Kernel, values: Values, seed: int | None, root: str | Path) -> dict[str, np.ndarray]:
    """Initial contents of every buffer of `kernel` (by name), at the lengths of `values`
    (`Kernel.evaluate`) and this seed (fresh private arrays; the run service uses an `InputCache`)."""
    run_seed = DEFAULT_SEED if seed is None else int(seed)
    lengths = values.lengths
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
