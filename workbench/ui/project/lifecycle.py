"""The project's lifecycle in the window: open (a folder, a recent one, an example: the user's
copy of it), new (from a template), trust, the open files remembered per project, saves and changes
on disk (hot reload, workbench.toml re-read), and closing (unsaved edits asked about, the window's
state saved, everything in the background stopped).

`ProjectLifecycle` is a part of `MainWindow` (`ui/main_window.py`, the layout: docks, menus,
geometry), which it is mixed into; it uses the window's parts named below and never builds any.
An untrusted project is never handed to the services: nothing may build it (`workbench.trust_store`).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QTimer
from PySide6.QtGui import QAction, QCloseEvent
from PySide6.QtWidgets import QFileDialog, QMenu, QMessageBox, QWidget

from workbench import templates
from workbench.errors import WorkbenchError
from workbench.project import Project
from workbench.trust_store import is_bundled, is_declined, is_trusted, set_trusted
from workbench.ui.project.new_project import NewProjectDialog
from workbench.ui.settings import Settings, save_settings
from workbench.user_folders import needs_user_copy, user_copy

if TYPE_CHECKING:
    from workbench.ui.editor import EditorTabs
    from workbench.ui.project.diagnostics import ProjectDiagnostics
    from workbench.ui.project.tree import ProjectTree
    from workbench.ui.project.trust import TrustBar
    from workbench.ui.project.watch import ProjectFilesWatch

log = logging.getLogger(__name__)


class ProjectLifecycle:
    """The window's project: `project` (None before one is open) and whether it is `trusted`."""

    # The window's parts this uses (`MainWindow` makes them).
    project: Project | None
    trusted: bool
    bridge: Any
    settings: Settings
    panels: dict[str, QWidget]
    editor_tabs: EditorTabs
    project_tree: ProjectTree
    trust_bar: TrustBar
    files_watch: ProjectFilesWatch
    diagnostics: ProjectDiagnostics
    recent_menu: QMenu
    hot_reload_action: QAction
    dev_loop: Any
    persist_settings: bool  # off for one-shot screenshots
    ask_before_discarding: bool  # tests turn this off: no modal dialog at teardown
    _closed: bool
    # and its methods: show_message, show_error, save_layout, confirm_reference_device, _update_actions

    # ================================================================ open, new, trust
    def choose_project(self) -> None:
        start = str(self.project.root.parent) if self.project else str(Path.home())
        folder = QFileDialog.getExistingDirectory(self, "Open kernel project", start)
        if folder:
            self.open_project(Path(folder))

    def new_project(self) -> None:
        start = self.project.root.parent if self.project and not self._is_bundled() else Path.home()
        dialog = NewProjectDialog(self, start_dir=start)
        if dialog.exec() != NewProjectDialog.DialogCode.Accepted:
            return
        self.create_project(dialog.project_name(), dialog.template(), dialog.destination())

    def create_project(self, name: str, template: str, destination: Path) -> bool:
        """Make the project `name` from `template` in `destination` and open it (trusted: it is
        our own template); False, with a message, when the name or the folder is refused."""
        try:
            root = templates.create_project(name, template, destination)
        except WorkbenchError as exc:
            self.show_error(str(exc))
            return False
        return self.open_project(root)

    def open_project(self, path: Path | Project) -> bool:
        """Open a project folder (or an already loaded Project); False, with a message, if it fails."""
        try:
            project = path if isinstance(path, Project) else Project.open(path)
            project = self._writable_copy(project)  # never edit inside the install folder
        except WorkbenchError as exc:
            self.show_error(str(exc))
            return False
        if self.project is not None:
            if not self._settle_unsaved(f"before opening {project.name}"):
                return False
            self._remember_open_files()
            self.editor_tabs.close_all()
        self.project = project
        self.diagnostics.open(project.root)
        root = str(project.root)
        self.settings.last_project = root
        self.settings.add_recent(root)
        self.setWindowTitle(f"{project.name} — {project.root} — Rust GPU Workbench")
        self.project_tree.set_root(project.root)
        self.trusted = is_trusted(project.root)
        self.editor_tabs.set_read_only(not self.trusted)
        if self.trusted:
            self.trust_bar.hide()
        elif is_declined(project.root):
            self.trust_bar.hide()
            self.show_message(f"{project.name} is read-only (Build > Trust this project… to build it)")
        else:
            self.trust_bar.ask(project.root)
        if self.bridge is not None:
            # An untrusted project is not handed to the services: nothing may build it.
            self.bridge.set_project(project if self.trusted else None)
        # 1 ms, not 0: a zero-time call posted now runs in the same pass of the event loop.
        QTimer.singleShot(1, self, lambda: self._after_open(project))
        self._update_actions()
        return True

    def _after_open(self, project: Project) -> None:
        """The rest of opening `project`, on the event loop's next turn: its files watched (each
        one hashed) and its editors opened (each file read, its top highlighted). In one turn with
        the rest, opening held the window for 77-96 ms (benchmarks/day_sequence.py; goal 50)."""
        if self._closed or project is not self.project:  # closed, or another project opened meanwhile
            return
        self.files_watch.watch(project if self.trusted else None)
        self._restore_open_files(project)

    def _writable_copy(self, project: Project) -> Project:
        """`project`, or the user's copy of it when it is read-only or inside the install folder."""
        if not needs_user_copy(project.root):
            return project
        bundled = is_bundled(project.root)
        copy = user_copy(project.root)
        if bundled:
            set_trusted(copy, True)  # our own example, as with File > New
            self.show_message(f"opened your copy of the {project.name} example: {copy} "
                              f"(the example itself, {project.root}, is never edited)")  # fmt: skip
        else:
            self.show_message(f"{project.root} is read-only: opened your copy in {copy}")
        return Project.open(copy)

    def set_trusted(self, trusted: bool) -> None:
        if self.project is None:
            return
        try:
            set_trusted(self.project.root, trusted)
        except WorkbenchError as exc:  # the trust list cannot be written: say so, change nothing
            self.show_error(str(exc))
            return
        self.trust_bar.hide()
        if trusted != self.trusted:
            self.trusted = trusted
            self.editor_tabs.set_read_only(not trusted)
            if self.bridge is not None:
                self.bridge.set_project(self.project if trusted else None)
            self.files_watch.watch(self.project if trusted else None)
        if self.persist_settings:
            save_settings(self.settings)
        self._update_actions()

    def _is_bundled(self) -> bool:
        return self.project is not None and is_bundled(self.project.root)

    # ================================================================ the project's files
    def _fill_recent_menu(self) -> None:
        self.recent_menu.clear()
        for path in self.settings.recent_projects:
            action = self.recent_menu.addAction(path, lambda p=path: self.open_project(Path(p)))
            action.setEnabled(Path(path).is_dir())
        if not self.settings.recent_projects:
            self.recent_menu.addAction("(none)").setEnabled(False)

    def _restore_open_files(self, project: Project) -> None:
        root = str(project.root)
        files = [f for f in self.settings.open_files.get(root, []) if Path(f).is_file()]
        if not files and project.main_source() is not None:
            files = [str(project.main_source())]
        for file in files:
            self.editor_tabs.open_file(file)
        current = self.settings.current_file.get(root)
        if current and Path(current).is_file():
            self.editor_tabs.open_file(current)

    def _remember_open_files(self) -> None:
        if self.project is None:
            return
        root = str(self.project.root)
        self.settings.open_files[root] = self.editor_tabs.open_files()
        editor = self.editor_tabs.current_editor()
        if editor is not None:
            self.settings.current_file[root] = str(editor.path)

    def save_current(self) -> bool:
        return self.editor_tabs.save()

    def open_location(self, path: str, line: int, column: int = 1) -> None:
        """Open `path` (absolute, or relative to the project) at 1-based line:column."""
        file = Path(path)
        if not file.is_absolute() and self.project is not None:
            file = self.project.root / file
        self.editor_tabs.open_file(file, line=max(1, line), column=max(1, column))

    def _on_saved(self, path: str) -> None:
        if self.bridge is None or not self.trusted:
            return
        if self._is_manifest(path):
            self.bridge.check_manifest()  # re-read, with or without hot reload
        if self.hot_reload_action.isChecked():
            self.confirm_reference_device(lambda: self.bridge.on_saved(path))

    def _is_manifest(self, path: str | Path) -> bool:
        return self.project is not None and Path(path).resolve() == self.project.manifest.path.resolve()

    def _on_disk_changed(self, paths: list[str]) -> None:
        """Files changed on disk by another program: what the editor shows it reloads itself
        (`reloadedFromDisk`); any other source is as good as saved, workbench.toml re-read."""
        elsewhere = [p for p in paths if self.editor_tabs.editor_for(p) is None]
        if elsewhere:
            self._on_saved(next((p for p in elsewhere if self._is_manifest(p)), elsewhere[0]))

    def _on_project_reread(self, project: Project | None) -> None:
        if project is not None and self.project is not None and project.root == self.project.root:
            self.project = project  # workbench.toml as the folder holds it now

    # ================================================================ closing
    def _settle_unsaved(self, when: str) -> bool:
        """Ask whether to save unsaved edits `when` ("before closing"); False: the user cancelled,
        or a file could not be saved (its buffer stays open, nothing the user typed is lost)."""
        modified = self.editor_tabs.modified_editors()
        if not modified or not self.ask_before_discarding:
            return True
        names = ", ".join(e.path.name for e in modified)
        answer = QMessageBox.question(
            self,
            "Unsaved changes",
            f"Save the changes to {names} {when}?",
            QMessageBox.StandardButton.SaveAll
            | QMessageBox.StandardButton.Discard
            | QMessageBox.StandardButton.Cancel,
        )
        if answer == QMessageBox.StandardButton.Cancel:
            return False
        if answer == QMessageBox.StandardButton.SaveAll:
            self.editor_tabs.save_all()
            return not self.editor_tabs.modified_editors()  # a failed save was reported
        return True

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802
        if self._closed:
            event.accept()
            return
        if not self._settle_unsaved("before closing"):
            event.ignore()
            return
        self.save_layout()
        self.shutdown()
        event.accept()

    def shutdown(self) -> None:
        """Stop everything that runs in the background: editors, panels, then the services."""
        if self._closed:
            return
        self._closed = True
        self.files_watch.stop()
        self.dev_loop.shutdown()
        self.editor_tabs.shutdown()
        for key, panel in self.panels.items():
            if key != "project" and hasattr(panel, "shutdown"):
                try:
                    panel.shutdown()
                except Exception:
                    log.exception("shutting down the %s panel failed", key)
        if self.bridge is not None:
            self.bridge.shutdown()
