"""The plots against the real services: after cpu + wgsl runs (llvmpipe), every plot shows what the
RunResults say, in readable units, with roofs from measured ceilings; the window fits at 1280×800
and 1600×1000 with nothing squeezed below its minimum. Screenshots go to test-output/ui/."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QPointF

from tests.waits import HANG_GUARD_MS, HANG_GUARD_S, WORK_GUARD_MS, settle_qt
from workbench.records import RunResult
from workbench.run.mismatches import result_mismatches
from workbench.run.verify import Tolerance, bad_elements
from workbench.ui.bridge import ServiceBridge
from workbench.ui.main_window import LAYOUT_VERSION
from workbench.ui.plot_model.outputs import compute_outputs
from workbench.ui.plot_model.roofline import roofline_model, roofline_ranges
from workbench.ui.plot_model.timing import timing_rows
from workbench.ui.plot_model.units import format_si, log_ticks
from workbench.ui.plots import PARTS, TABS, PlotsPanel
from workbench.ui.plots.base import FittedPlot

EXAMPLES = Path(__file__).resolve().parents[2] / "resources" / "examples"
RUN_TIMEOUT_MS = WORK_GUARD_MS
SIZES = {"saxpy": {"n": 4096}, "matmul": {"m": 96, "n": 96, "k": 96}}


@pytest.fixture
def bridge(shared_cache_dir):
    bridge = ServiceBridge(cache_dir=shared_cache_dir)
    yield bridge
    bridge.shutdown()


def _run(qtbot, bridge, root, sizes):
    bridge.set_project(root)
    bridge.set_backends(["cpu", "wgsl"])
    bridge.set_devices(["cpu", "wgpu:llvmpipe"])
    bridge.set_sizes(sizes)
    with qtbot.waitSignal(bridge.runFinished, timeout=RUN_TIMEOUT_MS) as finished:
        bridge.run()
    qtbot.waitUntil(lambda: not bridge.busy, timeout=RUN_TIMEOUT_MS)
    return finished.args[0]


def _contains(bounds, value, slack=1e-9):
    lo, hi = bounds
    return lo * (1 - slack) <= value <= hi * (1 + slack)


# ---------------------------------------------------------------- numbers (no window)
def test_si_units_and_log_ticks():
    assert format_si(0.000289, "s") == "289 µs"
    assert format_si(5.38e-3, "s") == "5.38 ms"
    assert format_si(2.1e-9, "s") == "2.1 ns" and format_si(3.0, "s") == "3 s"
    assert format_si(1.16e11, "FLOP/s") == "116 GFLOP/s" and format_si(0, "s") == "0 s"
    # Decades over wide ranges, 1-2-5 over a few, round real values inside one decade.
    (step, majors), _ = log_ticks(-6.5, -1.2)
    assert majors == [-6.0, -5.0, -4.0, -3.0, -2.0]
    levels = log_ticks(-4.0, -2.5)
    assert [round(10**v, 9) for v in levels[0][1]] == [1e-4, 2e-4, 5e-4, 1e-3, 2e-3]
    ((_, inside),) = log_ticks(math.log10(1.1e-3), math.log10(1.9e-3))
    assert [round(10**v * 1e3, 6) for v in inside] == [1.2, 1.4, 1.6, 1.8]


def _result(backend, spec, median, samples, gflops=None, gbps=None, status="ok"):
    return RunResult(
        backend=backend,
        device={"spec": spec, "runtime": spec.split(":")[0], "name": spec},
        status=status,
        timing={
            "median_s": median,
            "iqr_s": float(np.subtract(*np.percentile(samples, [75, 25]))),
            "samples_s": list(samples),
        },  # fmt: skip
        throughput={"gflops": gflops, "gbps": gbps},
    )


def test_timing_rows_and_roofline_model_follow_the_results():
    class Report:
        reference = "cpu"
        results = [
            _result("cpu", "cpu", 3e-4, [2.9e-4, 3e-4, 3.1e-4, 3.3e-4], gflops=7.0, gbps=42.0),
            _result("wgsl", "wgpu:0", 6e-3, [5.8e-3, 6e-3, 6.5e-3], gflops=0.35, gbps=2.1),
            _result("nvptx", "cuda:0", 1e-5, [1e-5], status="skipped"),
        ]

    rows = timing_rows(Report)
    assert [r.series for r in rows] == ["cpu @ cpu", "wgsl @ wgpu:0"]  # skipped: no row
    assert rows[0].fastest and rows[0].reference and rows[1].ratio == pytest.approx(20.0)
    assert rows[1].iqr_s == Report.results[1].timing["iqr_s"]

    class Ceil:
        copy_gbps, fma_gflops_f32 = 28.0, 116.0

    points, roofs = roofline_model(Report, lambda d: Ceil if d["spec"] == "cpu" else None)
    assert [(p.intensity, p.flops_per_s) for p in points] == [(7.0 / 42.0, 7e9), (0.35 / 2.1, 0.35e9)]
    (roof,) = roofs  # wgpu:0 has neither ceilings nor datasheet peaks
    assert roof.ridge == pytest.approx(116 / 28) and roof.attainable(0.1) == pytest.approx(2.8e9)
    assert points[0].fraction_of_roof == pytest.approx(7e9 / (28e9 * 7 / 42))
    x_range, y_range = roofline_ranges(points, roofs)
    assert all(_contains(x_range, p.intensity) and _contains(y_range, p.flops_per_s) for p in points)
    assert _contains(x_range, roof.ridge) and _contains(y_range, roof.flops_per_s)


def test_a_read_stream_is_held_against_the_read_roof():
    """A result the run marks `memory_roof` "read" (a reduction) gets the device's measured read
    ceiling as its memory roof, a second curve beside the copy roof; without a read ceiling it
    falls back to the copy roof."""
    reduction = _result("cuda-c", "cuda:0", 1e-3, [1e-3], gflops=400.0, gbps=1600.0)
    reduction.throughput["memory_roof"] = "read"
    saxpy = _result("nvptx", "cuda:0", 1e-3, [1e-3], gflops=500.0, gbps=3000.0)
    saxpy.throughput["memory_roof"] = "copy"
    bitonic = _result("wgsl", "cuda:0", 1e-3, [1e-3], gflops=100.0, gbps=3200.0)  # in place
    bitonic.throughput["memory_roof"] = "update"

    class Report:
        reference = "cpu"
        results = [reduction, saxpy, bitonic]

    class Ceil:
        copy_gbps, read_gbps, update_gbps, fma_gflops_f32 = 4000.0, 4500.0, 4400.0, 61000.0

    points, roofs = roofline_model(Report, lambda d: Ceil)
    assert {r.key: r.bytes_per_s for r in roofs} == {
        "cuda:0 read": 4500e9,
        "cuda:0": 4000e9,
        "cuda:0 update": 4400e9,
    }
    by = {p.backend: p for p in points}
    assert by["cuda-c"].roof_memory == "read" and by["nvptx"].roof_memory == "copy"
    assert by["wgsl"].roof_memory == "update"
    assert by["cuda-c"].fraction_of_roof == pytest.approx(1600 / 4500)
    assert by["nvptx"].fraction_of_roof == pytest.approx(3000 / 4000)
    assert by["wgsl"].fraction_of_roof == pytest.approx(3200 / 4400)

    class CopyOnly:  # an entry from before the read and update streams
        copy_gbps, read_gbps, fma_gflops_f32 = 4000.0, None, 61000.0

    points, roofs = roofline_model(Report, lambda d: CopyOnly)
    assert [r.key for r in roofs] == ["cuda:0"]
    assert {p.roof_memory for p in points} == {"copy"}


def test_outputs_mark_unwritten_elements_ulps_and_exact_matches():
    from workbench.run.inputs import poison_value

    ref = np.linspace(-1, 1, 50_000, dtype=np.float32)
    same = ref.copy()
    off = ref.copy()
    off[100] = np.nextafter(off[100], np.float32(2))  # one ULP: within tolerance, not exact
    off[40_000] += 0.5  # a mismatch
    off[45_000:45_010] = poison_value(np.dtype(np.float32))[0]  # never written
    outputs = {"cpu": {"y": ref}, "wgsl": {"y": same}, "cuda-c": {"y": off}}
    drawing = compute_outputs(outputs, "y", "cpu", Tolerance(1e-5, 1e-6))
    assert drawing.exact == {"wgsl": True, "cuda-c": False}
    assert drawing.max_abs["wgsl"] == 0 and drawing.max_ulp["wgsl"] == 0
    assert drawing.mark_count == 1 and drawing.marks[0].tolist() == [40_000.0]
    assert drawing.unwritten_count == 10 and drawing.unwritten[0].tolist() == list(range(45_000, 45_010))
    assert drawing.first_bad == 40_000
    ulp_x, ulp_y = drawing.ulps["cuda-c"]
    assert ulp_y[np.searchsorted(ulp_x, 100)] == 1.0  # decimated, but the 1-ULP spike is kept (peak mode)
    # A zoomed view decimates only what is visible: every element of [39 990, 40 010) is drawn.
    zoomed = compute_outputs(outputs, "y", "cpu", Tolerance(1e-5, 1e-6), x_range=(39_990, 40_010))
    x, y = zoomed.curves["cuda-c"]
    assert x.tolist() == list(range(39_990, 40_011)) and not zoomed.decimated
    assert np.array_equal(y, off[39_990:40_011].astype(np.float64))
    ref_x, got_y = zoomed.scatter["cuda-c"]
    assert len(ref_x) <= 4100  # a sample of the 50 000 pairs, every mismatch included:
    assert any(r == float(ref[40_000]) and g == float(off[40_000]) for r, g in zip(ref_x, got_y, strict=True))


# ---------------------------------------------------------------- plots after real runs
#: saxpy's cpu entry with a fused multiply-add (`f32::mul_add`: one rounding); the wgsl reference
#: shader keeps `a * x + y` (two roundings), so the two differ in the last bits of many elements.
FUSED_CPU = """
#[cfg(not(any(target_arch = "nvptx64", target_arch = "spirv")))]
#[inline(always)]
fn madd(a: f32, x: f32, y: f32) -> f32 { a.mul_add(x, y) }
#[cfg(any(target_arch = "nvptx64", target_arch = "spirv"))]
#[inline(always)]
fn madd(a: f32, x: f32, y: f32) -> f32 { a * x + y }
"""


def _fused_saxpy(root: Path, max_ulp: int) -> Path:
    """The saxpy copy at `root` with FUSED_CPU and `[kernel.check]` rtol = atol = 0 and `max_ulp`."""
    lib = root / "src" / "lib.rs"
    text = lib.read_text()
    if "madd(" not in text:
        assert "        y[i] = a * x[i] + y[i];" in text
        lib.write_text(
            text.replace("        y[i] = a * x[i] + y[i];", "        y[i] = madd(a, x[i], y[i]);") + FUSED_CPU
        )
    manifest = root / "workbench.toml"
    text, check = manifest.read_text(), '[kernel.check]\nreference = "cpu"\n'
    assert check in text
    head, tail = text.split(check)
    tail = tail[tail.index("\n\n") :]  # the settings end at the blank line before the next table
    manifest.write_text(f"{head}{check}rtol = 0.0\natol = 0.0\nmax_ulp = {max_ulp}{tail}")
    return root


@pytest.mark.slow
def test_the_outputs_plot_marks_what_the_check_counts_with_max_ulp(qtbot, make_widget, bridge, example_copy):
    """A fused cpu reference against wgsl's unfused `a * x + y` on llvmpipe, rtol = atol = 0 and a
    ULP allowance: the outputs plot and the details view mark exactly the elements the check
    counted bad, not those an rtol/atol rule alone would reject."""
    plots = make_widget(PlotsPanel, bridge, show=True)
    root = _fused_saxpy(example_copy("saxpy", unique=True), max_ulp=1)
    report = _run(qtbot, bridge, root, {"n": 1 << 16})
    wgsl = next(r for r in report.results if r.backend == "wgsl")
    assert wgsl.status == "ok", wgsl.error
    (key,) = [k for k in report.outputs if k.startswith("wgsl")]
    got, ref = report.outputs[key]["y"], report.outputs[report.reference]["y"]
    differing = int(np.count_nonzero(got.view(np.uint32) != ref.view(np.uint32)))
    check = wgsl.check
    assert (check["rtol"], check["atol"], check["max_ulp"]) == (0.0, 0.0, 1)
    # Fused and unfused rounding really differ; the 1-ULP allowance passes part of them only.
    assert 0 < check["bad"] < differing, (check["bad"], differing)
    expected = np.flatnonzero(bad_elements(got, ref, Tolerance(0.0, 0.0, 1)))
    assert expected.size == check["bad"] and int(expected[0]) == check["first_bad_index"]

    plots.draw_now()
    outputs = plots.plots_data()["outputs"]
    assert outputs["mismatches"] == check["bad"] and outputs["first_bad_index"] == check["first_bad_index"]
    marked, _ = plots.tab("outputs").mismatch_marks.getData()
    assert marked.size and set(marked.astype(int).tolist()) <= set(expected.tolist())  # thinned past 500
    (details,) = result_mismatches(report, wgsl, limit=len(expected))
    assert details.bad == check["bad"] and [m.index for m in details.first] == expected.tolist()

    # Again with the largest difference allowed (the case): the check passes with 0 bad
    # elements while the bits still differ, and the plot and the details mark none.
    _fused_saxpy(root, max_ulp=int(check["max_ulp_err"]))
    report = _run(qtbot, bridge, root, {"n": 1 << 16})
    wgsl = next(r for r in report.results if r.backend == "wgsl")
    got, ref = report.outputs[key]["y"], report.outputs[report.reference]["y"]
    assert wgsl.verified is True and wgsl.check["bad"] == 0
    assert np.count_nonzero(got.view(np.uint32) != ref.view(np.uint32)) == differing
    plots.draw_now()
    outputs = plots.plots_data()["outputs"]
    assert outputs["mismatches"] == 0 and outputs["first_bad_index"] is None
    assert plots.tab("outputs").mismatch_marks.getData()[0].size == 0
    assert result_mismatches(report, wgsl)[0].bad == 0


@pytest.mark.slow
@pytest.mark.parametrize("example", ["saxpy", "matmul"])
def test_plots_show_what_the_run_results_say(
    qtbot, make_widget, bridge, example, example_copy, test_output_dir
):
    plots = make_widget(PlotsPanel, bridge, show=True)
    plots.resize(640, 760)
    report = _run(qtbot, bridge, example_copy(example), SIZES[example])
    ok = [r for r in report.results if r.status == "ok"]
    assert {r.backend for r in ok} == {"cpu", "wgsl"}
    # Ceilings of cpu and llvmpipe: measured once (cached per device) when the roofline is drawn,
    # not after every run of a hot-reload loop; then the roofs are drawn.
    assert not plots.ceilings.measuring or "roofline" in plots._stale
    plots.ensure_ceilings()
    qtbot.waitUntil(lambda: not plots.ceilings.measuring, timeout=WORK_GUARD_MS)
    plots.draw_now()
    data = plots.plots_data()

    roofline = data["roofline"]
    assert roofline["x_label"] == "arithmetic intensity (FLOP/byte)" and "FLOP/s" in roofline["y_label"]
    by_backend = {p["backend"]: p for p in roofline["points"]}
    assert set(by_backend) == {"cpu", "wgsl"}
    for result in ok:
        point = by_backend[result.backend]
        gflops, gbps = result.throughput["gflops"], result.throughput["gbps"]
        assert point["device"] == result.device["spec"]
        assert point["flops_per_s"] == pytest.approx(gflops * 1e9, rel=1e-9)
        assert point["bytes_per_s"] == pytest.approx(gbps * 1e9, rel=1e-9)
        assert point["intensity"] == pytest.approx(gflops / gbps, rel=1e-9)
        assert _contains(roofline["x_range"], point["intensity"])
        assert _contains(roofline["y_range"], point["flops_per_s"])
    # The manifest's metrics: saxpy moves 12 bytes per 2 FLOP; matmul 2mnk FLOP over 4(mk+kn+mn) bytes.
    expected = 2 / 12 if example == "saxpy" else 2 * 96**3 / (4 * 3 * 96 * 96)
    assert by_backend["cpu"]["intensity"] == pytest.approx(expected, rel=1e-6)
    roofs = {r["device"]: r for r in roofline["roofs"]}
    assert set(roofs) == {"cpu", by_backend["wgsl"]["device"]}
    for roof in roofs.values():
        assert roof["source"] == "measured" and roof["drawn"]
        assert roof["bytes_per_s"] > 1e8 and roof["flops_per_s"] > 1e8  # positive measured ceilings
        assert _contains(roofline["x_range"], roof["ridge_intensity"])
    assert len(plots.curve_data()["roofs"]) == 2

    # Hover over a point shows its numbers.
    plots.show_tab("roofline")
    qtbot.waitUntil(lambda: "roofline" not in plots._stale, timeout=HANG_GUARD_MS)
    roofline_tab = plots.tab("roofline")
    vb = roofline_tab.roofline_plot.getPlotItem().getViewBox()
    x, y = roofline_tab.roofline_points["cpu @ cpu"].getData()
    roofline_tab._roofline_hover(vb.mapViewToScene(QPointF(float(x[0]), float(y[0]))))
    assert (
        "cpu @ cpu" in roofline_tab.hover_text
        and "FLOP/byte" in roofline_tab.hover_text
        and re.search(
            r"% of the measured (copy|read|FMA f32) roof\n(memory|compute)-bound: ", roofline_tab.hover_text
        )
    )
    assert roofline_tab.hover_label.isVisible()

    timing = data["timing"]
    rows = {r["backend"]: r for r in timing["rows"]}
    for result in ok:
        assert rows[result.backend]["median_s"] == result.timing["median_s"]
        assert rows[result.backend]["iqr_s"] == result.timing["iqr_s"]
        assert rows[result.backend]["device"] == result.device["spec"]
    fastest = min(ok, key=lambda r: r.timing["median_s"])
    assert rows[fastest.backend]["fastest"] and rows["cpu"]["reference"]
    assert rows["wgsl"]["ratio_to_reference"] == pytest.approx(
        rows["wgsl"]["median_s"] / rows["cpu"]["median_s"]
    )
    medians = [r.timing["median_s"] for r in ok]
    spread = [v for r in timing["rows"] for v in (r["q1_s"], r["median_s"], r["q3_s"])]
    if max(spread) / min(spread) > 8:  # every series visible: a log axis, labelled in seconds
        assert timing["scale"] == "log" and timing["y_unit"] == "s"
    else:
        assert timing["scale"] == "linear" and timing["y_unit"] in ("ns", "µs", "ms", "s")
    # The comparison view plots each median between its whiskers.
    mx, _ = plots.curve_data()["compare"]["medians"]
    if timing["scale"] == "log":
        assert sorted(mx) == pytest.approx(sorted(math.log10(m) for m in medians))
    history = timing["history"]["series"]
    assert {n: [p["median_s"] for p in points] for n, points in history.items()} == {
        f"{r.backend} @ {r.device['spec']}": [r.timing["median_s"]] for r in ok
    }

    outputs = data["outputs"]
    out_names = [a for a in report.outputs["cpu"]]
    assert outputs["buffer"] == out_names[0] and outputs["reference"] == "cpu"
    array = report.outputs["cpu"][out_names[0]]
    assert outputs["size"] == array.size
    assert outputs["series"]["wgsl"]["max_abs_err"] == pytest.approx(
        float(np.max(np.abs(report.outputs["wgsl"][out_names[0]].astype(float) - array.astype(float))))
    )
    values = plots.curve_data()["outputs"]["cpu"][1]
    assert np.nanmin(values) == pytest.approx(float(array.min())) and np.nanmax(values) == pytest.approx(
        float(array.max())
    )
    assert outputs["x_range"][0] <= 0 and outputs["x_range"][1] >= array.size - 1

    for tab in TABS:
        plots.show_tab(tab)
        settle_qt()  # laid out before the grab
        assert plots.grab().save(str(test_output_dir / f"plots_{example}_{tab}.png"))

    # The device panel shows the measured ceilings beside the datasheet figures, check boxes in view.
    from workbench.run.ceilings import cached
    from workbench.ui.devices.picker import SPEC_ROLE, DevicePicker

    picker = make_widget(DevicePicker, bridge, show=True)
    picker.resize(240, 520)
    qtbot.waitUntil(lambda: picker.group_item("CPU") is not None, timeout=WORK_GUARD_MS)
    # The run's "wgpu:llvmpipe" (a name) is the adapter checked in the list.
    assert by_backend["wgsl"]["device"] in picker.checked_specs() and "cpu" in picker.checked_specs()
    cpu_item = picker.group_item("CPU").child(0)
    picker.tree.setCurrentItem(cpu_item)
    rows = {
        picker.properties.item(r, 0).text(): picker.properties.item(r, 1).text()
        for r in range(picker.properties.rowCount())
    }
    measured = cached(cpu_item.data(0, 257), bridge.cache_dir)
    assert rows["Measured copy"] == f"{measured.copy_gbps:,.1f} GB/s" and rows["Datasheet GB/s"] == "unknown"
    assert rows["Measured update"] == f"{measured.update_gbps:,.1f} GB/s"  # every stream, in place too
    labels = list(rows)
    assert labels.index("Measured copy") == labels.index("Datasheet GFLOP/s") + 1
    streams = [label for label in labels if label.startswith("Measured ") and "FMA" not in label][:4]
    assert streams == ["Measured copy", "Measured read", "Measured write", "Measured update"]
    for item in (cpu_item, picker.group_item("wgpu").child(0)):
        rect = picker.tree.visualItemRect(item)
        assert item.data(0, SPEC_ROLE) and rect.left() + 40 < picker.tree.columnWidth(0)  # room for the box


# ---------------------------------------------------------------- the window's layout
def _dock_problems(window) -> list[str]:
    problems = []
    for key, dock in window.docks.items():
        if not dock.isVisible() or dock.visibleRegion().isEmpty():
            continue
        widget = dock.widget()
        need = widget.minimumSizeHint()
        if widget.width() < need.width() or widget.height() < need.height():
            problems.append(
                f"{key}: {widget.width()}x{widget.height()} < minimum {need.width()}x{need.height()}"
            )
    plots = window.panels["plots"]
    for plot in plots.findChildren(FittedPlot):
        name = plot.objectName()
        if plot.isVisible() and plot.width() < plot.minimumSizeHint().width():
            problems.append(f"{name} {plot.width()} px < its axes' {plot.minimumSizeHint().width()} px")
    return problems


@pytest.mark.slow
def test_window_fits_at_both_sizes_and_tabs_never_resize_docks(
    make_window, qtbot, example_copy, test_output_dir
):
    window = make_window(example_copy("saxpy"))
    window.bridge.set_backends(["cpu", "wgsl"])
    window.bridge.set_devices(["cpu", "wgpu:llvmpipe"])
    window.bridge.set_sizes({"n": 1 << 16})
    with qtbot.waitSignal(window.bridge.runFinished, timeout=RUN_TIMEOUT_MS):
        window.run()
    qtbot.waitUntil(lambda: not window.bridge.busy, timeout=RUN_TIMEOUT_MS)
    plots = window.panels["plots"]
    plots.ensure_ceilings()
    qtbot.waitUntil(lambda: not plots.ceilings.measuring, timeout=WORK_GUARD_MS)
    window.docks["plots"].raise_()
    for width, height in ((1280, 800), (1600, 1000)):
        window.resize(width, height)
        window.reset_layout()
        settle_qt()
        sizes = {k: (d.width(), d.minimumSizeHint().width()) for k, d in window.docks.items()}
        assert (window.width(), window.height()) == (width, height), f"docks (width, minimum): {sizes}"
        widths = None
        for tab in TABS:
            plots.show_tab(tab)
            qtbot.waitUntil(lambda: not plots._stale.intersection(PARTS[tab]), timeout=HANG_GUARD_MS)  # noqa: B023
            # The outputs are computed on a worker thread: drawn once its job is done, then laid out.
            qtbot.waitUntil(lambda: plots.tab("outputs")._outputs_job is None, timeout=HANG_GUARD_MS)
            settle_qt()
            now = {k: (d.width(), d.height()) for k, d in window.docks.items() if d.isVisible()}
            assert widths is None or now == widths, f"switching to {tab} resized docks: {widths} -> {now}"
            widths = now
            assert not _dock_problems(window), _dock_problems(window)
            path = test_output_dir / f"window_{width}x{height}_{tab}.png"
            assert window.grab().save(str(path))
        editor = window.editor_tabs
        assert editor.width() >= 0.3 * width, "the docks leave the editor room"


def test_an_older_saved_layout_is_replaced_by_the_default(make_window, wb_config_dir):
    from workbench.ui.settings import load_settings, save_settings

    first = make_window(None, panels=("plots",))
    old_state = bytes(first.saveState(1).toBase64()).decode()  # what a version-1 window wrote
    current = bytes(first.saveState(LAYOUT_VERSION).toBase64()).decode()
    first.close()
    for state, restored in ((old_state, False), ("bm90IGEgbGF5b3V0", False), (current, True)):
        settings = load_settings()
        settings.window_state = state
        save_settings(settings)
        window = make_window(None, panels=("plots",))
        assert window._layout_restored is restored
        assert all(dock.isVisible() for dock in window.docks.values())
        assert window.docks["plots"].width() >= window.docks["plots"].widget().minimumSizeHint().width()
        window.close()


@pytest.mark.slow
def test_gui_screenshot_writes_the_plot_data(tmp_path, shared_cache_dir, test_output_dir):
    """The issue's acceptance command: a roofline screenshot of matmul with its plot data."""
    shot = test_output_dir / "gui_matmul_roofline_1280x800.png"
    data_file = tmp_path / "plots.json"
    command = [sys.executable, "-m", "workbench", "gui", "--screenshot", str(shot), "--run",
               "--window-size", "1280x800", "--tab", "roofline", "--plots-json", str(data_file),
               "--backend", "cpu,wgsl",
               "--cache-dir", str(shared_cache_dir), str(EXAMPLES / "matmul")]  # fmt: skip
    env = dict(os.environ, WB_CONFIG_DIR=str(tmp_path / "config"))
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert shot.is_file() and shot.stat().st_size > 10_000
    from PySide6.QtGui import QImage

    assert QImage(str(shot)).size().toTuple() == (1280, 800)  # the asked size, not the window's size hint
    data = json.loads(data_file.read_text())
    assert {p["backend"] for p in data["roofline"]["points"]} >= {"cpu", "wgsl"}
    assert all(r["drawn"] and r["flops_per_s"] > 0 for r in data["roofline"]["roofs"])
    assert all(
        p["intensity"] == pytest.approx(2 * 256**3 / (4 * 3 * 256 * 256)) for p in data["roofline"]["points"]
    )
    assert data["timing"]["rows"] and all(r["median_s"] > 0 for r in data["timing"]["rows"])
    bad = subprocess.run([*command[:4], "--screenshot", str(tmp_path / "x.png"), "--window-size", "big", str(EXAMPLES / "saxpy")],
                         capture_output=True, text=True, timeout=HANG_GUARD_S)  # fmt: skip
    assert bad.returncode == 2 and "WIDTHxHEIGHT" in bad.stderr
    unknown = subprocess.run([*command[:4], "--screenshot", str(tmp_path / "x.png"), "--backend", "cpu,nope", str(EXAMPLES / "saxpy")],
                             capture_output=True, text=True, timeout=HANG_GUARD_S)  # fmt: skip
    assert unknown.returncode == 2 and "nope" in unknown.stderr and not (tmp_path / "x.png").exists()


