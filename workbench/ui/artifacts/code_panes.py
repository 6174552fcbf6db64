"""The read-only code panes of the artifacts view: numbered, highlighted with pygments in the
editor's colours, linked lines marked, updated in place (only the changed span replaced), files
read with a size cap. Widgets only; the view (`view.py`) chooses what they show."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QColor, QPainter, QSyntaxHighlighter, QTextCursor, QTextFormat
from PySide6.QtWidgets import QPlainTextEdit, QTextEdit

from workbench.build.ptx_lines import PtxLines
from workbench.ui import theme
from workbench.ui.editor.code_view import CodeView
from workbench.ui.editor.highlighter import token_format

#: Artifact suffixes shown as text, with their pygments lexer (None: plain text).
TEXT_SUFFIXES = {
    ".ptx": "ptx",
    ".s": "ptx",
    ".asm": "gas",  # the cpu build's assembly with line tables (GNU as syntax)
    ".sass": None,  # nvdisasm -gp of an nvptx build (workbench.build.sass)
    ".spvasm": None,
    ".wgsl": "wgsl",
    ".cu": "cuda",
    ".cuh": "cuda",
    ".rs": "rust",
    ".msl": "c",
    ".metal": "c",
    ".hlsl": "c",
}
#: Files bigger than this are shown truncated (a PTX of a big crate can be megabytes).
MAX_TEXT_BYTES = 2_000_000
#: Highlighting is per line with pygments; beyond this many lines it is skipped (too slow).
MAX_HIGHLIGHT_LINES = 20_000


class PygmentsHighlighter(QSyntaxHighlighter):
    """Line-by-line highlighting with a pygments lexer (good enough for read-only code views), in
    the editor's syntax colours (`highlighter.token_format`)."""

    def __init__(self, document, lexer_name: str):
        super().__init__(document)
        from pygments.lexers import get_lexer_by_name

        self.lexer = get_lexer_by_name(lexer_name, stripnl=False, ensurenl=False)

    def highlightBlock(self, text: str) -> None:  # noqa: N802
        position = 0
        for token, value in self.lexer.get_tokens(text):
            fmt = token_format(token)
            if fmt is not None:
                self.setFormat(position, len(value), fmt)
            position += len(value)


#: Background of the lines that belong together (a Rust line and its PTX / SPIR-V lines).
LINKED = QColor(theme.LINKED_LINE)


class NumberedView(CodeView):
    """A read-only code view (the editor's, with its gutter and palette), linked lines highlighted."""

    MARKER_WIDTH = 0  # nothing is marked left of the numbers: a linked line's whole row is

    def __init__(self):
        super().__init__()
        self.linked: list[int] = []  # 1-based lines highlighted as belonging to the other side
        self.line_map: PtxLines | None = None  # PTX or SPIR-V lines -> Rust lines
        self.code_kind = ""  # "PTX" or "SPIR-V": what the note calls its lines
        self._linked_set: set[int] = set()

    def paint_gutter_line(self, painter: QPainter, line: int, rect: QRect) -> None:
        if line in self._linked_set:
            painter.fillRect(rect, LINKED)

    def paint_gutter(self, event) -> None:
        self._linked_set = set(self.linked)
        super().paint_gutter(event)

    def set_linked(self, lines: list[int], scroll: bool = True) -> None:
        """Highlight these 1-based lines (full width); scroll the first into view."""
        self.linked = list(lines)
        selections = []
        doc = self.document()
        for line in self.linked:
            block = doc.findBlockByNumber(line - 1)
            if not block.isValid():
                continue
            selection = QTextEdit.ExtraSelection()
            selection.format.setBackground(LINKED)  # the syntax colours stay readable on it
            selection.format.setProperty(QTextFormat.Property.FullWidthSelection, True)
            selection.cursor = QTextCursor(block)
            selections.append(selection)
        self.setExtraSelections(selections)
        if scroll and self.linked:
            block = doc.findBlockByNumber(self.linked[0] - 1)
            if block.isValid():
                first = self.firstVisibleBlock().blockNumber() + 1
                visible = max(1, self.viewport().height() // max(1, self.fontMetrics().height()))
                if not first <= self.linked[0] < first + visible - 1:
                    bar = self.verticalScrollBar()
                    bar.setValue(max(0, self.linked[0] - 1 - visible // 3))
        self.gutter.update()


def code_view(name: str = "") -> QPlainTextEdit:
    view = NumberedView()
    view.setObjectName(name)
    view.setReadOnly(True)
    view.setTextInteractionFlags(
        Qt.TextInteractionFlag.TextSelectableByMouse | Qt.TextInteractionFlag.TextSelectableByKeyboard
    )
    return view


def set_code(view: QPlainTextEdit, text: str, lexer: str | None) -> None:
    view.setPlainText(text)
    old = getattr(view, "_highlighter", None)
    if old is not None:
        old.setDocument(None)
        view._highlighter = None
    if lexer and text.count("\n") < MAX_HIGHLIGHT_LINES:
        try:
            view._highlighter = PygmentsHighlighter(view.document(), lexer)
        except Exception:  # no lexer of that name in this pygments: plain text is fine
            view._highlighter = None


def _common_prefix(a: str, b: str) -> int:
    """Length of the common prefix (binary search over slice comparisons: C speed on big texts)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: str, b: str, limit: int) -> int:
    """Length of the common suffix, at most `limit`."""
    lo, hi = 0, min(len(a), len(b), limit)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid :] == b[len(b) - mid :]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _utf16_length(text: str) -> int:
    """Qt text positions count UTF-16 code units (a character beyond U+FFFF counts 2)."""
    return len(text.encode("utf-16-le")) // 2


def replace_changed(view: QPlainTextEdit, old: str, new: str) -> None:
    """Make `view` show `new` by replacing only the span that differs from `old` (its text now).

    The document's highlighter then re-highlights the changed blocks only, and the view keeps
    its scroll position and selection outside the change."""
    start = _common_prefix(old, new)
    tail = _common_suffix(old, new, min(len(old), len(new)) - start)
    cursor = QTextCursor(view.document())
    cursor.beginEditBlock()
    cursor.setPosition(_utf16_length(old[:start]))
    cursor.setPosition(_utf16_length(old[: len(old) - tail]), QTextCursor.MoveMode.KeepAnchor)
    cursor.insertText(new[start : len(new) - tail])
    cursor.endEditBlock()


def read_text(path: Path) -> str:
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_TEXT_BYTES + 1)
    except OSError as exc:
        return f"// cannot read {path}: {exc}"
    text = data[:MAX_TEXT_BYTES].decode("utf-8", errors="replace")
    if len(data) > MAX_TEXT_BYTES:
        text += f"\n// … truncated at {MAX_TEXT_BYTES:,} bytes; open {path} for the rest"
    return text
