"""The kernel API crate shipped with the workbench (`resources/crates/gpu_kernel`) and the projects
that use it (Qt-free).

Examples and templates name it as a path dependency in their own folder,
`gpu_kernel = { path = "gpu_kernel" }`, where `gpu_kernel` is a symbolic link to
`../../crates/gpu_kernel`. Copies (`workbench new`, the window's user copy of a bundled example,
`shutil.copytree` anywhere) follow the link and hold a real copy of the crate, so a copied project
builds wherever it lives and whatever happens to the install later (an AppImage mounts at a new
path every start); the shipped crate stays one folder.

A cdylib built on the kernel API exports `HOST_ABI_SYMBOL`; the cpu runtime then passes a `Launch`
record (grid, threads, buffer lengths, checks, report) before the manifest's arguments
(`run/runtimes/cpu_launch.py`), whatever wrote the build record.
"""

from __future__ import annotations

import ctypes
import tomllib
from pathlib import Path

CRATE_NAME = "gpu_kernel"
#: The symbol (a u32: the launch record's version) every cdylib built on the kernel API exports.
HOST_ABI_SYMBOL = "gpu_kernel_host_abi"
#: The launch record's version this workbench passes.
HOST_ABI_VERSION = 2
#: The cargo feature that turns on the simulator's checks (the `cpu-sim` backend builds with it).
SIM_FEATURE = f"{CRATE_NAME}/sim"

#: Each manifest element type as ctypes passes it (the cpu runtime's scalars, the debug launcher's
#: buffers).
ELEMENT_CTYPES = {
    "f32": ctypes.c_float,
    "f64": ctypes.c_double,
    "i32": ctypes.c_int32,
    "u32": ctypes.c_uint32,
    "i64": ctypes.c_int64,
    "u64": ctypes.c_uint64,
}


class Launch(ctypes.Structure):
    """`gpu_kernel::host::Launch` (the same `#[repr(C)]` layout): what an entry on the kernel API
    takes first. Here, not in `run/runtimes/cpu_launch.py`, so the debug launcher reads it without
    numpy."""

    _fields_ = [
        ("grid", ctypes.c_uint32 * 3),
        ("threads", ctypes.c_uint32 * 3),
        ("lens", ctypes.POINTER(ctypes.c_uint64)),
        ("nbufs", ctypes.c_uint32),
        ("checks", ctypes.c_uint32),
        ("workers", ctypes.c_uint32),
        ("report", ctypes.c_void_p),
        ("report_cap", ctypes.c_uint64),
        ("report_len", ctypes.c_uint64),
        # cpu-sim's trace of one invocation (`workbench.run.sim_trace`): on, workgroup, local id.
        ("trace", ctypes.c_uint32),
        ("trace_group", ctypes.c_uint32 * 3),
        ("trace_local", ctypes.c_uint32 * 3),
        # cpu-sim's last writer of every output element (`workbench.run.sim_writers`): on, and per
        # buffer (manifest order) the arrays it goes to (null for inputs).
        ("writers", ctypes.c_uint32),
        ("writer_last", ctypes.POINTER(ctypes.c_void_p)),
        ("writer_count", ctypes.POINTER(ctypes.c_void_p)),
    ]


def crate_dir() -> Path:
    """The crate as the install ships it."""
    from workbench.project import examples_dir

    return examples_dir().parent / "crates" / CRATE_NAME


def uses_kernel_api(crate: Path) -> bool:
    """Whether the crate at `crate` (its folder) depends on `gpu_kernel` (any table of dependencies)."""
    try:
        data = tomllib.loads((Path(crate) / "Cargo.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return False
    tables = [data.get("dependencies") or {}]
    for target in (data.get("target") or {}).values():
        if isinstance(target, dict):
            tables.append(target.get("dependencies") or {})
    return any(isinstance(t, dict) and CRATE_NAME in t for t in tables)