def test_tabs_are_chosen_by_name_and_only_the_one_on_screen_is_drawn(qtbot, make_widget, bridge):
    from workbench.cli import gui

    assert gui.TABS == (*TABS, "artifacts")  # `workbench gui --tab` offers the panel's tabs
    plots = make_widget(PlotsPanel, bridge, show=True)
    for name in reversed(TABS):
        plots.show_tab(name)
        assert plots.tabs.currentWidget() is plots.tab(name)
        assert plots.tabs.tabText(plots.tabs.currentIndex()).lower() == name
    plots.show_tab("outputs")
    bridge.runFinished.emit(_report("a", 2e-6, 5e-6))
    qtbot.waitUntil(lambda: "outputs" not in plots._stale, timeout=HANG_GUARD_MS)
    assert {"compare", "spread", "history", "roofline"} <= plots._stale  # hidden tabs wait
    plots.show_tab("timing")
    qtbot.waitUntil(lambda: not plots._stale.intersection(PARTS["timing"]), timeout=HANG_GUARD_MS)
    assert [r["backend"] for r in plots.plots_data()["timing"]["rows"]] == ["cpu", "wgsl"]
    with pytest.raises(KeyError):
        plots.show_tab("nope")


def _report(source_hash, cpu_median, wgsl_median, n=3000):
    from workbench.run.service import RunReport

    rng = np.random.default_rng(1)
    results = []
    for backend, spec, median in (("cpu", "cpu", cpu_median), ("wgsl", "wgpu:0", wgsl_median)):
        samples = median * (1 + rng.normal(0, 0.02, n))
        samples[:3] *= 40  # three wild outliers (another process took the core)
        result = _result(backend, spec, float(np.median(samples)), samples)
        result.provenance = {"source_hash": source_hash}
        results.append(result)
    return RunReport(project="t", kernel="k", results=results, reference="cpu")


