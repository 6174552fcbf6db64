"""The code editor on its own: incremental highlighting, brackets, find/replace, go-to-line, disk reloads."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCursor, QTextFormat

from tests.waits import HANG_GUARD_MS
from workbench.ui.editor import CodeEditor, EditorTabs
from workbench.ui.editor.goto_line import parse_location
from workbench.ui.editor.highlighter import COMMENT, RAW, STRING, scan, state_of

EXAMPLE_LIB = Path(__file__).resolve().parents[2] / "resources" / "examples" / "saxpy" / "src" / "lib.rs"


def big_source(lines: int = 5000) -> str:
    base = EXAMPLE_LIB.read_text().splitlines()
    out = []
    while len(out) < lines:
        out.extend(base)
    return "\n".join(out[:lines]) + "\n"


def wait_highlighted(qtbot, editor: CodeEditor) -> None:
    qtbot.waitUntil(editor.highlighter.is_done, timeout=HANG_GUARD_MS)


def color_at(editor: CodeEditor, line: int, column: int):
    block = editor.document().findBlockByNumber(line - 1)
    for fr in block.layout().formats():
        if fr.start <= column - 1 < fr.start + fr.length:
            return fr.format.foreground().color().name()
    return None


def test_scan_follows_multiline_constructs():
    assert scan("let a = 1; /* open", 0) == (0, state_of(COMMENT, 1), 11)
    assert scan("inside", state_of(COMMENT, 1)) == (6, state_of(COMMENT, 1), None)
    assert scan("a */ let b = 2;", state_of(COMMENT, 1)) == (4, 0, None)
    assert scan("/* /* nested */", 0)[1] == state_of(COMMENT, 1)
    assert scan('let s = "abc', 0) == (0, state_of(STRING), 8)
    assert scan('def"; x', state_of(STRING)) == (4, 0, None)
    assert scan('r##"raw', 0) == (0, state_of(RAW, 2), 0)
    assert scan('x"# still "## done', state_of(RAW, 2)) == (13, 0, None)
    assert scan("let c = '\"'; // \" not a string", 0) == (0, 0, None)


def test_highlighting_is_incremental_on_a_5000_line_file(make_widget, qtbot):
    editor = make_widget(CodeEditor, show=True)
    editor.load_text(big_source(5000))
    assert editor.blockCount() >= 5000
    wait_highlighted(qtbot, editor)
    # The whole file got highlighted: a keyword near the end carries the keyword colour.
    last_fn = max(
        i
        for i in range(editor.blockCount())
        if editor.document().findBlockByNumber(i).text().startswith("pub fn")
    )
    assert color_at(editor, last_fn + 1, 1) == "#c678dd"

    editor.highlighter.highlight_count = 0
    editor.go_to(2500)
    editor.textCursor().insertText("let x = 1; ")
    assert 1 <= editor.highlighter.highlight_count <= 3

    # Opening a block comment re-highlights the following lines until the state settles.
    editor.highlighter.highlight_count = 0
    editor.go_to(2600)
    editor.textCursor().insertText("/* ")
    opened = editor.highlighter.highlight_count
    assert opened > 3
    assert color_at(editor, 2610, 1) == "#7f848e"  # now inside the comment
    editor.highlighter.highlight_count = 0
    editor.undo()
    assert color_at(editor, 2610, 1) != "#7f848e"


def test_bracket_matching(make_widget):
    editor = make_widget(CodeEditor)
    editor.load_text("fn f(a: [u32; 2]) {\n    g(a[0] + 1);\n}\n")
    text = editor.text()
    editor.go_to(1, text.index("{") + 1)
    assert editor.matching_bracket() == (text.index("{"), text.rindex("}"))
    cursor = editor.textCursor()
    cursor.setPosition(text.rindex("]") + 1)  # just after a closing bracket
    editor.setTextCursor(cursor)
    assert editor.matching_bracket() == (text.rindex("]"), text.rindex("["))
    editor.load_text("fn f( {")
    editor.go_to(1, 5)
    assert editor.matching_bracket() == (4, -1)


def test_find_and_replace(make_widget, qtbot, tmp_path):
    tabs = make_widget(EditorTabs, show=True)
    path = tmp_path / "k.rs"
    path.write_text("let x = 1;\nlet y = x + x;\n")
    editor = tabs.open_file(path)
    tabs.show_find()
    tabs.find_bar.find_edit.setText("x")
    assert tabs.find_bar.match_count == 3
    assert editor.textCursor().selectedText() == "x"
    first = editor.textCursor().selectionStart()
    assert tabs.find_bar.find_next()
    assert editor.textCursor().selectionStart() > first
    tabs.show_find(replace=True)
    tabs.find_bar.replace_edit.setText("value")
    assert tabs.find_bar.replace_all() == 3
    assert editor.text() == "let value = 1;\nlet y = value + value;\n"
    editor.undo()  # replace-all is one undo step
    assert editor.text() == "let x = 1;\nlet y = x + x;\n"
    qtbot.keyClick(tabs.find_bar.find_edit, Qt.Key.Key_Escape)
    assert not tabs.find_bar.isVisible()


def test_go_to_line(make_widget, tmp_path):
    tabs = make_widget(EditorTabs, show=True)
    path = tmp_path / "k.rs"
    path.write_text("".join(f"// line {i}\n" for i in range(1, 101)))
    editor = tabs.open_file(path)
    tabs.show_goto()
    assert tabs.goto_bar.isVisible()
    tabs.goto_bar.edit.setText("42:4")
    tabs.goto_bar.accept()
    assert editor.textCursor().blockNumber() == 41
    assert editor.textCursor().positionInBlock() == 3
    assert parse_location("7") == (7, 1)
    assert parse_location("x") is None and parse_location("0") is None


def test_diagnostics_are_underlined_with_gutter_tooltip(make_widget):
    editor = make_widget(CodeEditor)
    editor.load_text('fn f() {\n    let x: u32 = "s";\n}\n')
    diag = {
        "file": "src/lib.rs",
        "line": 2,
        "column": 18,
        "end_line": 2,
        "end_column": 21,
        "severity": "error",
        "message": "mismatched types",
        "rendered": "error[E0308]: mismatched types",
        "backend": "cpu",
    }
    editor.set_diagnostics([diag])
    wavy = [
        s
        for s in editor.extraSelections()
        if s.format.underlineStyle() == s.format.UnderlineStyle.WaveUnderline
    ]
    assert len(wavy) == 1
    assert wavy[0].cursor.block().blockNumber() == 1
    assert wavy[0].cursor.selectedText() == '"s"'
    tooltip = editor.diagnostic_tooltip(2)
    assert "E0308" in tooltip and "[cpu]" in tooltip
    assert editor.diagnostics_at_line(2) == [diag]


def test_current_line_is_highlighted(make_widget):
    editor = make_widget(CodeEditor)
    editor.load_text("a\nb\nc\n")
    editor.go_to(2)
    full = [s for s in editor.extraSelections() if s.format.property(QTextFormat.Property.FullWidthSelection)]
    assert full and full[0].cursor.blockNumber() == 1


def test_undo_redo(make_widget):
    editor = make_widget(CodeEditor)
    editor.load_text("abc\n")
    editor.moveCursor(QTextCursor.MoveOperation.End)
    editor.insertPlainText("def")
    editor.undo()
    assert editor.text() == "abc\n"
    editor.redo()
    assert editor.text() == "abc\ndef"


def test_save_emits_saved(make_widget, qtbot, tmp_path):
    tabs = make_widget(EditorTabs)
    path = tmp_path / "k.rs"
    path.write_text("fn a() {}\n")
    editor = tabs.open_file(path)
    editor.moveCursor(QTextCursor.MoveOperation.End)
    editor.insertPlainText("fn b() {}\n")
    assert editor.is_modified()
    with qtbot.waitSignal(tabs.saved, timeout=HANG_GUARD_MS) as blocker:
        assert tabs.save()
    assert blocker.args == [str(path.resolve())]
    assert path.read_text() == "fn a() {}\nfn b() {}\n"
    assert not editor.is_modified()


def test_unmodified_buffer_reloads_silently(make_widget, qtbot, tmp_path):
    tabs = make_widget(EditorTabs, show=True)
    path = tmp_path / "k.rs"
    path.write_text("fn a() {}\n")
    editor = tabs.open_file(path)
    with qtbot.waitSignal(tabs.reloadedFromDisk, timeout=HANG_GUARD_MS):
        path.write_text("fn changed() {}\n")
    assert editor.text() == "fn changed() {}\n"
    assert not editor.is_modified()
    assert not editor.parentWidget().disk_bar.isVisible()


@pytest.mark.parametrize("choice", ["reload", "keep"])
def test_unsaved_edits_are_never_lost_on_disk_change(make_widget, qtbot, tmp_path, choice):
    tabs = make_widget(EditorTabs, show=True)
    path = tmp_path / "k.rs"
    path.write_text("fn a() {}\n")
    editor = tabs.open_file(path)
    editor.moveCursor(QTextCursor.MoveOperation.End)
    editor.insertPlainText("// mine\n")
    with qtbot.waitSignal(tabs.conflictOnDisk, timeout=HANG_GUARD_MS):
        path.write_text("fn theirs() {}\n")
    bar = editor.parentWidget().disk_bar
    assert bar.isVisible()
    assert editor.text() == "fn a() {}\n// mine\n"  # nothing replaced behind the user's back
    if choice == "reload":
        qtbot.mouseClick(bar.reload_button, Qt.MouseButton.LeftButton)
        assert editor.text() == "fn theirs() {}\n"
        assert not editor.is_modified()
    else:
        qtbot.mouseClick(bar.keep_button, Qt.MouseButton.LeftButton)
        assert editor.text() == "fn a() {}\n// mine\n"
        assert editor.is_modified()
        assert tabs.save()
        assert path.read_text() == "fn a() {}\n// mine\n"
    assert not bar.isVisible()


def test_read_only_editor_refuses_edits_and_saves(make_widget, tmp_path):
    tabs = make_widget(EditorTabs)
    path = tmp_path / "k.rs"
    path.write_text("fn a() {}\n")
    editor = tabs.open_file(path)
    tabs.set_read_only(True)
    assert editor.isReadOnly()
    assert not tabs.save()
