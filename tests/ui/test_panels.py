"""The window's panels on the real services: devices, builds, results, plots, artifacts, console.

Runs offscreen with real cargo builds, real runs on the CPU and on wgpu's llvmpipe adapter, small
problem sizes. Screenshots of each panel go to test-output/ui/.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt

from tests.waits import HANG_GUARD_MS, WORK_GUARD_MS, settle_qt
from workbench.build.artifacts import read_build
from workbench.ui.artifacts.view import ArtifactsView
from workbench.ui.build.diagnostics import DIAG_BACKEND, DIAG_LOCATION
from workbench.ui.build.panel import COL_BACKEND, COL_CACHE, BuildPanel
from workbench.ui.console.panel import ConsolePanel
from workbench.ui.devices.picker import DevicePicker
from workbench.ui.devices.rows import short_reason
from workbench.ui.plots import MAX_POINTS, PlotsPanel
from workbench.ui.results.table import ResultsTable

SIZES = {"n": 4096}
BUILD_TIMEOUT_MS = WORK_GUARD_MS
RUN_TIMEOUT_MS = WORK_GUARD_MS
BROKEN_LINE = "        y[i] = a * x[i] + y_unknown[i];"


def _screenshot(widget, folder: Path, name: str, size=(1100, 560)) -> Path:
    widget.resize(*size)
    widget.show()
    path = folder / f"{name}.png"
    assert widget.grab().save(str(path)), f"could not write {path}"
    return path


def _select(bridge, root: Path, backends: list[str], devices: list[str] | None = None) -> None:
    """Point the bridge at a project with these backends (and devices)."""
    bridge.set_project(root)
    bridge.set_backends(backends)
    if devices is not None:
        bridge.set_devices(devices)


def _wait_idle(qtbot, bridge, timeout=BUILD_TIMEOUT_MS) -> None:
    qtbot.waitUntil(lambda: not bridge.busy, timeout=timeout)


def test_device_picker_lists_llvmpipe_and_greys_cuda(qtbot, make_widget, bridge, test_output_dir):
    picker = make_widget(DevicePicker, bridge, show=True)
    qtbot.waitUntil(lambda: picker.group_item("CUDA") is not None, timeout=WORK_GUARD_MS)

    cuda = picker.group_item("CUDA")
    assert cuda.isDisabled()
    assert cuda.childCount() == 1 and cuda.child(0).text(0)  # the reason, as a greyed row
    # The row says what is missing (the reason's first clause), its tooltip the reason whole.
    assert cuda.toolTip(0) == cuda.child(0).toolTip(0)
    assert cuda.child(0).text(0) == short_reason(cuda.toolTip(0))
    assert cuda.toolTip(0).startswith(cuda.child(0).text(0))
    wgpu = picker.group_item("wgpu")
    names = [wgpu.child(i).text(0) for i in range(wgpu.childCount())]
    # Adapters sharing a name are told apart by their graphics API.
    assert any("llvmpipe" in name and name.endswith("· Vulkan") for name in names)
    llvmpipe = wgpu.child(next(i for i, n in enumerate(names) if "llvmpipe" in n and "Vulkan" in n))
    assert "llvmpipe" in llvmpipe.toolTip(0)
    spec = llvmpipe.text(1)
    assert spec.startswith("wgpu:")
    # The box shows whether the runs go there: checked exactly when the bridge runs on it.
    was_checked = llvmpipe.checkState(0) == Qt.CheckState.Checked
    assert was_checked == (spec in bridge.devices())

    # Default choice: the first device of every available runtime.
    assert "cpu" in bridge.devices() and spec in bridge.devices()
    picker.tree.setCurrentItem(llvmpipe)
    properties = {
        picker.properties.item(r, 0).text(): picker.properties.item(r, 1).text()
        for r in range(picker.properties.rowCount())
    }
    assert "llvmpipe" in properties["Name"] and properties["Graphics API"] == "Vulkan"

    # Each toggle changes what the next run runs on: the other way, then back (whatever the start).
    before = bridge.devices()
    llvmpipe.setCheckState(0, Qt.CheckState.Unchecked if was_checked else Qt.CheckState.Checked)
    assert (spec in bridge.devices()) is not was_checked and "cpu" in bridge.devices()
    assert set(bridge.devices()) ^ set(before) == {spec}  # that device only
    llvmpipe.setCheckState(0, Qt.CheckState.Checked if was_checked else Qt.CheckState.Unchecked)
    assert set(bridge.devices()) == set(before)
    _screenshot(picker, test_output_dir, "device_picker", (900, 420))


@pytest.mark.slow
def test_build_panel_shows_states_and_diagnostics_and_opens_locations(
    qtbot, make_widget, bridge, example_copy, test_output_dir
):
    root = example_copy("saxpy")
    lib = root / "src" / "lib.rs"
    lines = lib.read_text().splitlines()
    index = next(i for i, line in enumerate(lines) if "y[i] = a * x[i] + y[i];" in line)
    lines[index] = BROKEN_LINE
    lib.write_text("\n".join(lines) + "\n")
    _select(bridge, root, ["cpu", "wgsl", "rust-cuda"])
    panel = make_widget(BuildPanel, bridge, show=True)
    assert [panel.table.topLevelItem(i).text(COL_BACKEND) for i in range(3)] == ["cpu", "wgsl", "rust-cuda"]
    assert panel.state("cpu") == "idle"

    with qtbot.waitSignal(bridge.buildFinished, timeout=BUILD_TIMEOUT_MS):
        panel.build_button.click()
    _wait_idle(qtbot, bridge)
    assert panel.state("cpu") == "error"
    assert panel.state("wgsl") == "ok"
    assert panel.state("rust-cuda") in ("skipped", "ok")  # skipped: not installed here
    errors = [
        panel.diagnostics.topLevelItem(i)
        for i in range(panel.diagnostics.topLevelItemCount())
        if panel.diagnostics.topLevelItem(i).text(DIAG_BACKEND) == "cpu"
    ]
    located = [item for item in errors if item.text(DIAG_LOCATION).startswith(f"src/lib.rs:{index + 1}")]
    assert located, [item.text(DIAG_LOCATION) for item in errors]
    assert "y_unknown" in located[0].text(3)

    panel.table.setCurrentItem(panel.table.topLevelItem(0))
    assert "y_unknown" in panel.log_view.toPlainText()
    panel.tabs.setCurrentWidget(panel.diagnostics)
    rect = panel.diagnostics.visualItemRect(located[0])
    with qtbot.waitSignal(panel.openLocation, timeout=HANG_GUARD_MS) as opened:
        qtbot.mouseClick(panel.diagnostics.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    path, line, column = opened.args
    assert Path(path) == lib.resolve() or Path(path) == lib
    assert line == index + 1 and column >= 1
    _screenshot(panel, test_output_dir, "build_panel", (1000, 520))


@pytest.mark.slow
def test_cancelling_a_build_stops_it(qtbot, make_widget, bridge, example_copy):
    root = example_copy("saxpy")
    # A build script that takes long: the build is surely in flight when Cancel is pressed.
    (root / "build.rs").write_text("fn main() { std::thread::sleep(std::time::Duration::from_secs(120)); }\n")
    _select(bridge, root, ["cpu"])
    panel = make_widget(BuildPanel, bridge, show=True)
    with qtbot.waitSignal(
        bridge.buildEvent, timeout=WORK_GUARD_MS, check_params_cb=lambda e: e.kind == "output"
    ):
        bridge.build()
    assert panel.state("cpu") == "building"
    assert panel.cancel_button.isEnabled()
    with qtbot.waitSignal(bridge.buildFinished, timeout=WORK_GUARD_MS) as finished:
        panel.cancel_button.click()
    assert finished.args[0]["cpu"].status == "cancelled"
    _wait_idle(qtbot, bridge, 60_000)
    assert panel.state("cpu") == "cancelled"
    assert not panel.cancel_button.isEnabled()


@pytest.mark.slow
def test_running_fills_the_results_table_plots_and_artifacts(
    qtbot, make_widget, bridge, example_copy, test_output_dir
):
    root = example_copy("saxpy")
    _select(bridge, root, ["cpu", "wgsl"], ["cpu", "wgpu:llvmpipe"])
    table = make_widget(ResultsTable, bridge, show=True)
    plots = make_widget(PlotsPanel, bridge, show=True)
    artifacts = make_widget(ArtifactsView, bridge, show=True)

    with qtbot.waitSignal(bridge.runFinished, timeout=RUN_TIMEOUT_MS):
        bridge.run()
    _wait_idle(qtbot, bridge)
    rows = {row["Backend"]: row for row in table.row_texts()}
    assert set(rows) == {"cpu", "wgsl"}
    assert rows["wgsl"]["Verified"].endswith("yes") and "llvmpipe" in rows["wgsl"]["Device"]
    assert rows["wgsl"]["Median"] and rows["wgsl"]["GB/s"]
    # The panel redraws the tab on screen, one plot per timer tick (the outputs are computed off
    # the GUI thread); a hidden tab is drawn when shown: show each and wait until it drew this run.
    plots.show_tab("outputs")
    qtbot.waitUntil(lambda: len(plots.curve_data()["outputs"]) == 2, timeout=HANG_GUARD_MS)
    plots.show_tab("roofline")
    qtbot.waitUntil(lambda: len(plots.curve_data()["roofline"]) == 2, timeout=HANG_GUARD_MS)
    plots.show_tab("timing")
    qtbot.waitUntil(lambda: len(plots.curve_data()["compare"]["medians"][0]) == 2, timeout=HANG_GUARD_MS)
    qtbot.waitUntil(lambda: len(plots.curve_data()["time"]) == 2, timeout=HANG_GUARD_MS)
    data = plots.curve_data()
    assert set(data["time"]) == {"cpu @ cpu", "wgsl @ wgpu:0"} or len(data["time"]) == 2
    assert all(len(x) == 1 for x, _ in data["time"].values())
    assert len(data["spread"]["points"][0]) > 0
    # 4096 elements are more than the plot draws: decimated (min/max per bucket), the ends kept.
    assert all(
        0 < len(x) <= MAX_POINTS and np.nanmax(x) >= SIZES["n"] - 3 for x, _ in data["outputs"].values()
    )
    assert "min/max envelope per bucket" in plots.tab("outputs").output_note.text()
    assert set(data["errors"]) == {"wgsl"}
    assert len(data["roofline"]) == 2

    # Hot reload: a save reruns and reports the edit-to-result latency; the history grows.
    with qtbot.waitSignal(bridge.latencyMeasured, timeout=RUN_TIMEOUT_MS) as latency:
        bridge.on_saved(root / "src" / "lib.rs")
    assert latency.args[0] > 0
    _wait_idle(qtbot, bridge)
    qtbot.waitUntil(
        lambda: all(len(x) == 2 for x, _ in plots.curve_data()["time"].values()), timeout=HANG_GUARD_MS
    )

    artifacts.show_backend("wgsl")
    titles = [artifacts.tabs.tabText(i) for i in range(artifacts.tabs.count())]
    assert "saxpy.wgsl" in titles and "Resources" in titles
    assert "fn main" in artifacts.tabs.widget(titles.index("saxpy.wgsl")).toPlainText()
    assert "saxpy_body" in artifacts.source_view.toPlainText()
    assert artifacts.source_view.isReadOnly()

    _screenshot(table, test_output_dir, "results_table", (1250, 240))
    for tab in ("timing", "outputs", "roofline"):
        plots.show_tab(tab)
        settle_qt()  # laid out before the grab
        _screenshot(plots, test_output_dir, f"plots_{tab}", (1100, 520))
    artifacts.show_backend("cpu")
    assert "Files" in [artifacts.tabs.tabText(i) for i in range(artifacts.tabs.count())]  # the cdylib
    artifacts.show_backend("wgsl")
    _screenshot(artifacts, test_output_dir, "artifacts_view", (1200, 560))


@pytest.mark.slow
def test_a_failed_check_shows_the_first_bad_element(
    qtbot, make_widget, bridge, example_copy, test_output_dir
):
    root = example_copy("saxpy")
    wgsl = root / "reference" / "saxpy.wgsl"  # wrong result from element 0 on
    wgsl.write_text(wgsl.read_text().replace("y[i] = params.a * x[i] + y[i];", "y[i] = params.a * x[i];"))
    _select(bridge, root, ["cpu", "wgsl"], ["cpu", "wgpu:llvmpipe"])
    table = make_widget(ResultsTable, bridge, show=True)
    plots = make_widget(PlotsPanel, bridge, show=True)
    with qtbot.waitSignal(bridge.runFinished, timeout=RUN_TIMEOUT_MS) as finished:
        bridge.run()
    _wait_idle(qtbot, bridge)
    report = finished.args[0]
    wgsl_result = next(r for r in report.results if r.backend == "wgsl")
    first = wgsl_result.check["first_bad"]
    row = next(r for r in table.row_texts() if r["Backend"] == "wgsl")
    assert row["Verified"].endswith("no")
    assert f"y[{wgsl_result.check['first_bad_index']}]" in row["Check"]
    assert "got" in row["Check"] and "expected" in row["Check"]
    assert str(first["expected"])[:5] in row["Check"]
    plots.show_tab("outputs")  # the outputs tab is drawn when shown
    outputs = plots.tab("outputs")
    qtbot.waitUntil(lambda: len(outputs.mismatch_marks.getData()[0]) > 0, timeout=HANG_GUARD_MS)
    # The first bad element is one click away: the outputs and error plots zoom onto it.
    first_index = wgsl_result.check["first_bad_index"]
    assert outputs.first_bad_button.isEnabled() and f"{first_index:,}" in outputs.first_bad_button.text()
    outputs.first_bad_button.click()
    (x0, x1), _ = outputs.output_plot.getPlotItem().getViewBox().viewRange()
    assert x0 <= first_index <= x1 and x1 - x0 <= 80
    qtbot.waitUntil(
        lambda: outputs._drawing.x_range[1] - outputs._drawing.x_range[0] <= 81, timeout=HANG_GUARD_MS
    )
    x, _ = plots.curve_data()["outputs"]["wgsl"]
    assert first_index in set(x.astype(int))  # every element of the zoomed range is drawn
    _screenshot(plots, test_output_dir, "plots_outputs_mismatch", (1100, 520))


@pytest.mark.slow
def test_console_namespace_builds_runs_and_reads_results(
    qtbot, make_widget, bridge, example_copy, test_output_dir
):
    root = example_copy("saxpy")
    _select(bridge, root, ["cpu", "wgsl"], ["cpu", "wgpu:llvmpipe"])
    console = make_widget(ConsolePanel, bridge, show=True)
    qtbot.waitUntil(lambda: "In [1]" in console.widget._control.toPlainText(), timeout=HANG_GUARD_MS)
    namespace = console.namespace()
    assert namespace["project"].name == "saxpy" and namespace["results"] == []

    console.execute("name = project.name")
    qtbot.waitUntil(lambda: "name" in namespace, timeout=HANG_GUARD_MS)
    assert namespace["name"] == "saxpy"

    console.execute("built = build('wgsl').result(); status = built['wgsl'].status")
    qtbot.waitUntil(lambda: "status" in namespace, timeout=BUILD_TIMEOUT_MS)
    assert namespace["status"] == "ok"

    console.execute(
        "report = run().result(); verified = {r.backend: r.verified for r in results}; "
        "n = len(outputs['wgsl']['y'])"
    )
    qtbot.waitUntil(lambda: "n" in namespace, timeout=RUN_TIMEOUT_MS)
    assert namespace["verified"]["wgsl"] is True
    assert namespace["n"] == SIZES["n"]
    # The report reaches the window through its queued signal once the event loop runs.
    qtbot.waitUntil(lambda: bridge.last_report is namespace["report"], timeout=HANG_GUARD_MS)
    console.execute("verified")
    qtbot.waitUntil(lambda: "Out[" in console.widget._control.toPlainText(), timeout=HANG_GUARD_MS)
    _screenshot(console, test_output_dir, "console", (900, 480))
    console.shutdown()
    assert not console.kernel_manager.has_kernel


def test_outputs_drawing_matches_the_arrays_and_reuses_unchanged_ones():
    """The outputs tab's numpy work (run off the GUI thread): curves, errors, mismatch marks."""
    from workbench.run.verify import Tolerance
    from workbench.ui.plot_model.outputs import OutputsCache, compute_outputs, decimate, envelope

    rng = np.random.default_rng(1)
    ref = rng.standard_normal(100_000).astype(np.float32)
    got = ref.copy()
    got[[5, 70_000]] += 1.0  # two mismatches
    outputs = {"cpu": {"y": ref}, "wgsl": {"y": got}}
    cache = OutputsCache()
    tolerance = Tolerance(1e-5, 1e-6)
    drawing = compute_outputs(outputs, "y", "cpu", tolerance, cache)
    assert set(drawing.curves) == {"cpu", "wgsl"} and set(drawing.errors) == {"wgsl"}
    x, y = drawing.curves["wgsl"]
    ex, ey = envelope(*decimate(got, MAX_POINTS - 2))  # the upper and lower envelope, NaN between
    assert np.array_equal(x, ex, equal_nan=True) and np.array_equal(y, ey, equal_nan=True)
    upper, lower = y[: len(y) // 2], y[len(y) // 2 + 1 :]
    assert np.all(upper >= lower) and upper.max() == got.max() and lower.min() == got.min()
    assert drawing.size == ref.size and 0 < len(x) <= MAX_POINTS
    marks_x, marks_y = drawing.marks
    assert marks_x.tolist() == [5.0, 70_000.0] and np.allclose(marks_y, 1.0, rtol=1e-3)
    assert drawing.mark_count == 2
    # The same values again (a rerun that changed nothing): the very same points, no redraw.
    again = compute_outputs(
        {k: {"y": v["y"].copy()} for k, v in outputs.items()}, "y", "cpu", tolerance, cache
    )
    assert again.curves["wgsl"] is drawing.curves["wgsl"] and again.errors["wgsl"] is drawing.errors["wgsl"]
    changed = compute_outputs({"cpu": {"y": ref}, "wgsl": {"y": ref * 2}}, "y", "cpu", tolerance, cache)
    assert changed.curves["wgsl"] is not drawing.curves["wgsl"] and changed.mark_count > 2
    # Another tolerance is another verdict, not the cached one: atol 1.5 lets both errors of 1 pass.
    loose = compute_outputs(outputs, "y", "cpu", Tolerance(1e-5, 1.5), cache)
    assert loose.mark_count == 0 and loose.marks is None and loose.first_bad is None


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("fn a() {}\n", "fn a() {}\n// edit\n"),
        ("// 🚀 one\nfn a() {}\n", "// 🚀 one\nfn b() {}\n"),
        ("x\ny\nz", "y\nz"),
        ("x\ny\nz", ""),
        ("", "fn main() {}\n"),
        ("é🚀é\n", "é🚀🚀é\n"),
    ],
)
def test_source_view_replaces_only_what_changed(qtbot, old, new):
    from workbench.ui.artifacts.code_panes import code_view, replace_changed

    view = code_view("source")
    qtbot.addWidget(view)
    view.setPlainText(old)
    replace_changed(view, view.toPlainText(), new)
    assert view.toPlainText() == new


