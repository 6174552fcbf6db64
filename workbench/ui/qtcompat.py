"""Work-arounds for defects in the installed Qt binding, applied once on import.

PySide6 6.12's abi3 wheels, run on Python 3.11, return `None` from every void method without
taking a reference to it (they rely on `None` being immortal, which it is only from Python 3.12
on). Each call such as `widget.update()` or `highlighter.setFormat(...)` therefore drops
`None`'s reference count by one, and after some tens of thousands of calls the interpreter aborts
with "Fatal Python error: none_dealloc". The fix gives `None` a reference count it cannot run
out of, which is what Python 3.12 does anyway.
"""

from __future__ import annotations

import ctypes
import sys

_IMMORTAL_BOOST = 1 << 48


def _void_calls_leak_none() -> bool:
    from PySide6.QtCore import QObject

    probe = QObject()
    before = sys.getrefcount(None)
    for _ in range(8):
        probe.setObjectName("probe")
    return sys.getrefcount(None) < before


def apply() -> bool:
    """Make `None` effectively immortal when the binding leaks references to it; True if applied."""
    if sys.version_info >= (3, 12) or not _void_calls_leak_none():
        return False
    # CPython < 3.12 keeps the reference count (Py_ssize_t) at offset 0 of every object.
    ctypes.c_ssize_t.from_address(id(None)).value += _IMMORTAL_BOOST
    return True


APPLIED = apply()
