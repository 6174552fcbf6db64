"""The find/replace bar under the editor (Ctrl+F finds, Ctrl+H also shows the replace row)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QTextCursor, QTextDocument
from PySide6.QtWidgets import (
    QCheckBox,
    QFrame,
    QGridLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QTextEdit,
)

from workbench.ui import theme

MAX_MARKED_MATCHES = 2000  # matches highlighted at once; more are still found by Next


class FindReplaceBar(QFrame):
    """Searches the current editor, marks every match and replaces one or all of them."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("FindReplaceBar")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.editor = None
        self.find_edit = QLineEdit(placeholderText="Find")
        self.replace_edit = QLineEdit(placeholderText="Replace with")
        self.case_box = QCheckBox("Match case")
        self.word_box = QCheckBox("Whole word")
        self.count_label = QLabel("")
        self.prev_button = QPushButton("Previous")
        self.next_button = QPushButton("Next")
        self.replace_button = QPushButton("Replace")
        self.replace_all_button = QPushButton("Replace all")
        close_button = QPushButton("✕")
        close_button.setFlat(True)
        close_button.setToolTip("Close (Esc)")
        layout = QGridLayout(self)
        layout.setContentsMargins(6, 3, 6, 3)
        layout.setVerticalSpacing(3)
        layout.addWidget(self.find_edit, 0, 0)
        layout.addWidget(self.prev_button, 0, 1)
        layout.addWidget(self.next_button, 0, 2)
        layout.addWidget(self.case_box, 0, 3)
        layout.addWidget(self.word_box, 0, 4)
        layout.addWidget(self.count_label, 0, 5)
        layout.addWidget(close_button, 0, 6)
        layout.addWidget(self.replace_edit, 1, 0)
        layout.addWidget(self.replace_button, 1, 1)
        layout.addWidget(self.replace_all_button, 1, 2)
        layout.setColumnStretch(0, 1)
        self.find_edit.textChanged.connect(self._on_pattern_changed)
        self.find_edit.returnPressed.connect(self.find_next)
        self.replace_edit.returnPressed.connect(self.replace_one)
        self.case_box.toggled.connect(self._on_pattern_changed)
        self.word_box.toggled.connect(self._on_pattern_changed)
        self.next_button.clicked.connect(self.find_next)
        self.prev_button.clicked.connect(lambda: self.find_next(backwards=True))
        self.replace_button.clicked.connect(self.replace_one)
        self.replace_all_button.clicked.connect(self.replace_all)
        close_button.clicked.connect(self.close_bar)
        self.hide()

    # ---------------------------------------------------------------- showing
    def set_editor(self, editor) -> None:
        if self.editor is not None and self.editor is not editor:
            self.editor.set_search_selections([])
        self.editor = editor
        if self.isVisible():
            self._mark_all()

    def open(self, replace: bool = False) -> None:
        """Show the bar (with the replace row when `replace`), seeded with the selected text."""
        if self.editor is not None:
            selected = self.editor.textCursor().selectedText()
            if selected and "\u2029" not in selected:
                self.find_edit.setText(selected)
        for widget in (self.replace_edit, self.replace_button, self.replace_all_button):
            widget.setVisible(replace)
        self.show()
        self.find_edit.setFocus()
        self.find_edit.selectAll()
        self._mark_all()

    def close_bar(self) -> None:
        self.hide()
        if self.editor is not None:
            self.editor.set_search_selections([])
            self.editor.setFocus()

    # ---------------------------------------------------------------- searching
    def _flags(self, backwards: bool = False) -> QTextDocument.FindFlag:
        flags = QTextDocument.FindFlag(0)
        if self.case_box.isChecked():
            flags |= QTextDocument.FindFlag.FindCaseSensitively
        if self.word_box.isChecked():
            flags |= QTextDocument.FindFlag.FindWholeWords
        if backwards:
            flags |= QTextDocument.FindFlag.FindBackward
        return flags

    def _on_pattern_changed(self, *_):
        if self.editor is None:
            return
        # Search again from the start of the current match, so typing extends it in place.
        cursor = self.editor.textCursor()
        cursor.setPosition(cursor.selectionStart())
        self.editor.setTextCursor(cursor)
        self.find_next()

    def find_next(self, backwards: bool = False) -> bool:
        """Select the next match (wrapping around); False when there is none."""
        pattern = self.find_edit.text()
        if self.editor is None or not pattern:
            self._mark_all()
            return False
        doc = self.editor.document()
        cursor = doc.find(pattern, self.editor.textCursor(), self._flags(backwards))
        if cursor.isNull():  # wrap around
            start = QTextCursor(doc)
            if backwards:
                start.movePosition(QTextCursor.MoveOperation.End)
            cursor = doc.find(pattern, start, self._flags(backwards))
        found = not cursor.isNull()
        if found:
            self.editor.setTextCursor(cursor)
        self._mark_all()
        return found

    def replace_one(self) -> bool:
        """Replace the selected match and move to the next one."""
        if self.editor is None or self.editor.isReadOnly():
            return False
        cursor = self.editor.textCursor()
        if cursor.hasSelection() and self._matches(cursor.selectedText()):
            cursor.insertText(self.replace_edit.text())
        return self.find_next()

    def replace_all(self) -> int:
        """Replace every match in one undo step; returns how many were replaced."""
        pattern = self.find_edit.text()
        if self.editor is None or self.editor.isReadOnly() or not pattern:
            return 0
        doc = self.editor.document()
        count = 0
        edit = QTextCursor(doc)
        edit.beginEditBlock()
        cursor = doc.find(pattern, QTextCursor(doc), self._flags())
        while not cursor.isNull():
            cursor.insertText(self.replace_edit.text())
            count += 1
            cursor = doc.find(pattern, cursor, self._flags())
        edit.endEditBlock()
        self._mark_all()
        return count

    def _matches(self, text: str) -> bool:
        pattern = self.find_edit.text()
        if self.case_box.isChecked():
            return text == pattern
        return text.lower() == pattern.lower()

    def _mark_all(self) -> None:
        if self.editor is None:
            return
        pattern = self.find_edit.text()
        if not pattern or not self.isVisible():
            self.editor.set_search_selections([])
            self.count_label.setText("")
            return
        doc = self.editor.document()
        selections = []
        count = 0
        cursor = doc.find(pattern, QTextCursor(doc), self._flags())
        while not cursor.isNull():
            count += 1
            if count <= MAX_MARKED_MATCHES:
                selection = QTextEdit.ExtraSelection()
                selection.format.setBackground(QColor(theme.FIND_MATCH))
                selection.cursor = cursor
                selections.append(selection)
            cursor = doc.find(pattern, cursor, self._flags())
        self.editor.set_search_selections(selections)
        self.count_label.setText(f"{count} match{'es' if count != 1 else ''}" if count else "no matches")
        self.find_edit.setStyleSheet("" if count else f"background: {theme.FIND_NOTHING};")

    @property
    def match_count(self) -> int:
        text = self.count_label.text()
        return int(text.split()[0]) if text and text[0].isdigit() else 0

    def keyPressEvent(self, event) -> None:  # noqa: N802
        # Escape typed in the line edits reaches the bar (QLineEdit ignores it).
        if event.key() == Qt.Key.Key_Escape:
            self.close_bar()
            return
        super().keyPressEvent(event)
