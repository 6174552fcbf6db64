"""A 2-D output (matmul's `c`, `length = "m * n"`) is drawn as images after a real cpu + wgsl
(llvmpipe) run: the value image is the output reshaped to m × n (a non-square m, n so rows and
columns cannot be swapped unnoticed), the error image is |wgsl − cpu| (or ULPs), each with a colour
bar over its finite range, and hovering an element names its (row, col) and value. A 1-D buffer
keeps the envelope. Screenshot: test-output/ui/output_image_matmul.png."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPoint, QPointF

from tests.waits import HANG_GUARD_MS, WORK_GUARD_MS, settle_qt
from workbench.ui.plot_model.image import factors
from workbench.ui.plots import PlotsPanel

RUN_TIMEOUT_MS = WORK_GUARD_MS
M, N, K = 48, 32, 16


def test_only_a_product_of_two_named_factors_is_a_shape():
    assert factors("m * n") == ("m", "n")
    assert factors("(m + 1) * ceil_div(n, 2)") == ("m + 1", "ceil_div(n, 2)")
    assert [factors(t) for t in ("n", "4 * n", "n * 4", "m * n * k", "m + n", "m *")] == [None] * 6


def _run(qtbot, bridge, root, sizes):
    bridge.set_project(root)
    bridge.set_backends(["cpu", "wgsl"])
    bridge.set_devices(["cpu", "wgpu:llvmpipe"])
    bridge.set_sizes(sizes)
    with qtbot.waitSignal(bridge.runFinished, timeout=RUN_TIMEOUT_MS) as finished:
        bridge.run()
    qtbot.waitUntil(lambda: not bridge.busy, timeout=RUN_TIMEOUT_MS)
    return finished.args[0]


@pytest.mark.slow
def test_a_2d_output_is_an_image_with_colour_bars_and_hover(
    qtbot, make_widget, bridge, example_copy, test_output_dir
):
    plots = make_widget(PlotsPanel, bridge, show=True)
    plots.resize(760, 760)
    report = _run(qtbot, bridge, example_copy("matmul"), {"m": M, "n": N, "k": K})
    assert {r.backend for r in report.results if r.status == "ok"} == {"cpu", "wgsl"}
    plots.show_tab("outputs")
    plots.draw_now()
    tab = plots.tab("outputs")
    data = plots.plots_data()["outputs"]
    assert data["buffer"] == "c" and data["image"]["shape"] == [M, N] and data["image"]["backend"] == "wgsl"
    assert tab.images.isVisible() and not tab.output_plot.isVisible() and not tab.error_plot.isVisible()

    got = np.asarray(report.outputs["wgsl"]["c"], dtype=np.float64)
    ref = np.asarray(report.outputs["cpu"]["c"], dtype=np.float64)
    shown = tab.images.values.image.image
    assert shown.shape == (M, N) and np.array_equal(shown, got.reshape(M, N))
    errors = tab.images.errors.image.image
    assert np.array_equal(errors, np.abs(got - ref).reshape(M, N))
    assert data["image"]["values_range"] == [float(got.min()), float(got.max())]
    assert tab.images.values.bar.levels() == pytest.approx((got.min(), got.max()))
    assert data["image"]["error_range"][1] == pytest.approx(float(np.abs(got - ref).max()))

    # Hover: the element under the mouse by (row, col), with its value or its error.
    row, col = 3, 17
    for image_plot, expected in (
        (tab.images.values, f"c[{row}, {col}] = {got[row * N + col]:.6g}"),
        (tab.images.errors, f"|error| at c[{row}, {col}] = {abs(got - ref)[row * N + col]:.6g}"),
    ):
        vb = image_plot.plot.getPlotItem().getViewBox()
        scene = vb.mapViewToScene(QPointF(col + 0.5, row + 0.5))
        assert tab.images.hover(image_plot, scene) == expected
        assert tab.images.hover_label.text() == expected

    # The reference's own values, and the error in ULPs.
    tab.error_mode.setCurrentText("ULP")
    assert plots.plots_data()["outputs"]["image"]["error_label"] == "error (ULP)"
    assert np.array_equal(tab.images.errors.image.image, tab._drawing.ulp_images["wgsl"].astype(np.float64))
    tab.images.backend_box.setCurrentText("cpu")
    assert np.array_equal(tab.images.values.image.image, ref.reshape(M, N))
    assert tab.images.errors.array is None  # the reference has no error against itself
    tab.images.backend_box.setCurrentText("wgsl")
    tab.error_mode.setCurrentText("absolute")
    settle_qt()  # laid out before the grab
    assert plots.grab().save(str(test_output_dir / "output_image_matmul.png"))

    # A narrow dock stacks the two images: each colour bar, ticks included, stays inside its plot.
    for width, stacked in ((760, False), (420, True)):
        plots.resize(width, 760)
        qtbot.waitUntil(lambda w=width: plots.width() == w, timeout=HANG_GUARD_MS)
        settle_qt()  # the splitter turns and the plots lay out from the resize's posted events
        assert (tab.images.splitter.orientation().name == "Vertical") is stacked
        for image_plot in (tab.images.values, tab.images.errors):
            right = image_plot.bar.axis.sceneBoundingRect().right()  # in the plot's pixels
            in_panel = image_plot.plot.mapTo(plots, QPoint(int(right), 0)).x()
            assert right <= image_plot.plot.width() and in_panel <= plots.width(), (width, in_panel)
    assert plots.grab().save(str(test_output_dir / "output_image_matmul_narrow.png"))

    # A 1-D buffer (saxpy's y) keeps the envelope.
    _run(qtbot, bridge, example_copy("saxpy"), {"n": 4096})
    plots.draw_now()
    assert plots.plots_data()["outputs"]["image"] is None
    assert tab.output_plot.isVisible() and not tab.images.isVisible()
