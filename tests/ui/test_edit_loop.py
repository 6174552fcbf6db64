"""The edit loop around hot reload (issue 16), in the real window on real builds and runs.

Last good results stay (stale) through a compile error and the reference does not change; an
edited reference is named as the cause of a failed check, with a details view; a WGSL error is a
located diagnostic; unchecking the reference's device asks before running; Rust ↔ PTX lines.
Screenshots of each state go to test-output/ui/edit-loop-*.png.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import QMessageBox

from tests.waits import HANG_GUARD_MS, WORK_GUARD_MS, settle_qt
from workbench.build.artifacts import read_build
from workbench.build.ptx_lines import PtxLines
from workbench.run.mismatches import buffer_mismatches
from workbench.ui.results.table import COL_CHECK, COL_STATUS, MUTED
from workbench.ui.screenshot import save_screenshot

NOT_VERIFIED_REF = "not verified (reference failed)"
TIMEOUT_MS = WORK_GUARD_MS
SIZES = {"n": 4096}
BODY = "y[i] = a * x[i] + y[i];"


def _window(make_window, root, panels, backends, devices=None):
    window = make_window(root, panels=panels)
    window.bridge.set_sizes(SIZES)
    window.bridge.set_backends(backends)
    if devices is not None:
        window.bridge.set_devices(devices)
    window.resize(1500, 950)
    return window


def _run(qtbot, window):
    with qtbot.waitSignal(window.bridge.runFinished, timeout=TIMEOUT_MS) as finished:
        window.run_action.trigger()
    qtbot.waitUntil(lambda: not window.bridge.busy, timeout=TIMEOUT_MS)
    return finished.args[0]


def _save(qtbot, window, path):
    with qtbot.waitSignal(window.bridge.runFinished, timeout=TIMEOUT_MS):
        window.bridge.on_saved(path)
    qtbot.waitUntil(lambda: not window.bridge.busy, timeout=TIMEOUT_MS)
    # The window may notice the write too (its file watcher reloads and saves): the last report
    # is the one on screen.
    return window.bridge.last_report


def _rows(table):
    return {row["Backend"]: row for row in table.row_texts()}


def _row_index(table, backend):
    return next(i for i, row in enumerate(table.row_texts()) if row["Backend"] == backend)


@pytest.mark.slow
def test_a_compile_error_keeps_the_last_good_results_stale_and_the_reference(
    make_window, example_copy, qtbot, test_output_dir
):
    root = example_copy("saxpy")
    window = _window(make_window, root, ("build", "results", "plots"), ["cpu", "wgsl"], ["cpu", "wgpu:0"])
    table = window.panels["results"]
    _run(qtbot, window)
    good = _rows(table)
    assert good["cpu"]["Status"] == "ok" and good["wgsl"]["Verified"] == "✓ yes"
    assert good["wgsl"]["Device"] == "llvmpipe · Vulkan"  # adapters are named with their API
    assert window.latency_label.text().startswith("run → result:")  # a manual run measures too
    cpu_median = good["cpu"]["Median"]

    lib = root / "src" / "lib.rs"
    lib.write_text(lib.read_text().replace(BODY, "y[i] = a * x[i] + y[i] + zz;"))
    _save(qtbot, window, lib)
    rows = _rows(table)
    # The cpu row is the previous result, kept and marked stale (dimmed, with when and why).
    assert rows["cpu"]["Status"].startswith("stale · ") and rows["cpu"]["Median"] == cpu_median
    index = _row_index(table, "cpu")
    assert table.is_row_stale(index)
    assert table.table.item(index, 0).foreground().color() == MUTED
    tip = table.table.item(index, COL_STATUS).toolTip()
    assert tip.startswith("stale: cpu build error") and "UTC" in tip, tip
    # The reference is still cpu: wgsl is not silently checked against itself.
    assert "checked against cpu" in table.caption.text() and "reference failed" in table.caption.text()
    assert rows["wgsl"]["Status"] == "ok" and rows["wgsl"]["Verified"] == NOT_VERIFIED_REF
    # The plots keep cpu's last point; the stale row adds no second one to its history.
    history = window.panels["plots"].tab("timing").history
    assert [len(points) for name, points in history.items() if name.startswith("cpu")] == [1]
    (wgsl_points,) = [len(points) for name, points in history.items() if name.startswith("wgsl")]
    assert wgsl_points >= 2  # one per completed run (the file watcher may add one)
    save_screenshot(window, test_output_dir / "edit-loop-stale-after-compile-error.png")

    lib.write_text(lib.read_text().replace("y[i] = a * x[i] + y[i] + zz;", BODY))
    _save(qtbot, window, lib)
    rows = _rows(table)
    assert rows["cpu"]["Status"] == "ok" and not table.is_row_stale(_row_index(table, "cpu"))
    assert rows["wgsl"]["Verified"] == "✓ yes"
    assert window.latency_label.text().startswith("edit → result:")


@pytest.mark.slow
def test_an_edited_reference_is_reported_and_the_details_list_the_mismatches(
    make_window, example_copy, qtbot, test_output_dir
):
    root = example_copy("saxpy")
    window = _window(make_window, root, ("build", "results"), ["cpu", "wgsl"], ["cpu", "wgpu:0"])
    table = window.panels["results"]
    _run(qtbot, window)
    assert _rows(table)["wgsl"]["Verified"] == "✓ yes"

    lib = root / "src" / "lib.rs"
    lib.write_text(lib.read_text().replace(BODY, "y[i] = a * x[i] + 2.0 * y[i];"))
    report = _save(qtbot, window, lib)
    rows = _rows(table)
    assert rows["wgsl"]["Verified"] == "✗ no"
    assert "the reference changed: cpu's source was edited" in table.caption.text()
    assert rows["wgsl"]["Check"].startswith("⚠ reference changed — first bad y[0]: got")
    index = _row_index(table, "wgsl")
    # The cell may elide it; the tooltip has the whole text, and the full notice.
    tip = table.table.item(index, COL_CHECK).toolTip()
    assert rows["wgsl"]["Check"] in tip and "the reference changed: cpu's source was edited" in tip

    window.docks["results"].raise_()
    qtbot.waitUntil(lambda: table.table.isVisible(), timeout=HANG_GUARD_MS)
    rect = table.table.visualItemRect(table.table.item(index, 0))
    assert rect.isValid(), rect
    qtbot.mouseClick(table.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.mouseDClick(table.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.waitUntil(lambda: bool(table._dialogs), timeout=HANG_GUARD_MS)
    dialog = table._dialogs[-1]
    qtbot.waitExposed(dialog, timeout=HANG_GUARD_MS)
    assert (
        "the reference changed" in dialog.summary.text()
        and "own source did not change" in dialog.summary.text()
    )
    (buffer,) = dialog.buffers
    got, ref = report.outputs["wgsl"]["y"], report.outputs["cpu"]["y"]
    bad = np.flatnonzero(~np.isclose(got, ref, rtol=1e-6, atol=1e-6))
    assert buffer.name == "y" and buffer.bad == len(bad) and buffer.first[0].index == bad[0]
    first = buffer.first[0]
    assert first.expected == pytest.approx(float(ref[bad[0]])) and first.got == pytest.approx(
        float(got[bad[0]])
    )
    assert first.abs_err == pytest.approx(abs(float(got[bad[0]]) - float(ref[bad[0]])), rel=1e-6)
    mismatch_table = dialog.findChild(type(table.table), "mismatches:y")
    assert mismatch_table.item(0, 0).text() == str(bad[0])
    # The plot around the first bad index draws exactly the arrays' values there.
    drawn = dialog.plot_data("y")
    x, expected = drawn["expected"]
    assert x[0] == max(0, bad[0] - 32) and np.allclose(expected, ref[x.astype(int)])
    assert np.allclose(drawn["got"][1], got[x.astype(int)])
    dialog.resize(900, 600)
    save_screenshot(dialog, test_output_dir / "edit-loop-details.png")
    save_screenshot(window, test_output_dir / "edit-loop-reference-changed.png")
    dialog.close()


def test_mismatches_follow_the_check_rule_and_flag_unwritten_elements():
    from workbench.run.inputs import POISON_BITS

    ref = np.linspace(-1, 1, 100, dtype=np.float32)
    got = ref.copy()
    got[7] = np.nextafter(got[7], np.float32(2))  # 1 ULP: within max_ulp=1, not a mismatch
    got[10] += 0.5
    got.view(np.uint32)[20] = POISON_BITS[("f", 4)]
    out = buffer_mismatches("y", got, ref, 1e-7, 0.0, max_ulp=1, check_poison=True)
    assert [m.index for m in out.first] == [10, 20] and out.bad == 2 and out.unwritten == 1
    assert out.first[0].abs_err == pytest.approx(0.5, rel=1e-6) and out.first[0].ulp_err > 1
    assert out.first[1].unwritten and out.first[1].ulp_err is None
    index, expected, drawn = out.window
    assert index[0] == 0 and index[-1] == 10 + 32 and np.array_equal(drawn[index == 10], [got[10]])


@pytest.mark.slow
def test_a_wgsl_error_becomes_a_diagnostic_at_its_line(make_window, example_copy, qtbot, test_output_dir):
    root = example_copy("saxpy")
    window = _window(make_window, root, ("build",), ["wgsl"])
    shader = root / "reference" / "saxpy.wgsl"
    editor = window.editor_tabs.open_file(shader)
    lines = editor.text().splitlines()
    target = next(i for i, line in enumerate(lines) if "let i = " in line) + 1
    editor.go_to(target, 5)
    editor.textCursor().insertText("zz ")
    # Build saves the editor first (a hot-reload cycle the build then supersedes).
    finished = lambda results: results["wgsl"].status != "cancelled"  # noqa: E731
    with qtbot.waitSignal(window.bridge.buildFinished, timeout=TIMEOUT_MS, check_params_cb=finished) as built:
        window.build_action.trigger()
    result = built.args[0]["wgsl"]
    assert result.status == "error"
    (diag,) = [d for d in result.diagnostics if d["severity"] == "error"]
    assert diag["file"] == "reference/saxpy.wgsl" and diag["line"] == target and diag["column"] == 8
    assert diag["message"].startswith("naga parsing error")
    panel = window.panels["build"]
    rows = panel.diagnostic_rows()
    assert any(
        r["location"] == f"reference/saxpy.wgsl:{target}:8" and r["backend"] == "wgsl" for r in rows
    ), rows
    qtbot.waitUntil(lambda: target in _wavy_lines(editor), timeout=HANG_GUARD_MS)
    save_screenshot(window, test_output_dir / "edit-loop-wgsl-error.png")


def _wavy_lines(editor) -> list[int]:
    return [
        s.cursor.block().blockNumber() + 1
        for s in editor.extraSelections()
        if s.format.underlineStyle() == s.format.UnderlineStyle.WaveUnderline
    ]


def test_a_squiggle_follows_edits_and_goes_with_undo(qtbot):
    from workbench.ui.editor.code_editor import CodeEditor

    editor = CodeEditor()
    qtbot.addWidget(editor)
    editor.load_text("fn f() {\n    let a = 1 + zz;\n}\n")
    cursor = editor.textCursor()
    cursor.movePosition(QTextCursor.MoveOperation.Down)
    cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock)
    editor.setTextCursor(cursor)
    editor.textCursor().insertText(" // typed")
    editor.set_diagnostics(
        [{"severity": "error", "message": "zz", "line": 2, "column": 17, "end_column": 19}]
    )
    assert _wavy_lines(editor) == [2]
    start = editor.textCursor()
    start.movePosition(QTextCursor.MoveOperation.Start)
    start.insertText("\n")  # a new first line: the squiggle moves down with its text
    assert [(d["line"], d["column"]) for d in editor.live_diagnostics()] == [(3, 17)]
    editor.undo()
    editor.undo()  # the typed comment goes; the squiggle stays on zz
    assert [(d["line"], d["column"]) for d in editor.live_diagnostics()] == [(2, 17)]
    line = editor.document().findBlockByNumber(1)
    line_cursor = QTextCursor(line)
    line_cursor.setPosition(line.position() + 12)
    line_cursor.setPosition(line.position() + 18, QTextCursor.MoveMode.KeepAnchor)
    line_cursor.removeSelectedText()  # "+ zz" deleted: nothing left to underline
    assert _wavy_lines(editor) == [] and editor.live_diagnostics() == []


@pytest.mark.slow
def test_unchecking_the_reference_device_asks_before_running(
    make_window, example_copy, qtbot, test_output_dir
):
    root = example_copy("saxpy")
    window = _window(make_window, root, ("build", "results", "devices"), ["cpu", "wgsl"])
    picker = window.panels["devices"]
    qtbot.waitUntil(
        lambda: picker.group_item("CPU") is not None and bool(window.bridge.devices_info),
        timeout=WORK_GUARD_MS,
    )
    cpu = picker.group_item("CPU").child(0)
    cpu.setCheckState(0, Qt.CheckState.Unchecked)
    assert "cpu" not in window.bridge.devices()

    window.run_action.trigger()
    box = window.findChild(QMessageBox, "referenceDeviceQuestion")
    assert box is not None and box.isVisible()
    assert "reference backend cpu" in box.text() and "not checked" in box.text()
    assert not window.bridge.busy  # nothing ran before the answer
    save_screenshot(window, test_output_dir / "edit-loop-reference-device-unchecked.png")
    save_screenshot(box, test_output_dir / "edit-loop-reference-device-question.png")
    accept = next(b for b in box.buttons() if b.text().startswith("Check"))
    with qtbot.waitSignal(window.bridge.runFinished, timeout=TIMEOUT_MS):
        accept.click()
    qtbot.waitUntil(lambda: not window.bridge.busy, timeout=TIMEOUT_MS)
    assert "cpu" in window.bridge.devices()
    assert picker.group_item("CPU").child(0).checkState(0) == Qt.CheckState.Checked  # what runs is checked
    assert _rows(window.panels["results"])["wgsl"]["Verified"] == "✓ yes"


def _nvptx_found() -> bool:
    from workbench.build.adapters import ADAPTERS

    return ADAPTERS["nvptx"].detect().found


@pytest.mark.slow
def test_the_ptx_line_map_of_saxpy_at_points_at_its_multiply_add(
    make_window, example_copy, qtbot, test_output_dir
):
    if not _nvptx_found():
        pytest.skip("no rustc with the nvptx64 target here")
    root = example_copy("saxpy")
    window = _window(make_window, root, ("build", "artifacts"), ["cpu", "nvptx"])
    with qtbot.waitSignal(window.bridge.buildFinished, timeout=TIMEOUT_MS) as built:
        window.build_action.trigger()
    qtbot.waitUntil(lambda: not window.bridge.busy, timeout=TIMEOUT_MS)
    result = built.args[0]["nvptx"]
    assert result.status == "ok", result.diagnostics
    folder = Path(result.artifact_dir)
    # The timed build carries no line tables (they change the code); nothing more is built yet.
    timed = (folder / "saxpy.ptx").read_text()
    assert ".loc" not in timed and ", debug" not in timed and not (folder / "saxpy.lines.ptx").exists()

    view = window.panels["artifacts"]
    window.docks["artifacts"].show()
    window.docks["artifacts"].raise_()
    qtbot.waitUntil(lambda: view.backend_box.findText("nvptx") >= 0, timeout=HANG_GUARD_MS)
    # Showing the nvptx build asks for its line tables: built off the GUI thread, then shown.
    view.show_backend("nvptx")
    qtbot.waitUntil(lambda: bool(view.line_views()), timeout=TIMEOUT_MS)
    assert read_build(folder)["line_info"]["artifact"] == "saxpy.lines.ptx"
    lines_ptx = (folder / "saxpy.lines.ptx").read_text()
    assert ", debug" in lines_ptx and (folder / "saxpy.ptx").read_text() == timed
    lib = root / "src" / "lib.rs"
    body = next(i for i, line in enumerate(lib.read_text().splitlines()) if BODY in line) + 1
    mapped = PtxLines.parse(lines_ptx).ptx_lines_for(lib, body)
    texts = [lines_ptx.splitlines()[n - 1] for n in mapped]
    assert any("mul.rn.f32" in t or "fma.rn.f32" in t for t in texts), texts
    assert any("add.rn.f32" in t or "fma.rn.f32" in t for t in texts), texts

    # (where nvdisasm is present the SASS is a second line view, linked the same way)
    (lines_view,) = [v for v in view.line_views() if v.code_kind == "PTX"]
    assert view.tabs.tabText(view.tabs.indexOf(lines_view)) == "saxpy.lines.ptx"
    assert "saxpy.ptx (the timed build) has no line information" in view.lines_note.text()
    view.source_view.setTextCursor(QTextCursor(view.source_view.document().findBlockByNumber(body - 1)))
    assert lines_view.linked == mapped and view.tabs.currentWidget() is lines_view
    assert f"src/lib.rs:{body} → PTX lines" in view.lines_note.text()
    window.resizeDocks([window.docks["artifacts"]], [1150], Qt.Orientation.Horizontal)
    settle_qt()  # laid out before the grab
    save_screenshot(window, test_output_dir / "edit-loop-rust-to-ptx.png")
    # And back: a PTX line of the add selects its Rust line.
    add = next(n for n, t in zip(mapped, texts, strict=True) if "add.rn.f32" in t or "fma" in t)
    lines_view.setTextCursor(QTextCursor(lines_view.document().findBlockByNumber(add - 1)))
    assert view.source_view.linked == [body]
    # The cpu build's assembly is asked for the same way and linked to the same Rust line.
    view.show_backend("cpu")
    qtbot.waitUntil(lambda: bool(view.line_views()), timeout=TIMEOUT_MS)
    (asm_view,) = view.line_views()
    assert view.tabs.tabText(view.tabs.indexOf(asm_view)) == "saxpy.lines.asm"
    assert asm_view.code_kind == "assembly"
    view.source_view.setTextCursor(QTextCursor(view.source_view.document().findBlockByNumber(body - 2)))
    view.source_view.setTextCursor(QTextCursor(view.source_view.document().findBlockByNumber(body - 1)))
    asm_lines = asm_view.toPlainText().splitlines()
    assert asm_view.linked and any("mulss" in asm_lines[n - 1] for n in asm_view.linked), asm_view.linked
    assert f"src/lib.rs:{body} → assembly lines" in view.lines_note.text()
    save_screenshot(window, test_output_dir / "edit-loop-rust-to-cpu-assembly.png")


@pytest.mark.slow
def test_one_rustc_error_from_two_backends_is_one_diagnostic_row(make_window, example_copy, qtbot):
    if not _nvptx_found():
        pytest.skip("no rustc with the nvptx64 target here")
    root = example_copy("saxpy")
    lib = root / "src" / "lib.rs"
    lib.write_text(lib.read_text().replace(BODY, "y[i] = a * x[i] + zz;"))
    window = _window(make_window, root, ("build",), ["cpu", "nvptx"])
    with qtbot.waitSignal(window.bridge.buildFinished, timeout=TIMEOUT_MS):
        window.build_action.trigger()
    qtbot.waitUntil(lambda: not window.bridge.busy, timeout=TIMEOUT_MS)
    panel = window.panels["build"]
    rows = panel.diagnostic_rows()
    zz = [r for r in rows if "zz" in r["message"]]
    assert len(zz) == 1 and zz[0]["backend"] == "cpu, nvptx", rows
    assert not any(r["message"].startswith("For more information") for r in rows), rows
    assert "2 errors" in panel.summary.text(), panel.summary.text()
