"""`detect_toolchains()`: what each backend's toolchain is on this machine (cached per process)."""

from __future__ import annotations

import os
import threading

from workbench.backends import BACKENDS
from workbench.records import ToolchainInfo

_cache: dict[str, tuple[str, ToolchainInfo]] = {}
_lock = threading.Lock()


def detect(backend: str, refresh: bool = False) -> ToolchainInfo:
    """One backend's toolchain. Detection runs subprocesses, so it is kept for the process while
    what it found stays as it was (`_identity`): a window open all day sees a `rustup default`,
    an update in place or a changed `WB_*` variable at its next build, whose cache key holds the
    toolchain's version (a build by the new compiler is never served the old one's library)."""
    from workbench.build.adapters import ADAPTERS

    with _lock:
        kept = _cache.get(backend)
        if refresh or kept is None or kept[0] != _identity(kept[1]):
            try:
                info = ADAPTERS[backend].detect()
            except Exception as exc:  # noqa: BLE001  a broken toolchain must not break `doctor`
                info = ToolchainInfo(backend, False, hint=f"detection failed: {exc}")
            _cache[backend] = (_identity(info), info)
        return _cache[backend][1]


def _identity(info: ToolchainInfo) -> str:
    """What a detection found, as it is now: the variables that choose tools, the files it named
    (size, mtime, inode) and rustup's state (`host_rust.rustup_state`: a proxy's file stays the
    same when its compiler changes). A few stat calls."""
    from workbench.build.adapters import host_rust

    chosen = sorted(
        (k, v) for k, v in os.environ.items() if k.startswith(("WB_", "RUSTUP_", "CARGO_")) or k == "PATH"
    )
    files = [info.path, *(v for v in info.details.values() if isinstance(v, str) and os.path.isabs(v))]
    return "\n".join([repr(chosen), *(f"{f} {host_rust.file_stamp(f)}" for f in files if f),
                      host_rust.rustup_state()])  # fmt: skip


def detect_toolchains(refresh: bool = False) -> list[ToolchainInfo]:
    """One `ToolchainInfo` per backend, with the exact install hint when missing."""
    return [detect(name, refresh) for name in BACKENDS]
