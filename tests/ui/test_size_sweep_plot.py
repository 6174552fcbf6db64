"""The size-sweep plot after a real size sweep (cpu + wgsl on llvmpipe, n over three decades, the WGSL
made wrong from n = 65536 so those sizes fail their check): tick labels whose drawn text never
overlaps at a wide and a narrow width, ceilings named outside the data, a legend of the series
with data only, a value axis that keeps every curve readable, failed sizes in a lane of their own.
Screenshots go to test-output/ui/."""

from __future__ import annotations

import math

import numpy as np
import pytest
from PySide6.QtCore import QPointF
from PySide6.QtGui import QImage, QPainter

from tests.waits import HANG_GUARD_MS, WORK_GUARD_MS, settle_qt
from workbench.profile.tuning.size_sweep import copy_ceilings
from workbench.run.timing import TimingOptions
from workbench.ui.plot_model.timing import log_scale_wanted

FAST = TimingOptions(min_n=5, min_time_s=0.02, warmup_max_n=6, warmup_max_s=0.3, max_time_s=2.0)
LINE = "        y[i] = params.a * x[i] + y[i];"
WRONG_FROM_65536 = "        y[i] = select(params.a * x[i] + y[i], 0.0, params.n >= 65536u);"
SIZES = [1024, 8192, 65536, 1048576]


