"""The sessions database as a file (Qt-free): where it lives by default, how a file is known to be
SQLite, and which files this process's stores hold open (see `store.py`'s connection policy: a
file SQLite holds is never opened with Python's `open()`)."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

DB_NAME = "sessions.db"
APP_DIR = "rust-gpu-workbench"
SQLITE_MAGIC = b"SQLite format 3\x00"
#: SQLite's smallest page: a non-empty file shorter than this cannot be a database.
MIN_DB_BYTES = 512


class _OpenFiles:
    """The database files this process's stores hold, by (device, inode): how many stores, and
    why the file must not be written any more (a corrupt answer seen by any of them)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.count: dict[tuple[int, int], int] = {}
        self.damaged: dict[tuple[int, int], str] = {}

    def add(self, key: tuple[int, int]) -> None:
        with self.lock:
            self.count[key] = self.count.get(key, 0) + 1

    def remove(self, key: tuple[int, int]) -> None:
        with self.lock:
            self.count[key] -= 1
            if not self.count[key]:
                del self.count[key]
                self.damaged.pop(key, None)


_OPEN = _OpenFiles()


def _file_key(path: str | Path) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def held_here(path: str | Path) -> bool:
    """Whether a `SessionStore` of this process has the file at `path` open (same inode)."""
    key = _file_key(path)
    with _OPEN.lock:
        return key is not None and key in _OPEN.count


#: Files SQLite keeps beside a database in use.
SIDE_FILES = ("-wal", "-shm", "-journal")


def is_sqlite_file(path: str | Path) -> bool:
    """Whether `path` is a SQLite database (or the `-wal`, `-shm`, `-journal` of one): a file that
    must never be overwritten by anything else. A file a store of this process holds is answered
    from `held_here`, unread; any other is safe to read with `open()` (module doc)."""
    path = Path(path)
    for suffix in SIDE_FILES:
        if path.name.endswith(suffix) and len(path.name) > len(suffix):
            base = path.with_name(path.name[: -len(suffix)])
            if base.exists() and is_sqlite_file(base):
                return True
    if held_here(path):
        return True
    try:
        with open(path, "rb") as file:
            return file.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return False


def default_db_path() -> Path:
    """`$WB_SESSIONS_DB`, else `sessions.db` in `$WB_DATA_DIR`, else in the platform's user data
    folder (`$XDG_DATA_HOME/rust-gpu-workbench`, default `~/.local/share/rust-gpu-workbench`)."""
    if os.environ.get("WB_SESSIONS_DB"):
        return Path(os.environ["WB_SESSIONS_DB"]).expanduser()
    if os.environ.get("WB_DATA_DIR"):
        return Path(os.environ["WB_DATA_DIR"]).expanduser() / DB_NAME
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    elif sys.platform == "win32":
        base = Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / APP_DIR / DB_NAME
