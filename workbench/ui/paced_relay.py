"""Items from service threads to the GUI thread, in order, a few milliseconds at a time.

A queued signal per item delivers a burst in one turn of the event loop: a console `build()` and
`run()` post their first dozen build and run events together, and the panels' handling of all of
them (rows, summaries, layout) held the loop for 9-31 ms after the typed statement. Here the items
wait in a queue; the GUI thread delivers them until `TURN_S` is spent, then lets the loop turn
(timers, painting, input) before the next ones. Order is kept; nothing is dropped until `close`.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Qt, QTimer, Signal

#: How long one turn of the event loop may spend delivering items (one item may take longer).
TURN_S = 0.006


class PacedRelay(QObject):
    """`post(item)` from any thread; `deliver(item)` is called on the GUI thread, in order."""

    _wake = Signal()

    def __init__(self, deliver: Callable[[Any], None], parent: QObject | None = None):
        super().__init__(parent)
        self._deliver = deliver
        self._items: deque[Any] = deque()
        self._lock = threading.Lock()
        self._scheduled = False  # a drain is on its way to the GUI thread
        self._closed = False
        self._wake.connect(self._drain, Qt.ConnectionType.QueuedConnection)

    def post(self, item: Any) -> None:
        with self._lock:
            if self._closed:
                return
            self._items.append(item)
            if self._scheduled:
                return
            self._scheduled = True
        self._wake.emit()

    def pending(self) -> int:
        with self._lock:
            return len(self._items)

    def close(self) -> None:
        """Deliver nothing more (what is queued is dropped)."""
        with self._lock:
            self._closed = True
            self._items.clear()

    def _drain(self) -> None:
        end = time.perf_counter() + TURN_S
        while True:
            with self._lock:
                if not self._items or self._closed:
                    self._scheduled = False
                    return
                item = self._items.popleft()
            self._deliver(item)
            if time.perf_counter() >= end:
                break
        QTimer.singleShot(0, self._drain)  # the rest once the loop has turned
