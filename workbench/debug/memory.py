"""What a stop shows of memory: the workgroup's shared arrays around the stopped invocation's
local id, and the launch's buffers around its global index (a watch: around the watched
element). Read through gdb from the handles among the stop's locals (`Shared<T, N>`, `In<T>`,
`Out<T>`: a pointer and a length), so whatever the kernel names them.
"""

from __future__ import annotations

import re
from typing import Any

from workbench.debug.gdb_mi import DebugError, Stop

#: Elements shown on each side of the index.
AROUND = 4
_SHARED = re.compile(r"^gpu_kernel::host::Shared<[^,]+, (\d+)> \{ptr: (0x[0-9a-f]+)")
_BUFFER = re.compile(r"^gpu_kernel::host::(In|Out)<[^>]+> \{ptr: (0x[0-9a-f]+), len: (\d+)")


def _values(text: str) -> list[str]:
    return [v.strip() for v in text.strip().strip("[]").split(",")]


def memory_around(job: Any, stop: Stop, watch: tuple[str, int] | None = None) -> list[dict[str, Any]]:
    """Per shared array and buffer among the stop's locals: {"name", "kind" (shared, in, out),
    "index" (the element the window is centred on), "start", "values"}; [] when none."""
    invocation = stop.invocation or {}
    threads, grid = job.kernel.evaluate(job.symbols).geometry("cpu-sim")
    size = [*threads, 1, 1][:3]
    gx, gy = [*grid, 1, 1][:2]
    g, loc = invocation.get("group", [0, 0, 0]), invocation.get("local", [0, 0, 0])
    local = loc[0] + size[0] * (loc[1] + size[1] * loc[2])
    group = g[0] + gx * (g[1] + gy * g[2])
    global_index = group * size[0] * size[1] * size[2] + local
    out, seen = [], set()
    for var in stop.locals:
        name, value = var.get("name"), var.get("value") or ""
        if name in seen:
            continue
        shared, buffer = _SHARED.match(value), _BUFFER.match(value)
        if shared is not None:
            kind, length, center = "shared", int(shared.group(1)), local
        elif buffer is not None:
            kind, length = buffer.group(1).lower(), int(buffer.group(3))
            center = watch[1] if watch is not None and watch[0] == name else global_index
        else:
            continue
        seen.add(name)
        center = max(0, min(center, length - 1))
        start = max(0, center - AROUND)
        count = min(length, center + AROUND + 1) - start
        if count <= 0:
            continue
        try:
            values = _values(job.debugger.evaluate(f"*({name}.ptr + {start})@{count}"))
        except DebugError as exc:
            values = [f"<{exc}>"]
        out.append({"name": name, "kind": kind, "index": center, "start": start, "values": values})
    return out
