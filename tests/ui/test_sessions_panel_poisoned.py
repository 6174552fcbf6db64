"""The Sessions panel on a database whose rows were poisoned before imports were checked: every
row is listed, the bad values shown as missing with the reason in a tooltip, nothing crashes."""

from __future__ import annotations

import sqlite3

import numpy as np
from PySide6.QtCore import Qt

from tests.ui.test_sessions_panel import transfer
from tests.waits import HANG_GUARD_MS
from workbench.profile.sessions.record import record_report
from workbench.profile.sessions.store import SessionStore
from workbench.ui.sessions.panel import SessionsPanel
from workbench.ui.sessions.runs_table import RUN_COLUMNS


def report(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    samples = 1e-3 * (1 + 0.02 * rng.standard_normal(50))
    return {
        "project": "demo", "kernel": "saxpy",
        "results": [{
            "backend": "cpu", "device": {"spec": "cpu", "name": ""}, "status": "ok", "verified": True,
            "check": {}, "error": None,
            "timing": {"median_s": float(np.median(samples)), "iqr_s": 0.0, "n": 50, "samples_s": samples.tolist()},
            "provenance": {"project": "demo", "kernel": "saxpy", "time": "2026-12-01T00:00:00Z"},
        }],
    }  # fmt: skip


def test_poisoned_rows_are_listed_as_invalid_and_never_crash_the_panel(make_widget, tmp_path, qtbot):
    path = tmp_path / "s.db"
    with SessionStore(path) as store:
        for seed in range(4):
            record_report(store, report(seed))
    db = sqlite3.connect(path)
    db.execute("UPDATE runs SET median_s = 'fast', n = 'many' WHERE id = 1")
    db.execute("UPDATE runs SET verified = 'no', time = 12345 WHERE id = 2")
    db.execute("UPDATE runs SET flags = 'not json' WHERE id = 3")
    db.execute("UPDATE run_data SET detail = '{{', samples = ? WHERE run_id = 4",
               (np.array([1e-3, np.nan, -1.0], dtype="<f8").tobytes(),))  # fmt: skip
    db.commit()
    db.close()

    panel = make_widget(SessionsPanel, None, db_path=path, show=True)
    panel.refresh()
    assert panel.shown_ids() == [4, 3, 2, 1]
    model = panel.table.model()
    cells = {
        model.index(row, 0).data(256): {
            name: model.index(row, c).data() for c, name in enumerate(RUN_COLUMNS)
        }
        for row in range(model.rowCount())
    }  # 256: Qt.UserRole, the run id
    assert cells[1]["median"] == "–" and cells[1]["n"] == "–"  # shown as missing
    assert cells[2]["verified"] == "—" and cells[2]["time (UTC)"] == "12345"  # poisoned: unknown
    tip = model.index(panel.shown_ids().index(1), RUN_COLUMNS.index("median")).data(
        Qt.ItemDataRole.ToolTipRole
    )
    assert 'median_s: expected a positive number, got "fast"' in tip
    assert panel.message.styleSheet() == ""  # no error shown: the rows are data, not a failure
    for run_id in (1, 2, 3, 4):  # selecting each: details, history, compare against the first
        panel.select_run(run_id)
        panel.set_baseline(1 if run_id != 1 else 2)
        panel.select_run(run_id)
        qtbot.waitUntil(lambda: not panel.compare.busy(), timeout=HANG_GUARD_MS)
    panel.tabs.setCurrentWidget(panel.history)  # the selected run's kernel is plotted
    qtbot.waitUntil(lambda: panel.history.history_key == ("demo", "saxpy"), timeout=HANG_GUARD_MS)
    assert sorted(panel.history.history_series) == [("cpu", "cpu")]
    assert panel.message.styleSheet() == "", panel.message.text()


def test_the_panel_refuses_to_export_over_its_own_database(make_widget, tmp_path, qtbot):
    path = tmp_path / "s.db"
    with SessionStore(path) as store:
        record_report(store, report(1))
    panel = make_widget(SessionsPanel, None, db_path=path, show=True)
    panel.refresh()
    assert not transfer(qtbot, panel, lambda: panel.export_to("csv", path))
    assert "refusing to export over" in panel.message.text()
    assert transfer(
        qtbot, panel, lambda: panel.export_to("csv", tmp_path / "runs.csv")
    )  # anywhere else, as before
    # Checked through SQLite: reading the file with open() here would drop the panel's locks.
    with SessionStore(path) as store:
        assert store.count() == 1 and store.integrity_check() == "ok"
