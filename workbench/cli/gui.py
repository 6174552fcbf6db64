"""`workbench gui [--screenshot FILE] [--run] [PATH]`: open the window on a kernel project."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from workbench.errors import WorkbenchError
from workbench.project import Project, examples_dir

#: Backends `--run` uses when their toolchain is present; devices it runs on.
RUN_BACKENDS = ("cpu", "wgsl", "nvptx")
RUN_DEVICES = ["cpu", "wgpu:0"]


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
        "--timeout", type=float, default=180.0, metavar="S", help="how long --run may take (default 180 s)"
    )
    parser.add_argument("--cache-dir", metavar="DIR", help="build cache folder (default: the user cache)")
    parser.set_defaults(func=run)


def available_run_backends() -> list[str]:
    """The RUN_BACKENDS whose toolchain is installed here (cpu always)."""
    try:
        from workbench.build import detect_toolchains

        found = {info.backend for info in detect_toolchains() if info.found}
    except Exception:  # a broken probe must not keep the window from opening
        found = {"cpu", "wgsl"}
    return [b for b in RUN_BACKENDS if b == "cpu" or b in found]


def run(args: argparse.Namespace) -> int:
    path = Path(args.path) if args.path else examples_dir() / "saxpy"
    project = Project.open(path)  # WorkbenchError / ManifestError: printed by the dispatcher, exit 2
    if args.screenshot is not None and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    try:
        from workbench.ui.app import create_application, create_window
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
            f"{project.root} is not trusted yet (building runs its code): open it in the window and "
            "choose Trust, then use --run"
        )
    window.show()
    session = _Session(app, window, args)
    session.start()
    code = app.exec()
    return session.exit_code if session.exit_code is not None else code


class _Session:
    """Drives the optional --run and --screenshot steps from the event loop (nothing blocks)."""

    def __init__(self, app, window, args):
        from PySide6.QtCore import QTimer

        self.app = app
        self.window = window
        self.args = args
        self.exit_code: int | None = None
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
                bridge.set_backends(available_run_backends())
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
            QTimer.singleShot(800, self._capture)  # the plots redraw on their own timer

    def _timed_out(self) -> None:
        print(f"error: the run did not finish within {self.args.timeout:g} s", file=sys.stderr)
        self.exit_code = 1
        if self.args.screenshot is not None:
            self._capture()

    def _capture(self) -> None:
        from workbench.ui.screenshot import save_screenshot

        try:
            path = save_screenshot(self.window, self.args.screenshot)
            print(f"screenshot written to {path}")
            if self.exit_code is None:
                self.exit_code = 0
        except WorkbenchError as exc:
            print(f"error: {exc}", file=sys.stderr)
            self.exit_code = 1
        self.window.close()
        self.app.exit(self.exit_code)
