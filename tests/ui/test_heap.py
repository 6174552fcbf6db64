"""The window's heap after `settle_heap` (what `workbench gui` calls once the window is up): a full
collection walks only the objects made since, not the window's own (a 35-60 ms hitch each before)."""

from __future__ import annotations

import gc
import weakref

from workbench.ui.app import settle_heap


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
