"""The composition root: the QApplication, its theme, the service bridge, the panels, the window.

Everything the window shows is built here and handed to `MainWindow`, so each panel stays a small
widget that only knows the bridge. A panel whose module is missing or fails to build becomes a
placeholder in its dock, with the reason logged; the window still opens.
"""

from __future__ import annotations

import gc
import importlib
import logging
import sys
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QApplication, QWidget

from workbench.ui import theme
from workbench.ui.main_window import MainWindow, placeholder
from workbench.ui.settings import Settings, load_settings

log = logging.getLogger(__name__)

APP_NAME = "Rust GPU Workbench"
ORGANIZATION = "rust-gpu-workbench"

#: Dock key -> (module, class) of the panel shown there; each takes the bridge.
PANELS = {
    "build": ("workbench.ui.build.panel", "BuildPanel"),
    "devices": ("workbench.ui.devices.picker", "DevicePicker"),
    "results": ("workbench.ui.results.table", "ResultsTable"),
    "plots": ("workbench.ui.plots", "PlotsPanel"),
    "artifacts": ("workbench.ui.artifacts.view", "ArtifactsView"),
    "console": ("workbench.ui.console.panel", "ConsolePanel"),
    "sessions": ("workbench.ui.sessions.panel", "SessionsPanel"),
    "tuning": ("workbench.ui.tuning.panel", "TuningPanel"),
    "counters": ("workbench.ui.counters.view", "CountersView"),
}


def create_application(argv: list[str] | None = None) -> QApplication:
    """The QApplication (reused if one exists), named for QStandardPaths, with the dark theme."""
    app = QApplication.instance()
    if app is None:
        QApplication.setApplicationName(APP_NAME)
        QApplication.setOrganizationName(ORGANIZATION)
        app = QApplication(argv if argv is not None else sys.argv[:1])
    apply_theme(app)
    return app


def apply_theme(app: QApplication) -> None:
    """Fusion with the theme's dark palette (`theme.py`: the editor's and the plots' colours too)."""
    app.setStyle("Fusion")
    app.setPalette(theme.app_palette())
    app.setStyleSheet(theme.APP_STYLE_SHEET)


def create_bridge(cache_dir: str | Path | None = None, recorder: Any = None) -> Any:
    """The ServiceBridge, or None (with the reason logged) when it cannot be built."""
    try:
        from workbench.ui.bridge import ServiceBridge
    except ImportError as exc:
        log.warning("the service bridge is not available: %s", exc)
        return None
    return ServiceBridge(cache_dir=cache_dir, recorder=recorder)


def create_recorder(settings: Settings) -> Any:
    """The window's `SessionRecorder` (core): every run the bridge finishes is recorded through
    it, whichever panels exist; the "Record runs" toggle and the database file are settings."""
    from workbench.profile.sessions.recorder import SessionRecorder

    return SessionRecorder(settings.sessions_db or None, enabled=settings.record_runs)


def load_panel(key: str, bridge: Any) -> QWidget:
    """Build one panel, or a placeholder saying why it is not there."""
    module_name, class_name = PANELS[key]
    if bridge is None:
        return placeholder(f"{class_name} needs the service bridge, which is not available.")
    try:
        module = importlib.import_module(module_name)
        return getattr(module, class_name)(bridge)
    except Exception as exc:  # a broken panel must not keep the window from opening
        log.exception("the %s panel could not be built", key)
        return placeholder(f"{class_name} is not available: {exc}")


def settle_heap() -> None:
    """Collect once, then keep what survived (modules, the window and its panels, the console's
    IPython: about 150,000 objects) out of the collector's walks (`gc.freeze`). Each full
    collection of that heap held the GUI thread for 35-60 ms, a hitch at a random moment of a
    session; after the freeze one walks only what came later (about 1 ms). Called once, when the
    window is up: what it holds then lives as long as the window (what is freed of it later is
    not collected: at most the first project's editors)."""
    gc.collect()
    gc.freeze()


def collect_on_gui_thread(app: QApplication, interval_ms: int = 1000):
    """Python's cyclic collector runs only here, on the GUI thread, from a timer; returns what
    undoes it. Left automatic, a collection runs on whichever thread allocates when a threshold
    is crossed: a build or run thread then frees a closed panel's Qt objects caught in a cycle,
    and `QObject::~QObject` takes Qt's connection lock and waits for the GIL, while the GUI thread
    holds the GIL and waits for that lock (PySide's deletion in the main thread): a frozen window,
    seen as a hung test (a build thread's `glob` collecting, 2026-12-06). The timer collects each
    generation when the counts pass the thresholds the automatic collector used (as pyqtgraph's
    `GarbageCollector` does), so the heap is walked no more often than before."""
    from PySide6.QtCore import QTimer

    was_enabled = gc.isenabled()
    thresholds = gc.get_threshold()
    gc.disable()

    def collect() -> None:
        young, middle, old = gc.get_count()
        if young > thresholds[0]:
            gc.collect(0)
            if middle > thresholds[1]:
                gc.collect(1)
                if old > thresholds[2]:
                    gc.collect(2)

    timer = QTimer(app)
    timer.setObjectName("gc-on-gui-thread")
    timer.timeout.connect(collect)
    timer.start(interval_ms)

    def undo() -> None:
        timer.stop()
        timer.deleteLater()
        if was_enabled:
            gc.enable()

    return undo


def create_window(
    cache_dir: str | Path | None = None,
    settings: Settings | None = None,
    panels: tuple[str, ...] = tuple(PANELS),
) -> MainWindow:
    """Build the bridge (with the remembered backends and devices), the panels and the window."""
    settings = settings if settings is not None else load_settings()
    bridge = create_bridge(cache_dir, create_recorder(settings))
    if bridge is not None:
        bridge.set_backends(settings.backends)
        bridge.set_devices(settings.devices)
    widgets = {key: load_panel(key, bridge) for key in PANELS if key in panels}
    if hasattr(widgets.get("sessions"), "use_settings"):
        widgets["sessions"].use_settings(settings)  # the record toggle and database file are settings
    return MainWindow(bridge=bridge, panels=widgets, settings=settings)
