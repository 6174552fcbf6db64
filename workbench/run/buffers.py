"""One backend's buffers for its verification launch, and what a whole run holds in memory.

With a local worker (`WorkerProcess.shared`), the buffers live in shared memory (`shm.py`):
`in` buffers are the cached input segments themselves (the worker maps them read-only), `out`
buffers are fresh segments filled with poison and `inout` buffers fresh copies of their inputs
where the runtime computes in host memory (cpu); a device runtime uploads an `inout` buffer
straight from its input segment and downloads it into a fresh segment ("receive");
the upload request carries only their descriptions and descriptors, and the outputs come back in
the same segments (the caller then owns them: the reference's become the reference, kept once).
A remote worker gets the same arrays in frames instead.

Memory contract of a run (`memory_plan`): the inputs once (B, every buffer's bytes), one
backend's written buffers (W, the out/inout bytes), the reference outputs kept (W) and, on the
cpu runtime, a private copy of the written buffers while timing (W, so timing never overwrites
the verified outputs). For saxpy (one in, one inout) that is 1.5 B plus the reference outputs.
Each non-reference backend's outputs are kept in the report too (W each), unless the run is
asked not to (`RunService.run(keep_outputs=False)`, the command line): then W at most.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.manifest import Kernel, Values
from workbench.run import shm
from workbench.run.inputs import InputCache, copy_parallel, poison_value
from workbench.run.spec import dtype_of
from workbench.units import format_bytes


class BackendBuffers:
    """The buffers of one backend's verification launch."""

    def __init__(
        self,
        kernel: Kernel,
        inputs: dict[str, np.ndarray],
        cache: InputCache | None,
        shared: bool,
        spare: dict[tuple, shm.SharedArray] | None = None,
    ):
        self.kernel = kernel
        self.inputs = inputs
        self.cache = cache
        self.shared = bool(shared) and shm.available()
        self.working: dict[str, shm.SharedArray] = {}
        # `receive` segments of an earlier backend of the run whose outputs were let go (see
        # `recycle`): their pages are allocated and mapped already, here and in a worker that had
        # them before, which at 2^28 elements is most of a download's cost on the H200 host.
        self.spare = spare if spare is not None else {}
        self.received: set[str] = set()
        self._segments: dict[str, shm.SharedArray] = {}  # inputs as segments (cached or copied)

    def _input_segment(self, name: str) -> shm.SharedArray:
        array = self.inputs[name]
        segment = self.cache.segment_of(array) if self.cache is not None else None
        if segment is None:
            segment = self._segments.get(name)
        if segment is None:  # inputs made outside shared memory: one copy in
            segment = shm.SharedArray(array.size, array.dtype, label=f"input-{name}")
            np.copyto(segment.array, array.reshape(-1))
            self._segments[name] = segment
        return segment

    def upload_request(
        self, restore: bool = False, binds: bool = True
    ) -> tuple[dict[str, Any], dict[str, np.ndarray] | None, list[int] | None]:
        """(header, arrays in the frame, descriptors) of the upload: fresh copies of in/inout
        buffers and poison for out buffers. `restore`: the worker also maps the inout inputs to
        restore them before timed samples ([kernel.timing] fresh_inputs). `binds`: the runtime
        computes in the host buffers it gets (cpu), so an inout buffer must be a writable copy;
        a device runtime uploads it straight from the read-only input segment instead and
        downloads into a fresh segment (no copy here, no pages touched until the download)."""
        if not self.shared:
            return {"op": "upload"}, self._private_arrays(), None
        entries: list[dict[str, Any]] = []
        fds: list[int] = []
        originals: list[tuple[str, shm.SharedArray]] = []
        for arg in self.kernel.buffers:
            name = arg.name
            if arg.direction == "in":
                segment, role = self._input_segment(name), "input"
            elif arg.direction == "inout" and not binds:
                source = self._input_segment(name)
                entries.append(dict(source.describe(name), role="input"))
                fds.append(source.fd)
                key = (name, source.dtype.str, source.length)
                segment = self.spare.pop(key, None) or shm.SharedArray(
                    source.length, source.dtype, label=f"out-{name}"
                )
                self.working[name] = segment
                self.received.add(name)
                role = "receive"
            else:
                source = self.inputs[name]
                segment = shm.SharedArray(source.size, dtype_of(arg.type), label=f"{arg.direction}-{name}")
                if arg.direction == "out":
                    poison = poison_value(segment.dtype)
                    segment.array.view(poison.view(_uint(segment.dtype)).dtype)[...] = poison.view(
                        _uint(segment.dtype)
                    )[0]
                else:
                    copy_parallel(segment.array, source.reshape(-1))
                    if restore:
                        originals.append((name, self._input_segment(name)))
                self.working[name] = segment
                role = "buffer"
            entries.append(dict(segment.describe(name), role=role))
            fds.append(segment.fd)
        for name, segment in originals:
            entries.append(dict(segment.describe(name), role="original"))
            fds.append(segment.fd)
        return {"op": "upload", "shared": entries}, None, fds

    def _private_arrays(self) -> dict[str, np.ndarray]:
        from workbench.run.inputs import verification_inputs

        return verification_inputs(self.kernel, self.inputs)

    def outputs(
        self, names: list[str], reply: dict[str, Any], received: dict[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        """The downloaded outputs: the shared segments the worker wrote (now read-only, owned
        by the caller), or the arrays that came in the reply's frame."""
        if self.shared and reply.get("shared") == names:
            out = {}
            for name in names:
                array = self.working[name].array
                array.flags.writeable = False
                out[name] = array
                if name not in self.received:
                    self.working[name].close()  # the mapping stays while `array` lives
            return out
        return received

    def recycle(self, spare: dict[tuple, shm.SharedArray]) -> None:
        """This backend's `receive` segments go to the next backend of the run (its outputs were
        verified and let go: the caller keeps no view of them)."""
        for name in self.received:
            segment = self.working.pop(name)
            segment.array.flags.writeable = True
            spare[(name, segment.dtype.str, segment.length)] = segment
        self.received.clear()


def _uint(dtype: np.dtype) -> type:
    return {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[np.dtype(dtype).itemsize]


@dataclass
class MemoryPlan:
    """What one run holds at once on the host, in bytes, and whether it fits."""

    buffers: int  # B: every buffer once (the inputs)
    written: int  # W: the out/inout buffers (one backend's outputs; the reference's kept)
    need: int  # B + 3 W: inputs, working buffers, reference outputs, cpu timing copies
    available: int | None
    problem: str = ""


def memory_plan(kernel: Kernel, values: Values, available: int | None = None) -> MemoryPlan:
    """The run's host memory need at the lengths of `values` (`Kernel.evaluate`) against the
    memory available now (MemAvailable)."""
    lengths = values.lengths
    sizes = {b.name: lengths[b.name] * dtype_of(b.type).itemsize for b in kernel.buffers}
    buffers = sum(sizes.values())
    written = sum(sizes[b.name] for b in kernel.buffers if b.is_output)
    need = buffers + 3 * written
    if available is None:
        available = _available_memory()
    plan = MemoryPlan(buffers, written, need, available)
    if available is not None and need > available:
        plan.problem = (
            f"the run needs about {format_bytes(need)} of host memory (buffers {format_bytes(buffers)}, "
            f"outputs {format_bytes(written)} for the reference, the working copy and timing), "
            f"only {format_bytes(available)} is available"
        )
    return plan


def _available_memory() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def host_memory_bytes() -> int | None:
    """This machine's physical memory, or None where the OS does not say: the bound a run's sizes
    are evaluated against (`Kernel.evaluate(memory_bytes=)`) before anything is allocated."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None
