"""The tab bars Qt 6.11 leaves on a QMainWindow and shows with it, at stale places over other docks.

Two kinds are seen: a bar of an earlier step of tabifying the docks (a second Plots | Artifacts
over the results), and after `restoreState` (Reset layout) every bar of the layout before, beside
the new ones with the same tabs (after three resets: three Build | Console bars). A dock is in one
tab group, so a bar whose tabs are all in a larger bar is stray; of bars with the same tabs, the
newest that lies along its group's dock is the layout's and the others are stray. That is decided
once the window is laid out: before, no bar lies anywhere and none of them is hidden.
"""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtWidgets import QDockWidget, QMainWindow, QTabBar


def hide_stray_tab_bars(window: QMainWindow, docks: Iterable[QDockWidget]) -> None:
    """Hide the bars of `window` (its direct children) that its layout no longer uses."""
    docks = list(docks)
    bars = [b for b in window.findChildren(QTabBar) if b.parent() is window and not b.isHidden()]
    tabs = {bar: frozenset(bar.tabText(i) for i in range(bar.count())) for bar in bars}
    for bar in bars:
        if any(other is not bar and tabs[bar] < tabs[other] for other in bars):
            bar.hide()
    groups: dict[frozenset[str], list[QTabBar]] = {}
    for bar in bars:
        if not bar.isHidden():
            groups.setdefault(tabs[bar], []).append(bar)
    for same in groups.values():
        if len(same) > 1:
            placed = [bar for bar in same if lies_along_its_dock(bar, docks)]
            if not placed:
                continue  # not laid out yet: hiding the layout's own bar would lose the tabs
            # Where a stale bar lies on the layout's (same window size), Qt's newest is the
            # layout's: each restore made new bars and reused none (seen in 6.11). findChildren
            # lists them oldest first.
            for bar in same:
                if bar is not placed[-1]:
                    bar.hide()


def lies_along_its_dock(bar: QTabBar, docks: Iterable[QDockWidget]) -> bool:
    """The bar spans the dock of its selected tab (the layout places its bar there)."""
    title = bar.tabText(bar.currentIndex())
    dock = next((d for d in docks if d.windowTitle() == title), None)
    if dock is None or not dock.isVisible():
        return False
    return (bar.x(), bar.width()) == (dock.x(), dock.width())