def test_history_marks_edits_and_the_spread_keeps_every_series_readable(qtbot, make_widget, bridge):
    plots = make_widget(PlotsPanel, bridge, show=True)
    plots.resize(600, 700)
    for source, cpu, wgsl in (("a", 2e-6, 5e-6), ("a", 2.1e-6, 5e-6), ("b", 1.5e-6, 4e-6)):
        bridge.runFinished.emit(_report(source, cpu, wgsl))
    plots.draw_now()
    history = plots.plots_data()["timing"]["history"]
    assert history["runs"] == 3 and history["edits"] == [3]  # the sources changed before run 3
    assert [line.value() for line in plots.tab("timing").edit_lines] == [2.5]
    assert history["y_unit"] == "µs" and history["scale"] == "linear"  # 1.5 to 5 µs: one linear unit
    x, y = plots.curve_data()["time"]["cpu @ cpu"]
    assert x.tolist() == [1, 2, 3] and y == pytest.approx([r * 1e6 for r in (2e-6, 2.1e-6, 1.5e-6)], rel=0.02)
    assert plots.plots_data()["timing"]["y_unit"] == "µs"
    # The spread: each series around its own median; the outliers at the view's edge, not stretching it.
    (x0, x1), _ = plots.tab("timing").spread_plot.getPlotItem().getViewBox().viewRange()
    px, _ = plots.curve_data()["spread"]["points"]
    ox, _ = plots.curve_data()["spread"]["outliers"]
    assert x1 < 50 and 1 <= len(ox) <= 6 and np.all(ox <= x1) and np.all((px >= x0) & (px <= x1))
    assert len(px) + len(ox) <= 2 * 1500  # thousands of samples: a sample of them is drawn
    bridge.projectChanged.emit(None)
    plots.draw_now()
    assert plots.plots_data()["timing"].get("rows", []) == [] and not plots.tab("timing").edit_lines
