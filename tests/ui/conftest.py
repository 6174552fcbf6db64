"""Fixtures for the window tests: private settings, widget factories, leak checks, screenshots.

Every test here runs with `WB_CONFIG_DIR` pointing at a temporary folder, so nothing reads or
writes the user's real settings. An autouse fixture fails a test that leaves a QThread running,
a QTimer active or a `QTimer.singleShot` pending after its widgets were closed (as napari's
conftest does): such leftovers are what crashes Qt at interpreter exit.
"""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from PySide6 import QtCore  # noqa: E402
from shiboken6 import isValid  # noqa: E402

from tests.waits import HANG_GUARD_MS  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
TEST_OUTPUT = REPO / "test-output" / "ui"  # /test-output/ is git-ignored

#: How long teardown lets threads and timers wind down before calling them leaked (a hang guard:
#: the check ends as soon as they are gone).
LEAK_GRACE_MS = HANG_GUARD_MS


@pytest.fixture(autouse=True)
def wb_config_dir(tmp_path, monkeypatch):
    """Point the settings at a private folder (tests must never touch the real config)."""
    path = tmp_path / "wb-config"
    path.mkdir()
    monkeypatch.setenv("WB_CONFIG_DIR", str(path))
    return path


class _QtLeakTracker:
    """Records every QThread/QTimer started from Python, and pending singleShot callbacks."""

    def __init__(self):
        self.threads: list[weakref.ref] = []
        self.timers: list[tuple[weakref.ref, str]] = []
        self.pending_single_shots: dict[int, str] = {}
        self._next_id = 0

    def install(self, monkeypatch):
        tracker = self
        thread_start = QtCore.QThread.start
        timer_start = QtCore.QTimer.start
        single_shot = QtCore.QTimer.singleShot

        def start_thread(thread, *args, **kwargs):
            tracker.threads.append(weakref.ref(thread))
            return thread_start(thread, *args, **kwargs)

        def start_timer(timer, *args, **kwargs):
            tracker.timers.append((weakref.ref(timer), _describe_timer(timer)))
            return timer_start(timer, *args, **kwargs)

        def tracked_single_shot(*args, **kwargs):
            # singleShot(msec, callable) / (msec, timerType, callable) / (msec, receiver, slot)
            # Only the context-free forms are tracked: with a context object, Qt drops the
            # call when the context dies, which is not a leak.
            args = list(args)
            has_context = any(isinstance(a, QtCore.QObject) for a in args[:-1])
            if args and callable(args[-1]) and not has_context:
                tracker._next_id += 1
                key = tracker._next_id
                func = args[-1]
                tracker.pending_single_shots[key] = repr(func)

                def fire(*a, _func=func, _key=key):
                    tracker.pending_single_shots.pop(_key, None)
                    return _func(*a)

                args[-1] = fire
            return single_shot(*args, **kwargs)

        monkeypatch.setattr(QtCore.QThread, "start", start_thread)
        monkeypatch.setattr(QtCore.QTimer, "start", start_timer)
        monkeypatch.setattr(QtCore.QTimer, "singleShot", tracked_single_shot)

    def running_threads(self) -> list[str]:
        alive = []
        for ref in self.threads:
            thread = ref()
            if thread is not None and isValid(thread) and thread.isRunning():
                alive.append(f"{type(thread).__name__}({thread.objectName()!r})")
        return alive

    def active_timers(self) -> list[str]:
        alive = []
        for ref, description in self.timers:
            timer = ref()
            if timer is not None and isValid(timer) and timer.isActive():
                alive.append(description)
        return alive


def _describe_timer(timer: QtCore.QTimer) -> str:
    parent = timer.parent()
    owner = type(parent).__name__ if parent is not None else "no parent"
    name = timer.objectName() or "unnamed"
    return f"QTimer {name!r} (owner: {owner}, interval {timer.interval()} ms)"


def _spin_until(predicate, timeout_ms: int) -> bool:
    """Process events until `predicate()` is true or the time is up (no sleeping)."""
    deadline = QtCore.QDeadlineTimer(timeout_ms)
    app = QtCore.QCoreApplication.instance()
    while not predicate():
        if deadline.hasExpired():
            return False
        app.processEvents(QtCore.QEventLoop.ProcessEventsFlag.AllEvents, 20)
        QtCore.QThread.msleep(1)  # yield the GIL/CPU to worker threads winding down
    return True


