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

import tomllib
from pathlib import Path

CRATE_NAME = "gpu_kernel"
#: The symbol (a u32: the launch record's version) every cdylib built on the kernel API exports.
HOST_ABI_SYMBOL = "gpu_kernel_host_abi"
#: The launch record's version this workbench passes.
HOST_ABI_VERSION = 2
#: The cargo feature that turns on the simulator's checks (the `cpu-sim` backend builds with it).
SIM_FEATURE = f"{CRATE_NAME}/sim"


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
