"""Rust syntax highlighting with pygments' RustLexer, one block (line) at a time.

QSyntaxHighlighter re-runs `highlightBlock` only for the edited block and for the following blocks
whose starting state changed, so each line is lexed on its own with a small carried state (block
comment depth, inside a string, inside a raw string with n hashes). A line that starts inside such
a construct is coloured up to where it ends, and one that ends inside one is coloured from where it
opens; pygments lexes what lies between. Lexing is cached by line text (code repeats a lot), and a
freshly opened large file is highlighted in chunks from a zero-interval timer, so opening a 5,000
line file never stalls the window.
"""

from __future__ import annotations

import re
from functools import lru_cache

from pygments.lexers import RustLexer
from pygments.token import Comment, Keyword, String, Token
from PySide6.QtCore import QTimer
from PySide6.QtGui import QColor, QFont, QSyntaxHighlighter, QTextCharFormat, QTextDocument
from PySide6.QtWidgets import QPlainTextEdit

from workbench.ui import theme

# Block state: kind in the low 4 bits, a count (comment depth, raw-string hashes) above them.
NORMAL, COMMENT, STRING, RAW = 0, 1, 2, 3
UNKNOWN = -1  # not highlighted yet (beyond the lazy frontier)

_NORMAL_RE = re.compile(r"//|/\*|(?<![\w])b?r(#*)\"|(?<![\w])b?\"|'(?:\\u\{[0-9a-fA-F]+\}|\\.|[^\\'])'")
_COMMENT_RE = re.compile(r"/\*|\*/")
_STRING_END_RE = re.compile(r'(?:[^"\\]|\\.)*"')


def state_of(kind: int, count: int = 0) -> int:
    return kind | (count << 4)


def scan(text: str, state: int) -> tuple[int, int, int | None]:
    """Follow the multi-line constructs through one line.

    Returns (head_end, end_state, tail_start): the line starts inside the construct carried from
    the previous line up to `head_end` (0 when it starts in normal code); it ends inside an
    unterminated construct opened at `tail_start` (None when it ends in normal code, or still
    inside the carried construct, in which case `head_end` is the line's length).
    """
    kind, count = (NORMAL, 0) if state <= 0 else (state & 0xF, state >> 4)
    pos, head_end = 0, 0
    opened_at: int | None = None  # where the construct being followed opened; None: carried in
    while True:
        if kind == COMMENT:
            while count > 0:
                m = _COMMENT_RE.search(text, pos)
                if m is None:
                    return _open_end(text, head_end, state_of(COMMENT, count), opened_at)
                count += 1 if m.group() == "/*" else -1
                pos = m.end()
        elif kind == STRING:
            m = _STRING_END_RE.match(text, pos)
            if m is None:
                return _open_end(text, head_end, state_of(STRING), opened_at)
            pos = m.end()
        elif kind == RAW:
            end = text.find('"' + "#" * count, pos)
            if end < 0:
                return _open_end(text, head_end, state_of(RAW, count), opened_at)
            pos = end + 1 + count
        if kind != NORMAL and opened_at is None:
            head_end = pos  # the carried construct ends here
        kind, count = NORMAL, 0
        m = _NORMAL_RE.search(text, pos)
        if m is None:
            return head_end, NORMAL, None
        token = m.group()
        if token == "//":
            return head_end, NORMAL, None
        pos = m.end()
        if token == "/*":
            kind, count, opened_at = COMMENT, 1, m.start()
        elif token.endswith('"'):
            raw = "r" in token[:2]
            kind, count, opened_at = (RAW if raw else STRING), len(m.group(1) or ""), m.start()
        # else: a char literal, nothing left open


def _open_end(text: str, head_end: int, end_state: int, opened_at: int | None):
    if opened_at is None:
        return len(text), end_state, None  # the whole line is inside the carried construct
    return head_end, end_state, opened_at


@lru_cache(maxsize=16384)
def lex(text: str) -> tuple[tuple[int, int, object], ...]:
    """(start, length, token type) for the non-blank tokens of one line of normal Rust code."""
    spans = []
    for start, ttype, value in _LEXER.get_tokens_unprocessed(text + "\n"):
        length = len(value.rstrip("\n"))
        if length and value.strip():
            spans.append((start, length, ttype))
    return tuple(spans)


_LEXER = RustLexer(stripnl=False, ensurenl=False)

_FORMATS: dict[object, QTextCharFormat | None] = {}


