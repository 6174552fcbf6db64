"""A failed reference and a kept (stale) result, read from their fields in every view.

Real builds and runs through the window's bridge: saxpy on cpu (the reference) and wgsl, then cpu
no longer compiles. The report says the reference failed (`RunReport.reference_failed`), wgsl's
result is "not verified (reference failed)" (`RunResult.reference_failed`, set by the run's
reference policy) and cpu's row is its last good result with `RunResult.stale` set. The results
table, the details dialog and the sessions panel (which recorded the runs into a real SQLite file)
show exactly those fields' reading (`workbench.result_text`)."""

from __future__ import annotations

import pytest

from tests.waits import WORK_GUARD_MS
from workbench.profile.sessions.recorder import SessionRecorder
from workbench.result_text import check_line, stale_label, stale_note, verdict_cell
from workbench.ui.results.table import COL_STATUS, COL_VERIFIED, ResultsTable
from workbench.ui.sessions.panel import SessionsPanel
from workbench.ui.sessions.runs_table import RUN_COLUMNS

TIMEOUT_MS = WORK_GUARD_MS
NOT_VERIFIED_REF = "not verified (reference failed)"


@pytest.fixture
def bridge(shared_cache_dir, tmp_path):
    """The window's bridge as `ui/app.py` makes it: recording every run it finishes (the panel only
    shows how that went), into the test's own database."""
    from workbench.ui.bridge import ServiceBridge

    bridge = ServiceBridge(cache_dir=shared_cache_dir, recorder=SessionRecorder(tmp_path / "sessions.db"))
    bridge.set_sizes({"n": 4096})
    yield bridge
    bridge.shutdown()


@pytest.mark.slow
def test_a_failed_reference_and_a_stale_row_read_from_their_fields(
    qtbot, make_widget, bridge, example_copy, tmp_path
):
    root = example_copy("saxpy")
    bridge.set_project(root)
    table = make_widget(ResultsTable, bridge, show=True)
    panel = make_widget(SessionsPanel, bridge, db_path=tmp_path / "sessions.db")
    with qtbot.waitSignal(panel.recorded, timeout=TIMEOUT_MS) as first:
        bridge.start_run(["cpu", "wgsl"], ["cpu", "wgpu:0"])
    assert len(first.args[0]["ids"]) == 2, first.args
    assert {r["Backend"]: r["Verified"] for r in table.row_texts()} == {"cpu": "reference", "wgsl": "✓ yes"}
    good_cpu = next(r for r in table.report.results if r.backend == "cpu")

    lib = root / "src" / "lib.rs"
    lib.write_text(lib.read_text().replace("y[i] = a * x[i] + y[i];", "y[i] = a * x[i] + y[i] + zz;"))
    with qtbot.waitSignal(panel.recorded, timeout=TIMEOUT_MS) as second:
        bridge.start_run(["cpu", "wgsl"], ["cpu", "wgpu:0"])
    qtbot.waitUntil(lambda: not bridge.busy, timeout=TIMEOUT_MS)
    report = table.report
    results = {r.backend: r for r in report.results}
    cpu, wgsl = results["cpu"], results["wgsl"]
    # The fields, as the producers set them.
    assert report.reference_failed is True
    assert wgsl.stale is None and wgsl.reference_failed and wgsl.verified is None
    assert cpu.stale is not None and cpu.status == "ok" and cpu.timing is good_cpu.timing
    assert cpu.stale.reason.startswith("build failed: src/lib.rs") and "zz" in cpu.stale.reason
    assert (cpu.stale.time, cpu.stale.source_hash) == (
        good_cpu.provenance["time"],
        good_cpu.provenance["source_hash"],
    )
    assert "stale" not in cpu.provenance  # a field of the result, not a key in its provenance

    # The table: what each row shows is the fields' reading.
    rows = {r["Backend"]: (i, r) for i, r in enumerate(table.row_texts())}
    wgsl_row, wgsl_texts = rows["wgsl"]
    cpu_row, cpu_texts = rows["cpu"]
    assert wgsl_texts["Verified"] == verdict_cell(wgsl) == NOT_VERIFIED_REF
    assert wgsl_texts["Check"] == check_line(wgsl) == wgsl.check.note
    assert wgsl.check.note.startswith("reference cpu failed")
    assert table.table.item(wgsl_row, COL_VERIFIED).toolTip() == wgsl.check.note
    assert cpu_texts["Status"] == stale_label(cpu.stale) and table.is_row_stale(cpu_row)
    assert not table.is_row_stale(wgsl_row)
    assert table.table.item(cpu_row, COL_STATUS).toolTip() == stale_note(cpu.stale)
    assert "checked against cpu — reference failed" in table.caption.text()
    assert "1 stale" in table.caption.text()

    # The details dialog of each row says the same.
    details = table.show_details(wgsl_row)
    assert (
        f"ran, check: {NOT_VERIFIED_REF}" in details.summary.text() and "ok: " not in details.summary.text()
    )
    details.close()
    details = table.show_details(cpu_row)
    assert stale_note(cpu.stale) in details.summary.text()
    details.close()

    # The sessions database: the stale row was recorded when it ran, so only wgsl is new; its
    # row reads "not verified (reference failed)" from its `unverified` column.
    (new_id,) = second.args[0]["ids"]
    store = panel.store()
    recorded = store.get_run(new_id)
    assert (recorded["backend"], recorded["unverified"]) == ("wgsl", "reference failed")
    assert recorded["detail"]["stale"] is None
    panel.refresh()
    column = RUN_COLUMNS.index("verified")
    model = panel.table.model()
    shown = {
        model.index(row, 0).data(256): model.index(row, column).data() for row in range(model.rowCount())
    }  # 256: Qt.UserRole, the run id
    assert shown[new_id] == NOT_VERIFIED_REF
    assert sorted(shown.values()) == sorted([NOT_VERIFIED_REF, "reference", "✓ yes"])
