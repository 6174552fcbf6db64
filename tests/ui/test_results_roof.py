"""The results table and the roofline read every result against the roof its intensity selects:
% of peak filled once the device's ceilings are measured, GFLOP/s where compute binds, a result
above its ceiling flagged (issue 36 item 4, issue 42 items 2 and 4), on a real run."""

from __future__ import annotations

import copy

import pytest
from PySide6.QtCore import Qt

from tests.waits import WORK_GUARD_MS
from workbench.run.ceilings_roof import rate_cell, read_roof, roof_cell, roof_line
from workbench.ui.results.table import COL_GBPS, COL_PEAK, NO_ROOF, PEAK_HIDDEN, WARN, ResultsTable

TIMEOUT_MS = WORK_GUARD_MS


@pytest.mark.slow
def test_percent_of_peak_fills_once_the_ceilings_are_measured(
    qtbot, make_widget, bridge, example_copy, tmp_path, test_output_dir
):
    root = example_copy("matmul")
    bridge.cache_dir = tmp_path  # a cache with no ceilings yet: nothing known before Measure
    bridge.set_project(root)
    bridge.set_backends(["cpu"])
    bridge.set_devices(["cpu"])
    bridge.set_sizes({"m": 256, "n": 256, "k": 256})
    table = make_widget(ResultsTable, bridge, show=True)
    with qtbot.waitSignal(bridge.runFinished, timeout=TIMEOUT_MS):
        bridge.run()
    qtbot.waitUntil(lambda: not bridge.busy, timeout=TIMEOUT_MS)
    (result,) = bridge.last_report.results
    store, device = table.ceilings, result.device
    if store.get(device) is None:  # nothing measured: an empty cell that says how to get one
        assert table.row_texts()[0]["% of peak"] == ""
        assert table.table.item(0, COL_PEAK).toolTip() == NO_ROOF
        # Empty on every row: the column hidden, the GB/s header and cell say why and how.
        assert table.table.isColumnHidden(COL_PEAK)
        assert PEAK_HIDDEN in table.table.horizontalHeaderItem(COL_GBPS).toolTip()
        assert table.table.item(0, COL_GBPS).toolTip() == NO_ROOF
    assert float(table.row_texts()[0]["GB/s"]) > 0  # matmul moves few bytes: never "0.00"

    store.remeasure([device])  # the device panel's Measure
    qtbot.waitUntil(
        lambda: store.get(device) is not None and not store.is_measuring(device), timeout=TIMEOUT_MS
    )
    reading = read_roof(result.throughput, device, store.get(device))
    assert reading is not None and reading["source"] == "measured"
    row = table.row_texts()[0]
    assert row["% of peak"] == roof_cell(reading) and row["% of peak"].split(" ")[0] != "0.0"
    assert not table.table.isColumnHidden(COL_PEAK)  # a roof known: shown again
    assert PEAK_HIDDEN not in table.table.horizontalHeaderItem(COL_GBPS).toolTip()
    assert row["GB/s"] == rate_cell(result.throughput, reading)
    if reading["bound"] == "compute":
        assert row["GB/s"].endswith(" GFLOP/s") and row["% of peak"].endswith("FMA f32")
    assert table.table.item(0, COL_PEAK).toolTip() == roof_line(reading)
    assert table.table.item(0, COL_GBPS).toolTip() == roof_line(reading)
    table.resize(1000, 200)
    assert table.grab().save(str(test_output_dir / "results_percent_of_peak.png"))

    # A result above its ceiling by more than 3 %: flagged, in the warning colour, never a plain 180 %.
    report = copy.deepcopy(bridge.last_report)
    (above,) = report.results
    factor = 1.8 / reading["fraction"]
    above.throughput["gbps"] *= factor
    above.throughput["gflops"] *= factor
    table.show_report(report)
    cell = table.row_texts()[0]["% of peak"]
    assert cell.startswith("⚠ 180.0 %"), cell
    assert table.table.item(0, COL_PEAK).data(Qt.ItemDataRole.ForegroundRole) == WARN
    assert "measurement problem" in table.table.item(0, COL_PEAK).toolTip()
