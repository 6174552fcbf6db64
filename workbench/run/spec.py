"""The launch spec: everything a runtime needs to execute one kernel launch, as a plain JSON dict.

The run service builds it in the parent process (`make_launch_spec`) and sends it to a worker, which
hands it to a runtime (`workbench.run.runtimes`). Shape:

```
{"runtime": "wgpu", "backend": "wgsl", "device_index": 0, "kernel": "saxpy",
 "artifact": {"kind": "wgsl", "path": "/abs/saxpy.wgsl", "entry": "main"},
 "args": [{"name": "n", "kind": "scalar", "type": "u32", "value": 1024},
          {"name": "x", "kind": "buffer", "type": "f32", "length": 1024, "direction": "in",
           "binding": 1}, ...],
 "threads": [256, 1, 1], "grid": [4, 1, 1],
 "wgpu": {"mode": "uniform", "params_binding": 0, "override_ids": {}},
 "constants": {"block": 256}}
```
`args` keep launch order; `constants` holds the tunables' values (passed to WGSL modules that
declare `override <name>`).

wgpu caps every dispatch dimension (`max-compute-workgroups-per-dimension`, 65,535 on most
adapters); `fold_grid` turns a 1-D grid beyond it into a 2-D (or 3-D) dispatch whose workgroup
count covers the original, and kernels recover their linear workgroup from `num_workgroups` (see
docs/manifest.md, "Large grids on wgpu").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from workbench.backends import runtime_of
from workbench.manifest import BufferArg, Kernel, Values
from workbench.runtimes_table import ARTIFACT_KINDS

_DTYPES = {
    "f32": np.float32,
    "f64": np.float64,
    "i32": np.int32,
    "u32": np.uint32,
    "i64": np.int64,
    "u64": np.uint64,
}


def dtype_of(type_name: str) -> np.dtype:
    """The numpy dtype of a manifest element/scalar type (`f32`, `u32`, ...)."""
    try:
        return np.dtype(_DTYPES[type_name])
    except KeyError:
        raise ValueError(f"unknown element type {type_name!r}; valid types: {', '.join(_DTYPES)}") from None


def fold_grid(grid: tuple[int, ...] | list[int], limit: int) -> tuple[int, int, int]:
    """The dispatch of `grid` on a device allowing `limit` workgroups per dimension.

    A grid within the limit is returned as it is. A 1-D grid `[g, 1, 1]` beyond it becomes
    `[x, y, 1]` (or `[x, y, z]`) with `x * y * z >= g` and as few spare workgroups as possible
    (fewer than `y * z`): the kernel maps `workgroup_id` to the linear workgroup
    `wid.x + num_workgroups.x * (wid.y + num_workgroups.y * wid.z)` and workgroups at or past `g`
    find their elements out of range. A 2-D or 3-D grid beyond the limit cannot be folded without
    the kernel knowing it: ValueError says to give the backend its own `[kernel.launch.<backend>]`.
    """
    dims = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
    limit = int(limit)
    if limit < 1:
        raise ValueError(f"a limit of {limit} workgroups per dimension allows no dispatch")
    if all(d <= limit for d in dims):
        return dims  # type: ignore[return-value]
    g = dims[0]
    if dims[1] != 1 or dims[2] != 1:
        raise ValueError(
            f"grid {list(dims)} exceeds this device's {limit} workgroups per dimension and only a 1-D "
            "grid is folded; give this backend its own launch geometry ([kernel.launch.<backend>] in "
            "workbench.toml) or use more threads per workgroup"
        )
    z = -(-g // (limit * limit))
    if z > limit:
        raise ValueError(f"grid of {g} workgroups exceeds {limit}^3, the most a wgpu dispatch can hold")
    rest = -(-g // z)
    y = -(-rest // limit)
    x = -(-rest // y)
    return (x, y, z)


def make_launch_spec(
    kernel: Kernel,
    backend: str,
    artifact: dict[str, Any],
    symbols: dict[str, int | float],
    device_index: int,
    artifact_dir: str | Path | None = None,
    values: Values | None = None,
    trace: Any = None,
    writers: bool = False,
) -> dict[str, Any]:
    """Build the launch spec of `kernel` on `backend` for one problem size.

    `artifact` is one entry of a build.json "kernels" table (`{"artifact", "entry", "kind"}`) or
    the same with "path" instead of "artifact"; a relative path is resolved against
    `artifact_dir` (the build folder), else against the current directory.
    `symbols` are the sizes and tunables (`Kernel.symbols()`); `values` the kernel evaluated at
    them (`Kernel.evaluate(symbols)`), which a run computes once and passes to every backend's
    spec; evaluated here when not given.
    """
    kind = artifact.get("kind")
    if kind not in ARTIFACT_KINDS:
        raise ValueError(
            f"artifact of kernel {kernel.name!r} ({backend}) has kind {kind!r}; "
            f"valid kinds: {', '.join(ARTIFACT_KINDS)}"
        )
    raw_path = artifact.get("path") or artifact.get("artifact")
    if not raw_path:
        raise ValueError(f"artifact of kernel {kernel.name!r} ({backend}) names no file")
    path = Path(raw_path)
    if not path.is_absolute():
        path = Path(artifact_dir or ".") / path
    entry = artifact.get("entry") or kernel.entry_for(backend)

    if values is None:
        values = kernel.evaluate(symbols)
    lengths, scalars = values.lengths, values.scalars
    args: list[dict[str, Any]] = []
    for arg in kernel.args:
        if isinstance(arg, BufferArg):
            args.append(
                {
                    "name": arg.name,
                    "kind": "buffer",
                    "type": arg.type,
                    "length": lengths[arg.name],
                    "direction": arg.direction,
                    "binding": arg.binding,
                    **({"views": list(arg.views)} if arg.views else {}),
                }
            )
        else:
            args.append({"name": arg.name, "kind": "scalar", "type": arg.type, "value": scalars[arg.name]})
    threads, grid = values.geometry(backend)
    return {
        "runtime": runtime_of(backend),
        "backend": backend,
        "device_index": int(device_index),
        "kernel": kernel.name,
        "artifact": {
            "kind": kind,
            "path": str(path.resolve()),
            "entry": entry,
            # Why this name: said by a runtime that cannot find the symbol.
            "entry_origin": kernel.entry_origin(backend),
            # cpu-sim: the kernel API's race and bounds checks are on (runtimes/cpu_launch.py).
            **({"checks": True} if artifact.get("checks") else {}),
            # ... and records the `ctx.trace` values of this invocation (`sim_trace.TracePoint`).
            **({"trace": trace.to_json()} if trace is not None and artifact.get("checks") else {}),
            # ... and each output element's last writer (`sim_writers`).
            **({"writers": True} if writers and artifact.get("checks") else {}),
        },
        "args": args,
        "threads": list(threads),
        "grid": list(grid),
        "wgpu": {
            "mode": kernel.wgpu.mode,
            "params_binding": kernel.wgpu.params_binding,
            "override_ids": dict(kernel.wgpu.override_ids),
        },
        "constants": {name: symbols[name] for name in kernel.tunables if name in symbols},
    }


def buffer_args(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The spec's buffer args, in launch order."""
    return [a for a in spec["args"] if a["kind"] == "buffer"]


def scalar_args(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The spec's scalar args, in launch order."""
    return [a for a in spec["args"] if a["kind"] == "scalar"]
