"""The sessions database on a real SQLite file: recording, queries, migrations, faults."""

from __future__ import annotations

import calendar
import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests.waits import HANG_GUARD_S
from workbench.profile.sessions.record import record_report
from workbench.profile.sessions.schema import MIGRATIONS, SCHEMA_VERSION
from workbench.profile.sessions.sources import snapshot_hash
from workbench.profile.sessions.store import SessionStore, SessionStoreError, default_db_path
from workbench.result_text import row_verdict

WRITER = Path(__file__).with_name("sessions_writer.py")


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    return env


def test_default_path_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv("WB_SESSIONS_DB", raising=False)
    monkeypatch.setenv("WB_DATA_DIR", str(tmp_path / "data"))
    assert default_db_path() == tmp_path / "data" / "sessions.db"
    monkeypatch.delenv("WB_DATA_DIR")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    if sys.platform.startswith("linux"):
        assert default_db_path() == tmp_path / "xdg" / "rust-gpu-workbench" / "sessions.db"
    monkeypatch.setenv("WB_SESSIONS_DB", str(tmp_path / "x.db"))
    assert default_db_path() == tmp_path / "x.db"


def test_new_database_is_wal_with_the_current_schema(tmp_path):
    path = tmp_path / "s.db"
    with SessionStore(path) as store:
        assert store.count() == 0
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    indexes = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {"runs_kernel", "runs_backend", "runs_device", "runs_time"} <= indexes
    db.close()


def test_a_report_is_recorded_with_samples_sources_and_diff(tmp_path, make_report):
    with SessionStore(tmp_path / "s.db") as store:
        v1 = {"src/lib.rs": "pub fn k() { a(); }\n"}
        v2 = {"src/lib.rs": "pub fn k() { b(); }\n"}
        first = record_report(store, make_report(seed=1), snapshot=(snapshot_hash(v1), v1))
        second = record_report(store, make_report(seed=2), snapshot=(snapshot_hash(v2), v2))
        same = record_report(store, make_report(seed=3), snapshot=(snapshot_hash(v2), v2))
        assert len(first) == len(second) == 2
        run = store.get_run(second[1])
        report = make_report(seed=2)
        expected = report["results"][1]["timing"]["samples_s"]
        assert run["samples_s"] == expected  # raw samples kept bit for bit
        assert run["median_s"] == pytest.approx(np.median(expected))
        assert run["backend"] == "wgsl" and run["device"] == "wgpu:0" and run["verified"] is True
        assert run["sizes"] == {"n": 1024} and run["tunables"] == {"block": 256} and run["seed"] == 0
        assert run["toolchain"] == "rustc 1.96.0" and run["flags"] == ["--release"]
        assert run["ceilings"] is None
        assert store.diff(first[0]).startswith("(the first recorded run")
        diff = store.diff(second[0])
        assert "-pub fn k() { a(); }" in diff and "+pub fn k() { b(); }" in diff
        assert store.diff(same[0]) == ""  # no edit since the previous run
        # The source text is stored once per distinct snapshot.
        assert store._query("SELECT COUNT(*) AS n FROM sources")[0]["n"] == 2


def test_list_filters(tmp_path, make_report):
    with SessionStore(tmp_path / "s.db") as store:
        record_report(store, make_report(kernel="saxpy", time="2026-11-01T00:00:00Z"))
        record_report(store, make_report(kernel="matmul", medians={("cuda-c", "cuda:0"): 1e-4}))
        failed = make_report(kernel="matmul", medians={("nvptx", "cuda:0"): 1e-4})
        failed["results"][0].update(status="ok", verified=False)
        record_report(store, failed)
        assert [r["kernel"] for r in store.list_runs()] == ["matmul", "matmul", "saxpy", "saxpy"]
        assert [r["backend"] for r in store.list_runs(kernel="saxpy")] == ["wgsl", "cpu"]
        assert [r["backend"] for r in store.list_runs(device="cuda:0")] == ["nvptx", "cuda-c"]
        assert [r["backend"] for r in store.list_runs(device="wgpu:0 dev")] == ["wgsl"]  # part of a name
        assert [r["backend"] for r in store.list_runs(verified=False)] == ["nvptx"]
        assert len(store.list_runs(verified=True)) == 3  # the cpu reference counts as verified
        assert [r["kernel"] for r in store.list_runs(since=calendar.timegm((2026, 11, 15, 0, 0, 0)))] == [
            "matmul",
            "matmul",
        ]
        assert len(store.list_runs(limit=1)) == 1
        assert store.distinct("backend") == ["cpu", "cuda-c", "nvptx", "wgsl"]


