"""`detect_toolchains()`: what each backend's toolchain is on this machine (cached per process)."""

from __future__ import annotations

import threading

from workbench.backends import BACKENDS
from workbench.records import ToolchainInfo

_cache: dict[str, ToolchainInfo] = {}
_lock = threading.Lock()


def detect(backend: str, refresh: bool = False) -> ToolchainInfo:
    """One backend's toolchain (detection runs subprocesses, so it is done once per process)."""
    from workbench.build.adapters import ADAPTERS

    with _lock:
        if refresh or backend not in _cache:
            try:
                _cache[backend] = ADAPTERS[backend].detect()
            except Exception as exc:  # noqa: BLE001  a broken toolchain must not break `doctor`
                _cache[backend] = ToolchainInfo(backend, False, hint=f"detection failed: {exc}")
        return _cache[backend]


def detect_toolchains(refresh: bool = False) -> list[ToolchainInfo]:
    """One `ToolchainInfo` per backend, with the exact install hint when missing."""
    return [detect(name, refresh) for name in BACKENDS]
