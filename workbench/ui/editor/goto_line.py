"""Go to line (Ctrl+G): a small inline bar taking `line` or `line:column`."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QRegularExpressionValidator
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QLineEdit, QPushButton

__all__ = ["GoToLineBar", "parse_location"]


def parse_location(text: str) -> tuple[int, int] | None:
    """'12' -> (12, 1); '12:5' -> (12, 5); anything else -> None."""
    parts = text.strip().split(":")
    if not parts or len(parts) > 2 or not all(p.strip().isdigit() for p in parts):
        return None
    line = int(parts[0])
    column = int(parts[1]) if len(parts) == 2 else 1
    return (line, column) if line >= 1 and column >= 1 else None


class GoToLineBar(QFrame):
    """Emits `goTo(line, column)` for what the user typed, then hides."""

    goTo = Signal(int, int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("GoToLineBar")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.edit = QLineEdit(placeholderText="line[:column]")
        self.edit.setValidator(QRegularExpressionValidator(r"\d*(:\d*)?", self.edit))
        self.label = QLabel("Go to line:")
        go = QPushButton("Go")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(6, 3, 6, 3)
        layout.addWidget(self.label)
        layout.addWidget(self.edit, 1)
        layout.addWidget(go)
        self.edit.returnPressed.connect(self.accept)
        go.clicked.connect(self.accept)
        self.hide()

    def open(self, line_count: int) -> None:
        self.label.setText(f"Go to line (1–{line_count}):")
        self.show()
        self.edit.setFocus()
        self.edit.selectAll()

    def accept(self) -> None:
        location = parse_location(self.edit.text())
        if location is None:
            return
        self.hide()
        self.goTo.emit(*location)

    def keyPressEvent(self, event) -> None:  # noqa: N802
        # Escape typed in the line edits reaches the bar (QLineEdit ignores it).
        if event.key() == Qt.Key.Key_Escape:
            self.hide()
            return
        super().keyPressEvent(event)
