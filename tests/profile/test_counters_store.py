"""The sessions database's counters table (schema migration 2, issue 27): an older database is
migrated with its runs kept, and a `workbench run --json` report's counters are stored with the run
they belong to (by backend and device), read back, and absent where the run took none."""

from __future__ import annotations

import sqlite3

from workbench.profile.record import record_report
from workbench.profile.schema import MIGRATIONS, SCHEMA_VERSION
from workbench.profile.store import SessionStore


def test_a_version_1_database_gains_the_counters_table_and_keeps_its_runs(tmp_path, make_report):
    path = tmp_path / "s.db"
    with SessionStore(path, migrations=MIGRATIONS[:1]) as store:
        record_report(store, make_report())
    with SessionStore(path) as store:
        assert store.count() == 2
        first = store.list_runs(limit=None)[0]["id"]
        assert "counters" not in store.get_run(first)  # recorded without counters: none claimed
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 2
    assert {r[1] for r in db.execute("PRAGMA table_info(counters)")} == {
        "run_id", "status", "message", "duration_s", "data"
    }  # fmt: skip
    db.close()


def test_a_json_reports_counters_go_with_their_own_run(tmp_path, make_report):
    report = make_report()
    ncu = {"status": "ok", "message": "ncu 61.952 µs", "metrics": {"duration_s": 6.1952e-05, "dram_pct": 61.43},
           "stalls": [["long_scoreboard", 43.95]], "backend": "wgsl", "device": "wgpu:0"}  # fmt: skip
    report["counters"] = [ncu]
    with SessionStore(tmp_path / "s.db") as store:
        ids = record_report(store, report)
        runs = {store.get_run(i)["backend"]: store.get_run(i) for i in ids}
        assert runs["wgsl"]["counters"] == ncu
        assert "counters" not in runs["cpu"]
        row = store._query("SELECT status, message, duration_s FROM counters")  # the queryable columns
    assert row == [{"status": "ok", "message": "ncu 61.952 µs", "duration_s": 6.1952e-05}]
