"""Whether a panel is really on screen, and hearing when its dock is raised.

A dock tabified behind another one stays `isVisible()`, only moved off screen, and raising it does
not show its widget again: panels that skip work while hidden ask `on_screen` and listen to their
dock's `visibilityChanged` (`follow_dock`)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QDockWidget, QWidget


def on_screen(widget: QWidget) -> bool:
    """Visible and not covered."""
    return widget.isVisible() and not widget.visibleRegion().isEmpty()


def follow_dock(widget: QWidget, callback: Callable[[bool], None]) -> QDockWidget | None:
    """Connect `callback(visible)` to the dock holding `widget` (call once it is parented)."""
    parent = widget.parentWidget()
    while parent is not None and not isinstance(parent, QDockWidget):
        parent = parent.parentWidget()
    if parent is not None:
        parent.visibilityChanged.connect(callback)
    return parent
