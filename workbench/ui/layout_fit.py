"""What keeps the window's contents inside it: labels whose text can never widen the window (a
2,000-character error is elided or wrapped), and a resize hook for columns that fit their width.

A plain QLabel asks for its whole text as its minimum width, and a dock passes that up to the
window, which grows past the screen (issue 21: 1,944 px on a 1,600 px screen). `ElidedLabel` shows
one line cut to the width it is given (the full text in its tooltip); `wrap_within` makes a label
wrap inside the width it is given instead of asking for its longest line; `LinesLabel` wraps into a
fixed number of lines, its height the same whatever its text (the widgets under it keep their
geometry when its text changes: a plot re-laid out and repainted at each message cost a stall)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, QRect, QSize, Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget

#: The most width a label asks for (its size hint): the layout may give it more, never needs it.
HINT_WIDTH = 360
#: The least width it needs: a few characters, whatever its text.
MIN_CHARS = 6


class ElidedLabel(QLabel):
    """One line of text elided to the label's width (`mode`: where the "…" goes), the full text
    in the tooltip when it does not fit. `text()` is the full text."""

    def __init__(
        self,
        text: str = "",
        parent: QWidget | None = None,
        mode: Qt.TextElideMode = Qt.TextElideMode.ElideRight,
    ):
        super().__init__(parent)
        self._full = ""
        self._mode = mode
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self.setText(text)

    def setText(self, text: str) -> None:  # noqa: N802 (Qt's name)
        self._full = " ".join(str(text or "").split())  # one line: newlines would change its height
        self._elide()

    def text(self) -> str:
        return self._full

    def sizeHint(self) -> QSize:  # noqa: N802
        metrics = self.fontMetrics()
        margins = self.contentsMargins()
        extra = margins.left() + margins.right() + 2 * self.margin() + 2
        width = min(metrics.horizontalAdvance(self._full) + extra, HINT_WIDTH)
        return QSize(max(width, self.minimumSizeHint().width()), super().minimumSizeHint().height())

    def minimumSizeHint(self) -> QSize:  # noqa: N802
        metrics = self.fontMetrics()
        return QSize(metrics.averageCharWidth() * MIN_CHARS, super().minimumSizeHint().height())

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._elide()

    def is_elided(self) -> bool:
        return super().text() != self._full

    def _elide(self) -> None:
        width = max(0, self.contentsRect().width() - 2 * self.margin())
        shown = self.fontMetrics().elidedText(self._full, self._mode, width) if self._full else ""
        if super().text() != shown:
            super().setText(shown)
        tip = self._full if shown != self._full else ""
        if self.toolTip() != tip:
            self.setToolTip(tip)


class LinesLabel(QLabel):
    """Text wrapped into at most `lines` lines of the label's width, its height always `lines`
    lines (empty or not); text that needs more is cut at the last line with "…", the full text in
    the tooltip. `text()` is the full text. Like `wrap_within`, it never widens the window."""

    def __init__(self, text: str = "", lines: int = 2, parent: QWidget | None = None):
        super().__init__(parent)
        self._full = ""
        self.lines = lines
        self.setWordWrap(True)
        self.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.setFixedHeight(self._height())
        self.setText(text)

    def _height(self) -> int:
        edges = self.contentsMargins().top() + self.contentsMargins().bottom() + 2 * self.margin()
        return self.lines * self.fontMetrics().lineSpacing() + edges

    def setText(self, text: str) -> None:  # noqa: N802 (Qt's name)
        self._full = str(text or "")
        self._fit()

    def text(self) -> str:
        return self._full

    def is_cut(self) -> bool:
        return super().text() != self._full

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._fit()

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:  # a style sheet's font: the lines' height
            self.setFixedHeight(self._height())
            self._fit()

    def _fits(self, text: str, width: int) -> bool:
        flags = int(Qt.TextFlag.TextWordWrap) | int(Qt.AlignmentFlag.AlignLeft)
        height = self.fontMetrics().boundingRect(QRect(0, 0, width, 1 << 20), flags, text).height()
        return height <= self.lines * self.fontMetrics().lineSpacing()

    def _fit(self) -> None:
        width = max(1, self.contentsRect().width() - 2 * self.margin())
        shown = self._full
        if shown and not self._fits(shown, width):
            lo, hi = 0, len(shown)  # the longest start that fits with "…" after it
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if self._fits(self._full[:mid].rstrip() + "…", width):
                    lo = mid
                else:
                    hi = mid - 1
            shown = self._full[:lo].rstrip() + "…"
        if super().text() != shown:
            super().setText(shown)
        tip = self._full if shown != self._full else ""
        if self.toolTip() != tip:
            self.setToolTip(tip)


def keep_room_when_hidden(widget: QWidget) -> QWidget:
    """Its layout keeps `widget`'s room while it is hidden: showing it later moves nothing else.
    Returns the widget."""
    policy = widget.sizePolicy()
    policy.setRetainSizeWhenHidden(True)
    widget.setSizePolicy(policy)
    return widget


def wrap_within(label: QLabel) -> QLabel:
    """Make `label` wrap inside the width its layout gives it; its longest line (or a path with no
    space to break at) no longer sets a minimum width. Returns the label."""
    label.setWordWrap(True)
    label.setSizePolicy(QSizePolicy.Policy.Ignored, label.sizePolicy().verticalPolicy())
    return label


class OnEvent(QObject):
    """Calls `callback` whenever `widget` gets an event of the subclass's `kind` (an event filter
    the widget owns): `OnResize` here, `visibility.OnShow`."""

    kind: QEvent.Type

    def __init__(self, callback: Callable[[], None], widget: QWidget) -> None:
        super().__init__(widget)
        self._callback = callback
        widget.installEventFilter(self)

    def eventFilter(self, _watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        if event.type() == self.kind:
            self._callback()
        return False


class OnResize(OnEvent):
    """Calls `callback` whenever `widget` is resized."""

    kind = QEvent.Type.Resize
