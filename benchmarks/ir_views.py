"""Issue 25's evidence: the artifacts view in the real window with Rust linked to every IR, one PNG
each under benchmarks/results/ir-views/ and the line numbers behind each highlight in ir-views.json.

    python benchmarks/ir_views.py [--only spirv_linked,cpu_assembly_linked,build_diff,sass_linked]

SPIR-V: rust-gpu cannot be installed here, so the module is the tests' assembled one
(`tests/build/spirv_modules.py`: the shape of `--spirv-metadata full`, OpString / OpLine at the
saxpy kernel's store), built through the real rust-gpu prebuilt path. cpu assembly and SASS are
real builds of a saxpy copy (SASS: nvdisasm from the `nvidia-cuda-nvdisasm` wheel, no GPU needed).
For each view the cursor is put on the kernel's store line in the Rust source and the highlighted
IR lines must be the line map's lines for it, and back (an IR line highlights its Rust line).
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.window_shots import main, settle, store_line, wait_signal, wait_until, with_store_changed  # noqa: E402

BUILD_TIMEOUT_S = 900  # a cold nvptx build compiles `core` on 2 shared cores


def _put_cursor(code_view, line: int) -> None:
    from PySide6.QtGui import QTextCursor

    code_view.setTextCursor(QTextCursor(code_view.document().findBlockByNumber(line - 1)))
    settle(1)


def _build(shots, window, backend: str):
    result = wait_signal(window.bridge.buildFinished, window.build, BUILD_TIMEOUT_S, f"the {backend} build",
                         accept=lambda r: backend in r)[backend]  # fmt: skip
    wait_until(lambda: not window.bridge.busy, BUILD_TIMEOUT_S, "idle")
    assert result.status == "ok", [
        d.get("message") if isinstance(d, dict) else d.message for d in result.diagnostics
    ][:3]
    return result


def show_linked(shots, window, backend: str, picture: str, kind: str | None = None) -> dict:
    """Build `backend`, show its artifacts, put the cursor on the kernel's store line in the Rust
    source and assert the IR view (of `kind`, or the first with lines) highlights exactly the line
    map's lines for it; then the first of those IR lines highlights the Rust line back."""
    _build(shots, window, backend)
    view = window.panels["artifacts"]
    window.show_artifacts(backend)

    def linked_view():
        views = [v for v in view.line_views() if kind is None or v.code_kind == kind]
        return views[0] if views else None

    ir = wait_until(linked_view, BUILD_TIMEOUT_S, f"{backend}'s {kind or 'line-linked'} view")
    lib = window.project.root / "src" / "lib.rs"
    line, _ = store_line(lib.read_text())
    expected = ir.line_map.ptx_lines_for(lib, line)
    chosen = "the kernel's store"
    if not expected:  # optimised into another line: the Rust line with the most IR lines
        line = max(ir.line_map.source_lines(lib), key=lambda n: len(ir.line_map.ptx_lines_for(lib, n)))
        expected, chosen = ir.line_map.ptx_lines_for(lib, line), "the line with most instructions"
    assert expected, f"no {ir.code_kind} line maps to src/lib.rs"
    view.tabs.setCurrentWidget(ir)
    view.source_box.setCurrentText("src/lib.rs")
    _put_cursor(view.source_view, 1)
    _put_cursor(view.source_view, line)
    assert ir.linked == expected, (ir.linked, expected)
    highlighted = [s.cursor.blockNumber() + 1 for s in ir.extraSelections()]
    assert set(expected) <= set(highlighted), (highlighted, expected)
    rust_to_ir = view.lines_note.text()
    assert rust_to_ir.startswith(f"src/lib.rs:{line} → "), rust_to_ir
    # And back: the first of those IR lines selects the Rust line.
    _put_cursor(ir, expected[0])
    assert view.source_view.linked == [line], view.source_view.linked
    # ... in the kernel's own src/lib.rs, not another crate's file of that name (gpu_kernel's).
    shown_file = view.source_box.currentText()
    assert shown_file == "src/lib.rs", f"the Rust pane shows {shown_file}, not the kernel's src/lib.rs"
    ir_to_rust = view.lines_note.text()
    ir_lines = ir.toPlainText().splitlines()
    return {
        "backend": backend,
        "view": view.tabs.tabText(view.tabs.indexOf(ir)),
        "kind": ir.code_kind,
        "rust_line": line,
        "rust_text": lib.read_text().splitlines()[line - 1].strip(),
        "chosen": chosen,
        "ir_lines": expected,
        "ir_text": [ir_lines[n - 1].strip() for n in expected[:6]],
        "note_rust_to_ir": rust_to_ir,
        "note_ir_to_rust": ir_to_rust,
        "picture": shots.shot(view, picture),
        "window_picture": shots.shot(window, picture + "-window"),
    }


