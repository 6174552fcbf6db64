"""The artifacts view's SPIR-V pane: disassembly linked to the Rust source both ways through the
module's `OpLine`s, and a plain word (with the build option) when a module has none.

The module is assembled with the real spirv-as in the shape of rust-gpu's `--spirv-metadata full`
output and built through the real rust-gpu prebuilt path (cargo-gpu cannot be installed here).
"""

from __future__ import annotations

from PySide6.QtGui import QTextCursor

from tests.build.spirv_modules import needs_tools, prebuilt_project
from workbench.build import build_project
from workbench.project import Project
from workbench.ui.artifacts.view import ArtifactsView


def _shown(view, bridge, root, cache):
    bridge.set_project(root)
    (result,) = build_project(Project.open(root), ["rust-gpu"], cache)
    assert result.status == "ok", result.diagnostics
    view.set_results({"rust-gpu": result})
    view.show_backend("rust-gpu")
    titles = [view.tabs.tabText(i) for i in range(view.tabs.count())]
    assert "saxpy.spvasm" in titles
    return view.tabs.widget(titles.index("saxpy.spvasm"))


def _put_cursor(code_view, line: int) -> None:
    code_view.setTextCursor(QTextCursor(code_view.document().findBlockByNumber(line - 1)))


@needs_tools
def test_selecting_a_spirv_line_highlights_its_rust_line_and_back(
    qtbot, make_widget, bridge, example_copy, shared_cache_dir, test_output_dir
):
    root, line = prebuilt_project(example_copy, float_iadd=False)
    view = make_widget(ArtifactsView, bridge, show=True)
    spirv = _shown(view, bridge, root, shared_cache_dir)
    assert view.line_views() == [spirv] and spirv.code_kind == "SPIR-V"
    assert view.lines_note.text().startswith("Rust ↔ SPIR-V: put the cursor on a Rust line")
    lib = root / "src" / "lib.rs"
    expected = spirv.line_map.ptx_lines_for(lib, line)
    disassembly = spirv.toPlainText().splitlines()
    fadd = next(i for i, text in enumerate(disassembly, 1) if "OpFAdd" in text)
    store = next(i for i, text in enumerate(disassembly, 1) if "OpStore" in text)
    assert fadd in expected and store not in expected

    # A SPIR-V line selects the Rust line its OpLine names, and every SPIR-V line of that Rust line.
    view.tabs.setCurrentWidget(spirv)
    _put_cursor(spirv, fadd)
    assert view.source_box.currentText() == "src/lib.rs"
    assert view.source_view.linked == [line]
    assert spirv.linked == expected
    assert view.lines_note.text() == f"SPIR-V line {fadd} ← src/lib.rs:{line}"
    highlighted = [s.cursor.blockNumber() + 1 for s in view.source_view.extraSelections()]
    assert highlighted == [line]
    # A line after OpNoLine comes from no Rust line.
    _put_cursor(spirv, store)
    assert spirv.linked == [] and view.lines_note.text() == f"SPIR-V line {store}: no source line"

    # And back: the Rust line highlights its SPIR-V lines.
    _put_cursor(view.source_view, 1)
    _put_cursor(view.source_view, line)
    assert spirv.linked == expected
    assert [s.cursor.blockNumber() + 1 for s in spirv.extraSelections()] == expected
    assert view.lines_note.text().startswith(f"src/lib.rs:{line} → SPIR-V lines ")
    view.resize(1100, 560)
    assert view.grab().save(str(test_output_dir / "artifacts-spirv-rust.png"))


@needs_tools
def test_a_spirv_module_without_lines_says_so_and_names_the_build_option(
    qtbot, make_widget, bridge, example_copy, shared_cache_dir
):
    root, line = prebuilt_project(example_copy, float_iadd=False, op_line=False)
    view = make_widget(ArtifactsView, bridge, show=True)
    spirv = _shown(view, bridge, root, shared_cache_dir)
    assert view.line_views() == [] and spirv.line_map is not None and not spirv.line_map.has_lines
    note = view.lines_note.text()
    assert note.startswith("rust-gpu: saxpy.spvasm has no line information (no OpLine)")
    assert "--spirv-metadata full" in note and "SpirvMetadata::Full" in note
    _put_cursor(view.source_view, line)
    assert spirv.linked == [] and view.lines_note.text() == note  # nothing to link, the note stays