def token_format(ttype) -> QTextCharFormat | None:
    """The character format of a pygments token type in the theme's syntax colours (`theme.SYNTAX`;
    a sub-type takes its parent's); None for plain text. The editor's Rust and the artifacts'
    PTX, WGSL and CUDA C++ are coloured by this one rule."""
    if ttype in _FORMATS:
        return _FORMATS[ttype]
    t = ttype
    while t not in theme.SYNTAX and t is not Token and t.parent is not None:
        t = t.parent
    fmt = None
    if t in theme.SYNTAX:
        color, italic = theme.SYNTAX[t]
        fmt = QTextCharFormat()
        fmt.setForeground(QColor(color))
        if italic:
            fmt.setFontItalic(True)
        if ttype in Keyword and ttype not in Keyword.Type:
            fmt.setFontWeight(QFont.Weight.DemiBold)
    _FORMATS[ttype] = fmt
    return fmt


class RustHighlighter(QSyntaxHighlighter):
    """Incremental Rust highlighter; `highlight_count` counts highlightBlock calls (for tests)."""

    #: Blocks highlighted at once (the top of a file just opened, then per timer tick): about a
    #: screenful. Lexing a line not seen before takes 0.2-0.5 ms on a loaded 2-core machine, so 200
    #: blocks held the event loop for up to 100 ms when a project opened (benchmarks/day_sequence.py).
    CHUNK = 48

    def __init__(self, document: QTextDocument):
        self.highlight_count = 0
        self._ready_until = self.CHUNK  # blocks at or past this number are left for the timer
        self._timer = QTimer()
        self._timer.setObjectName("RustHighlighter.lazy")
        self._timer.setInterval(0)
        self._timer.timeout.connect(self._highlight_next_chunk)
        super().__init__(document)
        self._timer.setParent(self)
        self._schedule()

    # ---------------------------------------------------------------- lazy full-document pass
    def _schedule(self) -> None:
        if self.document() is not None and self.document().blockCount() > self._ready_until:
            self._timer.start()

    def restart(self) -> None:
        """After replacing the whole text: highlight the top now, the rest in chunks."""
        self._ready_until = self.CHUNK
        self._schedule()

    def set_text(self, view: QPlainTextEdit, text: str) -> None:
        """Replace `view`'s whole text: the top highlighted now, the rest in chunks. The frontier is
        moved back before the text goes in: once a file was highlighted to its end every block is
        live, and `setPlainText` would highlight all of the next one at once."""
        self._timer.stop()
        self._ready_until = self.CHUNK
        view.setPlainText(text)
        self.restart()

    def is_done(self) -> bool:
        return not self._timer.isActive()

    def stop(self) -> None:
        self._timer.stop()

    def _highlight_next_chunk(self) -> None:
        doc = self.document()
        if doc is None:
            self._timer.stop()
            return
        start = self._ready_until
        self._ready_until = start + self.CHUNK
        first = doc.findBlockByNumber(start)
        if first.isValid():
            # Every block in the chunk goes from UNKNOWN to a real state, so Qt's own "state
            # changed, highlight the next block too" cascade runs through exactly this chunk.
            self.rehighlightBlock(first)
        if self._ready_until >= doc.blockCount():
            self._ready_until = 1 << 62  # everything is live from now on
            self._timer.stop()

    # ---------------------------------------------------------------- per-block highlighting
    def highlightBlock(self, text: str) -> None:  # noqa: N802 (Qt override)
        self.highlight_count += 1
        if self.currentBlock().blockNumber() >= self._ready_until:
            self.setCurrentBlockState(UNKNOWN)
            return
        state = self.previousBlockState()
        head_end, end_state, tail_start = scan(text, state)
        kind = state & 0xF if state > 0 else NORMAL
        if head_end:
            self._paint(0, head_end, Comment.Multiline if kind == COMMENT else String)
        code_end = len(text) if tail_start is None else tail_start
        if head_end < code_end:
            segment = text[head_end:code_end]
            for start, length, ttype in lex(segment):
                self._paint(head_end + start, length, ttype)
        if tail_start is not None and tail_start < len(text):
            tail_kind = end_state & 0xF
            self._paint(
                tail_start, len(text) - tail_start, Comment.Multiline if tail_kind == COMMENT else String
            )
        self.setCurrentBlockState(end_state)

    def _paint(self, start: int, length: int, ttype) -> None:
        fmt = self._format(ttype)
        if fmt is not None:
            self.setFormat(start, length, fmt)

    def _format(self, ttype) -> QTextCharFormat | None:
        return token_format(ttype)
