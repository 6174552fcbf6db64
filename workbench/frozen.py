"""Running from a PyInstaller bundle as well as from a Python install (Qt-free).

The workbench starts Python children (`-m workbench.run.worker cpu`, the device probe). In a
normal install that is `sys.executable -m MODULE`; in a frozen bundle `sys.executable` is the
bundle's `workbench` program, which has no `-m`, so the child is started as
`workbench --_child-module MODULE ARGS...` and `workbench.cli.main` hands it to `run_child_module`
before anything else is imported.

The bundle's boot loader also points LD_LIBRARY_PATH at the bundle's own libraries (keeping the
user's value in LD_LIBRARY_PATH_ORIG). Compilers and drivers the workbench starts (cargo, rustc,
nvcc) must not load those, so `restore_library_path` puts the user's value back for children.
"""

from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path

#: The hidden first argument that makes the bundle program run a module instead of the CLI.
CHILD_FLAG = "--_child-module"


def is_frozen() -> bool:
    """True inside a PyInstaller (or similar) bundle."""
    return bool(getattr(sys, "frozen", False))


def python_command(module: str, *args: str) -> list[str]:
    """The command line that runs `python -m module args...` with this interpreter or bundle."""
    if is_frozen():
        return [sys.executable, CHILD_FLAG, module, *args]
    return [sys.executable, "-m", module, *args]


def bundle_dir() -> Path | None:
    """The folder the bundle's Python files and data were unpacked to (None when not frozen)."""
    if not is_frozen():
        return None
    return Path(getattr(sys, "_MEIPASS", Path(sys.executable).resolve().parent))


def install_dir() -> Path | None:
    """The folder holding the bundle program (e.g. /opt/rust-gpu-workbench), None when not frozen."""
    if not is_frozen():
        return None
    return Path(sys.executable).resolve().parent


def restore_library_path(env: dict[str, str] | None = None) -> None:
    """Give children the user's LD_LIBRARY_PATH, not the bundle's (no-op when not frozen)."""
    env = os.environ if env is None else env
    if not is_frozen():
        return
    original = env.pop("LD_LIBRARY_PATH_ORIG", None)
    if original is not None:
        env["LD_LIBRARY_PATH"] = original
    else:
        env.pop("LD_LIBRARY_PATH", None)


def run_child_module(argv: list[str]) -> int | None:
    """If argv is `[CHILD_FLAG, MODULE, ARGS...]`, run MODULE as __main__ and return its exit code.

    Returns None for any other argv (the normal CLI goes on). Only modules of the workbench itself
    may be started this way.
    """
    if not argv or argv[0] != CHILD_FLAG:
        return None
    if len(argv) < 2 or not (argv[1] == "workbench" or argv[1].startswith("workbench.")):
        print(f"error: {CHILD_FLAG} needs a workbench module name", file=sys.stderr)
        return 2
    module = argv[1]
    sys.argv = [module, *argv[2:]]
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    return 0
