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
]

SCHEMA_VERSION = len(MIGRATIONS)
