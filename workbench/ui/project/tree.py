"""The project's files: a QTreeView over QFileSystemModel, without build outputs or hidden files."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QDir, QModelIndex, QSortFilterProxyModel, Signal
from PySide6.QtWidgets import QAbstractItemView, QFileSystemModel, QTreeView

from workbench.project import IGNORED_DIRS


class _HideBuildOutputs(QSortFilterProxyModel):
    """Rejects target/, VCS and editor folders, hidden files and editor temp files."""

    def filterAcceptsRow(self, source_row: int, source_parent: QModelIndex) -> bool:  # noqa: N802
        model = self.sourceModel()
        index = model.index(source_row, 0, source_parent)
        name = model.fileName(index)
        if name.startswith(".") or name.endswith("~") or name.endswith((".swp", ".tmp")):
            return False
        return not (model.isDir(index) and name in IGNORED_DIRS)


class ProjectTree(QTreeView):
    """Shows the files under the project root; `fileActivated(path)` on double-click or Enter."""

    fileActivated = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.model_fs = QFileSystemModel(self)
        self.model_fs.setFilter(QDir.Filter.AllDirs | QDir.Filter.Files | QDir.Filter.NoDotAndDotDot)
        self.model_fs.setReadOnly(True)
        self.proxy = _HideBuildOutputs(self)
        self.proxy.setSourceModel(self.model_fs)
        self.proxy.setRecursiveFilteringEnabled(False)
        self.setModel(self.proxy)
        self.setHeaderHidden(True)
        for column in range(1, 4):  # name only: size, type and date add nothing here
            self.hideColumn(column)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setAnimated(False)
        self.root: Path | None = None
        self.activated.connect(self._on_activated)
        self.model_fs.directoryLoaded.connect(self._expand_sources)

    def set_root(self, root: Path | None) -> None:
        self.root = root
        if root is None:
            self.setRootIndex(QModelIndex())
            return
        source_root = self.model_fs.setRootPath(str(root))
        self.setRootIndex(self.proxy.mapFromSource(source_root))

    def _expand_sources(self, directory: str) -> None:
        # Open src/ and reference/ once they are loaded: that is where the kernel lives.
        if self.root is not None and Path(directory) == self.root:
            for name in ("src", "reference"):
                index = self.model_fs.index(str(self.root / name))
                if index.isValid():
                    self.expand(self.proxy.mapFromSource(index))

    def index_of(self, path: str | Path) -> QModelIndex:
        return self.proxy.mapFromSource(self.model_fs.index(str(path)))

    def visible_names(self) -> list[str]:
        """Names of the rows directly under the root (for tests)."""
        root = self.rootIndex()
        return [self.proxy.index(r, 0, root).data() for r in range(self.proxy.rowCount(root))]

    def _on_activated(self, index: QModelIndex) -> None:
        source = self.proxy.mapToSource(index)
        if not self.model_fs.isDir(source):
            self.fileActivated.emit(self.model_fs.filePath(source))