def test_build_log_shows_only_the_latest_build_of_the_selected_backend(make_widget, bridge):
    """Events as the build service sends them (the result comes twice: event, then results)."""
    from workbench.build.service import BuildEvent
    from workbench.records import BuildResult

    bridge.set_backends(["cpu"])
    panel = make_widget(BuildPanel, bridge)
    for build in ("first", "second"):
        bridge.buildEvent.emit(BuildEvent("started", "saxpy", "cpu"))
        for n in range(3):
            bridge.buildEvent.emit(BuildEvent("output", "saxpy", "cpu", line=f"{build} {n}"))
        result = BuildResult("cpu", "ok", seconds=0.5, log="ignored: lines were streamed")
        bridge.buildEvent.emit(BuildEvent("finished", "saxpy", "cpu", result=result))
        bridge.buildFinished.emit({"cpu": result})
    assert panel.state("cpu") == "ok"
    assert panel.log_view.toPlainText() == "second 0\nsecond 1\nsecond 2"
    assert panel.summary.text() == "1 ok"


@pytest.mark.slow
def test_build_log_of_a_cached_build_is_the_log_kept_when_it_was_built(
    qtbot, make_widget, bridge, example_copy, test_output_dir
):
    root = example_copy("saxpy", unique=True)  # a real cpu build first, then a cache hit
    _select(bridge, root, ["cpu"])
    panel = make_widget(BuildPanel, bridge, show=True)
    logs = []
    for _ in range(2):
        with qtbot.waitSignal(bridge.buildFinished, timeout=BUILD_TIMEOUT_MS) as built:
            panel.build_button.click()
        _wait_idle(qtbot, bridge)
        logs.append(built.args[0]["cpu"])
    first, second = logs
    assert not first.cached and second.cached and first.log.strip()
    panel.table.setCurrentItem(panel.table.topLevelItem(0))
    assert panel.table.topLevelItem(0).text(COL_CACHE) == "hit"
    shown = panel.log_view.toPlainText()
    created = read_build(first.artifact_dir)["created"]
    assert shown.startswith(f"served from the build cache: key {first.key}, built {created}"), shown
    assert first.log.strip() in shown
    panel.tabs.setCurrentWidget(panel.log_view)
    _screenshot(panel, test_output_dir, "build_panel_cached_log", (1000, 520))
