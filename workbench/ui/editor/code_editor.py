"""One source file in the editor: the one code view (`code_view.CodeView`) with Rust highlighting,
diagnostics, bracket matching and typing help.

Diagnostics (dicts shaped like `workbench.records.Diagnostic.to_dict()`) are drawn as wavy
underlines (ExtraSelections), a marker in the gutter and a tooltip with the compiler's rendered
message and the backend that reported it.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from PySide6.QtCore import QPoint, QRect, Qt, Signal
from PySide6.QtGui import QColor, QKeyEvent, QPainter, QPolygon, QTextCharFormat, QTextCursor, QTextFormat
from PySide6.QtWidgets import QTextEdit

from workbench.ui import theme
from workbench.ui.editor.code_view import CodeView, editor_font, show_tooltip
from workbench.ui.editor.highlighter import RustHighlighter

__all__ = ["CodeEditor", "editor_font"]

BRACKETS = {"(": ")", "[": "]", "{": "}"}
CLOSERS = {v: k for k, v in BRACKETS.items()}
SEVERITY_COLORS = theme.SEVERITY
SEVERITY_RANK = {"error": 0, "warning": 1, "note": 2, "help": 3}
BRACKET_SCAN_LIMIT = 200_000  # characters searched for a matching bracket
INDENT = "    "


class CodeEditor(CodeView):
    """A Rust source editor bound to one file (the one code view, with diagnostics in its gutter)."""

    #: The breakpoint lines (sorted) after an edit or a reload from disk moved or removed some.
    breakpointsMoved = Signal(object)

    def __init__(self, path: Path | None = None, parent=None, font_size: int = 10):
        super().__init__(parent, font_size=font_size)
        self.diagnostics: list[dict] = []
        self._anchors: list[tuple[dict, QTextCursor]] = []
        self._diag_by_line: dict[int, list[dict]] = {}
        self._search_selections: list[QTextEdit.ExtraSelection] = []
        self._text_cache: tuple[int, str] = (-1, "")
        self.path = Path(path) if path is not None else None
        #: The Debug dock's marks: breakpoint lines (a red dot) and the line stopped at (an arrow
        #: and the line's background); `set_debug_marks`.
        self.breakpoint_lines: set[int] = set()
        self.execution_line: int | None = None
        #: Each breakpoint anchored to its line's text and end (`_line_anchor`): edits move it
        #: with its statement, and the deletion of the whole line removes it, as editors do.
        self._breakpoints: list[QTextCursor] = []
        self._replacing = False  # the whole text is being replaced (`reload_preserving_view`)
        self.setTabStopDistance(self.fontMetrics().horizontalAdvance(" ") * 4)
        self.setCenterOnScroll(False)
        self.highlighter = RustHighlighter(self.document())
        self.cursorPositionChanged.connect(self.update_extra_selections)
        self.document().contentsChanged.connect(self._on_contents_changed)
        self.update_extra_selections()

    # ---------------------------------------------------------------- file I/O
    def load_text(self, text: str) -> None:
        """Replace the whole buffer (a new undo history; not marked modified)."""
        self.highlighter.set_text(self, text)
        self.document().setModified(False)

    def reload_preserving_view(self, text: str) -> None:
        """Replace the text from disk, keeping the cursor line and scroll position when possible."""
        line = self.textCursor().blockNumber()
        column = self.textCursor().positionInBlock()
        scroll = self.verticalScrollBar().value()
        old, marks = self.text(), sorted(self.breakpoint_lines)
        self._replacing = True
        try:
            self.load_text(text)
        finally:
            self._replacing = False
        if marks:  # the breakpoints to the lines their statements are on now (a diff of the two)
            self._set_breakpoints(follow_lines(old, text, marks))
        self.go_to(line + 1, column + 1)
        self.verticalScrollBar().setValue(scroll)

    def text(self) -> str:
        doc = self.document()
        if self._text_cache[0] != doc.revision():
            self._text_cache = (doc.revision(), doc.toPlainText())
        return self._text_cache[1]

    def is_modified(self) -> bool:
        return self.document().isModified()

    def shutdown(self) -> None:
        self.highlighter.stop()

    # ---------------------------------------------------------------- navigation
    def go_to(self, line: int, column: int = 1) -> None:
        """Move the cursor to 1-based line:column (clamped) and show it."""
        doc = self.document()
        block = doc.findBlockByNumber(max(0, min(line - 1, doc.blockCount() - 1)))
        cursor = QTextCursor(block)
        cursor.movePosition(
            QTextCursor.MoveOperation.Right,
            QTextCursor.MoveMode.MoveAnchor,
            max(0, min(column - 1, block.length() - 1)),
        )
        self.setTextCursor(cursor)
        self.centerCursor()

    # ---------------------------------------------------------------- gutter
    def set_debug_marks(self, breakpoints: set[int], execution_line: int | None) -> None:
        self.execution_line = execution_line
        self._set_breakpoints(breakpoints, announce=False)
        self.update_extra_selections()

    def _line_anchor(self, line: int) -> QTextCursor | None:
        """A cursor selecting line `line`'s text and its end (the newline; the document's end on
        the last line): text typed in it or beside it keeps it on its line; once the whole line
        is deleted the selection is empty."""
        doc = self.document()
        block = doc.findBlockByNumber(line - 1)
        if line < 1 or not block.isValid():
            return None
        cursor = QTextCursor(doc)
        cursor.setPosition(block.position())
        cursor.setPosition(min(block.position() + block.length(), doc.characterCount() - 1),
                           QTextCursor.MoveMode.KeepAnchor)  # fmt: skip
        return cursor

    def _set_breakpoints(self, lines: set[int] | list[int], announce: bool = True) -> None:
        anchors = {line: self._line_anchor(line) for line in lines}
        self._breakpoints = [cursor for cursor in anchors.values() if cursor is not None]
        changed = set(lines) != self.breakpoint_lines
        self.breakpoint_lines = set(lines)
        self.gutter.update()
        if announce and changed:
            self.breakpointsMoved.emit(sorted(self.breakpoint_lines))

    def _follow_breakpoints(self) -> None:
        """After an edit: each breakpoint on the line its text is on now; those whose whole line
        went are removed (two lines joined into one keep one breakpoint)."""
        doc = self.document()
        lines = {
            doc.findBlock(cursor.selectionStart()).blockNumber() + 1
            for cursor in self._breakpoints
            if cursor.hasSelection()
        }
        self._set_breakpoints(lines)  # anchored afresh: to the whole of the line it is on now

    def paint_gutter_line(self, painter: QPainter, line: int, rect: QRect) -> None:
        """A dot in the colour of the line's worst diagnostic; a breakpoint's red dot and the
        stopped line's arrow over it."""
        height = self.fontMetrics().height()
        if line in self.breakpoint_lines or line == self.execution_line:
            size = max(10, height * 3 // 4)
            top = rect.top() + (height - size) // 2
            painter.setPen(Qt.PenStyle.NoPen)
            if line in self.breakpoint_lines:
                painter.setBrush(QColor(theme.DEBUG_BREAKPOINT))
                painter.drawEllipse(2, top, size, size)
            if line == self.execution_line:  # an arrow, inside the breakpoint's dot when there is one
                inset = 2 if line in self.breakpoint_lines else 0
                left, right = 2 + inset, 2 + size - inset
                painter.setBrush(QColor(theme.DEBUG_LINE))
                painter.drawPolygon(QPolygon([QPoint(left, top + inset), QPoint(right, top + size // 2),
                                              QPoint(left, top + size - inset)]))  # fmt: skip
            return
        diags = self._diag_by_line.get(line)
        if diags:
            worst = min(diags, key=lambda d: SEVERITY_RANK.get(d.get("severity"), 9))
            height = self.fontMetrics().height()
            size = max(6, height // 2)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QColor(SEVERITY_COLORS.get(worst.get("severity"), theme.LINK)))
            painter.drawEllipse(4, rect.top() + (height - size) // 2, size, size)

    def gutter_tooltip(self, line: int) -> str:
        return self.diagnostic_tooltip(line)

    # ---------------------------------------------------------------- diagnostics
    def set_diagnostics(self, diagnostics: list[dict]) -> None:
        """Show these diagnostics (all for this file; 1-based lines and columns).

        Each one is anchored to a text cursor spanning its range: edits (and undo) move it with
        the text, and a range whose text was deleted disappears instead of underlining whatever
        now sits at the old line and column."""
        self.diagnostics = [d for d in diagnostics if d.get("line")]
        self._anchors = [(diag, self._anchor(diag)) for diag in self.diagnostics]
        self._reindex()

    def _anchor(self, diag: dict) -> QTextCursor:
        doc = self.document()
        line = int(diag["line"])
        block = doc.findBlockByNumber(line - 1)
        cursor = QTextCursor(doc)
        if not block.isValid():
            return cursor  # past the end: no selection, never drawn
        start = block.position() + max(0, min(int(diag.get("column") or 1) - 1, block.length() - 1))
        end_line = int(diag.get("end_line") or line)
        end_block = doc.findBlockByNumber(end_line - 1)
        if not end_block.isValid():
            end_block = block
        end_col = diag.get("end_column")
        if end_col is None:
            end = block.position() + block.length() - 1
        else:
            end = end_block.position() + max(0, min(int(end_col) - 1, end_block.length() - 1))
        if end <= start:  # an empty span still needs one underlined character
            end = min(start + 1, block.position() + max(1, block.length() - 1))
            start = min(start, end - 1)
        cursor.setPosition(start)
        cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
        return cursor

    def _reindex(self) -> None:
        """Where the anchored diagnostics are now: per line, with their current columns."""
        self._diag_by_line = {}
        doc = self.document()
        for diag, cursor in self._anchors:
            if not cursor.hasSelection():
                continue
            start, end = doc.findBlock(cursor.selectionStart()), doc.findBlock(cursor.selectionEnd())
            live = dict(
                diag,
                line=start.blockNumber() + 1,
                column=cursor.selectionStart() - start.position() + 1,
                end_line=end.blockNumber() + 1,
                end_column=cursor.selectionEnd() - end.position() + 1,
            )
            self._diag_by_line.setdefault(live["line"], []).append(live)
        self.update_extra_selections()
        self.gutter.update()

    def _on_contents_changed(self) -> None:
        if self._anchors:
            self._reindex()
        if self._breakpoints and not self._replacing:
            self._follow_breakpoints()

    def live_diagnostics(self) -> list[dict]:
        """The diagnostics still shown, at their current line and column (edits move them)."""
        return [d for line in sorted(self._diag_by_line) for d in self._diag_by_line[line]]

    def diagnostics_at_line(self, line: int) -> list[dict]:
        return list(self._diag_by_line.get(line, []))

    def diagnostic_tooltip(self, line: int, column: int | None = None) -> str:
        diags = self._diag_by_line.get(line, [])
        if column is not None:
            diags = [d for d in diags if _covers(d, line, column)] or diags
        parts = []
        for d in diags:
            body = d.get("rendered") or d.get("message", "")
            backend = d.get("backend") or "?"
            parts.append(f"<b>[{backend}] {d.get('severity', '')}</b><pre>{_escape(body.rstrip())}</pre>")
        return "<hr>".join(parts)

    def _diagnostic_selections(self) -> list[QTextEdit.ExtraSelection]:
        selections = []
        for diag, anchor in self._anchors:
            if not anchor.hasSelection():
                continue  # its text was deleted (an edit, an undo): nothing left to underline
            line = self.document().findBlock(anchor.selectionStart()).blockNumber() + 1
            selection = QTextEdit.ExtraSelection()
            fmt = QTextCharFormat()
            fmt.setUnderlineStyle(QTextCharFormat.UnderlineStyle.WaveUnderline)
            fmt.setUnderlineColor(QColor(SEVERITY_COLORS.get(diag.get("severity"), theme.LINK)))
            fmt.setToolTip(self.diagnostic_tooltip(line))
            selection.format = fmt
            selection.cursor = QTextCursor(anchor)
            selections.append(selection)
        return selections

    def event(self, event) -> bool:
        if event.type() == event.Type.ToolTip:
            cursor = self.cursorForPosition(self.viewport().mapFromGlobal(event.globalPos()))
            line = cursor.blockNumber() + 1
            return show_tooltip(self, event, self.diagnostic_tooltip(line, cursor.positionInBlock() + 1))
        return super().event(event)

    # ---------------------------------------------------------------- extra selections
    def set_search_selections(self, selections: list[QTextEdit.ExtraSelection]) -> None:
        self._search_selections = selections
        self.update_extra_selections()

    def update_extra_selections(self) -> None:
        selections = []
        current = QTextEdit.ExtraSelection()
        current.format.setBackground(self.palette().color(self.palette().ColorRole.Base).lighter(130))
        current.format.setProperty(QTextFormat.Property.FullWidthSelection, True)
        current.cursor = self.textCursor()
        current.cursor.clearSelection()
        selections.append(current)
        if self.execution_line is not None:  # the line the debugger stopped at
            block = self.document().findBlockByNumber(self.execution_line - 1)
            if block.isValid():
                stopped = QTextEdit.ExtraSelection()
                stopped.format.setBackground(QColor(theme.DEBUG_LINE_BACKGROUND))
                stopped.format.setProperty(QTextFormat.Property.FullWidthSelection, True)
                stopped.cursor = QTextCursor(block)
                selections.append(stopped)
        selections.extend(self._search_selections)
        selections.extend(self._diagnostic_selections())
        selections.extend(self._bracket_selections())
        self.setExtraSelections(selections)

    # ---------------------------------------------------------------- bracket matching
    def matching_bracket(self, position: int | None = None) -> tuple[int, int] | None:
        """(bracket, match) positions for the bracket after or before the cursor; None if none."""
        text = self.text()
        pos = self.textCursor().position() if position is None else position
        for candidate in (pos, pos - 1):
            if 0 <= candidate < len(text) and (text[candidate] in BRACKETS or text[candidate] in CLOSERS):
                match = _find_match(text, candidate)
                return (candidate, match) if match is not None else (candidate, -1)
        return None

    def _bracket_selections(self) -> list[QTextEdit.ExtraSelection]:
        found = self.matching_bracket()
        if found is None:
            return []
        selections = []
        ok = found[1] >= 0
        for pos in found if ok else found[:1]:
            selection = QTextEdit.ExtraSelection()
            selection.format.setBackground(QColor(theme.BRACKET_MATCH if ok else theme.BRACKET_MISMATCH))
            selection.format.setForeground(QColor(theme.SELECTED_TEXT))
            cursor = QTextCursor(self.document())
            cursor.setPosition(pos)
            cursor.setPosition(pos + 1, QTextCursor.MoveMode.KeepAnchor)
            selection.cursor = cursor
            selections.append(selection)
        return selections

    # ---------------------------------------------------------------- typing
    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802
        if self.isReadOnly():
            return super().keyPressEvent(event)
        key = event.key()
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and not event.modifiers():
            # Keep the indentation of the current line; indent once more after an opening brace.
            line = self.textCursor().block().text()[: self.textCursor().positionInBlock()]
            indent = line[: len(line) - len(line.lstrip())]
            if line.rstrip().endswith(("{", "(", "[")):
                indent += INDENT
            self.textCursor().insertText("\n" + indent)
            self.ensureCursorVisible()
            return
        if key == Qt.Key.Key_Tab and not event.modifiers() and not self.textCursor().hasSelection():
            self.textCursor().insertText(INDENT)
            return
        super().keyPressEvent(event)


def follow_lines(old: str, new: str, lines: list[int]) -> list[int]:
    """Where lines `lines` (1-based) of `old` are in `new`, by a diff of their lines (the text
    replaced from disk): a line kept, or one of a run of lines changed into as many, is at its
    place in `new`; a line deleted, or changed within a run of another length, is found by its
    text within that run, else dropped. (An edit in the editor moves the anchors instead.)"""
    before, after = old.splitlines(), new.splitlines()
    moved = []
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for line in lines:
            k = line - 1
            if not i1 <= k < i2:
                continue
            if tag == "equal" or (tag == "replace" and i2 - i1 == j2 - j1):
                moved.append(j1 + k - i1 + 1)
            elif before[k].strip():
                found = [j for j in range(j1, j2) if after[j].strip() == before[k].strip()]
                if found:
                    moved.append(found[0] + 1)
    return sorted(set(moved))


def _find_match(text: str, pos: int) -> int | None:
    char = text[pos]
    if char in BRACKETS:
        opener, closer, step = char, BRACKETS[char], 1
    else:
        opener, closer, step = char, CLOSERS[char], -1
    depth = 0
    end = len(text) if step > 0 else -1
    limit = BRACKET_SCAN_LIMIT
    i = pos
    while i != end and limit > 0:
        c = text[i]
        if c == opener:
            depth += 1
        elif c == closer:
            depth -= 1
            if depth == 0:
                return i
        i += step
        limit -= 1
    return None


def _covers(diag: dict, line: int, column: int) -> bool:
    start = (int(diag.get("line") or 0), int(diag.get("column") or 1))
    end = (int(diag.get("end_line") or start[0]), int(diag.get("end_column") or 1 << 30))
    return start <= (line, column) <= end


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