def test_kept_outputs_are_compressed_arrays_beside_the_database(tmp_path, make_report):
    class Report:  # a RunReport's shape: results plus output arrays per backend
        def __init__(self, data):
            self.project, self.kernel = data["project"], data["kernel"]
            self.results = data["results"]
            self.outputs = {"wgsl": {"y": np.arange(8, dtype=np.float32)}}

    with SessionStore(tmp_path / "s.db") as store:
        ids = record_report(store, Report(make_report()), keep_outputs=True)
        by_backend = {store.get_run(i)["backend"]: store.get_run(i) for i in ids}
        assert by_backend["cpu"]["outputs"] is None
        kept = tmp_path / by_backend["wgsl"]["outputs"]
        assert kept.parent == tmp_path / "s-outputs"
        assert np.array_equal(np.load(kept)["y"], np.arange(8, dtype=np.float32))
        record_report(store, Report(make_report()))
        assert len(list(kept.parent.iterdir())) == 1  # not kept unless asked


# ---------------------------------------------------------------- bad files
def test_a_file_that_is_not_sqlite_is_left_untouched(tmp_path):
    path = tmp_path / "s.db"
    path.write_bytes(b"these are somebody's notes, not a database\n" * 10)
    before = digest(path)
    with pytest.raises(SessionStoreError, match="not a SQLite database.*left untouched"):
        SessionStore(path)
    assert digest(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.db"]


def test_a_corrupt_sqlite_file_is_reported_and_kept(tmp_path, make_report):
    path = tmp_path / "s.db"
    with SessionStore(path) as store:
        record_report(store, make_report())
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    data = bytearray(path.read_bytes())
    data[100:4096] = b"\xff" * (4096 - 100)  # the schema page, after the header
    path.write_bytes(bytes(data))
    before = digest(path)
    with pytest.raises(SessionStoreError, match="corrupt"):
        SessionStore(path)
    assert digest(path) == before


def test_a_newer_schema_is_refused_and_kept(tmp_path):
    path = tmp_path / "s.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY)")
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    db.commit()
    db.close()
    before = digest(path)
    with pytest.raises(SessionStoreError, match=f"schema version {SCHEMA_VERSION + 5}, newer"):
        SessionStore(path)
    assert digest(path) == before
    assert not (tmp_path / "s.db-wal").exists()


def test_an_unrelated_sqlite_database_is_not_adopted(tmp_path):
    path = tmp_path / "other.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE contacts (name TEXT)")
    db.commit()
    db.close()
    before = digest(path)
    with pytest.raises(SessionStoreError, match="not a workbench sessions database.*contacts"):
        SessionStore(path)
    assert digest(path) == before


def test_an_older_schema_is_backed_up_then_migrated(tmp_path, make_report):
    path = tmp_path / "s.db"
    with SessionStore(path) as store:
        record_report(store, make_report())
    extra = [*MIGRATIONS, ["ALTER TABLE runs ADD COLUMN note TEXT", "CREATE INDEX runs_note ON runs(note)"]]
    with SessionStore(path, migrations=extra) as store:
        assert store.count() == 2
        backup = store.backup_path
    assert backup.name == f"s.db.v{SCHEMA_VERSION}.bak"
    old = sqlite3.connect(backup)
    assert old.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert old.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 2
    old.close()
    new = sqlite3.connect(path)
    assert new.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1
    assert "note" in {r[1] for r in new.execute("PRAGMA table_info(runs)")}
    new.close()


