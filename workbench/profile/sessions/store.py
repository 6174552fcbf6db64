"""Profiling sessions: every run recorded with its provenance in one SQLite file (Qt-free).

`SessionStore` is the sessions database as callers use it: the writes (one recorded invocation,
counters attached later, an imported bundle) and the queries (summaries, full records, samples,
sources and their diff). Opening the file, its connection policy, its transactions and what keeps
a damaged file from being written are `store_open.py`'s (`StoreConnection`, the base class);
upgrading an older schema is `migrate.py`'s.

Rows: `runs` holds one row per kernel × backend × device result (`invocation` groups one
`workbench run`; `uuid` identifies a run across databases) with indexed filter columns, timing
statistics (median, IQR, q1, q3), `unverified` (why a result is not verified, e.g. "reference
failed", from its check; migration 2 fills it for older rows), provenance columns, resources
(registers, spills, shared bytes from `build.json` beside the artifact), nullable `ceilings` JSON
and `prev_snapshot_hash` (the previous recorded run of the same project and kernel); `run_data`
holds the full JSON record and the raw samples (float64 blob); `sources` holds each distinct source
snapshot (`{path: text}`) once; `counters` a run's current Nsight Compute record. Source diffs are
computed on demand (`SessionStore.diff`). `--keep-outputs` saves output arrays to
`<db stem>-outputs/<uuid>.npz` (`outputs_dir`).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from workbench.profile.sessions.bundle_check import sanitize, shown
from workbench.profile.sessions.db_errors import SessionStoreError
from workbench.profile.sessions.db_file import default_db_path, held_here, is_sqlite_file
from workbench.profile.sessions.store_open import StoreConnection

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


class SessionStore(StoreConnection):
    """One sessions database. Thread-safe (one connection, a lock); close it when done."""

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
