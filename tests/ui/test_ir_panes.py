"""The artifacts view's Summary, Diff and SASS panes over real cpu / wgsl (/ nvptx) builds: the
cells are `ir_summary.table` of the same folders, the Diff names the edited Rust / WGSL line, and an
nvptx build says what SASS needs where nvdisasm is missing."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QTextCursor

from tests.waits import WORK_GUARD_MS
from workbench.build import build_project
from workbench.build.adapters import ADAPTERS
from workbench.build.ir_summary import summarize, table
from workbench.build.sass import MISSING, nvdisasm
from workbench.project import Project
from workbench.ui.artifacts.view import ArtifactsView
from workbench.ui.screenshot import save_screenshot

TIMEOUT_MS = WORK_GUARD_MS
BODY = "y[i] = a * x[i] + y[i];"


def _tab(view, title):
    titles = [view.tabs.tabText(i) for i in range(view.tabs.count())]
    return view.tabs.widget(titles.index(title)) if title in titles else None


def _cells(widget):
    return [[widget.item(r, c).text() for c in range(widget.columnCount())] for r in range(widget.rowCount())]


def test_summary_diff_and_sass_panes_show_the_core_numbers(
    qtbot, make_widget, bridge, example_copy, shared_cache_dir, test_output_dir, monkeypatch
):
    monkeypatch.setenv("WB_NVDISASM", "/nonexistent/nvdisasm")  # as where the toolkit has none
    root = example_copy("saxpy", unique=True)
    bridge.set_project(root)
    view = make_widget(ArtifactsView, bridge, show=True)
    view.resize(1400, 800)
    nvptx = ADAPTERS["nvptx"].detect().found
    backends = ["cpu", "wgsl", *(["nvptx"] if nvptx else [])]
    results = {r.backend: r for r in build_project(Project.open(root), backends, shared_cache_dir)}
    assert all(r.status == "ok" for r in results.values()), results
    view.set_results(results)

    # cpu: its assembly is built on demand; then the Summary counts it, as `workbench ir summary` does.
    view.show_backend("cpu")
    qtbot.waitUntil(lambda: bool(view.line_views()), timeout=TIMEOUT_MS)
    qtbot.waitUntil(lambda: _cells(_tab(view, "Summary"))[0][2] == "x86-64", timeout=TIMEOUT_MS)
    summary = _tab(view, "Summary")
    folders = [results[b].artifact_dir for b in backends]
    headers, cells = table(summarize(folders))
    assert [summary.horizontalHeaderItem(c).text() for c in range(summary.columnCount())] == headers
    assert _cells(summary) == cells
    assert "one build so far" in _tab(view, "Diff").toPlainText()
    view.tabs.setCurrentWidget(summary)
    save_screenshot(view, test_output_dir / "ir-summary.png")

    # An edit of the kernel line: the Diff pane compares the new cpu build with the one before.
    lib = root / "src" / "lib.rs"
    body = next(n for n, t in enumerate(lib.read_text().splitlines(), 1) if BODY in t)
    lib.write_text(lib.read_text().replace(BODY, "y[i] = a * x[i] * x[i] + y[i];"))
    [after] = build_project(Project.open(root), ["cpu"], shared_cache_dir)
    view.set_results({"cpu": after})
    qtbot.waitUntil(lambda: f"src/lib.rs:{body}:" in _tab(view, "Diff").toPlainText(), timeout=TIMEOUT_MS)
    diff = _tab(view, "Diff").toPlainText()
    assert "mulss" in diff and "sources differ" in diff
    view.tabs.setCurrentWidget(_tab(view, "Diff"))
    save_screenshot(view, test_output_dir / "ir-diff-cpu.png")

    # The WGSL reference: its own lines.
    shader = root / "reference" / "saxpy.wgsl"
    lines = shader.read_text().splitlines()
    target = next(n for n, t in enumerate(lines, 1) if "params.a * x[i]" in t)
    lines[target - 1] = lines[target - 1].replace("x[i]", "2.0 * x[i]", 1)
    shader.write_text("\n".join(lines) + "\n")
    [wgsl] = build_project(Project.open(root), ["wgsl"], shared_cache_dir)
    view.set_results({"wgsl": wgsl})
    view.show_backend("wgsl")
    assert f"saxpy.wgsl:{target}: +1 instructions" in _tab(view, "Diff").toPlainText()

    if nvptx:
        view.show_backend("nvptx")
        note = _tab(view, "SASS")
        assert nvdisasm() is None and note is not None and note.toPlainText() == MISSING
        view.tabs.setCurrentWidget(note)
        save_screenshot(view, test_output_dir / "ir-sass-missing.png")


def test_the_sass_pane_links_each_instruction_to_its_ptx_and_rust_lines(
    qtbot, make_widget, bridge, example_copy, shared_cache_dir, test_output_dir
):
    """Where nvdisasm is present (CUDA toolkit, or `pip install nvidia-cuda-nvdisasm`)."""
    if nvdisasm() is None or not ADAPTERS["nvptx"].detect().found:
        pytest.skip("no nvdisasm, or no rustc with the nvptx64 target, here")
    root = example_copy("saxpy", unique=True)
    bridge.set_project(root)
    view = make_widget(ArtifactsView, bridge, show=True)
    view.resize(1400, 800)
    [result] = build_project(Project.open(root), ["nvptx"], shared_cache_dir)
    view.set_results({"nvptx": result})
    view.show_backend("nvptx")
    qtbot.waitUntil(lambda: any(v.code_kind == "SASS" for v in view.line_views()), timeout=TIMEOUT_MS)
    sass = next(v for v in view.line_views() if v.code_kind == "SASS")
    ptx = next(v for v in view.line_views() if v.code_kind == "PTX")
    assert view.tabs.tabText(view.tabs.indexOf(sass)) == "saxpy.sass" and _tab(view, "SASS") is None
    lines = sass.toPlainText().splitlines()
    fmul = next(n for n, t in enumerate(lines, 1) if " FMUL " in t or " FFMA " in t)
    view.tabs.setCurrentWidget(sass)
    sass.setTextCursor(QTextCursor(sass.document().findBlockByNumber(fmul - 1)))
    body = next(n for n, t in enumerate((root / "src" / "lib.rs").read_text().splitlines(), 1) if BODY in t)
    assert view.source_view.linked == [body]
    ptx_line = sass.line_map.ptx_line_of[fmul]
    assert ptx.linked == [ptx_line] and "mul.rn.f32" in ptx.toPlainText().splitlines()[ptx_line - 1]
    assert view.lines_note.text() == f"SASS line {fmul} ← PTX line {ptx_line} ← src/lib.rs:{body}"
    save_screenshot(view, test_output_dir / "ir-sass-linked.png")