@pytest.fixture(autouse=True)
def no_qt_leaks(qapp, monkeypatch, request):
    """Fail the test if a QThread is still running or a QTimer still active after it.

    This fixture does not depend on `qtbot`, so pytest tears it down after `qtbot` has closed
    the widgets the test registered: what is still running then was leaked.
    """
    tracker = _QtLeakTracker()
    tracker.install(monkeypatch)
    # No automatic collection during the test, one on this (the GUI) thread after it, as the window
    # does (`workbench.ui.app.collect_on_gui_thread`): a collection on a build or run thread that
    # frees an earlier test's Qt objects deadlocks with the GUI thread (a hung CI run, 2026-12-06).
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield tracker
    finally:
        gc.collect()
        if collecting:
            gc.enable()
    if request.node.get_closest_marker("allow_qt_leaks"):
        return
    app = QtCore.QCoreApplication.instance()
    # Deferred deletes (deleteLater) run from the event loop; let them happen.
    app.sendPostedEvents(None, QtCore.QEvent.Type.DeferredDelete)
    _spin_until(
        lambda: (
            not tracker.running_threads()
            and not tracker.active_timers()
            and not tracker.pending_single_shots
            and QtCore.QThreadPool.globalInstance().activeThreadCount() == 0
        ),
        LEAK_GRACE_MS,
    )
    problems = []
    if threads := tracker.running_threads():
        problems.append(f"QThreads still running: {', '.join(threads)}")
    if timers := tracker.active_timers():
        problems.append(f"QTimers still active: {', '.join(timers)}")
    if tracker.pending_single_shots:
        problems.append(
            f"QTimer.singleShot still pending: {', '.join(tracker.pending_single_shots.values())}"
        )
    if (count := QtCore.QThreadPool.globalInstance().activeThreadCount()) > 0:
        problems.append(f"{count} QThreadPool runnables still active")
    if problems:
        pytest.fail("Qt objects left running after the test:\n  " + "\n  ".join(problems))


@pytest.fixture
def test_output_dir() -> Path:
    """Where tests write screenshots: REPO/test-output/ui (git-ignored)."""
    TEST_OUTPUT.mkdir(parents=True, exist_ok=True)
    return TEST_OUTPUT


@pytest.fixture
def bridge(shared_cache_dir):
    """A ServiceBridge on the shared build cache, runs at n = 4096."""
    from workbench.ui.bridge import ServiceBridge

    bridge = ServiceBridge(cache_dir=shared_cache_dir)
    bridge.set_sizes({"n": 4096})
    yield bridge
    bridge.shutdown()


@pytest.fixture
def make_widget(qtbot):
    """Build a widget with `factory(*args, **kwargs)`, register it with qtbot and close it at teardown."""
    made = []

    def make(factory, *args, show: bool = False, **kwargs):
        widget = factory(*args, **kwargs)
        qtbot.addWidget(widget)
        made.append(widget)
        if show:
            widget.show()
            qtbot.waitExposed(widget, timeout=HANG_GUARD_MS)
        return widget

    yield make
    for widget in reversed(made):
        if isValid(widget):
            widget.close()


@pytest.fixture
def make_window(qtbot, shared_cache_dir):
    """Open the workbench window (built by the composition root) on a project folder.

    `trust=True` marks the folder trusted first (temporary copies are not bundled examples);
    `panels` limits which panels are built. Closed, and its services shut down, at teardown.
    """
    from workbench.trust_store import set_trusted
    from workbench.ui.app import PANELS, create_window
    from workbench.ui.settings import load_settings

    made = []

    def make(project_path: Path | None = None, *, trust: bool = True, panels=tuple(PANELS), cache_dir=None):
        settings = load_settings()
        if project_path is not None and trust:
            set_trusted(project_path)
        window = create_window(cache_dir=cache_dir or shared_cache_dir, settings=settings, panels=panels)
        window.ask_before_discarding = False  # no modal question when teardown closes it
        qtbot.addWidget(window)
        made.append(window)
        window.show()
        qtbot.waitExposed(window, timeout=HANG_GUARD_MS)
        if project_path is not None:
            assert window.open_project(Path(project_path))
            qtbot.wait(20)  # its editors open on the event loop's next turn (MainWindow.open_project)
        return window

    yield make
    for window in made:
        if isValid(window):
            window.close()


def pytest_configure(config):
    config.addinivalue_line("markers", "allow_qt_leaks: skip the QThread/QTimer leak check for this test")
