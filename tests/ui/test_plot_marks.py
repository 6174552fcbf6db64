"""Every plot says which results are stale, whose check failed and which did not run, and keeps one
order of series whatever order the backends finished in. Real cpu + wgsl (llvmpipe) runs of a
saxpy copy whose WGSL reference is broken, wrong, then right again; the data behind each plot is
asserted (`plots_data()`), and a screenshot of each state goes to test-output/ui/."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from PySide6.QtCore import QPointF, Qt

from tests.waits import HANG_GUARD_MS, WORK_GUARD_MS, settle_qt
from workbench.ui.plot_model.timing import timing_rows
from workbench.ui.plots import PlotsPanel
from workbench.ui.results.table import ResultsTable

RUN_TIMEOUT_MS = WORK_GUARD_MS
LINE = "        y[i] = params.a * x[i] + y[i];"
WRONG = "        y[i] = params.a * x[i] + y[i] + 1.0;"
BROKEN = "        y[i] = params.a * x[i] + ;"


def _run(qtbot, bridge):
    with qtbot.waitSignal(bridge.runFinished, timeout=RUN_TIMEOUT_MS) as finished:
        bridge.run()
    qtbot.waitUntil(lambda: not bridge.busy, timeout=RUN_TIMEOUT_MS)
    return finished.args[0]


def _shoot(plots, qtbot, test_output_dir, state):
    for tab in ("timing", "roofline", "outputs"):
        plots.show_tab(tab)
        settle_qt()
        assert plots.grab().save(str(test_output_dir / f"plot_marks_{state}_{tab}.png"))


@pytest.mark.slow
def test_failed_runs_failed_checks_and_stale_results_are_marked_in_every_plot(
    qtbot, make_widget, bridge, example_copy, test_output_dir
):
    root = example_copy("saxpy")
    wgsl = root / "reference" / "saxpy.wgsl"
    source = wgsl.read_text()
    assert LINE in source
    plots = make_widget(PlotsPanel, bridge, show=True)
    plots.resize(700, 820)
    bridge.set_project(root)
    bridge.set_backends(["cpu", "wgsl"])
    bridge.set_devices(["cpu", "wgpu:llvmpipe"])
    bridge.set_sizes({"n": 4096})

    # 1. The WGSL does not compile and nothing good was kept: wgsl did not run, no time to draw.
    wgsl.write_text(source.replace(LINE, BROKEN))
    report = _run(qtbot, bridge)
    assert [r.backend for r in report.results] == ["cpu"] and bridge.last_build["wgsl"].status == "error"
    plots.draw_now()
    timing = plots.plots_data()["timing"]
    assert [r["backend"] for r in timing["rows"]] == ["cpu"]
    (failed,) = timing["failed_runs"]
    assert failed["backend"] == "wgsl" and failed["status"] == "build error"
    assert "saxpy.wgsl" in failed["error"]  # where the build failed, from its diagnostic
    names = plots.tab("timing").compare_plot.getPlotItem().getAxis("left").names
    assert names == ["cpu @ cpu", "wgsl @ wgpu (failed)"]  # no device reached: named by its runtime
    history = timing["history"]
    assert list(history["series"]) == ["cpu @ cpu"]  # nothing invented for wgsl …
    assert history["failed"] == {"wgsl @ wgpu": [{"run": 1, "why": f"did not run: {failed['error']}"}]}
    # … it is in the lane, at run 1; the ✗ sits under run 1 of the plot above (one left axis width).
    lane = plots.tab("timing").history_lane
    assert lane.marks.getData()[0].tolist() == [1.0]
    history_vb = plots.tab("timing").history_plot.getPlotItem().getViewBox()
    lane_vb = lane.getPlotItem().getViewBox()

    def x_of(view_box, run: float) -> float:
        return view_box.mapViewToScene(QPointF(run, 0)).x()

    # Both laid out (half a run is some pixels wide in each), then the same x for the same run.
    qtbot.waitUntil(
        lambda: (
            x_of(lane_vb, 1.5) - x_of(lane_vb, 1.0) > 2 and x_of(history_vb, 1.5) - x_of(history_vb, 1.0) > 2
        ),
        timeout=HANG_GUARD_MS,
    )
    settle_qt()
    for run in (1.0, 1.5):
        assert x_of(lane_vb, run) == pytest.approx(x_of(history_vb, run), abs=1.0)
    assert lane.isVisible()
    assert [p["backend"] for p in plots.plots_data()["roofline"]["points"]] == ["cpu"]
    _shoot(plots, qtbot, test_output_dir, "1_did_not_run")

    # 2. The WGSL computes something else: its time is drawn, ringed, and never the fastest.
    wgsl.write_text(source.replace(LINE, WRONG))
    report = _run(qtbot, bridge)
    wrong = next(r for r in report.results if r.backend == "wgsl")
    assert wrong.status == "ok" and wrong.verified is False
    plots.draw_now()
    data = plots.plots_data()
    rows = {r["backend"]: r for r in data["timing"]["rows"]}
    assert rows["wgsl"]["check_failed"] and not rows["wgsl"]["fastest"] and not rows["wgsl"]["stale"]
    assert "check failed" in rows["wgsl"]["label"] and rows["wgsl"]["verdict"] == "failed"
    assert rows["cpu"]["fastest"] and not rows["cpu"]["check_failed"]
    spot = next(s for s in plots.tab("timing").medians.points() if s.pos().y() == 1)
    assert spot.pen().color().name() == "#ff5252"  # the ring is drawn, not only reported
    wgsl_series = f"wgsl @ {wrong.device['spec']}"
    assert data["timing"]["history"]["series"][wgsl_series] == [
        {"run": 2, "median_s": wrong.timing["median_s"], "check_failed": True}
    ]
    assert plots.tab("timing").history_check_marks.getData()[0].tolist() == [2.0]
    points = {p["backend"]: p for p in data["roofline"]["points"]}
    assert points["wgsl"]["check_failed"] and not points["cpu"]["check_failed"]
    assert data["outputs"]["series"]["wgsl"]["check_failed"] and data["outputs"]["mismatches"] == 4096
    assert data["timing"]["spread"]["rows"] == ["cpu @ cpu", f"{wgsl_series} (check failed)"]
    _shoot(plots, qtbot, test_output_dir, "2_check_failed")

    # 3. Right again, then 4. broken: the last good wgsl result comes back stale, dimmed and named.
    wgsl.write_text(source)
    good = _run(qtbot, bridge)
    assert all(r.verified is not False for r in good.results)
    wgsl.write_text(source.replace(LINE, BROKEN))
    report = _run(qtbot, bridge)
    stale = next(r for r in report.results if r.backend == "wgsl")
    assert stale.stale is not None and stale.stale.reason
    plots.draw_now()
    data = plots.plots_data()
    rows = {r["backend"]: r for r in data["timing"]["rows"]}
    assert rows["wgsl"]["stale"] and rows["wgsl"]["stale_reason"] and not rows["wgsl"]["check_failed"]
    assert (
        "stale" in rows["wgsl"]["label"] and not rows["wgsl"]["fastest"] and not data["timing"]["failed_runs"]
    )
    spot = next(s for s in plots.tab("timing").medians.points() if s.pos().y() == 1)
    assert spot.brush().color().alpha() < 255  # dimmed
    assert data["timing"]["spread"]["rows"] == ["cpu @ cpu", f"{wgsl_series} (stale)"]
    history = data["timing"]["history"]
    assert [p["run"] for p in history["series"][wgsl_series]] == [2, 3]  # the stale median is not redrawn
    assert [(p["run"], p["why"].split(":")[0]) for p in history["failed"][wgsl_series]] == [
        (1, "did not run"),
        (4, "stale"),
    ]
    assert {p["backend"]: p["stale"] for p in data["roofline"]["points"]} == {"cpu": False, "wgsl": True}
    assert data["outputs"]["series"]["wgsl"]["stale"] and not data["outputs"]["series"]["cpu"]["stale"]
    _shoot(plots, qtbot, test_output_dir, "4_stale")


@pytest.mark.slow
def test_series_keep_their_order_whatever_order_the_results_arrive_in(
    qtbot, make_widget, bridge, example_copy
):
    """Two runs whose results came in opposite orders and with other timings: the same rows, the
    same order, in the comparison, the spread, the roofline, the history and the results table
    (which sorts by a column only once the user clicks one)."""
    plots = make_widget(PlotsPanel, bridge, show=True)
    table = make_widget(ResultsTable, bridge, show=True)
    bridge.set_project(example_copy("saxpy"))
    bridge.set_backends(["cpu", "wgsl"])
    bridge.set_devices(["cpu", "wgpu:llvmpipe"])
    report = _run(qtbot, bridge)
    assert [r.backend for r in report.results] == ["cpu", "wgsl"]

    def slower(result, factor):
        timing = dict(result.timing)
        timing["median_s"] *= factor
        timing["samples_s"] = [t * factor for t in timing["samples_s"]]
        return dataclasses.replace(result, timing=timing)

    # The wgsl result first, and now far faster than cpu: today's report order would flip the rows.
    flipped = dataclasses.replace(
        report, results=[slower(report.results[1], 1e-3), slower(report.results[0], 7.0)]
    )
    orders = []
    for shown in (report, flipped):
        bridge.runFinished.emit(shown)
        plots.draw_now()
        data = plots.plots_data()
        orders.append(
            (
                [r["backend"] for r in data["timing"]["rows"]],
                data["timing"]["spread"]["rows"],
                [p["backend"] for p in data["roofline"]["points"]],
                list(data["timing"]["history"]["series"]),
                plots.tab("timing").compare_plot.getPlotItem().getAxis("left").names,
                [row["Backend"] for row in table.row_texts()],
                [table.result_at(row).backend for row in range(2)],
            )
        )
    assert orders[0] == orders[1] and orders[0][0] == ["cpu", "wgsl"] == orders[0][-1] == orders[0][-2]
    # Sorting by a column (what a click on its header does) still reorders the rows and their results.
    table.table.sortByColumn(0, Qt.SortOrder.DescendingOrder)
    assert [row["Backend"] for row in table.row_texts()] == ["wgsl", "cpu"]
    assert [table.result_at(row).backend for row in range(2)] == ["wgsl", "cpu"]
    assert [r.backend for r in timing_rows(flipped)] == ["cpu", "wgsl"]
    medians = {r["backend"]: r["median_s"] for r in plots.plots_data()["timing"]["rows"]}
    assert medians["wgsl"] < medians["cpu"]  # the numbers did change: only the order stayed
    assert np.isfinite(list(medians.values())).all()