def _window(shots, root, backends):
    window = shots.window(root, size=(1600, 1000), backends=backends, devices=["cpu"])
    window.hot_reload_action.setChecked(False)
    return window


def spirv_linked(shots) -> dict:
    from tests.build.spirv_modules import prebuilt_project

    root, line = prebuilt_project(
        lambda name, unique=False: shots.copy(name, unique=unique), float_iadd=False
    )
    window = _window(shots, root, ["rust-gpu"])
    facts = show_linked(shots, window, "rust-gpu", "01-spirv-rust", kind="SPIR-V")
    assert facts["rust_line"] == line, (facts["rust_line"], line)  # the module's OpLine
    spirv = window.panels["artifacts"].line_views()[0].toPlainText().splitlines()
    facts["oplines"] = [t.strip() for t in spirv if "OpLine" in t]
    return facts


def cpu_assembly_linked(shots) -> dict:
    return show_linked(
        shots, _window(shots, shots.copy("saxpy", unique=True), ["cpu"]), "cpu", "02-cpu-asm-rust"
    )


def build_diff(shots) -> dict:
    """Two cpu builds, the kernel's store changed in between: the Diff pane names that Rust line."""
    from workbench.build import build_project
    from workbench.project import Project

    root = shots.copy("saxpy", unique=True)
    window = _window(shots, root, ["cpu"])
    view = window.panels["artifacts"]
    # The two builds as the tests make them (build_project on the window's cache), handed to the
    # window's Artifacts view in turn, as the bridge hands it each build.
    (before,) = build_project(Project.open(root), ["cpu"], shots.cache_dir)
    view.set_results({"cpu": before})
    window.show_artifacts("cpu")
    wait_until(lambda: view.line_views(), BUILD_TIMEOUT_S, "the first build's assembly")
    lib = root / "src" / "lib.rs"
    line, _ = store_line(lib.read_text(), last=True)
    lib.write_text(with_store_changed(lib.read_text(), lambda v: f"({v}) * 1.5", last=True))
    (after,) = build_project(Project.open(root), ["cpu"], shots.cache_dir)
    assert after.status == "ok" and after.key != before.key
    view.set_results({"cpu": after})
    window.show_artifacts("cpu")

    def diff_text():
        titles = [view.tabs.tabText(i) for i in range(view.tabs.count())]
        if "Diff" not in titles:
            return ""
        text = view.tabs.widget(titles.index("Diff")).toPlainText()
        return text if f"src/lib.rs:{line}:" in text else ""

    try:
        text = wait_until(diff_text, 120, f"the Diff pane to name src/lib.rs:{line}")
    except AssertionError as exc:
        titles = [view.tabs.tabText(i) for i in range(view.tabs.count())]
        shown = view.tabs.widget(titles.index("Diff")).toPlainText() if "Diff" in titles else None
        listings = {k: [(p.name, p.stat().st_size) for p in Path(r.artifact_dir).glob("*.lines.asm")]
                    for k, r in (("before", before), ("after", after))}  # fmt: skip
        if "Diff" in titles:  # the pane as it reads, for the record
            view.tabs.setCurrentIndex(titles.index("Diff"))
            shots.shot(view, "03-build-diff-cpu-misses-the-closure")
        raise AssertionError(f"{exc}; tabs {titles}; listings {listings}; Diff says: {shown!r}") from None
    titles = [view.tabs.tabText(i) for i in range(view.tabs.count())]
    view.tabs.setCurrentIndex(titles.index("Diff"))
    assert "sources differ" in text
    return {
        "rust_line": line,
        "edited_to": lib.read_text().splitlines()[line - 1].strip(),
        "diff_head": text.splitlines()[:12],
        "picture": shots.shot(view, "03-build-diff-cpu"),
        "window_picture": shots.shot(window, "03-build-diff-cpu-window"),
    }


