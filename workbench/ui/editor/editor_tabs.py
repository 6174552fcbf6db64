"""The editor area: one tab per open file, the find/replace and go-to-line bars, disk watching.

A file changed on disk is reloaded silently when its buffer has no unsaved edits; otherwise a
non-modal bar asks whether to reload or keep the buffer, so the user's text is never lost.
"""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import QFileSystemWatcher, Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from workbench.ui import theme
from workbench.ui.editor.code_editor import CodeEditor
from workbench.ui.editor.find_bar import FindReplaceBar
from workbench.ui.editor.goto_line import GoToLineBar

log = logging.getLogger(__name__)


def read_source(path: Path) -> str:
    """The text of a source file; raises ValueError for binary or non-UTF-8 files."""
    data = path.read_bytes()
    if b"\0" in data[:8192]:
        raise ValueError(f"{path.name} is a binary file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path.name} is not UTF-8 text (byte {exc.start})") from exc


class DiskChangeBar(QFrame):
    """Shown above an editor whose file changed on disk while it had unsaved edits."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("DiskChangeBar")
        self.setStyleSheet(
            f"#DiskChangeBar {{ background: {theme.NOTICE_BAR[0]}; }} #DiskChangeBar QLabel {{ color: {theme.NOTICE_BAR[1]}; }}"
        )
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 3, 8, 3)
        self.label = QLabel()
        self.reload_button = QPushButton("Reload")
        self.keep_button = QPushButton("Keep mine")
        layout.addWidget(self.label, 1)
        layout.addWidget(self.reload_button)
        layout.addWidget(self.keep_button)
        self.hide()


class EditorPage(QWidget):
    """One tab: the disk-change bar above the editor."""

    def __init__(self, editor: CodeEditor, parent=None):
        super().__init__(parent)
        self.editor = editor
        self.disk_bar = DiskChangeBar(self)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.disk_bar)
        layout.addWidget(editor, 1)


class EditorTabs(QWidget):
    """Open files in tabs; emits `saved(path)` after each save (the hot-reload trigger)."""

    saved = Signal(str)
    #: A file reloaded because another program changed it (buffer had no unsaved edits).
    reloadedFromDisk = Signal(str)
    #: A file changed on disk while its buffer had unsaved edits: the bar is asking.
    conflictOnDisk = Signal(str)
    currentFileChanged = Signal(str)
    errorMessage = Signal(str)
    #: (file, 1-based line): a click in an editor's gutter (the Debug dock toggles a breakpoint).
    gutterClicked = Signal(str, int)
    #: (file, its breakpoint lines): an edit or a reload from disk moved or removed breakpoints.
    breakpointsMoved = Signal(str, object)

    def __init__(self, parent=None, font_size: int = 10):
        super().__init__(parent)
        self.font_size = font_size
        self.read_only = False
        self.diagnostics: dict[str, list[dict]] = {}  # resolved path -> diagnostics
        #: The Debug dock's breakpoints (resolved path -> lines) and stopped line (`set_debug_marks`).
        self.debug_marks: tuple[dict[str, set[int]], tuple[str, int] | None] = ({}, None)
        self.before_save = None  # called with the editor before its text is written (format on save)
        self.tabs = QTabWidget(self)
        self.tabs.setTabsClosable(True)
        self.tabs.setMovable(True)
        self.tabs.setDocumentMode(True)
        self.find_bar = FindReplaceBar(self)
        self.goto_bar = GoToLineBar(self)
        self.watcher = QFileSystemWatcher(self)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.tabs, 1)
        layout.addWidget(self.find_bar)
        layout.addWidget(self.goto_bar)
        self.tabs.tabCloseRequested.connect(self.close_tab)
        self.tabs.currentChanged.connect(self._on_current_changed)
        self.watcher.fileChanged.connect(self._on_file_changed)
        self.goto_bar.goTo.connect(self._go_to)

    # ---------------------------------------------------------------- tabs
    def editors(self) -> list[CodeEditor]:
        return [self.tabs.widget(i).editor for i in range(self.tabs.count())]

    def open_files(self) -> list[str]:
        return [str(e.path) for e in self.editors()]

    def current_editor(self) -> CodeEditor | None:
        page = self.tabs.currentWidget()
        return page.editor if page is not None else None

    def editor_for(self, path: str | Path) -> CodeEditor | None:
        key = _key(path)
        for editor in self.editors():
            if _key(editor.path) == key:
                return editor
        return None

    def open_file(self, path: str | Path, line: int | None = None, column: int = 1) -> CodeEditor | None:
        """Open (or switch to) a file; move to line:column when given. None if it cannot be read."""
        path = Path(path).resolve()
        editor = self.editor_for(path)
        if editor is None:
            try:
                text = read_source(path)
            except (OSError, ValueError) as exc:
                self.errorMessage.emit(f"cannot open {path}: {exc}")
                return None
            editor = CodeEditor(path, font_size=self.font_size)
            editor.load_text(text)
            editor.setReadOnly(self.read_only)
            editor.set_diagnostics(self.diagnostics.get(_key(path), []))
            lines, stopped = self.debug_marks[0].get(_key(path), set()), self.debug_marks[1]
            editor.set_debug_marks(lines, stopped[1] if stopped and stopped[0] == _key(path) else None)
            editor.gutterClicked.connect(lambda line, p=str(path): self.gutterClicked.emit(p, line))
            editor.breakpointsMoved.connect(lambda lines, p=str(path): self._on_breakpoints_moved(p, lines))
            page = EditorPage(editor)
            page.disk_bar.reload_button.clicked.connect(lambda _=False, e=editor: self._reload_from_disk(e))
            page.disk_bar.keep_button.clicked.connect(page.disk_bar.hide)
            editor.document().modificationChanged.connect(lambda _m, e=editor: self._update_title(e))
            index = self.tabs.addTab(page, path.name)
            self.tabs.setTabToolTip(index, str(path))
            self.watcher.addPath(str(path))
        self.tabs.setCurrentWidget(editor.parentWidget())
        if line is not None:
            editor.go_to(line, column)
        editor.setFocus()
        return editor

    def close_tab(self, index: int, ask: bool = True) -> bool:
        page = self.tabs.widget(index)
        if page is None:
            return False
        editor = page.editor
        if ask and editor.is_modified():
            answer = QMessageBox.question(
                self,
                "Unsaved changes",
                f"Save the changes to {editor.path.name}?",
                QMessageBox.StandardButton.Save
                | QMessageBox.StandardButton.Discard
                | QMessageBox.StandardButton.Cancel,
            )
            if answer == QMessageBox.StandardButton.Cancel:
                return False
            if answer == QMessageBox.StandardButton.Save and not self.save(editor):
                return False
        self.watcher.removePath(str(editor.path))
        editor.shutdown()
        self.tabs.removeTab(index)
        page.deleteLater()
        return True

    def close_all(self) -> None:
        for index in reversed(range(self.tabs.count())):
            self.close_tab(index, ask=False)

    def modified_editors(self) -> list[CodeEditor]:
        return [e for e in self.editors() if e.is_modified()]

    def shutdown(self) -> None:
        """Stop background work (lazy highlighting) and file watching."""
        for editor in self.editors():
            editor.shutdown()
        files = self.watcher.files()
        if files:
            self.watcher.removePaths(files)

    def _on_current_changed(self, _index: int) -> None:
        editor = self.current_editor()
        self.find_bar.set_editor(editor)
        self.currentFileChanged.emit(str(editor.path) if editor else "")

    def _update_title(self, editor: CodeEditor) -> None:
        index = self.tabs.indexOf(editor.parentWidget())
        if index >= 0:
            self.tabs.setTabText(index, editor.path.name + (" •" if editor.is_modified() else ""))

    # ---------------------------------------------------------------- find / go to
    def show_find(self, replace: bool = False) -> None:
        self.goto_bar.hide()
        self.find_bar.set_editor(self.current_editor())
        self.find_bar.open(replace=replace)

    def show_goto(self) -> None:
        editor = self.current_editor()
        if editor is not None:
            self.find_bar.hide()
            self.goto_bar.open(editor.blockCount())

    def _go_to(self, line: int, column: int) -> None:
        editor = self.current_editor()
        if editor is not None:
            editor.go_to(line, column)
            editor.setFocus()

    # ---------------------------------------------------------------- saving
    def save(self, editor: CodeEditor | None = None) -> bool:
        """Write the buffer to its file; emits `saved(path)`. False if it could not be written."""
        editor = editor or self.current_editor()
        if editor is None or editor.isReadOnly():
            return False
        if self.before_save is not None:
            self.before_save(editor)  # format on save (ui.tests_dock.dev_loop)
        try:
            editor.path.write_text(editor.text(), encoding="utf-8")
        except OSError as exc:
            self.errorMessage.emit(f"cannot save {editor.path}: {exc}")
            return False
        editor.document().setModified(False)
        page = editor.parentWidget()
        if isinstance(page, EditorPage):
            page.disk_bar.hide()
        self.saved.emit(str(editor.path))
        return True

    def save_all(self) -> int:
        return sum(1 for e in self.modified_editors() if self.save(e))

    def set_read_only(self, read_only: bool) -> None:
        self.read_only = read_only
        for editor in self.editors():
            editor.setReadOnly(read_only)

    # ---------------------------------------------------------------- changes on disk
    def _on_file_changed(self, path: str) -> None:
        editor = self.editor_for(path)
        if editor is None:
            return
        file = Path(path)
        if not file.exists():
            # Deleted or being replaced (editors save by rename): keep the buffer, mark it unsaved.
            editor.document().setModified(True)
            return
        if path not in self.watcher.files():
            self.watcher.addPath(path)  # a rename-save drops the watch
        try:
            text = read_source(file)
        except (OSError, ValueError) as exc:
            log.warning("cannot reload %s: %s", path, exc)
            return
        if text == editor.text():
            return  # our own save, or a touch
        if not editor.is_modified():
            editor.reload_preserving_view(text)
            self.reloadedFromDisk.emit(str(editor.path))
            return
        page = editor.parentWidget()
        page.disk_bar.label.setText(f"{file.name} changed on disk, and you have unsaved edits here.")
        page.disk_bar.show()
        self.conflictOnDisk.emit(str(editor.path))

    def _reload_from_disk(self, editor: CodeEditor) -> None:
        try:
            text = read_source(editor.path)
        except (OSError, ValueError) as exc:
            self.errorMessage.emit(f"cannot reload {editor.path}: {exc}")
            return
        editor.reload_preserving_view(text)
        editor.parentWidget().disk_bar.hide()
        self.reloadedFromDisk.emit(str(editor.path))

    # ---------------------------------------------------------------- diagnostics
    def set_diagnostics(self, project_root: Path, diagnostics: list[dict]) -> None:
        """Show diagnostics (file paths relative to `project_root`) in the open editors.

        The same message at the same place from several backends (one crate built for several
        targets) is one squiggle whose backend names them all."""
        by_file: dict[str, list[dict]] = {}
        seen: dict[tuple, dict] = {}
        for diag in diagnostics:
            file = diag.get("file")
            if not file:
                continue
            where = tuple(diag.get(k) for k in ("severity", "message", "file", "line", "column"))
            if where in seen:
                first = seen[where]
                names = first.get("backend", "").split(", ")
                if diag.get("backend") and diag["backend"] not in names:
                    first["backend"] = ", ".join([*filter(None, names), diag["backend"]])
                continue
            diag = seen[where] = dict(diag)
            full = Path(file) if Path(file).is_absolute() else project_root / file
            by_file.setdefault(_key(full), []).append(diag)
        self.diagnostics = by_file
        for editor in self.editors():
            editor.set_diagnostics(by_file.get(_key(editor.path), []))

    def _on_breakpoints_moved(self, path: str, lines: list[int]) -> None:
        self.debug_marks[0][_key(path)] = set(lines)
        self.breakpointsMoved.emit(path, list(lines))

    def set_debug_marks(self, breakpoints: dict[str, set[int]], stopped: tuple[str, int] | None) -> None:
        """The Debug dock's breakpoints (full path → lines) and the line stopped at, in every
        editor, now and as files open."""
        breakpoints = {_key(p): set(lines) for p, lines in breakpoints.items()}
        stopped = (_key(stopped[0]), stopped[1]) if stopped else None
        self.debug_marks = (breakpoints, stopped)
        for editor in self.editors():
            key = _key(editor.path)
            editor.set_debug_marks(
                breakpoints.get(key, set()), stopped[1] if stopped and stopped[0] == key else None
            )


def _key(path: str | Path) -> str:
    try:
        return str(Path(path).resolve())
    except OSError:
        return str(path)
