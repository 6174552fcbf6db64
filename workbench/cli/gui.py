"""`workbench gui [--screenshot FILE] [--run] [--window-size WxH] [--tab TAB] [--plots-json FILE] [PATH]`:
open the window on a kernel project; with --screenshot, render it to a PNG and exit."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from workbench.backends import parse_backends
from workbench.errors import WorkbenchError
from workbench.project import Project, examples_dir

#: Devices `--run` runs on (its backends, unless --backend: the command line's default).
RUN_DEVICES = ["cpu", "wgpu:0"]
TABS = ("timing", "outputs", "roofline", "artifacts")
#: How long a screenshot waits for the devices' ceilings (the roofline's roofs) to be measured.
CEILINGS_WAIT_S = 60.0


def window_size(text: str) -> tuple[int, int]:
    """`1280x800` -> (1280, 800); argparse reports anything else as a usage error."""
    width, sep, height = text.lower().partition("x")
    try:
        size = (int(width), int(height))
    except ValueError:
        size = None
    if not sep or size is None or min(size) < 200 or max(size) > 10000:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT in pixels, e.g. 1280x800, not {text!r}")
    return size


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "gui",
        help="open the window (the default command)",
        description="Open the workbench window on a kernel project (default: the saxpy example).",
    )
    parser.add_argument("path", nargs="?", metavar="PATH", help="project folder or its workbench.toml")
    parser.add_argument(
        "--screenshot",
        metavar="FILE",
        type=Path,
        help="render the window (offscreen when there is no display), save it as PNG and exit",
    )
    parser.add_argument(
        "--run",
        action="store_true",
        help="build and run once at start (cpu, wgsl, and nvptx when available; on cpu and wgpu:0)",
    )
    parser.add_argument(
        "--backend",
        metavar="LIST",
        help="with --run: comma-separated backends (default: as `workbench run`, cpu plus every "
        "backend whose toolchain is installed and whose runtime is available)",
    )
    parser.add_argument(
        "--window-size",
        metavar="WxH",
        type=window_size,
        help="window size in pixels, e.g. 1280x800 (default: 1600x1000 or the remembered size)",
    )
    parser.add_argument(
        "--tab",
        choices=TABS,
        help="show this view: a tab of the Plots panel (timing, outputs, roofline) or the Artifacts panel",
    )
    parser.add_argument(
        "--plots-json",
        metavar="FILE",
        type=Path,
        help="with --screenshot: also write what each plot shows (values in s, FLOP/s, bytes/s) as JSON",
    )
    parser.add_argument(
        "--timeout", type=float, default=180.0, metavar="S", help="how long --run may take (default 180 s)"
    )
    parser.add_argument("--cache-dir", metavar="DIR", help="build cache folder (default: the user cache)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    path = Path(args.path) if args.path else examples_dir() / "saxpy"
    project = Project.open(path)  # WorkbenchError / ManifestError: printed by the dispatcher, exit 2
    args.backends = parse_backends(args.backend) if args.backend else None  # UnknownBackend: exit 2
    if args.plots_json is not None and args.screenshot is None:
        raise WorkbenchError("--plots-json writes the plots of a screenshot: use it with --screenshot FILE")
    if args.screenshot is not None and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    try:
        from workbench.ui.app import collect_on_gui_thread, create_application, create_window, settle_heap
        from workbench.ui.main_window import DEFAULT_SIZE
        from workbench.ui.settings import Settings
    except ImportError as exc:
        raise WorkbenchError(
            f"the window needs PySide6, pyqtgraph and qtconsole ({exc}); "
            "install them with: pip install 'rust-gpu-workbench'"
        ) from exc

    app = create_application()
    # A screenshot is reproducible: default layout and choices, and nothing written back.
    settings = Settings() if args.screenshot is not None else None
    window = create_window(cache_dir=args.cache_dir, settings=settings)
    if args.screenshot is not None:
        window.persist_settings = False
        window.ask_before_discarding = False
    window.open_project(project)
    if args.run and not window.trusted:
        window.shutdown()
        raise WorkbenchError(
            f"{project.root} is not trusted yet (building runs its code): trust it with "
            f"`workbench trust {project.root}` (or open it in the window and choose Trust), then use --run"
        )
    window.show()
    # A picture is the default size unless told otherwise, whatever the screen (offscreen: 800x800).
    size = args.window_size or (DEFAULT_SIZE if args.screenshot is not None else None)
    if size is not None:
        # After show(): showing grows a window to its size hint (1280x800 became 1280x1022).
        window.resize(*size)
    if args.tab is not None:
        show_tab(window, args.tab)
    session = _Session(app, window, args)
    session.start()
    settle_heap()  # the window is up: what it holds now stays out of the collector's walks
    undo_ctrl_c = quit_on_ctrl_c(app)  # before this, Ctrl+C is a KeyboardInterrupt: exit 130
    undo_gc = collect_on_gui_thread(app)  # no collection on a build or run thread (a deadlock)
    try:
        code = app.exec()
    finally:
        undo_gc()
        if undo_ctrl_c is not None:
            undo_ctrl_c()
    if app.property("wb_interrupted"):
        return 130  # as the dispatcher's KeyboardInterrupt: the shell's code for Ctrl+C
    return session.exit_code if session.exit_code is not None else code


def quit_on_ctrl_c(app):
    """Ctrl+C in the terminal that opened the window closes it as File > Quit does (unsaved edits
    asked about, the layout saved, the services stopped); `run` then exits 130, as any other
    interrupted command does. Python runs a signal handler only between bytecodes, and while Qt's
    event loop waits none run: Python's default handler raised KeyboardInterrupt in whichever slot
    came next (a traceback in the terminal, the window left open). The signal's wakeup byte,
    written to a socket Qt watches, wakes the loop at once. Returns what undoes it (the handler
    and wakeup fd as they were), or None where nothing was changed."""
    import signal
    import socket
    import threading

    from PySide6.QtCore import QSocketNotifier, QTimer
    from PySide6.QtWidgets import QApplication

    previous = signal.getsignal(signal.SIGINT)
    if previous is signal.SIG_IGN or threading.current_thread() is not threading.main_thread():
        return None  # started with Ctrl+C ignored (`nohup`, a background job), or not ours to set
    reader, writer = socket.socketpair()
    reader.setblocking(False)
    writer.setblocking(False)
    previous_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    notifier = QSocketNotifier(reader.fileno(), QSocketNotifier.Type.Read)

    def drain() -> None:  # Python runs the handler below on its way into or out of this slot
        try:
            reader.recv(4096)
        except BlockingIOError:
            pass

    def interrupted(_signum, _frame) -> None:
        app.setProperty("wb_interrupted", True)
        # From the event loop, not inside whatever Python code the signal interrupted.
        QTimer.singleShot(0, app, QApplication.closeAllWindows)

    notifier.activated.connect(drain)
    signal.signal(signal.SIGINT, interrupted)

    def undo() -> None:
        signal.signal(signal.SIGINT, previous)
        signal.set_wakeup_fd(previous_fd)
        notifier.setEnabled(False)
        reader.close()
        writer.close()

    return undo


def show_tab(window, tab: str) -> None:
    """Raise the Plots panel on `tab` (timing, outputs, roofline), or the Artifacts panel."""
    key = "artifacts" if tab == "artifacts" else "plots"
    dock = window.docks.get(key)
    if dock is not None:
        dock.show()
        dock.raise_()
    plots = window.panels.get("plots")
    if key == "plots" and hasattr(plots, "show_tab"):  # a placeholder when the panel failed to load
        plots.show_tab(tab)


class _Session:
    """Drives the optional --run and --screenshot steps from the event loop (nothing blocks)."""

    def __init__(self, app, window, args):
        from PySide6.QtCore import QTimer

        self.app = app
        self.window = window
        self.args = args
        self.exit_code: int | None = None
        self.backends = args.backends
        self.timeout = QTimer(window)
        self.timeout.setSingleShot(True)
        self.timeout.setInterval(int(args.timeout * 1000))
        self.timeout.timeout.connect(self._timed_out)

    def start(self) -> None:
        from PySide6.QtCore import QTimer

        bridge = self.window.bridge
        if self.args.run:
            if bridge is None:
                print("error: --run needs the service bridge, which is not available", file=sys.stderr)
                self.exit_code = 1
            else:
                bridge.set_backends(self.backends or [])  # none: the command line's default
                bridge.set_devices(RUN_DEVICES)
                bridge.runFinished.connect(self._run_finished)
                self.timeout.start()
                QTimer.singleShot(0, self.window.run)
                return
        if self.args.screenshot is not None:
            # Give the panels a moment to lay out and fill (device list, highlighting).
            QTimer.singleShot(1500, self._capture)

    def _run_finished(self, _report) -> None:
        from PySide6.QtCore import QTimer

        self.timeout.stop()
        if self.args.screenshot is not None:
            plots = self.window.panels.get("plots")
            if hasattr(plots, "ensure_ceilings"):
                plots.ensure_ceilings()  # the roofline's roofs, whichever tab is shown
            self._ceilings_deadline = CEILINGS_WAIT_S * 1000
            QTimer.singleShot(300, self.window, self._when_settled)

    def _when_settled(self) -> None:
        """Capture once the ceilings of the run's devices are measured (so roofs are drawn)."""
        from PySide6.QtCore import QTimer

        store = getattr(self.window.panels.get("plots"), "ceilings", None)
        if store is not None and store.measuring and self._ceilings_deadline > 0:
            self._ceilings_deadline -= 200
            QTimer.singleShot(200, self.window, self._when_settled)
            return
        QTimer.singleShot(500, self.window, self._capture)  # the plots redraw on their own timer

    def _timed_out(self) -> None:
        print(f"error: the run did not finish within {self.args.timeout:g} s", file=sys.stderr)
        self.exit_code = 1
        if self.args.screenshot is not None:
            self._capture()

    def _capture(self) -> None:
        from workbench.ui.screenshot import save_screenshot

        try:
            plots = self.window.panels.get("plots")
            if hasattr(plots, "draw_now"):
                plots.draw_now()  # every tab, hidden ones included, drawn with the latest data
            if self.args.tab is not None:
                show_tab(self.window, self.args.tab)
            path = save_screenshot(self.window, self.args.screenshot)
            print(f"screenshot written to {path}")
            if self.args.plots_json is not None:
                self._write_plots_json(plots)
            if self.exit_code is None:
                self.exit_code = 0
        except WorkbenchError as exc:
            print(f"error: {exc}", file=sys.stderr)
            self.exit_code = 1
        self.window.close()
        self.app.exit(self.exit_code)

    def _write_plots_json(self, plots) -> None:
        import json

        if not hasattr(plots, "plots_data"):
            raise WorkbenchError("the Plots panel is not available: no plot data to write")
        path = self.args.plots_json
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(plots.plots_data(), indent=2, default=_json_default) + "\n")
        except OSError as exc:
            raise WorkbenchError(f"cannot write the plot data to {path}: {exc}") from exc
        print(f"plot data written to {path}")


def _json_default(value):
    """numpy numbers and arrays in the plot data become plain JSON."""
    import numpy as np

    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")