def test_migration_2_reads_why_a_recorded_run_was_not_verified_from_its_check(tmp_path):
    """A version-1 database (no `unverified` column) is migrated: each row's column is filled from
    its recorded check (`check.unverified`), a row whose detail is not JSON is left NULL."""
    path = tmp_path / "s.db"
    SessionStore(path, migrations=MIGRATIONS[:1]).close()
    db = sqlite3.connect(path)
    details = ['{"check": {"unverified": "reference failed"}}', '{"check": {"passed": true}}', "{{"]
    for run_id, detail in enumerate(details, 1):
        db.execute(
            "INSERT INTO runs (id, uuid, invocation, time, time_unix, project, kernel, backend, device, status) "
            "VALUES (?, ?, 'inv', '2026-12-01T00:00:00Z', 0, 'p', 'k', 'wgsl', 'wgpu:0', 'ok')",
            (run_id, f"u{run_id}"),
        )
        db.execute("INSERT INTO run_data (run_id, detail) VALUES (?, ?)", (run_id, detail))
    db.commit()
    db.close()
    with SessionStore(path) as store:
        runs = {r["id"]: r for r in store.list_runs()}
    assert [runs[i]["unverified"] for i in (1, 2, 3)] == ["reference failed", None, None]
    assert (
        row_verdict(runs[1]) == "not verified (reference failed)" and row_verdict(runs[2]) == "not verified"
    )


# ---------------------------------------------------------------- processes
def test_kill_9_while_recording_loses_at_most_the_run_in_flight(tmp_path):
    path = tmp_path / "s.db"
    child = subprocess.Popen(
        [sys.executable, str(WRITER), str(path), "0"], stdout=subprocess.PIPE, text=True, env=child_env()
    )
    acknowledged: list[int] = []
    try:
        deadline = time.monotonic() + HANG_GUARD_S
        while len(acknowledged) < 40 and time.monotonic() < deadline:
            line = child.stdout.readline()
            if not line:
                break
            acknowledged += [int(x) for x in line.split()]
        time.sleep(0.013)  # land the kill somewhere inside a later transaction
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(HANG_GUARD_S)
        child.stdout.close()
    assert len(acknowledged) >= 40, "the writer did not get going"
    with SessionStore(path) as store:
        assert store.integrity_check() == "ok"
        ids = {r["id"] for r in store.list_runs(limit=None)}
        assert set(acknowledged) <= ids  # every committed run survived
        assert len(ids) % 2 == 0  # a report's two results land together or not at all
        for run_id in acknowledged[-4:]:
            assert len(store.samples(run_id)) == 2000
        record_report(store, {"project": "p", "kernel": "k", "results": []})  # still writable
        assert store.count() == len(ids)


def test_two_processes_recording_at_once_both_succeed(tmp_path):
    path = tmp_path / "s.db"
    cmd = [sys.executable, str(WRITER), str(path), "25"]
    children = [
        subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env())
        for _ in range(2)
    ]
    outputs = [child.communicate(timeout=120) for child in children]
    for child, (_out, err) in zip(children, outputs, strict=True):
        assert child.returncode == 0, err
    ids = [int(x) for out, _ in outputs for x in out.split()]
    assert len(ids) == len(set(ids)) == 100
    with SessionStore(path) as store:
        assert store.count() == 100
        assert store.integrity_check() == "ok"


def test_processes_opening_a_new_database_at_once_all_succeed(tmp_path):
    """The first opener creates and migrates the file while others open it: none may read the
    tables without the version (two reads apart, a migration committing in between made a new
    sessions database look foreign: 4 of 90 openers failed in 15 rounds of 6 before the fix)."""
    code = "import sys; from workbench.profile.sessions.store import SessionStore; SessionStore(sys.argv[1]).close()"
    for round_ in range(20):
        path = tmp_path / f"new-{round_}.db"
        openers = [
            subprocess.Popen(
                [sys.executable, "-c", code, str(path)], stderr=subprocess.PIPE, text=True, env=child_env()
            )
            for _ in range(8)
        ]
        errors = [opener.communicate(timeout=HANG_GUARD_S)[1] for opener in openers]
        assert [o.returncode for o in openers] == [0] * len(openers), "\n".join(e for e in errors if e)
        with SessionStore(path) as store:
            assert store.count() == 0
