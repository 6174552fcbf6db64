"""What keeps the window's contents inside it: labels whose text can never widen the window (a
2,000-character error is elided or wrapped), and a resize hook for columns that fit their width.

A plain QLabel asks for its whole text as its minimum width, and a dock passes that up to the
window, which grows past the screen (issue 21: 1,944 px on a 1,600 px screen). `ElidedLabel` shows
one line cut to the width it is given (the full text in its tooltip); `wrap_within` makes a label
wrap inside the width it is given instead of asking for its longest line."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QSize, Qt
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


def wrap_within(label: QLabel) -> QLabel:
    """Make `label` wrap inside the width its layout gives it; its longest line (or a path with no
    space to break at) no longer sets a minimum width. Returns the label."""
    label.setWordWrap(True)
    label.setSizePolicy(QSizePolicy.Policy.Ignored, label.sizePolicy().verticalPolicy())
    return label


class OnResize(QObject):
    """Calls `callback` whenever `widget` is resized (an event filter the widget owns)."""

    def __init__(self, callback, widget: QWidget):
        super().__init__(widget)
        self._callback = callback
        widget.installEventFilter(self)

    def eventFilter(self, _watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        if event.type() == QEvent.Type.Resize:
            self._callback()
        return False