def build_diff_wgsl(shots) -> dict:
    """Two wgsl builds, the reference's store changed in between: the Diff pane names that line."""
    from workbench.build import build_project
    from workbench.project import Project

    root = shots.copy("saxpy", unique=True)
    window = _window(shots, root, ["wgsl"])
    view = window.panels["artifacts"]
    (before,) = build_project(Project.open(root), ["wgsl"], shots.cache_dir)
    view.set_results({"wgsl": before})
    window.show_artifacts("wgsl")
    shader = next((root / "reference").glob("*.wgsl"))
    line, _ = store_line(shader.read_text())
    shader.write_text(with_store_changed(shader.read_text(), lambda v: f"({v}) * 1.5"))
    (after,) = build_project(Project.open(root), ["wgsl"], shots.cache_dir)
    assert after.status == "ok" and after.key != before.key
    view.set_results({"wgsl": after})
    window.show_artifacts("wgsl")

    def diff_text():
        titles = [view.tabs.tabText(i) for i in range(view.tabs.count())]
        text = view.tabs.widget(titles.index("Diff")).toPlainText() if "Diff" in titles else ""
        return text if f"{shader.name}:{line}:" in text else ""

    text = wait_until(diff_text, 120, f"the Diff pane to name {shader.name}:{line}")
    titles = [view.tabs.tabText(i) for i in range(view.tabs.count())]
    view.tabs.setCurrentIndex(titles.index("Diff"))
    return {
        "line": line,
        "edited_to": shader.read_text().splitlines()[line - 1].strip(),
        "diff_head": text.splitlines()[:12],
        "picture": shots.shot(view, "03-build-diff-wgsl"),
    }


def sass_linked(shots) -> dict:
    from workbench.build.adapters import ADAPTERS
    from workbench.build.sass import nvdisasm

    assert nvdisasm() is not None, "no nvdisasm (pip install nvidia-cuda-nvdisasm)"
    assert ADAPTERS["nvptx"].detect().found, "no nvptx toolchain"
    window = _window(shots, shots.copy("saxpy", unique=True), ["nvptx"])
    facts = show_linked(shots, window, "nvptx", "04-sass-rust", kind="SASS")
    view = window.panels["artifacts"]
    sass = next(v for v in view.line_views() if v.code_kind == "SASS")
    ptx = next(v for v in view.line_views() if v.code_kind == "PTX")
    first = facts["ir_lines"][0]
    ptx_line = sass.line_map.ptx_line_of[first]
    assert ptx.linked == [ptx_line], (ptx.linked, ptx_line)  # the SASS line's PTX line is highlighted too
    note = view.lines_note.text()
    assert note.startswith(f"SASS line {first} ← PTX line {ptx_line}") and f":{facts['rust_line']}" in note, (
        note
    )
    facts["note_sass_to_rust"] = note
    facts["ptx_line"] = ptx_line
    facts["ptx_text"] = ptx.toPlainText().splitlines()[ptx_line - 1].strip()
    facts["nvdisasm"] = str(nvdisasm())
    facts["picture"] = shots.shot(view, "04-sass-rust")
    facts["window_picture"] = shots.shot(window, "04-sass-rust-window")
    return facts


STATES = {
    "spirv_linked": spirv_linked,
    "cpu_assembly_linked": cpu_assembly_linked,
    "build_diff": build_diff,
    "build_diff_wgsl": build_diff_wgsl,
    "sass_linked": sass_linked,
}

if __name__ == "__main__":
    sys.exit(main(STATES, __doc__.splitlines()[0], "ir-views"))
