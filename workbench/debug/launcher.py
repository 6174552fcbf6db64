"""The process `workbench debug` runs under gdb: it loads the kernel's debug build and calls its
entry once with the run's inputs, as the cpu runtime does (`runtimes/cpu.py`), on one worker
thread (`Launch::workers` = 1: the invocation a breakpoint names is the one the executor
publishes, `gpu_kernel::host::debug`).

    python -m workbench.debug.launcher JOB.json

JOB.json: `{"spec": <launch spec>, "inputs": "<inputs.npz>", "addresses": "<addresses.json>",
"stderr": "<file>"}` (what the kernel prints, a panic's message, goes to that file).
Before the launch it writes each buffer's address, element size and length to `addresses`
(`--watch` puts a watchpoint on an element from it), then calls the entry (the debugger stops
at the entry first when watching). Exit status 0 after the launch; a kernel that panics aborts
the process (the entry cannot unwind), which the debugger reports.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np


def main(argv: list[str]) -> int:
    from workbench.run.runtimes.cpu import RUNTIME

    job = json.loads(Path(argv[0]).read_text())
    if job.get("stderr"):
        # What the kernel prints (a panic's message) goes to a file the session reads at the stop.
        fd = os.open(job["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(fd, 2)
        os.close(fd)
    spec = job["spec"]
    prepared = RUNTIME.prepare(spec)
    with np.load(job["inputs"]) as data:
        prepared.upload({name: data[name] for name in data.files})
    prepared.use_workers(1)  # one thread: the executor's current invocation is exact
    addresses = {}
    for arg in spec["args"]:
        if arg["kind"] == "buffer":
            a = prepared.buffer(arg["name"])
            addresses[arg["name"]] = {"address": int(a.ctypes.data), "itemsize": int(a.itemsize),
                                      "length": int(a.size), "type": arg["type"]}  # fmt: skip
    Path(job["addresses"]).write_text(json.dumps(addresses))
    prepared.launch(1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
