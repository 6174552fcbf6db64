"""Upgrading a sessions database's schema (Qt-free): the copy taken first, then the migrations.

An older schema is copied whole to `<file>.v<N>.bak` (SQLite's backup API: consistent while other
connections read) before anything changes; a copy that cannot be made refuses the upgrade and
leaves the file as it was. Migrations (`schema.MIGRATIONS`) are append-only: migration N ends at
`user_version = N`, each in one write transaction with its version bump, so a process killed
mid-upgrade leaves the file at a version it understands. Which files are opened at all (newer
schema, foreign database, read-only mount) is decided by `store_open.py`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

from workbench.profile.sessions.db_errors import SessionStoreError, describe


def backup(db: sqlite3.Connection, path: Path, version: int) -> Path:
    """Copy the whole database `path` (open as `db`, at schema `version`) before migrating it;
    returns the copy's path (`<file>.v<N>.bak`, numbered when one is there already)."""
    target = path.with_name(f"{path.name}.v{version}.bak")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.v{version}.{n}.bak")
    try:
        with sqlite3.connect(target) as copy:
            db.backup(copy)
        copy.close()
    except (sqlite3.Error, OSError) as exc:
        why = describe(target, exc) if isinstance(exc, sqlite3.Error) else exc.strerror or exc
        raise SessionStoreError(
            f"cannot back up the sessions database {path} to {target} before upgrading its "
            f"schema: {why}; nothing was changed",
            kind=getattr(why, "kind", "other"),
        ) from None
    return target


def migrate(db: sqlite3.Connection, migrations: Sequence[Sequence[str]]) -> None:
    """Run the missing migrations, each in one transaction with its version bump. The version is
    re-read inside the write lock: another process may have migrated meanwhile."""
    while True:
        db.execute("BEGIN IMMEDIATE")
        try:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version >= len(migrations):
                db.execute("COMMIT")
                return
            for statement in migrations[version]:
                db.execute(statement)
            db.execute(f"PRAGMA user_version = {version + 1}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
