"""The window's view of measured device ceilings: cached ones at once, missing ones measured in the
background (in worker processes, on a plain thread) and announced with a queued signal."""

from __future__ import annotations

import logging
import threading
import weakref
from typing import Any, Protocol, runtime_checkable

from PySide6.QtCore import QObject, Qt, Signal

from workbench.run.ceilings import Ceilings, cached, ceilings_for, device_key

log = logging.getLogger(__name__)


@runtime_checkable
class CeilingsOwner(Protocol):
    """The bridge members `store_for` (a QObject too: the store's parent) uses (`ServiceBridge` has
    them: tests/ui/test_typed_events.py)."""

    cache_dir: Any


class CeilingsStore(QObject):
    """Ceilings by device; `changed` fires (GUI thread) when a measurement lands or fails."""

    changed = Signal()
    _landed = Signal(object)

    def __init__(self, cache_dir: Any = None, parent: QObject | None = None):
        super().__init__(parent)
        self.cache_dir = cache_dir
        self._known: dict[str, Ceilings | None] = {}
        self._pending: set[str] = set()
        self.errors: dict[str, str] = {}
        self._thread: threading.Thread | None = None
        self._pool: Any = None
        self._closed = False
        self._cancel = threading.Event()
        self._landed.connect(self._on_landed, Qt.ConnectionType.QueuedConnection)

    def get(self, device: dict[str, Any]) -> Ceilings | None:
        """Known ceilings of `device` (a cheap cache-file read the first time), or None."""
        if not device or not device.get("runtime"):
            return None
        key = device_key(device)
        if key not in self._known:
            self._known[key] = cached(device, self.cache_dir)
        return self._known[key]

    @property
    def measuring(self) -> bool:
        return bool(self._pending)

    def is_measuring(self, device: dict[str, Any]) -> bool:
        return device_key(device) in self._pending

    def ensure(self, devices: list[dict[str, Any]]) -> None:
        """Measure the devices that have no ceilings yet (and are not failing)."""
        missing = [d for d in devices if self.get(d) is None and device_key(d) not in self.errors]
        self._start(missing, refresh=False)

    def remeasure(self, devices: list[dict[str, Any]]) -> None:
        for device in devices:
            self.errors.pop(device_key(device), None)
        self._start(devices, refresh=True)

    def _start(self, devices: list[dict[str, Any]], refresh: bool) -> None:
        # A GPU host's devices (workbench.remote) cannot be measured by this machine's workers.
        devices = [
            d
            for d in devices
            if d.get("runtime") and not d.get("host") and device_key(d) not in self._pending
        ]
        if not devices or self._closed:
            return
        self._pending.update(device_key(d) for d in devices)
        previous = self._thread
        thread = threading.Thread(
            target=self._work, args=(devices, refresh, previous), name="wb-ceilings", daemon=True
        )
        self._thread = thread
        thread.start()
        self.changed.emit()

    def _work(self, devices: list[dict[str, Any]], refresh: bool, previous: threading.Thread | None) -> None:
        if previous is not None:
            previous.join()  # one measurement at a time: they would slow each other down
        from workbench.run.pool import WorkerPool

        for device in devices:
            if self._closed:
                break
            self._pool = pool = WorkerPool()
            try:
                (found,) = ceilings_for(
                    [device], refresh=refresh, cache_dir=self.cache_dir, pool=pool, cancelled=self._cancel
                )
                outcome: Any = found
            except Exception as exc:  # a failing device must not stop the others or the window
                outcome = f"{type(exc).__name__}: {exc}"
            finally:
                pool.close()
                self._pool = None
            if not self._closed:
                self._landed.emit((device, outcome))

    def _on_landed(self, item: tuple[dict[str, Any], Any]) -> None:
        device, outcome = item
        key = device_key(device)
        self._pending.discard(key)
        if isinstance(outcome, Ceilings) and (outcome.copy_gbps or outcome.fma_gflops_f32):
            self._known[key] = outcome
            self.errors.pop(key, None)
        else:
            self.errors[key] = outcome.notes if isinstance(outcome, Ceilings) else str(outcome)
            log.warning("measuring the ceilings of %s failed: %s", device.get("spec"), self.errors[key])
        self.changed.emit()

    def shutdown(self) -> None:
        """Stop a measurement in flight (its worker processes are killed) and wait for the thread."""
        self._closed = True
        self._cancel.set()
        pool = self._pool
        if pool is not None:
            pool.kill_all()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout=10)
        self._pending.clear()


_stores: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def store_for(bridge: CeilingsOwner) -> CeilingsStore:
    """The one store of a bridge (shared by the device panel and the plots), built on first use."""
    store = _stores.get(bridge)
    if store is None:
        store = CeilingsStore(bridge.cache_dir, parent=bridge)
        _stores[bridge] = store
    return store
