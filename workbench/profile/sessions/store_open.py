"""Opening a sessions database, keeping it sound and closing it (Qt-free); `store.py` adds the
writes and queries on top (`SessionStore`), `migrate.py` upgrades an older schema.

Where: `SessionStore(path=None)` opens `default_db_path()`: `$WB_SESSIONS_DB`, else
`$WB_DATA_DIR/sessions.db`, else `sessions.db` in the user data folder
(`$XDG_DATA_HOME/rust-gpu-workbench/`). `workbench run` and `workbench sessions …` take `--db FILE`;
the window's setting is `Settings.sessions_db` (`record_runs` is the "Record runs" toggle, the
recorder's `enabled`). Tests set `WB_DATA_DIR` to a temporary folder.

The database It runs in WAL mode with `synchronous=NORMAL`: a process
killed at any moment (kill -9) loses at most the transaction in flight, and readers never wait for
a writer. Each recorded `workbench run` is one `BEGIN IMMEDIATE` transaction; two processes
recording at once take turns (`busy_timeout`).

Connection policy: any number of `SessionStore`s, in any number of threads and processes, may
share one file; each store owns one connection (behind a lock). The database file and its `-wal`
and `-shm` are opened by SQLite only, never with Python's `open()`: on Linux closing *any*
descriptor of a file drops *every* POSIX lock the process holds on it, SQLite's included
(https://sqlite.org/howtocorrupt.html §2.2), after which another process takes itself for the
last user and deletes `-wal` and `-shm` with the writes in them. SQLite itself shares one lock
record per file among the connections of a process, so stores never disturb each other. The file
is vetted through SQLite (its SQLITE_NOTADB answer) and `os.stat` (a non-empty file shorter than
one page is no database, and SQLite would take it for an empty one; a folder, device or FIFO is
named as such, where SQLite would fail on it with an unrelated error); `held_here(path)` says whether
a store of this process has a file open (an export must never write over it).

Opening never damages a file it does not understand: a file that is not SQLite, a corrupt one, or
one with a newer schema raises `SessionStoreError` and is left byte for byte as it was; an older
schema is copied to `<file>.v<N>.bak` before its migrations run. SQLite's errors are named by
`db_errors.describe` (corrupt, read-only, full disk, I/O error, locked, constraint, cannot open);
once a file answered "corrupt", no store of this process writes into it again. On a read-only
mount where SQLite cannot make the `-shm`, a database with no pending log is read as immutable
(`read_only`: list and show work, every write answers read-only). A file changed outside the
workbench since one last left it (its identity: inode, size, mtime, ctime) is quick-checked inside
the write transaction before anything is written (`write_check`: its `<db>.sealed` identity):
damage refuses the write and marks the file; an unchanged file costs two `stat`s and a small read
per record. SQLite checks each page a write touches, and `integrity_check()` is there to ask for
the whole. After a corrupt answer no later process writes into the file either: the store leaves
`<db>.damaged` beside it (`damage_note`), lifted by `workbench sessions check` (the full
`integrity_check`) once the file is sound again.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self

from workbench.profile.sessions import damage_note, migrate, write_check
from workbench.profile.sessions.db_errors import (
    BUSY,
    CANTOPEN,
    LOCKED,
    SessionStoreError,
    describe,
    primary_code,
    read_only_fs,
)
from workbench.profile.sessions.db_file import _OPEN, DB_NAME, MIN_DB_BYTES, _file_key, default_db_path
from workbench.profile.sessions.schema import MIGRATIONS


class StoreConnection:
    """One sessions database file, open, at the current schema: its connection (behind a lock),
    the guard that names SQLite's errors, write transactions and the damage bookkeeping.
    Thread-safe; close it when done. `SessionStore` is what callers make."""

    def __init__(self, path: str | Path | None = None, *, timeout_s: float = 30.0, migrations=None):
        self.path = Path(path).expanduser() if path is not None else default_db_path()
        self.migrations = MIGRATIONS if migrations is None else migrations
        self.schema_version = len(self.migrations)
        self.timeout_s = timeout_s
        self._lock = threading.RLock()
        self._key: tuple[int, int] | None = None
        #: Opened read-only (a read-only mount without the -shm): every write is refused.
        self.read_only = False
        self._check_size()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SessionStoreError(
                f"cannot create the folder of the sessions database {self.path}: {exc}"
            ) from None
        try:
            self._db = sqlite3.connect(
                self.path, timeout=timeout_s, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise describe(self.path, exc, timeout_s=timeout_s) from None
        try:
            self._open()
        except BaseException:
            self._db.close()
            raise
        self._key = _file_key(self.path)
        if self._key is not None:
            _OPEN.add(self._key)

    # ------------------------------------------------------------------ opening
    def _check_size(self) -> None:
        """A non-empty file shorter than one page is no database, yet SQLite would take it for an
        empty one and write over it; checked by `stat`, which opens no descriptor (module doc)."""
        try:
            info = os.stat(self.path)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise SessionStoreError(
                f"cannot read the sessions database {self.path}: {exc.strerror or exc}", kind="cannot-open"
            ) from None
        if stat.S_ISDIR(info.st_mode):
            raise SessionStoreError(
                f"{self.path} is a folder, not a sessions database file; name a file with --db "
                f"(e.g. {self.path / DB_NAME})",
                kind="cannot-open",
            )
        if not stat.S_ISREG(info.st_mode):
            # SQLite opens /dev/null or a FIFO and then fails with an unrelated error ("cannot
            # rollback - no transaction is active", a disk I/O error): name what the path is.
            from workbench.profile.sessions.outside_files import kind_of  # numpy: only on this path

            raise SessionStoreError(
                f"{self.path} is {kind_of(info.st_mode)}, not a sessions database file; it was left "
                f"untouched — name a regular file with --db (e.g. {Path.home() / DB_NAME})",
                kind="cannot-open",
            )
        size = info.st_size
        if 0 < size < MIN_DB_BYTES:
            raise SessionStoreError(
                f"{self.path} is not a SQLite database ({size} bytes, less than one page: corrupt, "
                "or another kind of file); it was left untouched — move it away or choose another "
                "file with --db",
                kind="corrupt",
            )

    def _read_version_and_tables(self) -> tuple[int, list[str]]:
        """The schema version and the tables, read in one transaction: read apart, another
        process's migration could commit in between (tables, but still version 0 — taken for a
        foreign database). A "locked" answer while another process creates the file is retried."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                self._db.execute("BEGIN")
                try:
                    version = self._db.execute("PRAGMA user_version").fetchone()[0]
                    tables = [
                        r[0] for r in self._db.execute("SELECT name FROM sqlite_master WHERE type='table'")
                    ]
                finally:
                    if self._db.in_transaction:
                        self._db.execute("COMMIT")
                return version, tables
            except sqlite3.OperationalError as exc:
                if primary_code(exc) not in (BUSY, LOCKED) or time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    def _open(self) -> None:
        try:
            try:
                version, tables = self._read_version_and_tables()
            except sqlite3.Error as exc:
                if not self._only_readable(exc):
                    raise
                self._reopen_immutable()
                version, tables = self._read_version_and_tables()
        except sqlite3.Error as exc:
            raise describe(self.path, exc, timeout_s=self.timeout_s) from None
        if version > self.schema_version:
            raise SessionStoreError(
                f"the sessions database {self.path} has schema version {version}, newer than this "
                f"workbench understands ({self.schema_version}); it was left untouched — upgrade the "
                "workbench or choose another file with --db"
            )
        if version == 0 and tables:
            raise SessionStoreError(
                f"{self.path} is a SQLite database but not a workbench sessions database (it has "
                f"tables {', '.join(sorted(tables)[:5])} and no schema version); it was left untouched"
            )
        if self.read_only:
            if version < self.schema_version:
                raise SessionStoreError(
                    f"the sessions database {self.path} has schema version {version} and lies on a "
                    "file system mounted read-only, where it cannot be upgraded; copy it to a "
                    "writable folder to read it",
                    kind="read-only",
                )
            return
        if 0 < version < self.schema_version:
            self.backup_path = migrate.backup(self._db, self.path, version)
        with self._guard():
            self._db.execute(f"PRAGMA busy_timeout = {int(self.timeout_s * 1000)}")
            deadline = time.monotonic() + self.timeout_s
            while True:
                try:
                    self._db.execute("PRAGMA journal_mode = WAL")
                    self._db.execute("PRAGMA synchronous = NORMAL")
                    self._db.execute("PRAGMA foreign_keys = ON")
                    migrate.migrate(self._db, self.migrations)
                    break
                except sqlite3.OperationalError as exc:
                    # Where waiting could deadlock (two processes turning a new file to WAL and
                    # migrating it at once) SQLite answers "locked" at once, past its busy handler.
                    if primary_code(exc) not in (BUSY, LOCKED) or time.monotonic() > deadline:
                        raise
                    time.sleep(0.02)

    def _only_readable(self, exc: sqlite3.Error) -> bool:
        """SQLite cannot open an existing WAL database on a read-only mount without its -shm;
        with no log to replay, the file alone holds everything and may be read as immutable."""
        if primary_code(exc) != CANTOPEN or not read_only_fs(self.path) or not self.path.is_file():
            return False
        wal = self.path.with_name(f"{self.path.name}-wal")
        return not (wal.exists() and wal.stat().st_size > 0)

    def _reopen_immutable(self) -> None:
        """Reading only, nothing written, nobody else can change the file (the mount is read-only)."""
        self._db.close()
        uri = f"{self.path.resolve().as_uri()}?mode=ro&immutable=1"
        self._db = sqlite3.connect(
            uri, uri=True, timeout=self.timeout_s, isolation_level=None, check_same_thread=False
        )
        self.read_only = True

    @contextmanager
    def _guard(self) -> Iterator[None]:
        """Turn SQLite's errors into messages that name the file and say what happened
        (`db_errors.describe`); a corrupt answer marks the file damaged for this process."""
        with self._lock:
            try:
                yield
            except sqlite3.Error as exc:
                error = describe(self.path, exc, timeout_s=self.timeout_s)
                if error.damaged and self._key is not None:
                    with _OPEN.lock:
                        _OPEN.damaged.setdefault(self._key, str(error))
                    damage_note.write_note(self.path, str(error))  # for the processes to come
                raise error from None

    def damaged(self) -> str | None:
        """Why no store writes into this file any more (None: it may be written): a corrupt answer
        in this process, or the `<db>.damaged` note another process left (`damage_note`)."""
        with _OPEN.lock:
            here = _OPEN.damaged.get(self._key) if self._key is not None else None
        if here is not None:
            return here
        noted = damage_note.read_note(self.path)
        if noted is None:
            return None
        return (
            f"{noted} — marked in {damage_note.note_path(self.path)}; once the file is sound again "
            f"(`sqlite3 {self.path} .recover`, or a copy put back) run `workbench sessions check "
            f"--db {self.path}`"
        )

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (`BEGIN IMMEDIATE`: the write lock is taken up front, so two
        writers queue on `busy_timeout` instead of failing on a lock upgrade). Refused once the
        file answered "corrupt": nothing keeps writing into a damaged file."""
        reason = self.damaged()
        if reason is not None:
            raise SessionStoreError(f"not written: {reason}", kind="corrupt", code="SQLITE_CORRUPT")
        with self._guard():
            self._db.execute("BEGIN IMMEDIATE")
            try:
                before = self._verify_before_write()
                yield self._db
                self._db.execute("COMMIT")  # a full disk or an I/O error may answer here too
            except BaseException:
                if self._db.in_transaction:
                    try:
                        self._db.execute("ROLLBACK")
                    except sqlite3.Error:
                        pass  # SQLite rolled back already; the first error is the one to report
                raise
        after = write_check.identity(self.path)
        if after != before:  # a checkpoint wrote the main file: sealed as this workbench left it
            write_check.seal(self.path, after)

    def _verify_before_write(self) -> write_check.Identity | None:
        """Inside the write lock: a file changed since a workbench last left it (`write_check`) is
        quick-checked before anything goes in; damage marks it and refuses the write. Returns the
        file's identity, as sealed."""
        found = write_check.identity(self.path)
        if found is not None and found == write_check.sealed(self.path):
            return found
        try:
            # Pages this connection holds in memory are as they were before the change: let them
            # go, so the check (and the write after it) reads what is on disk now.
            self._db.execute("PRAGMA shrink_memory")
            result = str(self._db.execute("PRAGMA quick_check(1)").fetchone()[0])
        except sqlite3.Error as exc:  # SQLite may answer "corrupt" instead of listing a finding
            if not describe(self.path, exc).damaged:
                raise
            result = f"{getattr(exc, 'sqlite_errorname', 'SQLITE_CORRUPT')}: {exc}"
        if result == "ok":
            write_check.seal(self.path, found)
            return found
        reason = write_check.damage_reason(self.path, " ".join(result.split()))
        if self._key is not None:
            with _OPEN.lock:
                _OPEN.damaged.setdefault(self._key, reason)
        damage_note.write_note(self.path, reason)  # for the processes to come
        raise SessionStoreError(f"not written: {reason}", kind="corrupt", code="SQLITE_CORRUPT")

    def close(self) -> None:
        """Close the connection; a file as a workbench left it is sealed again afterwards, since
        the last connection's checkpoint writes the main file (`write_check`)."""
        with self._lock:
            if self._key is None:
                self._db.close()
                return
            reseal = not self.read_only and write_check.unchanged(self.path)
            _OPEN.remove(self._key)
            self._key = None
            self._db.close()
            if reseal:
                write_check.seal(self.path)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ recovery and reading
    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        with self._guard():
            cursor = self._db.execute(sql, tuple(params))
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def integrity_check(self) -> str:
        """SQLite's full check ("ok", or its first finding): "ok" lifts a `<db>.damaged` note,
        a finding marks the file damaged (as a corrupt answer does)."""
        result = next(iter(self._query("PRAGMA integrity_check")[0].values()))
        with _OPEN.lock:
            if self._key is not None and result == "ok":
                _OPEN.damaged.pop(self._key, None)
            elif self._key is not None:
                _OPEN.damaged.setdefault(self._key, f"integrity check of {self.path}: {result}")
        if result == "ok":
            damage_note.clear_note(self.path)
            if not self.read_only:
                write_check.seal(self.path)
        else:
            damage_note.write_note(self.path, f"integrity check of {self.path}: {result}")
        return result
