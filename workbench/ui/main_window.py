"""The workbench window: editor in the middle, dockable panels around it, menus and status bar.

The window only arranges and wires things: the panels and the service bridge are built by the
composition root (`workbench.ui.app.create_window`) and handed in. A panel that could not be
built (its module not written yet, or failing) is shown as a placeholder in its dock. This module
is the layout (docks, menus, toolbar, status bar, geometry) and the commands the menus give; the
project's lifecycle (open, new, trust, saves, closing) is `ui/project/lifecycle.py`'s, mixed in.
"""

from __future__ import annotations

import logging
from typing import Any

from PySide6.QtCore import QByteArray, Qt, QTimer
from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import (
    QDockWidget,
    QLabel,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QToolBar,
    QVBoxLayout,
    QWidget,
)

from workbench.backends import BACKENDS
from workbench.manifest import MANIFEST_NAME
from workbench.project import Project, examples_dir
from workbench.ui.debug import install as install_debug_dock
from workbench.ui.devices.reference_question import confirm_reference_device
from workbench.ui.editor import EditorTabs
from workbench.ui.layout_fit import ElidedLabel
from workbench.ui.project.diagnostics import ProjectDiagnostics
from workbench.ui.project.lifecycle import ProjectLifecycle
from workbench.ui.project.tree import ProjectTree
from workbench.ui.project.trust import TrustBar
from workbench.ui.project.watch import ProjectFilesWatch
from workbench.ui.screen_fit import fit_to_screen, fits
from workbench.ui.settings import Settings, load_settings, save_settings
from workbench.ui.size_controls import SizeControls
from workbench.ui.stray_tab_bars import hide_stray_tab_bars
from workbench.ui.tests_dock.dev_loop import DevLoop

log = logging.getLogger(__name__)

#: Dock key -> (title, default area). The order is the View menu's order.
DOCKS = {
    "project": ("Project", Qt.DockWidgetArea.LeftDockWidgetArea),
    "devices": ("Devices", Qt.DockWidgetArea.LeftDockWidgetArea),
    "build": ("Build", Qt.DockWidgetArea.BottomDockWidgetArea),
    "results": ("Results", Qt.DockWidgetArea.BottomDockWidgetArea),
    "console": ("Console", Qt.DockWidgetArea.BottomDockWidgetArea),
    "sessions": ("Sessions", Qt.DockWidgetArea.RightDockWidgetArea),
    "plots": ("Plots", Qt.DockWidgetArea.RightDockWidgetArea),
    "artifacts": ("Artifacts", Qt.DockWidgetArea.RightDockWidgetArea),
    "tuning": ("Tuning", Qt.DockWidgetArea.RightDockWidgetArea),
    "counters": ("Counters", Qt.DockWidgetArea.RightDockWidgetArea),
}


#: Version of the saved dock layout (QMainWindow.saveState). A layout saved with another version
#: (an older window's docks) is not restored: the default layout is used instead, never a broken one.
#: 3: the bottom row (build, results) runs under the left column too, wide enough for the numbers.
LAYOUT_VERSION = 3
#: The window's size on a first start (then brought inside the screen, `fit_to_screen`) and that
#: of `workbench gui --screenshot` pictures without `--window-size`.
DEFAULT_SIZE = (1600, 1000)


def placeholder(text: str) -> QLabel:
    """What a dock shows when its panel is not available."""
    label = QLabel(text)
    label.setObjectName("PanelPlaceholder")
    label.setAlignment(Qt.AlignmentFlag.AlignCenter)
    label.setWordWrap(True)
    label.setEnabled(False)
    return label


