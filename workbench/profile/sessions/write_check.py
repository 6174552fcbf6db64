"""Damage found before anything is written: the database file's seal (Qt-free).

SQLite checks the pages a write touches, not the rest: garbage written into the middle of the file
by another program went unseen, and the next `workbench run` recorded into it. A store therefore
verifies the file before it writes whenever something other than a workbench, writing through
SQLite, may have changed it since:

- `<db>.sealed` holds the file's identity (device, inode, size, mtime and ctime in ns) as a
  workbench left it: after each of its commits, after a check found it sound, and when its last
  connection closed (SQLite's checkpoint writes the main file then). Every workbench process
  keeps it up to date, so a new process (each `workbench run` is one) knows whether anyone else
  touched the file;
- inside the write transaction (`BEGIN IMMEDIATE`: no other SQLite writer can move in) the store
  compares the file's identity with the seal. Equal: it writes (a `stat` and a small read, some
  tens of µs). Different, or no seal (another program wrote into it, a copy was put back, a
  database from before this rule): `PRAGMA quick_check` first — it reads the whole file, some
  0.3-0.5 s at 100,000 runs (`benchmarks/sessions.py`), paid once per foreign change — and on a
  finding nothing is written, the file is marked damaged (`damage_note`) and the user is told to
  run `workbench sessions check`.

SQLite's `PRAGMA data_version` is not the trigger: it moves when another connection commits
through SQLite, and stays put when another program writes raw bytes into the file, the one case
SQLite cannot see. A change inside the kernel's time-stamp granularity (a few ms) after a seal,
that keeps the size, and a program that puts back both times, are not seen; the seal is a guard
against accidents, not an adversary with root.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

SUFFIX = ".sealed"

Identity = tuple[int, int, int, int, int]


def seal_path(db: str | Path) -> Path:
    db = Path(db)
    return db.with_name(db.name + SUFFIX)


def identity(db: str | Path) -> Identity | None:
    """(device, inode, size, mtime ns, ctime ns) of the database file; `stat` opens no descriptor
    (store.py's connection policy), None when it is gone."""
    try:
        info = os.stat(db)
    except OSError:
        return None
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns


def sealed(db: str | Path) -> Identity | None:
    """The identity a workbench left the file with, or None (no seal, or an unreadable one)."""
    try:
        fields = tuple(int(x) for x in seal_path(db).read_text(encoding="ascii").split())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return fields if len(fields) == 5 else None  # type: ignore[return-value]


def unchanged(db: str | Path) -> bool:
    """Whether the file is as a workbench left it (a write may go ahead unchecked)."""
    now = identity(db)
    return now is not None and now == sealed(db)


def seal(db: str | Path, found: Identity | None = None) -> None:
    """Record the file's identity now (or `found`) as the one a workbench left it with. Best
    effort: a read-only or full disk cannot take it, and the next writer then checks once."""
    found = found or identity(db)
    path = seal_path(db)
    if found is None:
        return
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{threading.get_ident()}")
    try:
        tmp.write_text(" ".join(str(x) for x in found) + "\n", encoding="ascii")
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()


def damage_reason(db: str | Path, finding: str) -> str:
    """Why the file is refused when the check before a write found damage, and what to do."""
    return (
        f"the sessions database {db} was changed outside the workbench since it last wrote there, "
        f"and SQLite's quick check finds it corrupt ({finding}); nothing was written into it — keep "
        f"a copy, run `workbench sessions check --db {db}`, then `sqlite3 {db} .recover` (or put a "
        "sound copy back) and check again"
    )
