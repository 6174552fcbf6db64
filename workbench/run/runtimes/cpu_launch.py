"""The launch record a kernel-API cdylib entry takes first (`gpu_kernel::host::Launch`, the same
`#[repr(C)]` layout), and reading back the findings the cpu-sim checks wrote into it.

A kernel on the kernel API runs its body once per invocation of the manifest's grid with GPU
semantics (resources/crates/gpu_kernel), so it needs the launch geometry and each buffer's length;
the simulator's findings come back as JSON text in a buffer the runtime owns.

A kernel that panics (an index out of bounds, a `panic!`) aborts its worker process: the crate
writes the panic as one marked line on stderr first (gpu_kernel's `host/panic_line.rs`), and
`kernel_panic` reads it back from the dead worker's output (`pool.WorkerProcess`), so the message
and the kernel's file:line reach the result's error instead of backtrace frames.
"""

from __future__ import annotations

import ctypes
import json
from collections.abc import Iterable
from typing import Any

import numpy as np

from workbench.kernel_api import HOST_ABI_SYMBOL, HOST_ABI_VERSION, Launch
from workbench.run.runtimes.base import RuntimeFailure

#: Bytes for the findings' JSON (the crate keeps 64 findings in full, each well under 1 KiB) and a
#: traced invocation's records (up to 4096, about 120 bytes each; half the room when tracing).
REPORT_BYTES = 1 << 20
#: What starts the line a kernel's panic writes to stderr (gpu_kernel's `host/panic_line.rs`);
#: JSON follows: {"file", "line", "column", "message"}.
PANIC_MARK = "gpu_kernel panic: "


def host_abi(library: ctypes.CDLL, path: str) -> bool:
    """Whether the library was built on the kernel API (its entries take a launch record first);
    a newer record layout than this workbench knows is refused by name."""
    try:
        version = ctypes.c_uint32.in_dll(library, HOST_ABI_SYMBOL).value
    except ValueError:
        return False
    if version != HOST_ABI_VERSION:
        raise RuntimeFailure(
            f"{path} was built on gpu_kernel launch record version {version}; this workbench passes "
            f"version {HOST_ABI_VERSION}: rebuild the project with the crate this workbench ships"
        )
    return True


def _three(values: list[int], what: str) -> Any:
    dims = [int(v) for v in values] + [1] * (3 - len(values))
    if len(dims) != 3 or any(d < 0 or d >= 1 << 32 for d in dims):
        raise RuntimeFailure(f"launch {what} {values} does not fit three 32-bit dimensions")
    return (ctypes.c_uint32 * 3)(*dims)


class LaunchRecord:
    """One prepared kernel's launch record and the memory it points at (kept alive with it)."""

    def __init__(self, spec: dict[str, Any]):
        lengths = [int(a["length"]) for a in spec["args"] if a["kind"] == "buffer"]
        self._lens = (ctypes.c_uint64 * max(1, len(lengths)))(*lengths)
        self._report = ctypes.create_string_buffer(REPORT_BYTES)
        self.checks = bool(spec["artifact"].get("checks"))
        self.record = Launch(
            _three(spec.get("grid") or [1], "grid"),
            _three(spec.get("threads") or [1], "threads"),
            self._lens,
            len(lengths),
            1 if self.checks else 0,
            0,
            ctypes.cast(self._report, ctypes.c_void_p),
            REPORT_BYTES,
            0,
        )
        trace = spec["artifact"].get("trace") if self.checks else None
        if trace:
            self.record.trace = 1
            self.record.trace_group = _three(trace["group"], "trace workgroup")
            self.record.trace_local = _three(trace["local"], "trace local id")
        # Writers: one array pair per output buffer, filled by the next launch only (the timed
        # launches after it do not pay for them).
        self.writer_arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        if self.checks and spec["artifact"].get("writers"):
            buffers = [a for a in spec["args"] if a["kind"] == "buffer"]
            lasts = (ctypes.c_void_p * max(1, len(buffers)))()
            counts = (ctypes.c_void_p * max(1, len(buffers)))()
            for k, arg in enumerate(buffers):
                if arg.get("direction", "in") in ("out", "inout"):
                    n = int(arg["length"])
                    pair = (np.zeros(n, np.uint64), np.zeros(n, np.uint32))
                    self.writer_arrays[arg["name"]] = pair
                    lasts[k], counts[k] = pair[0].ctypes.data, pair[1].ctypes.data
            self._writer_tables = (lasts, counts)  # kept alive with the record
            self.record.writers = 1
            self.record.writer_last = ctypes.cast(lasts, ctypes.POINTER(ctypes.c_void_p))
            self.record.writer_count = ctypes.cast(counts, ctypes.POINTER(ctypes.c_void_p))

    def pointer(self) -> ctypes.c_void_p:
        return ctypes.c_void_p(ctypes.addressof(self.record))

    def writers(self) -> dict[str, np.ndarray] | None:
        """The writer arrays the last launch filled (`writers.last.NAME` u64, `writers.count.NAME`
        u32 per output buffer; decoded by `workbench.run.sim_writers`), once: later launches
        record none. None when no writers were asked for or they were taken already."""
        if not self.record.writers:
            return None
        self.record.writers = 0
        out: dict[str, np.ndarray] = {}
        for name, (last, count) in self.writer_arrays.items():
            out[f"writers.last.{name}"], out[f"writers.count.{name}"] = last, count
        self.writer_arrays = {}
        return out

    def findings(self, spec: dict[str, Any]) -> dict[str, Any] | None:
        """The last launch's findings (`{"findings": [...], "dropped": N}`, each buffer finding
        named after its manifest argument), or None when the checks were off."""
        if not self.checks:
            return None
        size = int(self.record.report_len)
        if size == 0:
            return {"findings": [], "dropped": 0}
        try:
            report = json.loads(self._report.raw[:size].decode("utf-8", errors="replace"))
        except ValueError as exc:
            raise RuntimeFailure(f"the simulator's report is not JSON: {exc}") from None
        buffers = [a["name"] for a in spec["args"] if a["kind"] == "buffer"]
        for finding in report.get("findings", []):
            index = finding.get("buffer")
            if isinstance(index, int) and 0 <= index < len(buffers):
                finding["name"] = buffers[index]
        return report


def kernel_panic(lines: Iterable[str]) -> str | None:
    """ "the kernel panicked at src/lib.rs:45:22: index 1536 is out of bounds (length 1024)" from a
    dead worker's stderr lines (the first panic, when several workers panicked), or None."""
    for line in lines:
        _, mark, rest = line.partition(PANIC_MARK)
        if not mark:
            continue
        try:
            found = json.loads(rest)
        except ValueError:
            continue  # a cut line (the tail's limit): look on
        if not isinstance(found, dict):
            continue
        message = "; ".join(
            part.strip() for part in str(found.get("message", "")).splitlines() if part.strip()
        )
        where = ""
        if isinstance(found.get("file"), str):
            where = f" at {found['file']}:{found.get('line', '?')}:{found.get('column', '?')}"
        return f"the kernel panicked{where}: {message or '(no message)'}"
    return None
