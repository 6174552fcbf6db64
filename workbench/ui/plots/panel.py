"""`PlotsPanel`: the plot tabs named in `TAB_CLASSES`, fed by the bridge's run reports, redrawn by
a GUI-thread timer, and what they show as data (`plots_data()`, `workbench gui --plots-json`).

Reports arrive through the bridge's queued `runFinished` signal and are only buffered. Keeping the
event loop turning during hot reload (benchmarks/hot_reload.py) shapes the drawing:

- only what is on screen is drawn: the panel's current tab, while the panel is visible (a dock
  tabified behind another one counts as hidden); a tab drawn late is drawn when it is shown;
- one plot per timer tick, and the plot's auto-range is settled right after its data changes, so
  each repaint paints one plot once (pyqtgraph otherwise re-ranges inside the paint).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np
from PySide6.QtCore import QTimer, SignalInstance
from PySide6.QtWidgets import QDockWidget, QTabWidget, QVBoxLayout, QWidget

from workbench.ui.ceilings_store import store_for
from workbench.ui.plots.base import PlotTab, SeriesColors, TabContext
from workbench.ui.plots.outputs_tab import OutputsTab
from workbench.ui.plots.roofline_tab import RooflineTab
from workbench.ui.plots.timing_tab import TimingTab
from workbench.ui.visibility import follow_dock, on_screen

#: The panel's tabs, in order: the one list of them.
TAB_CLASSES: tuple[type[PlotTab], ...] = (TimingTab, OutputsTab, RooflineTab)
TABS = tuple(cls.name for cls in TAB_CLASSES)
#: The plots each tab holds; one plot is redrawn per timer tick.
PARTS = {cls.name: cls.parts for cls in TAB_CLASSES}
#: Timer interval: one plot per tick.
REDRAW_MS = 50


@runtime_checkable
class PlotsBridge(Protocol):
    """The bridge members the plots panel (and its ceilings store: `CeilingsOwner`) uses
    (`ServiceBridge` has them: tests/ui/test_typed_events.py)."""

    runFinished: SignalInstance
    projectChanged: SignalInstance
    cache_dir: Any


class PlotsPanel(QWidget):
    """The plot tabs, fed by run reports."""

    def __init__(self, bridge: PlotsBridge, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("PlotsPanel")
        self.bridge = bridge
        self.ceilings = store_for(bridge)
        self._report: Any = None
        self._stale: set[str] = set()
        self._dock: QDockWidget | None = None

        self._builds: dict[str, Any] = {}
        context = TabContext(
            SeriesColors(),
            self._mark_dirty,
            self._current_tab,
            self.ceilings,
            lambda: self._builds,
            lambda: getattr(bridge, "project", None),
        )
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self._by_name: dict[str, PlotTab] = {}
        for cls in TAB_CLASSES:
            tab = self._by_name[cls.name] = cls(context)
            self.tabs.addTab(tab, cls.title)
        self._owner = {part: tab for tab in self._by_name.values() for part in tab.parts}
        self.tabs.currentChanged.connect(self._wake)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.tabs)
        self.setMinimumWidth(320)

        self.timer = QTimer(self)
        self.timer.setObjectName("plotsRedraw")
        self.timer.setInterval(REDRAW_MS)
        self.timer.timeout.connect(self._redraw)
        bridge.runFinished.connect(self.add_report)
        bridge.projectChanged.connect(self.clear)
        self.ceilings.changed.connect(lambda: self._mark_dirty(PARTS["roofline"]))

    def tab(self, name: str) -> PlotTab:
        """The tab called `name` (one of `TABS`)."""
        return self._by_name[name]

    def show_tab(self, name: str) -> None:
        """Bring the tab called `name` to the front."""
        self.tabs.setCurrentWidget(self.tab(name))

    # ================================================================ data in (GUI thread, cheap)
    def add_report(self, report: Any) -> None:
        """Buffer a RunReport; the timer draws it. The run's builds are kept with it: a backend whose
        build failed has no result, and the plots list it as failed."""
        self._builds = dict(getattr(self.bridge, "last_build", None) or {})
        for tab in self._by_name.values():
            tab.add_report(report)
        self._report = report
        self._mark_dirty()

    def ensure_ceilings(self) -> None:
        """Measure the ceilings of the last run's devices that have none yet (in the background)."""
        self.tab("roofline").ensure_ceilings(self._report)

    def clear(self, *_: Any) -> None:
        self._report = None
        self._builds = {}
        for tab in self._by_name.values():
            tab.clear()
        self._mark_dirty()

    def _mark_dirty(self, parts: tuple[str, ...] | None = None) -> None:
        self._stale.update(parts if parts is not None else self._owner)
        self._wake()

    def _current_tab(self) -> str:
        widget = self.tabs.currentWidget()
        return widget.name if isinstance(widget, PlotTab) else ""

    def _wake(self, *_: Any) -> None:
        """Start the timer when the tab on screen has something to redraw."""
        if not self.timer.isActive() and self._stale.intersection(PARTS.get(self._current_tab(), ())):
            if on_screen(self):
                self.timer.start()

    def shutdown(self) -> None:
        """Stop the timers, the outputs worker and any ceilings measurement."""
        self.timer.stop()
        self._stale = set()
        for tab in self._by_name.values():
            tab.shutdown()
        self.ceilings.shutdown()

    def closeEvent(self, event) -> None:
        self.shutdown()
        super().closeEvent(event)

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        for tab in self._by_name.values():
            tab.panel_resized(event.size().width())

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._dock is None:
            self._dock = follow_dock(self, self._dock_visibility)
        self._wake()

    def _dock_visibility(self, visible: bool) -> None:
        if visible:
            QTimer.singleShot(0, self, self._wake)  # the dock's geometry lands after this signal

    # ================================================================ drawing (timer)
    def _redraw(self) -> None:
        """Redraw one stale plot of the tab on screen per tick, so no tick holds the GUI long."""
        parts = [p for p in PARTS.get(self._current_tab(), ()) if p in self._stale]
        if not parts or not on_screen(self):
            self.timer.stop()
            return
        self._draw_part(parts[0])

    def _draw_part(self, part: str, wait: bool = False) -> None:
        self._stale.discard(part)
        self._owner[part].draw(part, self._report, wait=wait)

    def draw_now(self) -> None:
        """Draw every plot now, hidden tabs included (screenshots and `--plots-json`)."""
        for part in self._owner:
            self._draw_part(part, wait=True)

    # ================================================================ for tests, screenshots, --plots-json
    def plots_data(self) -> dict[str, Any]:
        """What each plot shows, in base units (s, FLOP/s, bytes/s): `workbench gui --plots-json`."""
        return {name: self.tab(name).model for name in ("roofline", "timing", "outputs")}

    def curve_data(self) -> dict[str, dict[str, tuple[np.ndarray, np.ndarray]]]:
        """What each plot currently draws: {plot: {series: (x, y)}} in plotted units."""
        return {key: value for tab in self._by_name.values() for key, value in tab.curve_data().items()}
