"""The process `workbench debug` runs under gdb: it loads the kernel's debug build and calls its
entry once with the run's inputs, as the cpu runtime does (`runtimes/cpu.py`), with the launch
record of the kernel API (`workbench.kernel_api.Launch`: the checks on, one worker thread, so
the invocation a breakpoint names is the one the executor publishes, `gpu_kernel::host::debug`).

    python -m workbench.debug.launcher JOB.json

JOB.json: `{"spec": <launch spec>, "buffers": {NAME: "<raw file>"}, "addresses": "<file>",
"stderr": "<file>"}`. Each buffer starts as its raw file's bytes (the run's inputs, written by
`job.py`). Before the launch it writes each buffer's address, element size, length and type to
`addresses` (a watch is set on an element from it while gdb holds the entry), then calls the
entry. What the kernel prints (a panic's message) goes to `stderr`. Only ctypes and the launch
record are imported (no numpy): under gdb every shared library a process loads costs time.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
from pathlib import Path

from workbench.kernel_api import ELEMENT_CTYPES, Launch

#: Room for cpu-sim's report (`runtimes/cpu_launch.REPORT_BYTES`'s size; read by nobody here).
REPORT_BYTES = 1 << 20


def _three(values: list[int]) -> ctypes.Array:
    return (ctypes.c_uint32 * 3)(*[*map(int, values), 1, 1, 1][:3])


def main(argv: list[str]) -> int:
    job = json.loads(Path(argv[0]).read_text())
    if job.get("stderr"):
        fd = os.open(job["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(fd, 2)
        os.close(fd)
    spec = job["spec"]
    library = ctypes.CDLL(spec["artifact"]["path"], mode=os.RTLD_LOCAL)
    entry = getattr(library, spec["artifact"]["entry"])
    buffers, lengths, values, argtypes, addresses = [], [], [], [ctypes.c_void_p], {}
    for arg in spec["args"]:
        ctype = ELEMENT_CTYPES[arg["type"]]
        if arg["kind"] == "buffer":
            data = bytearray(Path(job["buffers"][arg["name"]]).read_bytes())
            array = (ctype * int(arg["length"])).from_buffer(data)
            buffers.append((data, array))  # kept alive through the call
            lengths.append(int(arg["length"]))
            address = ctypes.addressof(array)
            addresses[arg["name"]] = {"address": address, "itemsize": ctypes.sizeof(ctype),
                                      "length": int(arg["length"]), "type": arg["type"]}  # fmt: skip
            values.append(ctypes.c_void_p(address))
            argtypes.append(ctypes.c_void_p)
        else:
            values.append(ctype(arg["value"]))
            argtypes.append(ctype)
    lens = (ctypes.c_uint64 * max(1, len(lengths)))(*lengths)
    report = ctypes.create_string_buffer(REPORT_BYTES)
    record = Launch(_three(spec["grid"]), _three(spec["threads"]), lens, len(lengths), 1, 1,
                    ctypes.cast(report, ctypes.c_void_p), REPORT_BYTES, 0)  # fmt: skip
    Path(job["addresses"]).write_text(json.dumps(addresses))
    entry.argtypes, entry.restype = argtypes, None
    entry(ctypes.byref(record), *values)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
