"""What a SQLite error means for a sessions database, in the user's words (Qt-free).

`describe(path, exc)` is the one mapping from a `sqlite3.Error` to a `SessionStoreError`: it reads
`exc.sqlite_errorcode` / `sqlite_errorname` (Python >= 3.11), never the message text, so a
read-only mount, a full disk or a failed disk is not called corrupt and nobody is told to throw a
healthy database away. Only SQLITE_CORRUPT and SQLITE_NOTADB say "corrupt"; `error.kind` names
the class, and `error.damaged` tells the store to write nothing more into the file.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from workbench.errors import WorkbenchError

# SQLite's primary result codes (the low byte of an extended code), https://sqlite.org/rescode.html
PERM, BUSY, LOCKED, NOMEM, READONLY, IOERR, CORRUPT, FULL, CANTOPEN = 3, 5, 6, 7, 8, 10, 11, 13, 14
CONSTRAINT, NOTADB = 19, 26

#: Primary code -> kind (what `SessionStoreError.kind` says).
KINDS = {
    CORRUPT: "corrupt", NOTADB: "corrupt", READONLY: "read-only", PERM: "read-only", FULL: "full",
    IOERR: "io", BUSY: "locked", LOCKED: "locked", CONSTRAINT: "constraint", CANTOPEN: "cannot-open",
    NOMEM: "memory",
}  # fmt: skip


class SessionStoreError(WorkbenchError):
    """The sessions database cannot be used as asked; the message names the file and why.

    `kind` is one of `KINDS`' values, "other", or "" (not SQLite's answer: a missing run, a bad
    file the store refused by itself); `damaged` is true only for a corrupt file."""

    def __init__(self, message: str, kind: str = "", code: str = ""):
        super().__init__(message)
        self.kind = kind
        self.code = code

    @property
    def damaged(self) -> bool:
        return self.kind == "corrupt"


def primary_code(exc: BaseException) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return None if code is None else code & 0xFF


def read_only_fs(path: str | Path) -> bool:
    """Whether the nearest existing folder of `path` is on a file system mounted read-only."""
    folder = Path(path).parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def describe(path: str | Path, exc: sqlite3.Error, *, timeout_s: float | None = None) -> SessionStoreError:
    """The `SessionStoreError` that says what `exc` means for the database at `path` and what to do."""
    code = primary_code(exc)
    name = getattr(exc, "sqlite_errorname", None) or type(exc).__name__
    said = f"{name}: {exc}"
    kind = KINDS.get(code, "other") if code is not None else "other"
    if code == NOTADB:
        text = (
            f"{path} is not a SQLite database, or its header is corrupt ({said}); it was left "
            "untouched — move it away or choose another file with --db"
        )
    elif code == CORRUPT:
        text = (
            f"the sessions database {path} is corrupt ({said}); it was left as it is and nothing more "
            f"will be written to it — keep a copy, try `sqlite3 {path} .recover`, or choose another "
            "file with --db"
        )
    elif code in (READONLY, PERM):
        text = (
            f"the sessions database {path} cannot be written ({said}): "
            + (
                "its file system is mounted read-only"
                if read_only_fs(path)
                else "the file or its folder is read-only"
            )
            + " (SQLite also writes -wal and -shm files beside it). The "
            "database itself is fine; nothing was written — make it writable or choose another "
            "file with --db"
        )
    elif code == FULL:
        text = (
            f"the disk holding the sessions database {path} is full ({said}); the step was rolled "
            "back and the database is intact — free some space and try again"
        )
    elif code == IOERR:
        text = (
            f"a disk I/O error while using the sessions database {path} ({said}); the failed step "
            "was not written — check the disk or file system (e.g. `dmesg`), then try again; the "
            "database is not known to be damaged"
        )
    elif code in (BUSY, LOCKED):
        waited = f" for {timeout_s:g} s" if timeout_s is not None else ""
        text = (
            f"the sessions database {path} stayed locked by another process{waited} ({said}); "
            "nothing was written — wait for the other workbench to finish, or close it, and try again"
        )
    elif code == CONSTRAINT:
        text = (
            f"the sessions database {path} refused a row ({said}); nothing of this step was written "
            "and the database is fine — the data being added is inconsistent"
        )
    elif code == CANTOPEN and read_only_fs(path):
        kind = "read-only"
        text = (
            f"cannot open the sessions database {path} ({said}): it is on a file system mounted "
            "read-only, where SQLite can neither create it nor its -wal and -shm files — choose a "
            "file on a writable disk with --db"
        )
    elif code == CANTOPEN:
        text = (
            f"cannot open the sessions database {path} ({said}): its folder is missing or not "
            "accessible, or the file cannot be created there — choose another file with --db"
        )
    elif code == NOMEM:
        text = f"out of memory while using the sessions database {path} ({said}); nothing was written"
    else:
        text = f"sessions database {path}: {said}"
    return SessionStoreError(text, kind=kind, code=name)
