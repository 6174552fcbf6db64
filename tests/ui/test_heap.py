"""The window's heap after `settle_heap` (what `workbench gui` calls once the window is up): a full
collection walks only the objects made since, not the window's own (a 35-60 ms hitch each before)."""

from __future__ import annotations

import gc
import threading
import weakref

from tests.waits import HANG_GUARD_MS
from workbench.ui.app import collect_on_gui_thread, settle_heap


def test_after_settle_heap_a_full_collection_walks_only_what_came_later(make_window, example_copy):
    window = make_window(example_copy("saxpy"))
    assert window.project is not None
    gc.collect()
    walked_before = len(gc.get_objects())
    frozen_before = gc.get_freeze_count()
    try:
        settle_heap()
        frozen = gc.get_freeze_count() - frozen_before
        assert frozen >= walked_before // 2  # the window's objects (the rest were garbage)
        assert len(gc.get_objects()) < walked_before // 10
        # What comes after is collected as before: a cycle made now is found and freed.
        node = _Node()
        node.me = node
        gone = weakref.ref(node)
        del node
        gc.collect()
        assert gone() is None
    finally:
        gc.unfreeze()  # the other tests' windows are not this one's


class _Node:
    me: _Node | None = None


def test_the_window_collects_cycles_on_the_gui_thread_only(qapp, qtbot):
    """`collect_on_gui_thread` (what `workbench gui` runs the window with): garbage cycles made on a
    worker thread are not collected there, however many, but by the GUI thread's timer; undone, the
    automatic collector is back."""
    freed_on: list[str] = []

    class Cycle:
        def __init__(self):
            self.me = self

        def __del__(self):
            freed_on.append(threading.current_thread().name)

    gc.enable()  # as a process starts (the UI tests' fixture runs each test without it)
    undo = collect_on_gui_thread(qapp, interval_ms=20)
    try:
        assert not gc.isenabled()

        def build() -> None:  # far past the youngest generation's threshold (700)
            for _ in range(20 * gc.get_threshold()[0]):
                Cycle()

        worker = threading.Thread(target=build, name="build-thread")
        worker.start()
        worker.join()
        assert freed_on == []  # nothing collected on the worker
        qtbot.waitUntil(lambda: len(freed_on) >= 10 * gc.get_threshold()[0], timeout=HANG_GUARD_MS)
        assert set(freed_on) == {threading.main_thread().name}
    finally:
        undo()
    assert gc.isenabled()
    gc.disable()  # as the fixture left it
