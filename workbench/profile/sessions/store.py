"""Profiling sessions: every run recorded with its provenance in one SQLite file (Qt-free).

The database lives in the user data folder (`default_db_path()`); `--db FILE`, `$WB_SESSIONS_DB`
or the window's setting point elsewhere. It runs in WAL mode with `synchronous=NORMAL`: a process
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
one page is no database, and SQLite would take it for an empty one); `held_here(path)` says whether
a store of this process has a file open (an export must never write over it).

Opening never damages a file it does not understand: a file that is not SQLite, a corrupt one, or
one with a newer schema raises `SessionStoreError` and is left byte for byte as it was; an older
schema is copied to `<file>.v<N>.bak` before its migrations run. SQLite's errors are named by
`db_errors.describe` (corrupt, read-only, full disk, I/O error, locked, constraint, cannot open);
once a file answered "corrupt", no store of this process writes into it again. On a read-only
mount where SQLite cannot make the `-shm`, a database with no pending log is read as immutable
(`read_only`; every write answers read-only). A file changed outside the workbench since one last
left it is quick-checked inside the write transaction before anything is written
(`write_check`: its `<db>.sealed` identity); SQLite checks each page a write touches, and
`integrity_check()` is there to ask for the whole.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from workbench.profile.sessions import damage_note, write_check
from workbench.profile.sessions.bundle_check import sanitize, shown
from workbench.profile.sessions.db_errors import (
    BUSY,
    CANTOPEN,
    LOCKED,
    SessionStoreError,
    describe,
    primary_code,
    read_only_fs,
)
from workbench.profile.sessions.db_file import (
    _OPEN,
    DB_NAME,
    MIN_DB_BYTES,
    _file_key,
    default_db_path,
    held_here,
    is_sqlite_file,
)
from workbench.profile.sessions.schema import MIGRATIONS

__all__ = ["SessionStore", "SessionStoreError", "default_db_path", "held_here", "is_sqlite_file"]

#: Columns of a run summary (what lists, filters and CSV exports show).
SUMMARY_COLUMNS = (
    "id", "uuid", "invocation", "time", "project", "kernel", "backend", "device", "device_name",
    "status", "verified", "is_reference", "median_s", "iqr_s", "q1_s", "q3_s", "min_s", "max_s", "n",
    "timing_method", "source_hash", "snapshot_hash", "build_key", "toolchain", "seed",
    "registers", "spills", "shared_bytes", "error", "unverified",
)  # fmt: skip
#: JSON-encoded columns.
JSON_COLUMNS = ("flags", "sizes", "tunables", "ceilings")
#: Every column of `runs` but `passed` (derived), in a full record; plus `detail` from `run_data`.
ALL_COLUMNS = (*SUMMARY_COLUMNS, "time_unix", "prev_snapshot_hash", "outputs", *JSON_COLUMNS)


def samples_to_blob(samples: Sequence[float] | np.ndarray) -> bytes:
    return np.asarray(samples, dtype="<f8").tobytes()


def blob_to_samples(blob: bytes | None) -> np.ndarray:
    return np.frombuffer(blob or b"", dtype="<f8")


def _detail_at(json_path: str) -> str:
    """SQL for a value inside `run_data.detail`; NULL where the detail is not JSON (a poisoned
    row), instead of an error that would fail the whole query."""
    return f"CASE WHEN json_valid(run_data.detail) THEN json_extract(run_data.detail, '{json_path}') END"


def _valid(samples: np.ndarray) -> np.ndarray:
    return samples[np.isfinite(samples) & (samples > 0)]


class SessionStore:
    """One sessions database. Thread-safe (one connection, a lock); close it when done."""

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
            self._backup(version)
        with self._guard():
            self._db.execute(f"PRAGMA busy_timeout = {int(self.timeout_s * 1000)}")
            deadline = time.monotonic() + self.timeout_s
            while True:
                try:
                    self._db.execute("PRAGMA journal_mode = WAL")
                    self._db.execute("PRAGMA synchronous = NORMAL")
                    self._db.execute("PRAGMA foreign_keys = ON")
                    self._migrate()
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

    def _backup(self, version: int) -> Path:
        """Copy the whole database (consistently, via SQLite's backup API) before migrating it."""
        target = self.path.with_name(f"{self.path.name}.v{version}.bak")
        n = 1
        while target.exists():
            n += 1
            target = self.path.with_name(f"{self.path.name}.v{version}.{n}.bak")
        try:
            with sqlite3.connect(target) as copy:
                self._db.backup(copy)
            copy.close()
        except (sqlite3.Error, OSError) as exc:
            why = describe(target, exc) if isinstance(exc, sqlite3.Error) else exc.strerror or exc
            raise SessionStoreError(
                f"cannot back up the sessions database {self.path} to {target} before upgrading its "
                f"schema: {why}; nothing was changed",
                kind=getattr(why, "kind", "other"),
            ) from None
        self.backup_path = target
        return target

    def _migrate(self) -> None:
        """Run the missing migrations, each in one transaction with its version bump. The version is
        re-read inside the write lock: another process may have migrated meanwhile."""
        while True:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                version = self._db.execute("PRAGMA user_version").fetchone()[0]
                if version >= self.schema_version:
                    self._db.execute("COMMIT")
                    return
                for statement in self.migrations[version]:
                    self._db.execute(statement)
                self._db.execute(f"PRAGMA user_version = {version + 1}")
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

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

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ writing
    def insert_runs(
        self, rows: list[dict[str, Any]], snapshot: tuple[str, dict[str, str]] | None
    ) -> list[int]:
        """Insert one recorded invocation (all its rows, its samples and its source snapshot) in one
        transaction; each row's `prev_snapshot_hash` is the snapshot of the previous recorded run
        of the same project and kernel. Returns the new run ids."""
        ids: list[int] = []
        with self.transaction() as db:
            if snapshot is not None:
                db.execute(
                    "INSERT OR IGNORE INTO sources (hash, files) VALUES (?, ?)",
                    (snapshot[0], json.dumps(snapshot[1], sort_keys=True)),
                )
            previous: dict[tuple[str, str], str | None] = {}
            for row in rows:
                key = (row["project"], row["kernel"])
                if key not in previous:
                    found = db.execute(
                        "SELECT snapshot_hash FROM runs WHERE project = ? AND kernel = ? "
                        "AND snapshot_hash IS NOT NULL ORDER BY id DESC LIMIT 1",
                        key,
                    ).fetchone()
                    previous[key] = found[0] if found else None
                ids.append(self._insert_row(db, {**row, "prev_snapshot_hash": previous[key]}))
        return ids

    def _insert_row(self, db: sqlite3.Connection, row: dict[str, Any]) -> int:
        values = {c: row.get(c) for c in ALL_COLUMNS if c != "id"}
        for column in JSON_COLUMNS:
            if values[column] is not None:
                values[column] = json.dumps(values[column], sort_keys=True)
        if values["verified"] is not None:
            values["verified"] = int(bool(values["verified"]))
        values["is_reference"] = int(bool(values["is_reference"]))
        values["passed"] = int(
            values["status"] == "ok" and bool(values["verified"] or values["is_reference"])
        )
        names = ", ".join(values)
        marks = ", ".join("?" * len(values))
        cursor = db.execute(f"INSERT INTO runs ({names}) VALUES ({marks})", tuple(values.values()))
        run_id = int(cursor.lastrowid)
        samples = row.get("samples_s")
        blob = samples_to_blob(samples) if samples is not None and len(samples) else None
        db.execute(
            "INSERT INTO run_data (run_id, detail, samples) VALUES (?, ?, ?)",
            (run_id, json.dumps(row.get("detail") or {}, sort_keys=True), blob),
        )
        counters = row.get("counters")
        if isinstance(counters, dict):
            _write_counters(db, run_id, counters)
        return run_id

    def add_counters(self, run_id: int, record: dict[str, Any]) -> dict[str, Any]:
        """Attach Nsight Compute counters to a run recorded earlier (the window's *Take counters*,
        taken after its run was recorded), in one transaction; returns the record as stored.

        A run holds one current record (what `counters(run_id)` and `sessions show` read): the
        newer capture replaces the older, since it is the one the user just looked at. Nothing
        measured is lost: a replaced record that holds measurements (status "ok") goes, with the
        ones it had replaced, into the new record's `earlier` list (newest first); a replaced
        reason (absent / failed) is only a line the newer capture supersedes. Raises
        `SessionStoreError` naming the run when there is no such run in this file."""
        if not isinstance(record, dict):
            raise SessionStoreError(
                f"counters for run #{run_id} in {self.path}: expected a record (an object), got "
                f"{type(record).__name__}"
            )
        with self.transaction() as db:
            if db.execute("SELECT 1 FROM runs WHERE id = ?", (int(run_id),)).fetchone() is None:
                raise SessionStoreError(f"no run #{run_id} in {self.path}: its counters were not recorded")
            found = db.execute("SELECT data FROM counters WHERE run_id = ?", (int(run_id),)).fetchone()
            stored = _superseding(record, _object(found[0]) if found else None)
            _write_counters(db, int(run_id), stored)
        return stored

    def counters(self, run_id: int) -> dict[str, Any] | None:
        """The run's current Nsight Compute record (`workbench run --counters`, or attached later
        by `add_counters`), or None."""
        rows = self._query("SELECT data FROM counters WHERE run_id = ?", (int(run_id),))
        return _object(rows[0]["data"]) if rows else None

    def import_rows(self, rows: list[dict[str, Any]], sources: dict[str, dict[str, str]]) -> tuple[int, int]:
        """Add exported runs (bundle rows, with `uuid` and `samples_s`) unless a run with the same
        UUID is already here. One transaction. Returns (added, skipped)."""
        added = skipped = 0
        with self.transaction() as db:
            for digest, files in sources.items():
                db.execute(
                    "INSERT OR IGNORE INTO sources (hash, files) VALUES (?, ?)",
                    (digest, json.dumps(files, sort_keys=True)),
                )
            for row in rows:
                if db.execute("SELECT 1 FROM runs WHERE uuid = ?", (row["uuid"],)).fetchone():
                    skipped += 1
                    continue
                self._insert_row(db, row)
                added += 1
        return added, skipped

    # ------------------------------------------------------------------ reading
    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        with self._guard():
            cursor = self._db.execute(sql, tuple(params))
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def count(self) -> int:
        return self._query("SELECT COUNT(*) AS n FROM runs")[0]["n"]

    def list_runs(
        self,
        *,
        kernel: str | None = None,
        backend: str | None = None,
        device: str | None = None,
        project: str | None = None,
        verified: bool | None = None,
        since: float | None = None,
        until: float | None = None,
        limit: int | None = 1000,
        ids: Sequence[int] | None = None,
    ) -> list[dict[str, Any]]:
        """Run summaries, newest first. `device` matches the spec (`cuda:0`) or part of the device
        name; `since`/`until` are Unix times; `verified=True` includes the reference backend."""
        where, params = [], []
        for column, value in (("kernel", kernel), ("backend", backend), ("project", project)):
            if value:
                where.append(f"{column} = ?")
                params.append(value)
        if device:
            specs = self._device_specs(device)
            where.append(f"device IN ({', '.join('?' * len(specs))})")
            params += specs
        if verified is not None:
            where.append("passed = ?")
            params.append(int(verified))
        if since is not None:
            where.append("time_unix >= ?")
            params.append(since)
        if until is not None:
            where.append("time_unix < ?")
            params.append(until)
        if ids is not None:
            ids = [int(i) for i in ids]
            where.append(f"id IN ({', '.join('?' * len(ids))})")
            params += ids
        sql = f"SELECT {', '.join(SUMMARY_COLUMNS)} FROM runs"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        return [_summary(row) for row in self._query(sql, params)]

    def _device_specs(self, device: str) -> list[str]:
        """The device specs a `device` filter means: the spec itself and every device whose name
        contains it (found on the covering index `runs_device_name`, not by scanning runs)."""
        found = self._query(
            "SELECT DISTINCT device FROM runs INDEXED BY runs_device_name WHERE device_name LIKE ?",
            (f"%{device}%",),
        )
        return list(dict.fromkeys([device, *(r["device"] for r in found)]))

    def distinct(self, column: str) -> list[str]:
        """The distinct values of `kernel`, `backend`, `device` or `project` (for filter menus)."""
        if column not in {"kernel", "backend", "device", "project"}:
            raise ValueError(column)
        return [r[column] for r in self._query(f"SELECT DISTINCT {column} FROM runs ORDER BY {column}")]

    def get_run(self, run_id: int, *, samples: bool = True) -> dict[str, Any]:
        """Everything recorded about one run (its samples as a list under `samples_s`)."""
        columns = ", ".join(f"runs.{c}" for c in ALL_COLUMNS)
        rows = self._query(
            f"SELECT {columns}, run_data.detail FROM runs LEFT JOIN run_data ON run_data.run_id = runs.id "
            "WHERE runs.id = ?",
            (int(run_id),),
        )
        if not rows:
            raise SessionStoreError(f"no run #{run_id} in {self.path}")
        run = _full(rows[0])
        if samples:
            found = self._raw_samples(run_id)
            kept = _valid(found)
            if len(kept) != len(found):
                run.setdefault("invalid", []).append(
                    f"samples_s: {len(found) - len(kept)} of {len(found)} samples are not positive "
                    "finite numbers (left out)"
                )
            run["samples_s"] = kept.tolist()
        counters = self.counters(run_id)
        if counters is not None:
            run["counters"] = counters
        return run

    def samples(self, run_id: int) -> np.ndarray:
        """The run's timing samples (s); anything but a positive finite number is left out (only
        a poisoned row holds one: `get_run` notes it in `invalid`)."""
        return _valid(self._raw_samples(run_id))

    def _raw_samples(self, run_id: int) -> np.ndarray:
        rows = self._query("SELECT samples FROM run_data WHERE run_id = ?", (int(run_id),))
        blob = rows[0]["samples"] if rows else None
        if not isinstance(blob, bytes | None):
            return np.array([np.nan])  # not a blob at all: one bad sample to note
        return blob_to_samples(blob[: len(blob) - len(blob) % 8] if blob else blob)

    def tuning_runs(self, key: str) -> list[dict[str, Any]]:
        """Every run a sweep recorded under `key` (`provenance.tuning.key`, `profile/tuning/tune.py`),
        newest first, with its `detail`."""
        columns = ", ".join(f"runs.{c}" for c in ALL_COLUMNS)
        rows = self._query(
            f"SELECT {columns}, run_data.detail FROM runs JOIN run_data ON run_data.run_id = runs.id "
            f"WHERE {_detail_at('$.provenance.tuning.key')} = ? ORDER BY runs.id DESC",
            (key,),
        )
        return [_full(row) for row in rows]

    def records(
        self,
        *,
        ids: Sequence[int] | None = None,
        series: str | None = None,
        project: str | None = None,
        kernel: str | None = None,
        backend: str | None = None,
        device: str | None = None,
        limit: int | None = None,
    ) -> list[dict[str, Any]]:
        """Full runs (every column) plus `host`, `series` and `timing_conditions` from their
        detail, newest first: what comparisons and condition flags read (`profile/compare.py`)."""
        where, params = [], []
        for column, value in (
            ("project", project),
            ("kernel", kernel),
            ("backend", backend),
            ("device", device),
        ):
            if value is not None:
                where.append(f"runs.{column} = ?")
                params.append(value)
        if ids is not None:
            where.append(f"runs.id IN ({', '.join('?' * len(ids))})")
            params += [int(i) for i in ids]
        if series is not None:
            where.append(f"{_detail_at('$.series.id')} = ?")
            params.append(series)
        columns = ", ".join(f"runs.{c}" for c in ALL_COLUMNS)
        sql = (
            f"SELECT {columns}, {_detail_at('$.host')} AS host, {_detail_at('$.series')} AS series, "
            f"{_detail_at('$.timing.conditions')} AS timing_conditions "
            "FROM runs LEFT JOIN run_data ON run_data.run_id = runs.id"
        )
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY runs.id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(int(limit))
        out = []
        for row in self._query(sql, params):
            run = _full(row)
            for key in ("host", "series", "timing_conditions"):
                run[key] = _object(run[key])
            out.append(run)
        return out

    def invocation_runs(self, invocation: str) -> list[dict[str, Any]]:
        """The summaries of every result of one recorded `workbench run`, in recording order."""
        sql = f"SELECT {', '.join(SUMMARY_COLUMNS)} FROM runs WHERE invocation = ? ORDER BY id"
        return [_summary(row) for row in self._query(sql, (invocation,))]

    def history(self, project: str, kernel: str, limit: int = 2000) -> list[dict[str, Any]]:
        """One kernel's recorded runs, oldest first (the last `limit`)."""
        sql = (
            f"SELECT {', '.join(SUMMARY_COLUMNS)}, prev_snapshot_hash FROM runs "
            "WHERE project = ? AND kernel = ? ORDER BY id DESC LIMIT ?"
        )
        rows = [_summary(row) for row in self._query(sql, (project, kernel, limit))]
        return rows[::-1]

    def source(self, digest: str | None) -> dict[str, str] | None:
        if not digest:
            return None
        rows = self._query("SELECT files FROM sources WHERE hash = ?", (digest,))
        return json.loads(rows[0]["files"]) if rows else None

    def diff(self, run_id: int) -> str:
        """The unified diff of the run's kernel sources against the previous recorded run of the
        same kernel ("" when nothing changed; a note when either snapshot is missing)."""
        from workbench.profile.sessions.sources import unified_diff

        rows = self._query("SELECT snapshot_hash, prev_snapshot_hash FROM runs WHERE id = ?", (int(run_id),))
        if not rows:
            raise SessionStoreError(f"no run #{run_id} in {self.path}")
        new, old = rows[0]["snapshot_hash"], rows[0]["prev_snapshot_hash"]
        if new is None:
            return "(no sources were recorded with this run)\n"
        if old is None:
            return "(the first recorded run of this kernel: no earlier sources to compare)\n"
        return unified_diff(self.source(old) or {}, self.source(new) or {})

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

    def outputs_dir(self) -> Path:
        """Where kept output arrays go: `<db stem>-outputs/` beside the database."""
        return self.path.with_name(f"{self.path.stem}-outputs")


def _object(text: Any) -> dict[str, Any] | None:
    """A JSON object read out of a detail (json_extract gives a bare scalar unquoted), else None."""
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _write_counters(db: sqlite3.Connection, run_id: int, record: dict[str, Any]) -> None:
    """The run's counters row: its queryable columns and the whole record (replacing any)."""
    db.execute(
        "INSERT OR REPLACE INTO counters (run_id, status, message, duration_s, data) VALUES (?, ?, ?, ?, ?)",
        (run_id, str(record.get("status") or "absent"), str(record.get("message") or ""),
         _number((record.get("metrics") or {}).get("duration_s")), json.dumps(record, sort_keys=True)),
    )  # fmt: skip


def _superseding(record: dict[str, Any], previous: dict[str, Any] | None) -> dict[str, Any]:
    """`record` as it replaces `previous`: stamped with when it was attached, the measured
    captures it replaces kept under `earlier`, newest first (`SessionStore.add_counters`)."""
    stored = {
        **record,
        "attached": record.get("attached") or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    earlier: list[dict[str, Any]] = []
    if previous is not None:
        if previous.get("status") == "ok":
            earlier.append({k: v for k, v in previous.items() if k != "earlier"})
        earlier.extend(e for e in previous.get("earlier") or [] if isinstance(e, dict))
    earlier.extend(e for e in record.get("earlier") or [] if isinstance(e, dict))
    if earlier:
        stored["earlier"] = earlier
    return stored


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _summary(row: dict[str, Any], problems: list[str] | None = None) -> dict[str, Any]:
    """A row as read, its flags as booleans; poisoned fields become None, noted in `invalid`."""
    for column in ("verified", "is_reference"):
        value = row.get(column)
        if isinstance(value, int) and value in (0, 1):
            row[column] = bool(value)
    return sanitize(row, problems)


def _full(row: dict[str, Any]) -> dict[str, Any]:
    """A whole run: JSON columns decoded (text that is not JSON becomes None, noted), `detail` an
    object (when selected)."""
    problems: list[str] = []
    for column in (*JSON_COLUMNS, "detail"):
        if column not in row:
            continue
        try:
            row[column] = json.loads(row[column]) if row[column] is not None else None
        except (TypeError, ValueError):
            problems.append(f"{column}: expected JSON text, got {shown(row[column])}")
            row[column] = None
    if "detail" in row and not isinstance(row["detail"], dict):
        if row["detail"] is not None:
            problems.append(f"detail: expected an object, got {shown(row['detail'])}")
        row["detail"] = {}
    return _summary(row, problems)
