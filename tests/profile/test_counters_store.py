"""The sessions database's counters table (schema migration 3, issue 27): an older database is
migrated with its runs kept, and a `workbench run --json` report's counters are stored with the run
they belong to (by backend and device), read back, and absent where the run took none."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading

import pytest

from workbench.profile.sessions.record import record_report
from workbench.profile.sessions.schema import MIGRATIONS, SCHEMA_VERSION
from workbench.profile.sessions.store import SessionStore, SessionStoreError


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

    from workbench.profile.sessions.compare import compare_runs
    from workbench.profile.sessions.counters_compare import compare_counters, lines
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


def _ncu(dram_pct: float, message: str = "ncu 61.952 µs") -> dict:
    return {"status": "ok", "message": message, "metrics": {"duration_s": 6.1952e-05, "dram_pct": dram_pct},
            "stalls": [["long_scoreboard", 43.95]], "backend": "wgsl", "device": "wgpu:0"}  # fmt: skip


def test_counters_attached_to_a_recorded_run_replace_the_older_and_keep_its_measurement(
    tmp_path, make_report
):
    """The window's Take counters comes after the run was recorded: `add_counters` attaches it; a
    second capture is the current one, the first kept in its `earlier` list; a reason that
    replaces a measurement keeps the measurement too; a file re-opened reads the same."""
    from workbench.profile.sessions.record import record_report_rows

    path = tmp_path / "s.db"
    with SessionStore(path) as store:
        rows = dict(record_report_rows(store, make_report()))
        assert set(rows) == {("cpu", "cpu"), ("wgsl", "wgpu:0")}  # each id named by backend and device
        run = rows[("wgsl", "wgpu:0")]
        assert store.counters(run) is None
        first = store.add_counters(run, _ncu(61.43))
        assert store.counters(run) == first and first["metrics"]["dram_pct"] == 61.43
        assert "earlier" not in first and first["attached"].endswith("Z")
        second = store.add_counters(run, {**_ncu(27.2, "ncu again"), "attached": "2026-12-02T00:00:00Z"})
        assert store.counters(run)["message"] == "ncu again"
        assert [e["metrics"]["dram_pct"] for e in second["earlier"]] == [61.43]
        absent = {"status": "absent", "message": "no counters: no ncu", "metrics": {}, "stalls": []}
        store.add_counters(run, absent)
        assert store.counters(rows[("cpu", "cpu")]) is None  # the other run untouched
        assert store._query("SELECT COUNT(*) AS n FROM counters")[0]["n"] == 1  # one row per run
    with SessionStore(path) as store:
        now = store.get_run(run)["counters"]
        assert (now["status"], now["message"]) == ("absent", "no counters: no ncu")
        assert [e["message"] for e in now["earlier"]] == ["ncu again", "ncu 61.952 µs"]  # newest first
        assert store._query("SELECT status, message FROM counters") == [
            {"status": "absent", "message": "no counters: no ncu"}
        ]
    show = subprocess.run([sys.executable, "-m", "workbench", "sessions", "show", str(run), "--db", str(path)],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert show.returncode == 0, show.stderr
    lines = show.stdout.splitlines()
    assert "  counters (absent): no counters: no ncu" in lines
    assert "  earlier counters: 2 capture(s) kept in the record (sessions export --format json)" in lines


def test_counters_for_a_run_that_is_not_there_are_refused_by_its_id(tmp_path, make_report):
    with SessionStore(tmp_path / "s.db") as store:
        ids = record_report(store, make_report())
        missing = max(ids) + 1
        with pytest.raises(SessionStoreError) as refused:
            store.add_counters(missing, _ncu(61.43))
        assert str(refused.value) == f"no run #{missing} in {store.path}: its counters were not recorded"
        with pytest.raises(
            SessionStoreError, match=r"run #1 in .*: expected a record \(an object\), got list"
        ):
            store.add_counters(ids[0], [])
        assert store._query("SELECT COUNT(*) AS n FROM counters")[0]["n"] == 0  # nothing half-written


def test_the_recorder_queues_counters_behind_the_recording_they_belong_to(tmp_path, make_report):
    """`submit` gives a Future of the outcome (ids by backend and device, the file); counters
    submitted right after it, before it is written, land on its runs, on the recorder's thread;
    a run that was not recorded gets its reason, and the whole is read back from a new store."""
    from workbench.profile.sessions.recorder import SessionRecorder

    path = tmp_path / "window.db"
    threads: list[str] = []
    recorder = SessionRecorder(path, on_done=lambda outcome: threads.append(threading.current_thread().name))
    try:
        recording = recorder.submit(make_report())
        records = {("wgsl", "wgpu:0"): _ncu(61.43), ("cpu", "cpu"): {"status": "absent", "message": "not cuda"},
                   ("nvptx", "cuda:0"): _ncu(1.0)}  # fmt: skip
        runs = {("wgsl", "wgpu:0"): (recording, ("wgsl", "wgpu:0")), ("cpu", "cpu"): (recording, ("cpu", "cpu")),
                ("nvptx", "cuda:0"): ("recording was off (Record runs) when it ran", ("nvptx", "cuda:0"))}  # fmt: skip
        done: list[dict] = []
        attached = recorder.submit_counters(records, runs, on_done=done.append)
        assert recorder.wait_idle(60)
        outcome = recording.result(0)
        assert outcome["db"] == str(path) and outcome["ids"] == list(outcome["rows"].values())
        assert attached.result(0) == done[0] == {
            "ids": {("wgsl", "wgpu:0"): outcome["rows"][("wgsl", "wgpu:0")], ("cpu", "cpu"): outcome["rows"][("cpu", "cpu")]},
            "not_recorded": {("nvptx", "cuda:0"): "recording was off (Record runs) when it ran"},
        }  # fmt: skip
        assert threads == ["wb-session-recorder"]
    finally:
        recorder.close()
    with SessionStore(path) as store:
        assert store.counters(outcome["rows"][("wgsl", "wgpu:0")])["metrics"]["dram_pct"] == 61.43
        assert store.counters(outcome["rows"][("cpu", "cpu")])["message"] == "not cuda"


def test_counters_go_to_the_file_their_run_was_recorded_in_and_a_failed_recording_says_why(
    tmp_path, make_report
):
    from workbench.profile.sessions.recorder import SessionRecorder

    first, second = tmp_path / "first.db", tmp_path / "second.db"
    recorder = SessionRecorder(first)
    try:
        recording = recorder.submit(make_report())
        recorder.set_path(second)  # the window's setting changed: later runs go elsewhere
        key = ("cpu", "cpu")
        attached = recorder.submit_counters({key: _ncu(61.43)}, {key: (recording, key)})
        assert recorder.wait_idle(60)
        run_id = recording.result(0)["rows"][key]
        assert attached.result(0) == {"ids": {key: run_id}, "not_recorded": {}}
        (tmp_path / "not-a-db").write_text(
            "this is no SQLite database, and long enough to be read as one " * 80
        )
        recorder.set_path(tmp_path / "not-a-db")
        refused = recorder.submit(make_report())
        late = recorder.submit_counters({key: _ncu(1.0)}, {key: (refused, key)})
        assert recorder.wait_idle(60)
        assert refused.result(0)["error"].startswith("the run was not recorded: ")
        assert late.result(0) == {"ids": {}, "not_recorded": {key: refused.result(0)["error"]}}
    finally:
        recorder.close()
    with SessionStore(first) as store:
        assert store.counters(run_id)["metrics"]["dram_pct"] == 61.43
    with SessionStore(second) as store:
        assert store.count() == 0
