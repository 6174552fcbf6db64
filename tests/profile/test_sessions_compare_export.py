"""Comparing runs from their samples, and the three exports and the import, on real SQLite files."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest

from workbench.profile.sessions import compare
from workbench.profile.sessions.export import (
    ExportError,
    chrome_trace,
    import_bundle,
    render,
    select_runs,
    write_text,
)
from workbench.profile.sessions.record import record_report
from workbench.profile.sessions.sources import snapshot_hash
from workbench.profile.sessions.store import SessionStore


@pytest.mark.parametrize("n", [7, 8, 51, 200])
def test_order_statistic_bootstrap_matches_resampling(n):
    """The O(1) replicate of a median has the distribution of the median of a real resample."""
    rng = np.random.default_rng(n)
    data = rng.lognormal(0.0, 0.5, n)
    fast = compare.bootstrap_medians(data, 40_000, np.random.default_rng(1))
    brute = np.median(data[rng.integers(0, n, size=(40_000, n))], axis=1)
    for q in (0.025, 0.25, 0.5, 0.75, 0.975):
        assert np.quantile(fast, q) == pytest.approx(np.quantile(brute, q), rel=0.03)
    assert fast.mean() == pytest.approx(brute.mean(), rel=0.01)


def test_verdicts_come_from_the_samples():
    rng = np.random.default_rng(0)
    base = 1e-3 * (1 + 0.05 * rng.standard_normal(300))
    slower = compare.compare_samples(base, 1.10e-3 * (1 + 0.05 * rng.standard_normal(300)))
    faster = compare.compare_samples(base, 0.90e-3 * (1 + 0.05 * rng.standard_normal(300)))
    same = compare.compare_samples(base, 1e-3 * (1 + 0.05 * rng.standard_normal(300)))
    assert slower["verdict"] == "slower" and slower["ci"][0] > 1.0
    assert faster["verdict"] == "faster" and faster["ci"][1] < 1.0
    assert same["verdict"] == "no significant change" and same["ci"][0] < 1.0 < same["ci"][1]
    # Same medians 10% apart, but so few and so noisy samples that nothing can be concluded.
    noisy = compare.compare_samples(np.array([1.0, 3.0, 0.2, 2.0]), np.array([1.1, 0.1, 3.3, 2.2]))
    assert noisy["ratio"] == pytest.approx(1.1, rel=0.05)
    assert noisy["verdict"] == "no significant change"
    assert "bootstrap" in same["method"]
    assert compare.compare_samples(base, np.array([1e-3]))["verdict"].startswith("not comparable")


def test_compare_pairs_results_per_backend_and_device(tmp_path, make_report):
    """Run ids are rows; --invocation pairs two invocations' rows per backend x device, and a side
    recorded as a --repeat series brings its other repetitions as invocations."""
    with SessionStore(tmp_path / "s.db") as store:
        base, run = [], []
        for index in (1, 2, 3):
            base += record_report(store, make_report(seed=index), series={"id": "a", "index": index, "of": 3})
        for index in (1, 2, 3):
            medians = {("cpu", "cpu"): 1e-3, ("wgsl", "wgpu:0"): 1.5e-3}
            run += record_report(
                store,
                make_report(medians=medians, seed=10 + index),
                series={"id": "b", "index": index, "of": 3},
            )
        result = compare.compare_runs(store, base[0], run[1], invocation=True)
        assert result["mode"] == "invocations"
        rows = {(r["backend"], r["device"]): r for r in result["rows"]}
        assert set(rows) == {("cpu", "cpu"), ("wgsl", "wgpu:0")}
        assert rows[("cpu", "cpu")]["outcome"] == "same"
        assert rows[("wgsl", "wgpu:0")]["outcome"] == "faster"
        assert rows[("wgsl", "wgpu:0")]["invocations"] == [3, 3]
        assert rows[("wgsl", "wgpu:0")]["run_ids"] == run[1::2]
        assert rows[("wgsl", "wgpu:0")]["ratio"] == pytest.approx(0.75, rel=0.02)
        assert rows[("wgsl", "wgpu:0")]["baseline_median_s"] == pytest.approx(2e-3, rel=0.01)
        # Without --invocation the ids are the two rows: cpu against wgsl is not comparable.
        (cross,) = compare.compare_runs(store, base[0], run[1])["rows"]
        assert cross["outcome"] == "not comparable" and cross["backend"] == "cpu → wgsl"
        assert "backend: cpu → wgsl" in cross["differs"]


def _filled(tmp_path, make_report):
    store = SessionStore(tmp_path / "s.db")
    v1 = {"src/lib.rs": "fn a() {}\n"}
    v2 = {"src/lib.rs": "fn b() {}\n"}
    record_report(store, make_report(seed=1, n=5), snapshot=(snapshot_hash(v1), v1))
    record_report(
        store, make_report(seed=2, n=5, time="2026-12-01T00:00:01Z"), snapshot=(snapshot_hash(v2), v2)
    )
    return store


def test_csv_and_json_exports_of_a_selection(tmp_path, make_report):
    with _filled(tmp_path, make_report) as store:
        rows = list(csv.DictReader(io.StringIO(render(store, "csv", [1, 3]))))
        assert [r["id"] for r in rows] == ["1", "3"]
        assert rows[0]["backend"] == "cpu" and float(rows[1]["median_s"]) == store.get_run(3)["median_s"]
        assert json.loads(rows[0]["sizes"]) == {"n": 1024}
        bundle = json.loads(render(store, "json", [4]))
        assert bundle["format"] == "workbench-sessions"
        (run,) = bundle["runs"]
        assert run["samples_s"] == store.samples(4).tolist()
        assert set(bundle["sources"]) == {run["snapshot_hash"], run["prev_snapshot_hash"]}


def test_chrome_trace_lays_samples_out_per_device(tmp_path, make_report):
    with _filled(tmp_path, make_report) as store:
        trace = json.loads(render(store, "chrome-trace", None))
        events = trace["traceEvents"]
        names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
        assert sorted(names.values()) == ["cpu cpu device", "wgpu:0 wgpu:0 device"]  # one track per device
        launches = [e for e in events if e["ph"] == "X"]
        assert len(launches) == 4 * 5  # every sample of every run
        for pid in names:
            track = [e for e in launches if e["pid"] == pid]
            for a, b in zip(track, track[1:], strict=False):
                assert b["ts"] >= a["ts"] + a["dur"] - 1e-3  # back to back, never overlapping
        cpu_run = store.get_run(1)
        first = next(e for e in launches if e["args"]["run"] == 1)
        assert first["ts"] == pytest.approx(cpu_run["time_unix"] * 1e6)
        assert first["dur"] == pytest.approx(cpu_run["samples_s"][0] * 1e6, abs=1e-3)
        assert chrome_trace([])["traceEvents"] == []
        # Made a list item at a time (the window exports on a thread: one C call held the GIL for
        # seconds), the text is json.dumps' own.
        text = render(store, "chrome-trace", None)
        assert text == json.dumps(chrome_trace(select_runs(store, None))) + "\n"
        assert render(store, "chrome-trace", [2]) == json.dumps(chrome_trace(select_runs(store, [2]))) + "\n"


def test_import_a_bundle_into_another_database_once(tmp_path, make_report):
    with _filled(tmp_path, make_report) as store:
        write_text(tmp_path / "bundle.json", render(store, "json", None))
        originals = select_runs(store, None)
    with SessionStore(tmp_path / "home.db") as home:
        record_report(home, make_report(kernel="mine"))
        assert import_bundle(home, tmp_path / "bundle.json") == (4, 0)
        assert import_bundle(home, tmp_path / "bundle.json") == (0, 4)  # deduplicated by run UUID
        imported = {r["uuid"]: r for r in select_runs(home, None)}
        for run in originals:
            copy = imported[run["uuid"]]
            assert copy["samples_s"] == run["samples_s"] and copy["median_s"] == run["median_s"]
            assert copy["detail"] == run["detail"]
        latest = max(imported.values(), key=lambda r: r["id"])
        assert "+fn b() {}" in home.diff(latest["id"])  # sources travelled with the runs


def test_import_and_export_errors_name_the_file(tmp_path, make_report):
    with SessionStore(tmp_path / "s.db") as store:
        (tmp_path / "bad.json").write_text("{ nope")
        with pytest.raises(ExportError, match="bad.json is not JSON"):
            import_bundle(store, tmp_path / "bad.json")
        (tmp_path / "other.json").write_text('{"format": "something-else"}')
        with pytest.raises(ExportError, match="other.json is not a workbench sessions bundle"):
            import_bundle(store, tmp_path / "other.json")
        (tmp_path / "partial.json").write_text('{"format": "workbench-sessions", "runs": [{"uuid": "x"}]}')
        with pytest.raises(ExportError, match=r"runs\[0\]\.invocation: missing"):
            import_bundle(store, tmp_path / "partial.json")
        assert store.count() == 0
        with pytest.raises(ExportError, match="cannot write .*missing/out.csv"):
            write_text(tmp_path / "missing" / "out.csv", "x")
        # A GPU host's `workbench run --json` report imports too.
        (tmp_path / "report.json").write_text(json.dumps(make_report()))
        assert import_bundle(store, tmp_path / "report.json") == (2, 0)
