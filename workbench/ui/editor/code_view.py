"""The one code view: a QPlainTextEdit with the line-number gutter and the theme's code palette.

The editor (`CodeEditor`: diagnostics, brackets, typing) and the artifacts view (`NumberedView`:
PTX / SPIR-V / WGSL beside the Rust source, linked lines) are both this view, so they look alike
and one change to the gutter or the colours reaches both. A subclass marks a line in the gutter
through `paint_gutter_line` and explains it through `gutter_tooltip`.
"""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize, Qt, Signal
from PySide6.QtGui import QFont, QFontDatabase, QPainter
from PySide6.QtWidgets import QPlainTextEdit, QToolTip, QWidget

from workbench.ui import theme


def editor_font(point_size: int | None = None) -> QFont:
    """The system's fixed-width font (at `point_size`, else its own size); also for logs and code views."""
    font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
    font.setStyleHint(QFont.StyleHint.Monospace)
    if point_size is not None:
        font.setPointSize(point_size)
    return font


def show_tooltip(widget: QWidget, event, text: str) -> bool:
    """Show `text` at the tooltip event's position, or hide the tooltip when there is none."""
    if text:
        QToolTip.showText(event.globalPos(), text, widget)
    else:
        QToolTip.hideText()
    return True


class LineNumberGutter(QWidget):
    """The gutter: line numbers, and whatever the view marks on a line (`paint_gutter_line`)."""

    def __init__(self, view: CodeView):
        super().__init__(view)
        self.view = view
        self.setMouseTracking(True)

    def sizeHint(self) -> QSize:  # noqa: N802
        return QSize(self.view.gutter_width(), 0)

    def paintEvent(self, event) -> None:  # noqa: N802
        self.view.paint_gutter(event)

    def mousePressEvent(self, event) -> None:  # noqa: N802
        if event.button() == Qt.MouseButton.LeftButton:
            block = self.view.cursorForPosition(event.position().toPoint()).block()
            self.view.gutterClicked.emit(block.blockNumber() + 1)
        super().mousePressEvent(event)

    def event(self, event) -> bool:
        if event.type() == event.Type.ToolTip:
            block = self.view.cursorForPosition(event.pos()).block()
            return show_tooltip(self, event, self.view.gutter_tooltip(block.blockNumber() + 1))
        return super().event(event)


class CodeView(QPlainTextEdit):
    """Code in the theme's dark palette, fixed-width, unwrapped, with a line-number gutter."""

    #: A click in the gutter at this 1-based line (the Debug dock's breakpoints).
    gutterClicked = Signal(int)

    #: Room left of the numbers for a marker (the editor's diagnostics).
    MARKER_WIDTH = 12

    def __init__(self, parent: QWidget | None = None, font_size: int | None = None):
        super().__init__(parent)
        self.setFont(editor_font(font_size))
        # The syntax colours are chosen for a dark background: the view stays dark even when
        # the application runs with a light palette.
        self.setPalette(theme.code_palette(self.palette()))
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.gutter = LineNumberGutter(self)
        self.blockCountChanged.connect(self._update_gutter_width)
        self.updateRequest.connect(self._update_gutter)
        self._update_gutter_width()

    def gutter_width(self) -> int:
        digits = len(str(max(1, self.blockCount())))
        return self.MARKER_WIDTH + 10 + self.fontMetrics().horizontalAdvance("9") * max(3, digits)

    def _update_gutter_width(self, *_) -> None:
        self.setViewportMargins(self.gutter_width(), 0, 0, 0)

    def _update_gutter(self, rect: QRect, dy: int) -> None:
        if dy:
            self.gutter.scroll(0, dy)
        else:
            self.gutter.update(0, rect.y(), self.gutter.width(), rect.height())
        if rect.contains(self.viewport().rect()):
            self._update_gutter_width()

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        cr = self.contentsRect()
        self.gutter.setGeometry(QRect(cr.left(), cr.top(), self.gutter_width(), cr.height()))

    def paint_gutter(self, event) -> None:
        painter = QPainter(self.gutter)
        palette = self.palette()
        painter.fillRect(event.rect(), palette.color(palette.ColorRole.Base).darker(115))
        block = self.firstVisibleBlock()
        top = round(self.blockBoundingGeometry(block).translated(self.contentOffset()).top())
        bottom = top + round(self.blockBoundingRect(block).height())
        current = self.textCursor().blockNumber()
        height = self.fontMetrics().height()
        width = self.gutter.width()
        normal_pen = palette.color(palette.ColorRole.Text).darker(170)
        current_pen = palette.color(palette.ColorRole.Text)
        while block.isValid() and top <= event.rect().bottom():
            if block.isVisible() and bottom >= event.rect().top():
                number = block.blockNumber()
                self.paint_gutter_line(painter, number + 1, QRect(0, top, width, bottom - top))
                painter.setPen(current_pen if number == current else normal_pen)
                painter.drawText(0, top, width - 6, height, Qt.AlignmentFlag.AlignRight, str(number + 1))
            block = block.next()
            top = bottom
            bottom = top + round(self.blockBoundingRect(block).height())
        painter.end()

    def paint_gutter_line(self, painter: QPainter, line: int, rect: QRect) -> None:
        """Mark 1-based `line` in the gutter (its row is `rect`), under its number; none here."""

    def gutter_tooltip(self, line: int) -> str:
        """What the gutter's tooltip says at 1-based `line` ("": none)."""
        return ""
