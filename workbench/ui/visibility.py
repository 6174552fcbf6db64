"""Whether a panel is really on screen, and hearing when its dock is raised.

A dock tabified behind another one stays `isVisible()`, only moved off screen, and raising it does
not show its widget again: panels that skip work while hidden ask `on_screen` and listen to their
dock's `visibilityChanged` (`follow_dock`); `WhenSeen` is the whole rule for work that waits until a
view is seen."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QDockWidget, QWidget

from workbench.ui.layout_fit import OnEvent


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


class OnShow(OnEvent):
    """Calls `callback` whenever `widget` is shown (its tab made current, its dock raised)."""

    kind = QEvent.Type.Show


class WhenSeen(QObject):
    """Work on a view that waits until the view is seen: the one rule of the panels that skip
    drawing while covered (a tabified dock behind another, a hidden tab).

    `mark()` says the view is out of date. With `defer` (several marks in one turn of the event
    loop are one `run`) the work runs once this turn is over; without, at once; in both cases
    only while `widget` is on screen. A covered view runs it when it is next shown: its own show
    (at once, or after that turn with `defer`),
    or its tabified dock raised (followed from the first show, once the widget has its dock).
    `clear()` tells it the view was brought up to date another way; `retry_when_shown()`, from
    `run`, that it could not be (it runs again at the next show, not now). `stale`: out of date
    from the start (drawn at the first show)."""

    def __init__(
        self, widget: QWidget, run: Callable[[], None], *, defer: bool = False, stale: bool = False
    ) -> None:
        super().__init__(widget)
        self.stale = stale
        self._widget = widget
        self._run = run
        self._defer = defer
        self._followed = False
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self.run_if_shown)
        self._on_show = OnShow(self._shown, widget)

    def mark(self) -> None:
        self.stale = True
        if self._defer:
            self._timer.start()
        else:
            self.run_if_shown()

    def clear(self) -> None:
        self.stale = False
        self._timer.stop()

    def retry_when_shown(self) -> None:
        """Still out of date, without running now (`mark` would run `run` again at once)."""
        self.stale = True

    def run_if_shown(self) -> bool:
        """Run the waiting work if the view is on screen; whether it ran."""
        if not self.stale:
            return False
        if not on_screen(self._widget):
            self._follow()
            return False
        self.clear()
        self._run()
        return True

    def _follow(self) -> None:
        if not self._followed:  # a raised dock does not show its widget again: listen to the dock
            self._followed = follow_dock(self._widget, self._dock_visible) is not None

    def _dock_visible(self, visible: bool) -> None:
        if visible and self.stale:
            self._timer.start()  # the dock's geometry lands after this signal

    def _shown(self) -> None:
        self._follow()
        if self.stale and self._defer:
            self._timer.start()  # after the widget's own showEvent has laid it out
        elif self.stale:  # being shown: seen (its region is known only once laid out)
            self.clear()
            self._run()
