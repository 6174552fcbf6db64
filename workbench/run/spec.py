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
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from workbench.backends import runtime_of
from workbench.manifest import BufferArg, Kernel

ARTIFACT_KINDS = ("cdylib", "ptx", "spirv", "wgsl")

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


def make_launch_spec(
    kernel: Kernel,
    backend: str,
    artifact: dict[str, Any],
    symbols: dict[str, int | float],
    device_index: int,
    artifact_dir: str | Path | None = None,
) -> dict[str, Any]:
    """Build the launch spec of `kernel` on `backend` for one problem size.

    `artifact` is one entry of a build.json "kernels" table (`{"artifact", "entry", "kind"}`) or
    the same with "path" instead of "artifact"; a relative path is resolved against
    `artifact_dir` (the build folder), else against the current directory.
    `symbols` are the sizes and tunables (`Kernel.symbols()`).
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

    lengths = kernel.lengths(symbols)
    scalars = kernel.scalar_values(symbols)
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
                }
            )
        else:
            args.append({"name": arg.name, "kind": "scalar", "type": arg.type, "value": scalars[arg.name]})
    threads, grid = kernel.geometry(symbols)
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
