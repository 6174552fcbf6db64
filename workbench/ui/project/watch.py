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
from workbench.kernel_api import crate_dir as kernel_api_crate
from workbench.kernel_api import dependency_path
from workbench.project import Project


class ProjectFilesWatch(QObject):
    """Emits `changed(paths)` (absolute path strings) when files of the watched project change."""

    changed = Signal(list)
    _posted = Signal(list)  # from the watcher's timer thread to the GUI thread

    def __init__(self, parent: QObject | None = None, debounce_s: float = 0.15):
        super().__init__(parent)
        self.debounce_s = debounce_s
        self.root: Path | None = None
        self._roots: list[Path] = []  # the folder, and the crate's where it lies outside it
        self._watchers: list[ProjectWatcher] = []
        self._digests: ContentDigests | None = None
        self._posted.connect(self._deliver, Qt.ConnectionType.QueuedConnection)

    def watch(self, project: Project | None) -> None:
        """Watch `project`'s folder from now on (None: nothing); the previous one is let go."""
        self.stop()
        if project is None:
            return
        self.root = project.root
        crate = project.manifest.crate_dir
        self._roots = [project.root] + ([crate] if not crate.is_relative_to(project.root) else [])
        api = dependency_path(crate)  # where a build may place the kernel API crate
        placed = (api, kernel_api_crate()) if api is not None else None
        self._digests = digests = ContentDigests(project.source_files(), placed)

        def on_change(paths: list[Path]) -> None:  # the watcher's timer thread
            changed = digests.changed(paths)
            if changed:
                self._posted.emit([str(p) for p in changed])

        self._watchers = [
            ProjectWatcher(root, on_change, debounce_s=self.debounce_s).start()
            for root in self._roots
            if root.is_dir()
        ]

    def stop(self) -> None:
        """Stop watching (waits for the watcher's thread). Safe to call twice."""
        watchers, self._watchers, self._digests, self.root, self._roots = self._watchers, [], None, None, []
        for watcher in watchers:
            watcher.stop()

    @Slot(list)
    def _deliver(self, paths: list[str]) -> None:
        # A burst that ends after the project was switched or closed is not this project's.
        roots = self._roots
        if roots and all(any(Path(p).is_relative_to(r) for r in roots) for p in paths):
            self.changed.emit(paths)