def drawn_labels(axis) -> list[tuple[str, object]]:
    """The tick labels the axis draws now, with their text rectangles (pyqtgraph's own layout)."""
    image = QImage(10, 10, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        specs = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    _, _, texts = specs
    return [(text, rect) for rect, _, text in texts if text]


def assert_no_overlap(axis) -> list[str]:
    labels = drawn_labels(axis)
    assert len(labels) >= 2, labels
    for i, (text, rect) in enumerate(labels):
        for other, other_rect in labels[i + 1 :]:
            assert not rect.intersects(other_rect), (
                f"{text!r} overlaps {other!r} on the {axis.orientation} axis"
            )
    return [t for t, _ in labels]


@pytest.mark.slow
def test_size_sweep_plot_is_readable_and_puts_failed_sizes_in_their_lane(
    make_window, example_copy, qtbot, shared_cache_dir, test_output_dir
):
    root = example_copy("saxpy")
    wgsl = root / "reference" / "saxpy.wgsl"
    assert LINE in wgsl.read_text()
    wgsl.write_text(wgsl.read_text().replace(LINE, WRONG_FROM_65536))
    window = make_window(root, panels=("tuning", "results"))
    window.bridge.set_backends(["cpu", "wgsl"])
    panel = window.panels["tuning"]
    panel.timing = FAST
    window.docks["tuning"].raise_()
    panel.tabs.setCurrentIndex(panel.tabs.count() - 1)  # the size sweep
    measured = copy_ceilings({"cpu", "wgpu:0"}, shared_cache_dir, measure=True)  # the guide lines
    panel.size_spec.setText("n=" + ",".join(map(str, SIZES)))
    with qtbot.waitSignal(panel.sweepFinished, timeout=WORK_GUARD_MS):
        assert panel.start_size_sweep()
    settle_qt()  # drawn before sweepFinished; laid out now
    data = panel.size_plot_data()

    # Every size of cpu; wgsl only where its check passed; the failures in the lane, at their size.
    assert data["curves"]["cpu@cpu"]["x"] == SIZES
    assert data["curves"]["wgsl@wgpu:0"]["x"] == [1024, 8192]
    assert [f["x"] for f in data["failed"]["wgsl@wgpu:0"]] == [65536, 1048576]
    assert all(f["why"] for f in data["failed"]["wgsl@wgpu:0"])
    lane = panel.size_view.lane
    assert lane.isVisible() and lane.marks.getData()[0] == pytest.approx(
        [math.log10(65536), math.log10(1048576)]
    )
    plot_vb, lane_vb = panel.size_plot.getPlotItem().getViewBox(), lane.getPlotItem().getViewBox()
    x = math.log10(65536)  # the ✗ sits under its size on the plot's axis
    assert lane_vb.mapViewToScene(QPointF(x, 0)).x() == pytest.approx(
        plot_vb.mapViewToScene(QPointF(x, 0)).x(), abs=1
    )

    # The ceilings: one dashed line per device, named in the legend line under the plot.
    ceilings = {d: g for d, g in measured.items() if g}
    assert data["ceiling_lines"] == pytest.approx(ceilings)
    assert data["legend"] == ["cpu@cpu", "wgsl@wgpu:0", *(f"{d} copy ceiling" for d in sorted(ceilings))]
    legend_text = panel.size_view.legend.text()
    assert all(f"{d} copy ceiling" in legend_text for d in ceilings)
    from pyqtgraph import TextItem

    assert not [
        i for i in panel.size_plot.getPlotItem().items if isinstance(i, TextItem)
    ]  # no text over data
    assert panel.size_plot.getPlotItem().legend is None  # no legend box over the data

    # A value axis that keeps wgsl readable beside cpu: log when the values span more than 8×.
    values = [v for c in data["curves"].values() for v in c["gbps"]] + list(ceilings.values())
    assert data["y_axis"]["scale"] == ("log" if log_scale_wanted(values) else "linear")
    if data["y_axis"]["scale"] == "log":
        _, ys = panel.size_view.curves["wgsl@wgpu:0"].getData()
        assert ys == pytest.approx(np.log10(np.array(data["curves"]["wgsl@wgpu:0"]["gbps"]) * 1e9))

    # Tick labels: the text pyqtgraph draws never overlaps, wide or narrow.
    bottom = panel.size_plot.getPlotItem().getAxis("bottom")
    for width in (900, 330):
        window.resize(max(width + 500, 1280), 800)
        panel.size_view.setFixedWidth(width)
        # Laid out at the new width (the plot's scene then lays out its axes from posted requests).
        qtbot.waitUntil(lambda w=width: panel.size_view.width() == w, timeout=HANG_GUARD_MS)
        settle_qt()
        texts = assert_no_overlap(bottom)
        assert {"1k", "10k", "100k", "1M"} & set(texts), texts  # decades, in words a reader knows
        assert_no_overlap(panel.size_plot.getPlotItem().getAxis("left"))
        assert panel.grab().save(str(test_output_dir / f"size_sweep_gbps_{width}px.png"))
    panel.size_view.setMinimumWidth(0)
    panel.size_view.setMaximumWidth(16777215)

    # Median time: no ceilings, log or linear by the same rule.
    panel.size_metric.setCurrentText("time")
    times = panel.size_plot_data()
    assert times["curves"]["wgsl@wgpu:0"]["median_s"] == [
        t for x, t in zip(panel.size_tab.data["curves"]["wgsl@wgpu:0"]["x"],
                          panel.size_tab.data["curves"]["wgsl@wgpu:0"]["median_s"], strict=True) if x in (1024, 8192)
    ]  # fmt: skip
    assert not times["ceilings"] and not times["ceiling_lines"]
    assert times["legend"] == ["cpu@cpu", "wgsl@wgpu:0"]
    assert times["y_axis"]["unit"] in ("s", "ns", "µs", "ms")
    settle_qt()  # redrawn for the metric as it changed; laid out now
    assert_no_overlap(panel.size_plot.getPlotItem().getAxis("left"))
    assert panel.grab().save(str(test_output_dir / "size_sweep_time.png"))

    # A series whose every size failed has no entry in the legend, only its lane row.
    curve = panel.size_tab.data["curves"]["wgsl@wgpu:0"]
    for x in list(curve["x"]):
        curve["failed"].append(x)
        curve["failed_why"].append("check failed")
    curve["x"], curve["gbps"], curve["median_s"] = [], [], []
    panel.size_metric.setCurrentText("GB/s")
    data = panel.size_plot_data()
    assert "wgsl@wgpu:0" not in data["legend"] and "wgsl@wgpu:0" not in data["curves"]
    assert "wgsl @" not in panel.size_view.legend.text() and "wgsl@" not in panel.size_view.legend.text()
    assert sorted(f["x"] for f in data["failed"]["wgsl@wgpu:0"]) == SIZES
    assert panel.grab().save(str(test_output_dir / "size_sweep_all_wgsl_failed.png"))


def test_log_ticks_never_offer_more_labels_than_fit():
    from workbench.ui.plot_model.units import format_count, log_ticks

    for lo, hi in ((2.9, 6.1), (3.0, 9.5), (0.2, 2.9), (-6.5, -1.2), (3.01, 3.9)):
        for max_labels in (2, 3, 5, 12):
            labelled = log_ticks(lo, hi, max_labels=max_labels)[0][1]
            assert 1 <= len(labelled) <= max_labels, (lo, hi, max_labels, labelled)
            assert all(lo <= v <= hi for v in labelled)
    assert [format_count(v) for v in (0.1, 16, 1000, 16384, 1048576, 2.5e9)] == [
        "0.1",
        "16",
        "1k",
        "16.4k",
        "1.05M",
        "2.5G",
    ]