class MainWindow(ProjectLifecycle, QMainWindow):
    """The workbench window on one project at a time."""

    def __init__(
        self,
        bridge: Any = None,
        panels: dict[str, QWidget] | None = None,
        settings: Settings | None = None,
        parent: QWidget | None = None,
    ):
        super().__init__(parent)
        self.setObjectName("WorkbenchMainWindow")
        self.setWindowTitle("Rust GPU Workbench")
        self.setDockNestingEnabled(True)
        self.bridge = bridge
        self.settings = settings if settings is not None else load_settings()
        self.project: Project | None = None
        self.trusted = False
        self.persist_settings = True  # off for one-shot screenshots
        self.ask_before_discarding = True  # tests turn this off: no modal dialog at teardown
        self._closed = False

        self.editor_tabs = EditorTabs(font_size=self.settings.editor_font_size)
        self.diagnostics = ProjectDiagnostics(self.editor_tabs, self)
        #: The project folder on disk, watched whole (the editor watches only the files it shows).
        self.files_watch = ProjectFilesWatch(self)
        self.trust_bar = TrustBar()
        central = QWidget()
        layout = QVBoxLayout(central)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.trust_bar)
        layout.addWidget(self.editor_tabs, 1)
        self.setCentralWidget(central)

        self.project_tree = ProjectTree()
        self.panels: dict[str, QWidget] = {"project": self.project_tree}
        for key in DOCKS:
            if key != "project":
                widget = (panels or {}).get(key)
                self.panels[key] = (
                    widget if widget is not None else placeholder(f"{DOCKS[key][0]}: not available")
                )
        self.docks: dict[str, QDockWidget] = {}
        self._make_docks()
        self._make_actions()
        self._make_menus()
        self._make_toolbar()
        self._make_status_bar()
        self._connect()
        self.dev_loop = DevLoop(self)  # Format, lints after a build, the Tests dock (issue 39)
        self.debug_panel = install_debug_dock(self)  # the Debug dock (issue 40)
        self._default_state = self.saveState(LAYOUT_VERSION)
        self._restore_layout()
        self._hide_stray_tab_bars()  # a restored layout's, too
        self._update_actions()

    # ================================================================ construction
    def _make_docks(self) -> None:
        for key, (title, area) in DOCKS.items():
            dock = QDockWidget(title, self)
            dock.setObjectName(f"dock-{key}")
            dock.setWidget(self.panels[key])
            self.addDockWidget(area, dock)
            self.docks[key] = dock
        # The plots run the window's full height; the bottom row (build, results) runs under the
        # project and devices column and the editor: between both side columns, at 1280 px the
        # results were one word wide.
        self.setCorner(Qt.Corner.BottomLeftCorner, Qt.DockWidgetArea.BottomDockWidgetArea)
        self.setCorner(Qt.Corner.BottomRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)
        self.splitDockWidget(self.docks["project"], self.docks["devices"], Qt.Orientation.Vertical)
        self.splitDockWidget(self.docks["build"], self.docks["results"], Qt.Orientation.Horizontal)
        self.tabifyDockWidget(self.docks["build"], self.docks["console"])
        # Sessions beside the plots (run history next to the run's plots): in the bottom row its
        # filters would leave a 1280-pixel window no room for the build and results side by side.
        self.tabifyDockWidget(self.docks["plots"], self.docks["artifacts"])
        self.tabifyDockWidget(self.docks["plots"], self.docks["sessions"])
        self.tabifyDockWidget(self.docks["plots"], self.docks["tuning"])
        self.tabifyDockWidget(self.docks["plots"], self.docks["counters"])
        self.docks["build"].raise_()
        self.docks["plots"].raise_()
        self._hide_stray_tab_bars()
        # The docks' layout first: else its minimum, stale from the docks added one by one above,
        # holds the window at a height of its own (1600x1259 instead of 1600x1000).
        self.layout().activate()
        self.resize(*DEFAULT_SIZE)
        self._sized = False

    def _hide_stray_tab_bars(self) -> None:
        hide_stray_tab_bars(self, self.docks.values())  # Qt 6.11's leftovers (`stray_tab_bars`)

    def _apply_default_sizes(self) -> None:
        """Dock sizes for a first start or a reset layout, in proportion to the window (1280×800 and
        1600×1000 both leave the editor room); never below what a dock's contents need."""
        d, width, height = self.docks, self.width(), self.height()
        side = max(260, int(width * 0.2), d["devices"].minimumSizeHint().width())
        right = max(d[k].minimumSizeHint().width() for k in ("plots", "artifacts", "sessions"))
        plots = max(int(width * 0.33), right)
        self.resizeDocks([d["project"], d["plots"]], [side, plots], Qt.Orientation.Horizontal)
        # The bottom row is as tall as the build panel needs to show every backend's row.
        need = max(d[k].minimumSizeHint().height() for k in ("build", "results", "console"))
        self.resizeDocks([d["build"]], [max(need, int(height * 0.28))], Qt.Orientation.Vertical)
        self.resizeDocks([d["project"], d["devices"]], [1, 3], Qt.Orientation.Vertical)
        # The results get the larger share: the numbers, the verdict and the check side by side.
        row = max(1, width - plots)
        build = max(d["build"].minimumSizeHint().width(), int(row * 0.36))
        self.resizeDocks([d["build"], d["results"]], [build, row - build], Qt.Orientation.Horizontal)

    def showEvent(self, event) -> None:  # noqa: N802
        super().showEvent(event)
        if not self._sized:
            self._sized = True
            # Inside the screen, now that the window's frame is known: a saved geometry from a
            # larger screen, or the default 1600x1000 on a smaller one (a 1366x768 laptop).
            fit_to_screen(self)
            if not self._layout_restored:
                # After the events queued by now: a resize right after show() (`gui
                # --window-size`) is the size the docks are proportioned to, not 1600x1000.
                QTimer.singleShot(0, self, self._apply_default_sizes)
            # A restored layout's bars twice over are told apart once laid out.
            QTimer.singleShot(0, self, self._hide_stray_tab_bars)

    def _action(self, text: str, slot=None, shortcut=None, checkable=False, tip: str = "") -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
        action.setCheckable(checkable)
        if tip:
            action.setStatusTip(tip)
            action.setToolTip(tip)
        if slot is not None:
            action.triggered.connect(slot)
        return action

    def _make_actions(self) -> None:
        tabs = self.editor_tabs
        self.open_action = self._action("&Open project…", self.choose_project, QKeySequence.StandardKey.Open)
        self.new_action = self._action("&New kernel project…", self.new_project, "Ctrl+Shift+N")
        self.save_action = self._action("&Save", self.save_current, QKeySequence.StandardKey.Save)
        self.save_all_action = self._action("Save a&ll", self.editor_tabs.save_all, "Ctrl+Shift+S")
        self.close_tab_action = self._action(
            "&Close tab", lambda: tabs.close_tab(tabs.tabs.currentIndex()), QKeySequence.StandardKey.Close
        )
        self.quit_action = self._action("&Quit", self.close, QKeySequence.StandardKey.Quit)
        self.undo_action = self._action(
            "&Undo", lambda: self._editor_call("undo"), QKeySequence.StandardKey.Undo
        )
        self.redo_action = self._action(
            "&Redo", lambda: self._editor_call("redo"), QKeySequence.StandardKey.Redo
        )
        self.find_action = self._action("&Find…", lambda: tabs.show_find(False), "Ctrl+F")
        self.replace_action = self._action("&Replace…", lambda: tabs.show_find(True), "Ctrl+H")
        self.goto_action = self._action("&Go to line…", tabs.show_goto, "Ctrl+G")
        self.build_action = self._action("&Build", self.build, "Ctrl+B", tip="Build the checked backends")
        self.run_action = self._action("&Run", self.run, "F5", tip="Build, then run on the checked devices")
        self.cancel_action = self._action("&Cancel", self.cancel, "Ctrl+.", tip="Cancel the build or run")
        self.hot_reload_action = self._action(
            "&Hot reload on save", checkable=True, tip="Rebuild and rerun whenever a file is saved"
        )
        self.hot_reload_action.setChecked(self.settings.hot_reload)
        self.trust_action = self._action("&Trust this project…", lambda: self.set_trusted(True))
        self.reset_layout_action = self._action("Reset &layout", self.reset_layout)
        self.backend_actions: dict[str, QAction] = {}
        self.backend_group = QActionGroup(self)
        self.backend_group.setExclusive(False)
        chosen = set(self.bridge.backends() if self.bridge is not None else self.settings.backends)
        for name in BACKENDS:
            action = self._action(name, checkable=True, tip=f"Build and run the {name} backend")
            action.setChecked(name in chosen)
            action.toggled.connect(self._backends_toggled)
            self.backend_group.addAction(action)
            self.backend_actions[name] = action

    def _make_menus(self) -> None:
        bar = self.menuBar()
        file_menu = bar.addMenu("&File")
        file_menu.addActions([self.open_action, self.new_action])
        self.recent_menu = file_menu.addMenu("Open &recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent_menu)
        # Each opens the user's copy (`_writable_copy`), and the status bar says where it lives.
        self.examples_menu = file_menu.addMenu("Open e&xample")
        for example in sorted(p.parent for p in examples_dir().glob(f"*/{MANIFEST_NAME}")):
            self.examples_menu.addAction(example.name, lambda p=example: self.open_project(p))
        file_menu.addSeparator()
        file_menu.addActions([self.save_action, self.save_all_action, self.close_tab_action])
        file_menu.addSeparator()
        file_menu.addAction(self.quit_action)
        edit_menu = bar.addMenu("&Edit")
        edit_menu.addActions([self.undo_action, self.redo_action])
        edit_menu.addSeparator()
        edit_menu.addActions([self.find_action, self.replace_action, self.goto_action])
        self.view_menu = bar.addMenu("&View")
        for dock in self.docks.values():
            self.view_menu.addAction(dock.toggleViewAction())
        self.view_menu.addSeparator()
        self.artifacts_menu = self.view_menu.addMenu("Show &artifacts of")
        for name in BACKENDS:
            self.artifacts_menu.addAction(name, lambda n=name: self.show_artifacts(n))
        self.view_menu.addAction(self.reset_layout_action)
        build_menu = bar.addMenu("&Build")
        build_menu.addActions([self.build_action, self.run_action, self.cancel_action])
        build_menu.addSeparator()
        backends_menu = build_menu.addMenu("Back&ends")
        backends_menu.addActions(list(self.backend_actions.values()))
        build_menu.addAction(self.hot_reload_action)
        build_menu.addSeparator()
        build_menu.addAction(self.trust_action)

    def _make_toolbar(self) -> None:
        toolbar = QToolBar("Toolbar", self)  # "Build" is the dock's name in the View menu
        toolbar.setObjectName("toolbar-build")
        toolbar.setMovable(False)
        toolbar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        style = self.style()
        self.build_action.setIcon(style.standardIcon(style.StandardPixmap.SP_BrowserReload))
        self.run_action.setIcon(style.standardIcon(style.StandardPixmap.SP_MediaPlay))
        self.cancel_action.setIcon(style.standardIcon(style.StandardPixmap.SP_MediaStop))
        toolbar.addActions([self.build_action, self.run_action, self.cancel_action])
        toolbar.addSeparator()
        toolbar.addWidget(QLabel(" Backends: "))
        toolbar.addActions(list(self.backend_actions.values()))
        #: One field per size of the kernel (None without the services): the runs' sizes.
        self.size_controls = SizeControls(self.bridge) if self.bridge is not None else None
        if self.size_controls is not None:
            toolbar.addSeparator()
            toolbar.addWidget(self.size_controls)
        self.addToolBar(Qt.ToolBarArea.TopToolBarArea, toolbar)
        self.toolbar = toolbar
        self.view_menu.insertAction(self.view_menu.actions()[len(DOCKS)], toolbar.toggleViewAction())

    def _make_status_bar(self) -> None:
        status = self.statusBar()
        self.busy_bar = QProgressBar()
        self.busy_bar.setRange(0, 0)
        self.busy_bar.setMaximumWidth(90)
        self.busy_bar.setMaximumHeight(14)
        self.busy_bar.hide()
        self.state_label = QLabel("No project")
        self.latency_label = QLabel("edit → result: –")
        self.latency_label.setToolTip("Time from saving a file to the results of the rebuild and rerun")
        self.position_label = ElidedLabel("", mode=Qt.TextElideMode.ElideMiddle)  # a deep path
        status.addPermanentWidget(self.position_label)
        status.addPermanentWidget(self.busy_bar)
        status.addPermanentWidget(self.state_label)
        status.addPermanentWidget(self.latency_label)

    def _connect(self) -> None:
        self.project_tree.fileActivated.connect(lambda path: self.editor_tabs.open_file(path))
        self.editor_tabs.saved.connect(self._on_saved)
        self.editor_tabs.reloadedFromDisk.connect(self._on_saved)  # an external save is a save too
        self.files_watch.changed.connect(self._on_disk_changed)
        self.editor_tabs.errorMessage.connect(self.show_message)
        self.editor_tabs.currentFileChanged.connect(self._on_current_file)
        self.trust_bar.trustRequested.connect(lambda: self.set_trusted(True))
        self.trust_bar.declined.connect(lambda: self.set_trusted(False))
        build_panel = self.panels.get("build")
        if hasattr(build_panel, "openLocation"):
            build_panel.openLocation.connect(self.open_location)
        if self.bridge is None:
            return
        self.size_controls.message.connect(self.show_message)
        self.bridge.buildFinished.connect(self.diagnostics.build_finished)
        self.bridge.busyChanged.connect(self._on_busy)
        self.bridge.latencyMeasured.connect(self._on_latency)
        self.bridge.statusMessage.connect(self.show_message)
        self.bridge.runFinished.connect(lambda _r: self.docks["results"].raise_())
        self.bridge.runFinished.connect(self.diagnostics.run_finished)
        self.bridge.backendsChanged.connect(self._sync_backend_actions)
        self.bridge.manifestChecked.connect(self.diagnostics.manifest_checked)
        self.bridge.projectChanged.connect(self._on_project_reread)

    # ================================================================ editing
    def _editor_call(self, name: str) -> None:
        editor = self.editor_tabs.current_editor()
        if editor is not None:
            getattr(editor, name)()

    def _on_current_file(self, path: str) -> None:
        if path and self.project is not None:
            self.position_label.setText(self.project.relative(path))

    def confirm_reference_device(self, proceed) -> bool:
        """Run `proceed` now, unless the reference backend needs a device the user unchecked:
        then ask first (`devices/reference_question.py`)."""
        picker = self.panels.get("devices")
        return confirm_reference_device(self, self.bridge, picker, proceed, self.show_message)

    # ================================================================ build / run
    def build(self) -> None:
        if self._can_work():
            self.editor_tabs.save_all()
            self.bridge.build()

    def run(self) -> None:
        if self._can_work():
            if self.size_controls is not None and not self.size_controls.apply():
                return  # a refused size: its field is marked and the status bar says why
            self.editor_tabs.save_all()
            self.confirm_reference_device(self.bridge.run)

    def cancel(self) -> None:
        if self.bridge is not None:
            self.bridge.cancel()

    def _can_work(self) -> bool:
        return self.bridge is not None and self.project is not None and self.trusted

    def selected_backends(self) -> list[str]:
        return [name for name, action in self.backend_actions.items() if action.isChecked()]

    def _backends_toggled(self, _checked: bool) -> None:
        if self.bridge is not None:
            self.bridge.set_backends(self.selected_backends())

    def _sync_backend_actions(self, backends: list[str]) -> None:
        for name, action in self.backend_actions.items():
            if action.isChecked() != (name in backends):
                action.blockSignals(True)
                action.setChecked(name in backends)
                action.blockSignals(False)

    def show_source_diagnostics(self, source: str, diagnostics: list[dict]) -> None:
        """Diagnostics of rustfmt, clippy or the tests (`dev_loop`), replacing that source's last."""
        self.diagnostics.set(source, diagnostics)
        if hasattr(self.panels.get("build"), "show_source_diagnostics"):
            self.panels["build"].show_source_diagnostics(source, diagnostics)

    def _on_busy(self, busy: bool) -> None:
        self.busy_bar.setVisible(busy)
        self.state_label.setText("Working…" if busy else "Ready")
        self._update_actions()

    def _on_latency(self, seconds: float) -> None:
        manual = self.bridge.last_latency_reason == "run"  # latencyMeasured comes from the bridge
        self.latency_label.setText(f"{'run' if manual else 'edit'} → result: {seconds:.2f} s")

    def show_artifacts(self, backend: str) -> None:
        view = self.panels.get("artifacts")
        if hasattr(view, "show_backend"):
            self.docks["artifacts"].show()
            self.docks["artifacts"].raise_()
            view.show_backend(backend)

    def _update_actions(self) -> None:
        can = self._can_work()
        busy = self.bridge is not None and self.bridge.busy
        self.build_action.setEnabled(can)
        self.run_action.setEnabled(can)
        self.cancel_action.setEnabled(busy)
        self.trust_action.setEnabled(self.project is not None and not self.trusted)
        self.save_action.setEnabled(self.project is not None and self.trusted)
        if self.project is None:
            self.state_label.setText("No project")
        elif not self.trusted:
            self.state_label.setText("Read-only")
        elif not busy:
            self.state_label.setText("Ready")

    # ================================================================ messages
    def show_message(self, text: str) -> None:
        self.statusBar().showMessage(text, 8000)

    def show_error(self, text: str) -> None:
        """Tell the user without blocking: a non-modal message box and the status bar."""
        log.warning("%s", text)
        self.show_message(text)
        box = QMessageBox(
            QMessageBox.Icon.Warning, "Rust GPU Workbench", text, QMessageBox.StandardButton.Ok, self
        )
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.setObjectName("ErrorMessage")
        box.open()

    # ================================================================ layout
    def _restore_layout(self) -> None:
        """The remembered geometry, brought inside the screen, and dock layout; a layout of another
        LAYOUT_VERSION, a damaged one, or one that needs more room than the screen (and than the
        default layout) leaves the default layout in place."""
        self._layout_restored = False
        if self.settings.window_geometry:
            self.restoreGeometry(QByteArray.fromBase64(self.settings.window_geometry.encode()))
            fit_to_screen(self)
        if self.settings.window_state:
            default_need = self.minimumSizeHint()
            state = QByteArray.fromBase64(self.settings.window_state.encode())
            self._layout_restored = self.restoreState(state, LAYOUT_VERSION)
            if not self._layout_restored:
                log.info("the saved window layout is from another version: using the default layout")
                self.settings.window_state = ""
            elif not fits(self, self.minimumSizeHint(), default_need):
                log.info("the saved window layout does not fit the screen: using the default layout")
                self.restoreState(self._default_state, LAYOUT_VERSION)
                self._layout_restored = False
                self.settings.window_state = ""

    def reset_layout(self) -> None:
        """The default docks, every one shown and docked, sized in proportion to the window."""
        self.restoreState(self._default_state, LAYOUT_VERSION)
        for dock in self.docks.values():
            dock.show()
        self._apply_default_sizes()
        self.layout().activate()  # the bars and docks at their new places: which bar is whose
        self._hide_stray_tab_bars()

    def save_layout(self) -> None:
        """Put the window's state (layout, open files, choices) into the settings and write them."""
        self.settings.window_geometry = bytes(self.saveGeometry().toBase64()).decode()
        self.settings.window_state = bytes(self.saveState(LAYOUT_VERSION).toBase64()).decode()
        self._remember_open_files()
        self.settings.hot_reload = self.hot_reload_action.isChecked()
        if self.bridge is not None:
            self.settings.backends = self.bridge.backends()
            self.settings.devices = self.bridge.devices()
        else:
            self.settings.backends = self.selected_backends()
        if self.persist_settings:
            save_settings(self.settings)
