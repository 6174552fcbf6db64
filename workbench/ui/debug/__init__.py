"""The Debug dock (issue 40): `install(window)` adds it beside the build panel and wires it to the
editor's gutter (breakpoints), the editor (the stopped line) and the bridge's `debugRequested`
(the details view's "Debug element"). `panel.DebugPanel` is the dock's widget; `worker` runs
the Qt-free `workbench.debug` session off the window's thread.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDockWidget

from workbench.ui.debug.panel import DebugBridge, DebugPanel

__all__ = ["DebugBridge", "DebugPanel", "give_room", "install"]


def install(window: Any) -> DebugPanel:
    """The Debug dock in `window` (tabbed with the build panel), registered in its docks and
    panels (its `shutdown` ends a session with the window)."""
    panel = DebugPanel(window)
    dock = QDockWidget("Debug", window)
    dock.setObjectName("dock-debug")
    dock.setWidget(panel)
    window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, dock)
    window.tabifyDockWidget(window.docks["build"], dock)
    window.docks["build"].raise_()
    window.docks["debug"], window.panels["debug"] = dock, panel
    # Among the docks' entries of the View menu (before its separator), as the Tests dock's.
    window.view_menu.insertAction(window.view_menu.actions()[len(window.docks) - 1], dock.toggleViewAction())
    window.editor_tabs.gutterClicked.connect(panel.toggle_breakpoint)
    window.editor_tabs.breakpointsMoved.connect(panel.breakpoints_moved)
    # The dock brought to the front: a debug click is likely (parks only on a cached debug build).
    dock.visibilityChanged.connect(lambda shown: shown and panel.warm_up())
    panel.openLocation.connect(lambda path, line: window.open_location(path, line))
    panel.sessionStarted.connect(lambda: give_room(window, dock))
    panel.message.connect(window.show_message)
    if panel.bridge is not None:  # the details view's "Debug element"
        panel.bridge.debugRequested.connect(
            lambda asked: panel.debug_element(asked["buffer"], asked["index"], asked.get("writer"))
        )
    return panel


#: The Debug dock's share of the window while debugging (height) and of the bottom row (width): at
#: 1280x800 the bottom row's default (28 % high, the build panel's 36 % of it wide) left the
#: Locals tab about 4 rows and the values a word wide.
DEBUG_HEIGHT_SHARE = 0.46
DEBUG_WIDTH_SHARE = 0.55


def give_room(window: Any, dock: QDockWidget) -> None:
    """A session starts: the dock (and the build panel tabbed with it) grows to its debugging
    share of the window, never shrinks; the editor above keeps the rest, the stopped line in it."""
    height = int(window.height() * DEBUG_HEIGHT_SHARE)
    if dock.height() < height:
        window.resizeDocks([dock], [height], Qt.Orientation.Vertical)
    results = window.docks.get("results")
    if results is not None and results.isVisible() and not results.isFloating():
        row = dock.width() + results.width()
        width = int(row * DEBUG_WIDTH_SHARE)
        if dock.width() < width:
            window.resizeDocks([dock, results], [width, row - width], Qt.Orientation.Horizontal)
