"""The Sessions panel on real SQLite files, with real runs of an edited kernel, and the window
recording its runs."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog

from tests.waits import HANG_GUARD_MS, WORK_GUARD_MS, settle_qt
from workbench.profile.sessions.compare import COLUMNS as COMPARE_COLUMNS
from workbench.profile.sessions.record import record_report
from workbench.profile.sessions.store import SessionStore
from workbench.project import Project
from workbench.ui.screenshot import save_screenshot
from workbench.ui.sessions import transfer as transfer_module
from workbench.ui.sessions.panel import SessionsPanel
from workbench.ui.sessions.runs_table import RUN_COLUMNS

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "resources" / "examples"
WGSL_LINE = "        y[i] = params.a * x[i] + y[i];"


def transfer(qtbot, panel: SessionsPanel, start) -> bool:
    """Start an export or import with `start()` and wait for its outcome (the panel's transfer
    thread); whether it succeeded."""
    with qtbot.waitSignal(panel.transferred, timeout=WORK_GUARD_MS) as done:
        start()
    return done.args[0]["ok"]


def synthetic(kernel: str, backend_medians: dict[tuple[str, str], float], seed: int, n: int = 120) -> dict:
    """A `workbench run --json`-shaped report with samples drawn around the given medians."""
    rng = np.random.default_rng(seed)
    results = []
    for (backend, device), median in backend_medians.items():
        samples = median * (1 + 0.02 * rng.standard_normal(n))
        results.append({
            "backend": backend, "device": {"spec": device, "name": ""}, "status": "ok",
            "verified": True, "check": {}, "error": None,
            "timing": {"median_s": float(np.median(samples)), "iqr_s": 0.0, "n": n, "samples_s": samples.tolist()},
            "provenance": {"project": "demo", "kernel": kernel, "time": "2026-12-01T00:00:00Z"},
        })  # fmt: skip
    return {"project": "demo", "kernel": kernel, "results": results}


@pytest.fixture
def filled_db(tmp_path):
    path = tmp_path / "s.db"
    with SessionStore(path) as store:
        record_report(store, synthetic("saxpy", {("cpu", "cpu"): 1e-3, ("wgsl", "wgpu:0"): 2e-3}, 1))
        record_report(store, synthetic("saxpy", {("cpu", "cpu"): 1e-3, ("wgsl", "wgpu:0"): 1.6e-3}, 2))
        record_report(store, synthetic("matmul", {("cpu", "cpu"): 5e-3}, 3))
    return path


def test_list_filter_compare_and_export(make_widget, filled_db, tmp_path, qtbot, monkeypatch):
    panel = make_widget(SessionsPanel, None, db_path=filled_db, show=True)
    panel.refresh()
    assert panel.shown_ids() == [5, 4, 3, 2, 1]
    panel.set_filter("kernel", "saxpy")
    assert panel.shown_ids() == [4, 3, 2, 1]
    panel.set_filter("backend", "wgsl")
    assert panel.shown_ids() == [4, 2]
    panel.set_filter("backend", None)
    panel.verified_box.setCurrentIndex(2)  # not verified: none
    assert panel.shown_ids() == []
    panel.verified_box.setCurrentIndex(0)

    panel.select_run(1)
    panel.set_baseline(panel.current_id())
    assert "Baseline run #1 (★)" in panel.baseline_label.text()
    with qtbot.waitSignal(panel.compare.compared, timeout=HANG_GUARD_MS):  # compared on its own thread
        panel.select_run(4)
    rows = {(r["backend"], r["device"]): r for r in panel.compare_result["rows"]}
    assert rows[("wgsl", "wgpu:0")]["outcome"] == "ambiguous"  # one invocation a side
    assert rows[("cpu", "cpu")]["verdict"] == "ambiguous (1 invocation: run with --repeat)"
    verdict = COMPARE_COLUMNS.index("verdict")
    shown = {
        panel.compare_table.item(r, 0).text(): panel.compare_table.item(r, verdict).text()
        for r in range(panel.compare_table.rowCount())
    }
    assert shown == {
        "cpu": "ambiguous (1 invocation: run with --repeat)",
        "wgsl": rows[("wgsl", "wgpu:0")]["verdict"],
    }
    assert "per-invocation medians" in panel.method_label.text()
    with qtbot.waitSignal(panel.compare.compared, timeout=HANG_GUARD_MS):
        panel.invocation_box.setChecked(False)  # the two rows themselves: cpu (#1) against wgsl (#4)
    (cross,) = panel.compare_result["rows"]
    assert cross["outcome"] == "not comparable"
    assert panel.compare_table.item(0, verdict).text() == "not comparable (differences below)"
    assert "backend: cpu → wgsl" in panel.method_label.text()

    assert transfer(
        qtbot, panel, lambda: panel.export_to("csv", tmp_path / "picked.csv")
    )  # the selected run only
    assert [r["id"] for r in csv.DictReader((tmp_path / "picked.csv").open())] == ["4"]
    assert not transfer(qtbot, panel, lambda: panel.export_to("csv", tmp_path / "no" / "such" / "x.csv"))
    assert "cannot write" in panel.message.text()

    # An existing file: called directly, the export leaves it alone and says so; through
    # "Export runs as…", Qt's save dialog asked before returning its name, so it is replaced.
    old = tmp_path / "old.csv"
    old.write_text("id\nkept\n")
    assert not transfer(qtbot, panel, lambda: panel.export_to("csv", old))
    assert "exists" in panel.message.text() and old.read_text() == "id\nkept\n"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *args, **kwargs: (str(old), "CSV (*.csv)"))
    assert transfer(qtbot, panel, lambda: panel.export_dialog("csv"))
    assert [r["id"] for r in csv.DictReader(old.open())] == ["4"]
    assert panel.message.text() == f"exported 1 run(s) to {old}"


def test_export_and_import_work_off_the_gui_thread_and_closing_waits_for_them(
    make_widget, filled_db, tmp_path, qtbot, monkeypatch
):
    """Rendering the list's 2,000 newest runs held the GUI thread for seconds (on a 100,000-run
    database, 1.1 s as CSV, 3.9 s as a Chrome trace; reading the bundle back 1.5 s): an export or
    import now returns at once, the panel says it is working and takes no second one, and its
    outcome arrives as `transferred`. Closing the panel meanwhile waits: the file is whole."""
    import json

    panel = make_widget(SessionsPanel, None, db_path=filled_db, show=True)
    panel.refresh()
    bundle = tmp_path / "all.json"
    with qtbot.waitSignal(panel.transferred, timeout=WORK_GUARD_MS) as done:
        assert panel.export_to("json", bundle)
        # The event loop has not turned since: whatever the thread did, its outcome is not shown.
        assert panel.transfer_busy() and panel.message.text() == "exporting …"
        assert not panel.export_button.isEnabled() and not panel.import_button.isEnabled()
        assert not panel.export_to("csv", tmp_path / "second.csv")  # one at a time
        assert "still working" in panel.message.text()
    assert done.args[0] == {"kind": "export", "ok": True, "message": f"exported 5 run(s) to {bundle}"}
    assert not panel.transfer_busy() and panel.export_button.isEnabled() and panel.import_button.isEnabled()
    assert panel.message.text() == f"exported 5 run(s) to {bundle}"
    assert not (tmp_path / "second.csv").exists()

    other = make_widget(SessionsPanel, None, db_path=tmp_path / "other.db", show=True)
    other.refresh()
    assert other.shown_ids() == []
    with qtbot.waitSignal(other.transferred, timeout=WORK_GUARD_MS) as done:
        assert other.import_from(bundle) and other.transfer_busy()
    # Read in a child process (`workbench sessions import`, which parses outside the GIL of the
    # window's process): its answer is the message.
    assert done.args[0]["ok"], done.args[0]
    assert other.message.text() == f"imported 5 run(s) into {tmp_path / 'other.db'}; 0 already there"
    assert len(other.shown_ids()) == 5  # the list was refreshed
    not_json = tmp_path / "notes.json"
    not_json.write_text("hello")
    assert not transfer(qtbot, other, lambda: other.import_from(not_json))  # the command's error, shown
    assert other.message.text().startswith(f"{not_json} is not JSON"), other.message.text()
    assert len(other.shown_ids()) == 5

    # Without a selection the list's export stops at LIST_LIMIT runs (2,000): said, as the list
    # may hold 100,000 ("exported 2000 run(s)" read as the whole history).
    monkeypatch.setattr(transfer_module, "LIST_LIMIT", 3)
    panel.table.clearSelection()
    assert transfer(qtbot, panel, lambda: panel.export_to("csv", tmp_path / "newest.csv"))
    assert panel.message.text().startswith("exported the newest 3 run(s) that pass the filters (at most 3")
    assert len(list(csv.DictReader((tmp_path / "newest.csv").open()))) == 3
    monkeypatch.undo()

    closing = tmp_path / "while-closing.json"
    assert panel.export_to("json", closing)
    panel.close()  # shutdown: waits for the export
    assert not panel.transfer_busy()
    assert len(json.loads(closing.read_text())["runs"]) == 5
    qtbot.wait(50)  # the outcome's queued signal reaches the closed panel: ignored


def test_a_corrupt_database_is_reported_in_the_panel(make_widget, tmp_path):
    path = tmp_path / "s.db"
    path.write_bytes(b"garbage" * 100)
    panel = make_widget(SessionsPanel, None, db_path=path, show=True)
    panel.refresh()
    assert "not a SQLite database" in panel.message.text()
    assert path.read_bytes() == b"garbage" * 100


def test_history_of_an_edited_kernel(make_widget, tmp_path, shared_cache_dir, test_output_dir, qtbot):
    """Real runs of saxpy on the CPU and llvmpipe while its WGSL kernel gains work edit by edit."""
    from workbench.run.service import RunService
    from workbench.run.timing import TimingOptions

    root = tmp_path / "saxpy"
    shutil.copytree(EXAMPLES / "saxpy", root, ignore=shutil.ignore_patterns("target"))
    wgsl = root / "reference" / "saxpy.wgsl"
    original = wgsl.read_text()
    db = tmp_path / "s.db"
    service = RunService(
        timing=TimingOptions(min_n=15, min_time_s=0.05, warmup_max_n=5, warmup_max_s=0.2, max_time_s=1.0)
    )
    try:
        with SessionStore(db) as store:
            for work in (0, 0, 200, 800, 400):
                extra = (
                    f"        var acc = 0.0;\n        for (var k = 0u; k < {work}u; k = k + 1u) "
                    "{ acc = acc + x[(i + k) % params.n]; }\n"
                    "        y[i] = params.a * x[i] + y[i];\n"
                    "        if (acc == 1234567.0) { y[i] = 0.0; }  // never true: keeps the loop alive"
                )
                wgsl.write_text(original.replace(WGSL_LINE, extra) if work else original)
                project = Project.open(root)
                report = service.run(
                    project, backends=["cpu", "wgsl"], devices=["cpu", "wgpu:llvmpipe"], sizes={"n": 16384},
                    cache_dir=shared_cache_dir,
                )  # fmt: skip
                assert report.ok, [r.error for r in report.results]
                record_report(store, report, project=project)
            runs = store.list_runs()
    finally:
        service.close()
    assert len(runs) == 10

    panel = make_widget(SessionsPanel, None, db_path=db, show=True)
    panel.resize(1400, 520)
    panel.refresh()
    panel.select_run(runs[0]["id"])
    assert panel.history.history_key is None  # drawn when its tab comes up, not at every click
    panel.tabs.setCurrentWidget(panel.history)
    qtbot.waitUntil(
        lambda: panel.history.history_key is not None, timeout=HANG_GUARD_MS
    )  # drawn on the next turn
    series = panel.history.history_series
    assert set(series) == {("cpu", "cpu"), ("wgsl", "wgpu:0")}
    wgsl_runs = sorted((r for r in runs if r["backend"] == "wgsl"), key=lambda r: r["id"])
    plotted = series[("wgsl", "wgpu:0")]
    assert plotted["ids"].tolist() == [r["id"] for r in wgsl_runs]
    assert plotted["x"].tolist() == [0, 0, 1, 2, 3]  # the second run had no edit
    assert np.allclose(plotted["median"], [r["median_s"] * 1e6 for r in wgsl_runs])
    assert np.all(plotted["q1"] <= plotted["median"]) and np.all(plotted["median"] <= plotted["q3"])
    curve, bars = panel.history.history_items()[("wgsl", "wgpu:0")]
    x, y = curve.getData()
    assert np.array_equal(x, plotted["x"]) and np.allclose(y, plotted["median"])
    assert np.allclose(bars.opts["top"], plotted["q3"] - plotted["median"])
    assert plotted["median"][3] > 2 * plotted["median"][0]  # 800 extra loads per element cost time

    # Clicking the point of the fourth run opens its diff: 200 → 800 iterations.
    points = curve.scatter.points()
    panel.tabs.setCurrentIndex(0)
    curve.sigPointsClicked.emit(curve, [points[3]], None)
    assert panel.tabs.currentWidget() is panel.history  # the diff comes up in its tab
    text = panel.history.diff_view.toPlainText()
    assert "-        for (var k = 0u; k < 200u;" in text and "+        for (var k = 0u; k < 800u;" in text
    assert f"Run #{wgsl_runs[3]['id']} (" in panel.history.diff_label.text()
    panel.select_run(runs[-1]["id"])  # baseline: the first cpu run; compare the newest wgsl run
    panel.set_baseline(runs[-1]["id"])
    panel.select_run(runs[0]["id"])
    panel.tabs.setCurrentIndex(1)
    curve.sigPointsClicked.emit(curve, [points[3]], None)
    settle_qt()  # laid out before the grab
    save_screenshot(panel, test_output_dir / "sessions-history.png")


def test_the_window_records_its_runs_and_the_toggle_stops_it(
    make_window, example_copy, private_sessions_db, qtbot, test_output_dir
):
    window = make_window(example_copy("saxpy"), panels=("sessions", "results"))
    panel = window.panels["sessions"]
    assert panel.record_box.isChecked() and panel.database_path() == private_sessions_db
    with qtbot.waitSignal(panel.recorded, timeout=WORK_GUARD_MS) as done:
        window.bridge.run_blocking(backends=["cpu"], devices=["cpu"])
    assert done.args[0].get("ids"), done.args[0]
    with SessionStore(private_sessions_db) as store:
        (run,) = store.list_runs()
        assert run["backend"] == "cpu" and run["kernel"] == "saxpy" and run["median_s"] > 0
        assert "src/lib.rs" in store.source(run["snapshot_hash"])
    window.docks["sessions"].raise_()  # a hidden panel refreshes when its dock comes up
    qtbot.waitUntil(lambda: panel.shown_ids() == [run["id"]], timeout=HANG_GUARD_MS)
    save_screenshot(window, test_output_dir / "window-sessions.png")
    panel.record_box.setChecked(False)
    assert window.settings.record_runs is False
    with qtbot.waitSignal(
        window.bridge.runFinished, timeout=WORK_GUARD_MS
    ):  # reaches the panel: not recorded
        window.bridge.run_blocking(backends=["cpu"], devices=["cpu"])
    # A recorded run after it is the sync point: the recorder records in order, so once this one is
    # recorded, the unrecorded run would have been too (and been the one this signal reports).
    panel.record_box.setChecked(True)
    with qtbot.waitSignal(panel.recorded, timeout=WORK_GUARD_MS) as done:
        third = window.bridge.run_blocking(backends=["cpu"], devices=["cpu"])
    with SessionStore(private_sessions_db) as store:
        newest, first = store.list_runs()
        assert (first["id"], newest["id"]) == (run["id"], done.args[0]["ids"][0])
        assert newest["median_s"] == third.results[0].timing["median_s"]  # the third run, not the second


def test_settings_choose_the_database_and_the_toggle(make_widget, filled_db):
    from workbench.ui.settings import Settings

    settings = Settings(record_runs=False, sessions_db=str(filled_db))
    panel = make_widget(SessionsPanel, None)
    panel.use_settings(settings)
    assert panel.database_path() == filled_db and not panel.record_box.isChecked()
    panel.refresh()
    assert len(panel.shown_ids()) == 5
    panel.record_box.setChecked(True)
    assert settings.record_runs is True


def test_the_runs_table_shows_series_and_busy_runs(make_widget, tmp_path):
    path = tmp_path / "s.db"
    busy = {"source": "/proc", "cpus": 2, "other_cpu_cores": 1.5, "wall_s": 1.0}
    quiet = {**busy, "other_cpu_cores": 0.0}
    with SessionStore(path) as store:
        for index, host in ((1, quiet), (2, busy)):
            record_report(
                store, synthetic("saxpy", {("cpu", "cpu"): 1e-3}, index), host=host,
                series={"id": "s", "index": index, "of": 2},
            )  # fmt: skip
    panel = make_widget(SessionsPanel, None, db_path=path, show=True)
    panel.refresh()
    model = panel.table.model()
    series, conditions = RUN_COLUMNS.index("series"), RUN_COLUMNS.index("flags")
    shown = {
        model.index(r, 0).data(Qt.ItemDataRole.UserRole): (
            model.index(r, series).data(), model.index(r, conditions).data()
        )
        for r in range(model.rowCount())
    }  # fmt: skip
    assert shown == {1: ("1/2", ""), 2: ("2/2", "busy")}
