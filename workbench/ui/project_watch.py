"""`ProjectFilesWatch`: the project folder on disk, watched whole, its changes brought to the GUI thread.

The editor watches the files it has open (`QFileSystemWatcher`); this watches everything else the
builds read: workbench.toml, the crate's sources and Cargo.toml, the reference files. It runs the
build service's watcher (`workbench.build.watch.ProjectWatcher`, watchdog: one debounced callback
a burst) and keeps only the files whose content changed (`ContentDigests`), then emits `changed`
through a queued connection, so slots run on the GUI thread (pyqtgraph#1398).
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Qt, Signal, Slot

from workbench.build.watch import ContentDigests, ProjectWatcher
from workbench.project import Project


class ProjectFilesWatch(QObject):
    """Emits `changed(paths)` (absolute path strings) when files of the watched project change."""

    changed = Signal(list)
    _posted = Signal(list)  # from the watcher's timer thread to the GUI thread

    def __init__(self, parent: QObject | None = None, debounce_s: float = 0.15):
        super().__init__(parent)
        self.debounce_s = debounce_s
        self.root: Path | None = None
        self._watcher: ProjectWatcher | None = None
        self._digests: ContentDigests | None = None
        self._posted.connect(self._deliver, Qt.ConnectionType.QueuedConnection)

    def watch(self, project: Project | None) -> None:
        """Watch `project`'s folder from now on (None: nothing); the previous one is let go."""
        self.stop()
        if project is None:
            return
        self.root = project.root
        self._digests = digests = ContentDigests(project.source_files())

        def on_change(paths: list[Path]) -> None:  # the watcher's timer thread
            changed = digests.changed(paths)
            if changed:
                self._posted.emit([str(p) for p in changed])

        self._watcher = ProjectWatcher(project.root, on_change, debounce_s=self.debounce_s).start()

    def stop(self) -> None:
        """Stop watching (waits for the watcher's thread). Safe to call twice."""
        watcher, self._watcher, self._digests, self.root = self._watcher, None, None, None
        if watcher is not None:
            watcher.stop()

    @Slot(list)
    def _deliver(self, paths: list[str]) -> None:
        root = self.root
        # A burst that ends after the project was switched or closed is not this project's.
        if root is not None and all(Path(p).is_relative_to(root) for p in paths):
            self.changed.emit(paths)
