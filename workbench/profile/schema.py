"""The sessions database's schema, as an ordered list of migrations (`PRAGMA user_version`).

Migration N takes a database from version N-1 to N; a new database runs them all. A migration is a
list of statements run in one transaction together with the version bump, so a crash mid-way leaves
the previous version intact. Never edit a released migration: append a new one.
"""

from __future__ import annotations

#: Migration statements, index 0 = version 1.
MIGRATIONS: list[list[str]] = [
    [
        # The project's kernel sources, one row per distinct snapshot: {relative path: text} JSON.
        "CREATE TABLE sources (hash TEXT PRIMARY KEY, files TEXT NOT NULL)",
        # One row per kernel x backend x device result; `invocation` groups one `workbench run`.
        """CREATE TABLE runs (
            id INTEGER PRIMARY KEY,
            uuid TEXT NOT NULL UNIQUE,
            invocation TEXT NOT NULL,
            time TEXT NOT NULL,
            time_unix REAL NOT NULL,
            project TEXT NOT NULL,
            kernel TEXT NOT NULL,
            backend TEXT NOT NULL,
            device TEXT NOT NULL,
            device_name TEXT NOT NULL DEFAULT '',
            status TEXT NOT NULL,  -- passed: ok and (verified or the reference)
            verified INTEGER,
            is_reference INTEGER NOT NULL DEFAULT 0,
            median_s REAL,
            iqr_s REAL,
            q1_s REAL,
            q3_s REAL,
            min_s REAL,
            max_s REAL,
            n INTEGER,
            timing_method TEXT,
            source_hash TEXT,
            snapshot_hash TEXT REFERENCES sources(hash),
            prev_snapshot_hash TEXT,
            build_key TEXT,
            toolchain TEXT,
            flags TEXT,
            sizes TEXT,
            tunables TEXT,
            seed INTEGER,
            registers INTEGER,
            spills INTEGER,
            shared_bytes INTEGER,
            error TEXT,
            outputs TEXT,
            ceilings TEXT,
            passed INTEGER NOT NULL DEFAULT 0
        )""",
        # The bulky part of a run, apart so that listing and filtering scan narrow rows: the full
        # record as JSON (device, check, timing, throughput, provenance, resources) and the raw
        # timing samples as little-endian float64.
        "CREATE TABLE run_data (run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE, "
        "detail TEXT NOT NULL, samples BLOB)",
        "CREATE INDEX runs_kernel ON runs(kernel, id)",
        "CREATE INDEX runs_backend ON runs(backend, id)",
        "CREATE INDEX runs_device ON runs(device, id)",
        "CREATE INDEX runs_time ON runs(time_unix)",
        "CREATE INDEX runs_project_kernel ON runs(project, kernel, id)",
        "CREATE INDEX runs_invocation ON runs(invocation)",
        # All three filters at once (the panel's usual narrowing): no scan of one filter's matches.
        "CREATE INDEX runs_kernel_backend_device ON runs(kernel, backend, device, id)",
        "CREATE INDEX runs_passed ON runs(passed, id)",
        # Covering index: a device filter by part of its name scans this, not the table.
        "CREATE INDEX runs_device_name ON runs(device_name, device)",
    ],
    [
        # Why a result is not verified, from its check (`CheckRecord.unverified`, e.g. "reference
        # failed"): a list reads "not verified (reference failed)" from the row, not from run_data.
        "ALTER TABLE runs ADD COLUMN unverified TEXT",
        # (CASE, not AND: SQLite does not promise to test json_valid before json_type reads it.)
        "UPDATE runs SET unverified = (SELECT CASE WHEN json_valid(detail) THEN CASE WHEN "
        "json_type(detail, '$.check.unverified') = 'text' THEN json_extract(detail, '$.check.unverified') "
        "END END FROM run_data WHERE run_data.run_id = runs.id)",
    ],
    [
        # Nsight Compute counters taken with a run (`workbench run --counters`, issue 27): one row per
        # run that asked; `status` ok / absent / failed, `message` the one line the CLI printed,
        # `data` the whole record as JSON (metrics by key, top stalls, ncu's path and flags).
        "CREATE TABLE counters (run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE, "
        "status TEXT NOT NULL, message TEXT NOT NULL DEFAULT '', duration_s REAL, data TEXT NOT NULL)",
    ],
]

SCHEMA_VERSION = len(MIGRATIONS)
