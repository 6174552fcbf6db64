"""The sessions database's counters table (schema migration 3, issue 27): an older database is
migrated with its runs kept, and a `workbench run --json` report's counters are stored with the run
they belong to (by backend and device), read back, and absent where the run took none."""

from __future__ import annotations

import sqlite3

from workbench.profile.record import record_report
from workbench.profile.schema import MIGRATIONS, SCHEMA_VERSION
from workbench.profile.store import SessionStore


def test_a_version_2_database_gains_the_counters_table_and_keeps_its_runs(tmp_path, make_report):
    path = tmp_path / "s.db"
    with SessionStore(path, migrations=MIGRATIONS[:2]) as store:
        record_report(store, make_report())
    with SessionStore(path) as store:
        assert store.count() == 2
        first = store.list_runs(limit=None)[0]["id"]
        assert "counters" not in store.get_run(first)  # recorded without counters: none claimed
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 3
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


def test_counters_are_compared_under_the_timings_rules(tmp_path, make_report):
    """Two recordings of the same backend × device (comparable) with the real H200 capture's two
    launches as their counters; a pair that is not comparable gets no counters comparison."""
    from pathlib import Path

    from workbench.profile.compare import compare_runs
    from workbench.profile.counters_compare import compare_counters, lines
    from workbench.run.counters.ncu_csv import parse

    capture = Path(__file__).resolve().parents[1] / "run" / "data" / "ncu-h200.csv"
    first, second = parse(capture.read_text())
    ids = []
    with SessionStore(tmp_path / "s.db") as store:
        for seed, launch in ((0, first), (1, second)):
            report = make_report(medians={("nvptx", "cuda:0"): 1e-4, ("cpu", "cpu"): 1e-3}, seed=seed)
            report["counters"] = [{"status": "ok", "message": launch.kernel, "metrics": launch.values,
                                   "stalls": [list(s) for s in launch.stalls], "backend": "nvptx",
                                   "device": "cuda:0"}]  # fmt: skip
            ids.append(record_report(store, report))
        nvptx_a, nvptx_b = ids[0][0], ids[1][0]
        assert store.get_run(nvptx_a)["backend"] == "nvptx"
        (entry,) = compare_counters(store, compare_runs(store, nvptx_a, nvptx_b)["rows"])
        metrics = {m["key"]: m for m in entry["metrics"]}
        assert (metrics["dram_pct"]["baseline"], metrics["dram_pct"]["run"]) == (61.43, 27.25)
        assert metrics["dram_pct"]["change"] == "-34.2 points" and metrics["dram_pct"]["differs"] is True
        assert metrics["theoretical_occupancy_pct"]["differs"] is False
        assert metrics["duration_s"]["change"] == f"×{53088 / 61952:.3f}"
        assert entry["stalls"][1][0] == ["long_scoreboard", 4.85]
        text = lines([entry])
        assert text[0] == f"counters, nvptx on cuda:0 (#{nvptx_b} against #{nvptx_a}):"
        assert any(line.startswith("  * DRAM throughput % of peak") for line in text)
        # nvptx against cpu is not comparable: no counters comparison, as no timing verdict.
        cpu_b = ids[1][1]
        assert compare_counters(store, compare_runs(store, nvptx_a, cpu_b)["rows"]) == []
