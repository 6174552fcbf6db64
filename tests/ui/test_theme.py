"""One theme, one code view (issue 22): the artifacts' code is the editor's code view, with its
gutter, its dark palette and its syntax colours, all from `workbench.ui.theme`."""

from __future__ import annotations

import re
from pathlib import Path

from pygments.token import Keyword
from PySide6.QtGui import QColor

from tests.waits import HANG_GUARD_MS
from workbench.ui import theme
from workbench.ui.artifacts.code_panes import LINKED, code_view, set_code
from workbench.ui.editor.code_editor import CodeEditor
from workbench.ui.editor.code_view import CodeView, LineNumberGutter

UI = Path(__file__).resolve().parents[2] / "workbench" / "ui"
RUST = "fn main() {\n    let x = 1;\n}\n" + "\n" * 30
WGSL = "fn main() {\n    let x = 1;\n}\n" + "\n" * 30


def foreground_of(view, line: int, column: int) -> QColor | None:
    """The colour the highlighter gave the character at 0-based `line`:`column` (None: plain)."""
    block = view.document().findBlockByNumber(line)
    for fmt in block.layout().formats():
        if fmt.start <= column < fmt.start + fmt.length and fmt.format.hasProperty(
            fmt.format.Property.ForegroundBrush
        ):
            return fmt.format.foreground().color()
    return None


def test_the_artifacts_code_is_the_editor_s_code_view_in_the_theme_s_colours(make_widget, qtbot):
    editor = make_widget(CodeEditor, show=True)
    editor.load_text(RUST)
    artifact = make_widget(code_view, "artifact:saxpy.wgsl", show=True)
    set_code(artifact, WGSL, "wgsl")
    for view in (editor, artifact):
        view.resize(500, 400)
    # A highlighter given a document with text colours it from the event loop.
    qtbot.waitUntil(
        lambda: editor.highlighter.is_done() and foreground_of(artifact, 0, 0) is not None,
        timeout=HANG_GUARD_MS,
    )

    for view in (editor, artifact):
        assert isinstance(view, CodeView) and type(view.gutter) is LineNumberGutter
        palette = view.palette()
        assert palette.color(palette.ColorRole.Base) == QColor(theme.CODE_BACKGROUND)
        assert palette.color(palette.ColorRole.Text) == QColor(theme.CODE_TEXT)
        # `fn` is a keyword in Rust and in WGSL: one colour in both views
        assert foreground_of(view, 0, 0) == QColor(theme.SYNTAX[Keyword][0])

    # What is drawn: the same background under the text and in the gutter of both views.
    images = [view.grab().toImage() for view in (editor, artifact)]
    for image, view in zip(images, (editor, artifact), strict=True):
        below_text = view.viewport().geometry().bottomRight()
        assert QColor(image.pixel(below_text.x() - 30, below_text.y() - 10)) == QColor(theme.CODE_BACKGROUND)
    gutter_colours = {QColor(image.pixel(2, 300)).name() for image in images}
    assert gutter_colours == {QColor(theme.CODE_BACKGROUND).darker(115).name()}

    # Linked lines (Rust <-> PTX) are marked in the theme's dark colour, the text keeps its colours.
    artifact.set_linked([1])
    assert LINKED == QColor(theme.LINKED_LINE) and LINKED.lightness() < 128
    (selection,) = artifact.extraSelections()
    assert selection.format.background().color() == LINKED
    assert not selection.format.hasProperty(selection.format.Property.ForegroundBrush)


def test_colours_are_written_in_the_theme_module_only():
    """No panel spells a colour of its own (the plot tabs' series marks aside: ui/plots/)."""
    spelled = {
        str(path.relative_to(UI)): re.findall(r"#[0-9a-fA-F]{6}\b", path.read_text())
        for path in UI.rglob("*.py")
        if path.name != "theme.py" and "plots" not in path.relative_to(UI).parts
    }
    assert {name: found for name, found in spelled.items() if found} == {}
