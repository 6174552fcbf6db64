"""`<db>.damaged`: a sessions database that answered "corrupt" stays refused for writing by every
process until it was checked (Qt-free).

A store that meets SQLITE_CORRUPT / SQLITE_NOTADB writes this note beside the file, so the next
`workbench run` (a new process) does not go on writing into it either; reading goes on.
`workbench sessions check` runs SQLite's full `integrity_check` and removes the note when the file
is sound again (after `sqlite3 FILE .recover`, or when it was restored from a copy). The note is
a small text file of its own: the database file is never opened outside SQLite (store.py).
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

SUFFIX = ".damaged"


def note_path(db: str | Path) -> Path:
    db = Path(db)
    return db.with_name(db.name + SUFFIX)


def read_note(db: str | Path) -> str | None:
    """The note's reason, or None when the file is not marked damaged."""
    try:
        return note_path(db).read_text(encoding="utf-8").strip() or "marked damaged"
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        return f"marked damaged ({note_path(db)} unreadable: {exc.strerror or exc})"


def write_note(db: str | Path, reason: str) -> None:
    """Mark `db` damaged (best effort: a read-only or full disk cannot take the note, and the
    process refuses writes by itself anyway)."""
    path = note_path(db)
    if path.exists():
        return
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        tmp.write_text(f"{stamp} (pid {os.getpid()}): {reason}\n", encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def clear_note(db: str | Path) -> bool:
    """Remove the note; True when there was one. A note that cannot be removed (a read-only
    mount) stays: `sessions check` says so."""
    try:
        note_path(db).unlink()
    except FileNotFoundError:
        return False
    except OSError:  # EROFS even where there is no note: tell the two apart
        return False
    return True
