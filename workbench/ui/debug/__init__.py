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

__all__ = ["DebugBridge", "DebugPanel", "install"]


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
    # The dock brought to the front: a debug click is likely (parks only on a cached debug build).
    dock.visibilityChanged.connect(lambda shown: shown and panel.warm_up())
    panel.openLocation.connect(lambda path, line: window.open_location(path, line))
    panel.message.connect(window.show_message)
    if panel.bridge is not None:  # the details view's "Debug element"
        panel.bridge.debugRequested.connect(
            lambda asked: panel.debug_element(asked["buffer"], asked["index"], asked.get("writer"))
        )
    return panel
