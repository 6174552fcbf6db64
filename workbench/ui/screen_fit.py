"""A top-level window inside its screen: the available area of the screen it is on, whether a
layout's minimum fits there, and the window shrunk and moved inside it (a geometry saved on a
larger screen, or the default 1600x1000 on a 1366x768 laptop)."""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QWidget


def screen_area(window: QWidget) -> QRect:
    """The available area of the screen the window is on (or would be, before it is shown)."""
    screen = QGuiApplication.screenAt(window.geometry().center()) or window.screen()
    return screen.availableGeometry()


def fits(window: QWidget, need: QSize, default_need: QSize) -> bool:
    """Whether a layout needing `need` fits the screen, or needs no more than the default does."""
    area = screen_area(window)
    return all(n <= max(a, d) for n, a, d in ((need.width(), area.width(), default_need.width()),
                                               (need.height(), area.height(), default_need.height())))  # fmt: skip


def fit_to_screen(window: QWidget) -> None:
    """Shrink and move the window inside its screen's available area (a window saved while it
    was larger than the screen, or on a larger screen, comes back inside this one)."""
    area = screen_area(window)
    frame = window.frameGeometry()
    extra = QSize(frame.width() - window.width(), frame.height() - window.height())
    width = max(1, min(window.width(), area.width() - extra.width()))
    height = max(1, min(window.height(), area.height() - extra.height()))
    if (width, height) != (window.width(), window.height()):
        window.resize(width, height)
    frame = window.frameGeometry()
    x = min(max(frame.x(), area.left()), max(area.left(), area.right() + 1 - frame.width()))
    y = min(max(frame.y(), area.top()), max(area.top(), area.bottom() + 1 - frame.height()))
    if (x, y) != (frame.x(), frame.y()):
        window.move(x, y)
