"""Screenshots of the real window with the facts behind each picture (shared by
`newcomer_states.py` and `ir_views.py`).

A `Shots` session opens windows (the composition root's `create_window`, every panel) on copies of
the bundled examples in a temporary folder (resources/ is never written), runs named states one
after the other, and for each writes a PNG (8-bit palette, so a full window stays near 100 KB) and
the state's asserted data into one JSON. A state is a function `state(shots) -> dict`: it drives the
window, asserts what the picture must show (as the tests do) and returns the data it checked; a
failed assertion is recorded with its message and the session goes on to the next state.

Run under Xvfb (a real X11 server, `QT_QPA_PLATFORM=xcb`): when no display is set and `xvfb-run`
exists, `main` starts itself again under `xvfb-run`; otherwise Qt's offscreen platform is used.
Which one ran is in the JSON (`platform`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "resources" / "examples"
SCREEN = "1920x1200x24"

State = Callable[["Shots"], dict]


def reexec_under_xvfb(argv: list[str]) -> int | None:
    """Start this script again under `xvfb-run` when there is no display; its exit code, or None
    when it should run here (a display, an explicit platform, or no xvfb-run)."""
    if os.environ.get("DISPLAY") or os.environ.get("QT_QPA_PLATFORM") or os.environ.get("WB_SHOTS_CHILD"):
        return None
    if not shutil.which("xvfb-run"):
        return None
    env = dict(os.environ, QT_QPA_PLATFORM="xcb", WB_SHOTS_CHILD="1")
    command = ["xvfb-run", "-a", "-s", f"-screen 0 {SCREEN}", sys.executable, *argv]
    return subprocess.call(command, env=env)


def settle(rounds: int = 4) -> None:
    """Deliver posted layout and paint events (no clock involved)."""
    from PySide6.QtCore import QCoreApplication
    from PySide6.QtWidgets import QApplication

    for _ in range(rounds):
        QCoreApplication.sendPostedEvents()
        QApplication.processEvents()


def plots_drawn(window, what: str) -> None:
    """Wait until `window`'s plots (when it has them) have drawn the tab on screen: they are
    redrawn by a timer, one plot a tick (ui/plots/panel.py), as a user sees them a moment later."""
    panels = getattr(window, "panels", None)
    timer = getattr(panels.get("plots") if isinstance(panels, dict) else None, "timer", None)
    if timer is not None:
        wait_until(lambda: not timer.isActive(), 30, f"{what}: the plots drawn")
        settle()


def wait_until(predicate: Callable[[], Any], timeout_s: float, what: str) -> Any:
    """Spin the event loop until `predicate()` is truthy; AssertionError naming `what` on timeout."""
    from PySide6.QtCore import QCoreApplication, QEventLoop, QThread

    deadline = time.monotonic() + timeout_s
    app = QCoreApplication.instance()
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 20)
        QThread.msleep(2)


def wait_signal(signal, start: Callable[[], Any], timeout_s: float, what: str, accept=None) -> Any:
    """Call `start()`, then spin until `signal` fires with an argument `accept` takes (any, if None)."""
    got: list = []

    def seen(*args):
        value = args[0] if args else None
        if accept is None or accept(value):
            got.append(value)

    signal.connect(seen)
    try:
        start()
        wait_until(lambda: bool(got), timeout_s, what)
    finally:
        signal.disconnect(seen)
    return got[0]


def screen_image(window, above=()):
    """The X server's picture of the screen where `window` is (the root window read back through
    the server, as `xwd -root` or `import -window root` read it): what a user sees, including
    whatever Qt did not draw. Needs a real X display (`QT_QPA_PLATFORM=xcb`). `above`: windows
    (a dialog) raised over it afterwards: with no window manager, nothing keeps a dialog on top."""
    from PySide6.QtGui import QGuiApplication

    assert QGuiApplication.platformName() == "xcb", (
        f"an X11 screenshot needs the xcb platform, not {QGuiApplication.platformName()!r}"
    )
    window.raise_()
    window.activateWindow()
    for other in above:
        other.raise_()
    wait_until(lambda: window.isVisible() and window.windowHandle().isExposed(), 10, "the window exposed")
    shown = time.monotonic() + 0.2  # the last paint flushed to the server
    wait_until(lambda: time.monotonic() > shown, 5, "the paint flushed")
    x, y, width, height = window.frameGeometry().getRect()
    return window.screen().grabWindow(0, x, y, width, height).toImage()


def pixel_stats(image) -> dict:
    """What says a picture is not blank: distinct colours and the luminance spread of a 160×100
    thumbnail, and the share of its pixels that differ from the most common colour."""
    from PySide6.QtCore import Qt

    thumb = image.scaled(
        160, 100, Qt.AspectRatioMode.IgnoreAspectRatio, Qt.TransformationMode.FastTransformation
    )
    counts: dict[int, int] = {}
    lum = []
    for y in range(thumb.height()):
        for x in range(thumb.width()):
            rgb = thumb.pixel(x, y) & 0xFFFFFF
            counts[rgb] = counts.get(rgb, 0) + 1
            r, g, b = (rgb >> 16) & 255, (rgb >> 8) & 255, rgb & 255
            lum.append(0.299 * r + 0.587 * g + 0.114 * b)
    mean = sum(lum) / len(lum)
    spread = (sum((v - mean) ** 2 for v in lum) / len(lum)) ** 0.5
    background = max(counts.values()) / len(lum)
    return {
        "distinct_colours": len(counts),
        "luminance_sd": round(spread, 1),
        "not_background": round(1 - background, 3),
    }


class Shots:
    """One screenshot session: a work folder, a build cache, windows, states, PNGs and the JSON."""

    def __init__(self, out_dir: Path, cache_dir: Path, name: str):
        self.out_dir = out_dir
        self.cache_dir = cache_dir
        self.name = name
        self.work = Path(tempfile.mkdtemp(prefix=f"wb-{name}-"))
        self.windows: list = []
        self.records: dict[str, dict] = {}
        self.only: list[str] | None = None
        self.app = None

    # ---------------------------------------------------------------- set-up
    def start(self) -> None:
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
        os.environ["WB_CONFIG_DIR"] = str(self.work / "config")  # never the user's settings or trust list
        os.environ["WB_DATA_DIR"] = str(self.work / "data")  # runs recorded here, not in the user's sessions
        os.environ["WB_PROJECTS_DIR"] = str(self.work / "projects")
        os.environ.pop("WB_SESSIONS_DB", None)
        if not os.path.isdir(os.environ.get("XDG_RUNTIME_DIR", "")):
            runtime = self.work / "xdg"
            runtime.mkdir(mode=0o700)
            os.environ["XDG_RUNTIME_DIR"] = str(runtime)
        from workbench.ui.app import create_application

        self.app = create_application()
        self.out_dir.mkdir(parents=True, exist_ok=True)

    def finish(self) -> None:
        for window in self.windows:
            self.close(window)
        shutil.rmtree(self.work, ignore_errors=True)

    # ---------------------------------------------------------------- projects and windows
    def copy(self, example: str, unique: bool = False, name: str | None = None) -> Path:
        """A copy of a bundled example (no build outputs) in the work folder. `unique`: a fresh
        comment appended to every source, so that every backend builds for real."""
        dest = self.work / (name or f"{example}-{uuid.uuid4().hex[:6]}")
        shutil.copytree(EXAMPLES / example, dest, ignore=shutil.ignore_patterns("target"))
        if unique:
            token = uuid.uuid4().hex
            for path in [
                *dest.glob("src/**/*.rs"),
                *dest.glob("reference/*.cu"),
                *dest.glob("reference/*.wgsl"),
            ]:
                path.write_text(path.read_text() + f"\n// screenshot copy {token}\n")
        return dest

    def window(self, root: Path | None, *, trust: bool = True, size=(1280, 800), panels=None, **settings):
        """The workbench window as `workbench gui` builds it, shown at `size`, on `root`."""
        from workbench.trust_store import set_trusted
        from workbench.ui.app import PANELS, create_window
        from workbench.ui.settings import Settings

        if root is not None and trust:
            set_trusted(root)
        window = create_window(
            cache_dir=self.cache_dir, settings=Settings(**settings), panels=tuple(panels or PANELS)
        )
        window.persist_settings = False
        window.ask_before_discarding = False
        self.windows.append(window)
        window.resize(*size)
        window.show()
        settle()
        if root is not None:
            assert window.open_project(root), f"the window did not open {root}"
        window.resize(*size)
        window.reset_layout()
        settle()
        return window

    def close(self, window) -> None:
        from shiboken6 import isValid

        if isValid(window):
            window.close()
            settle()
        if window in self.windows:
            self.windows.remove(window)

    def run(self, window, timeout_s: float = 600.0):
        """Run (the toolbar's Run) and wait for the report and for the bridge to be idle."""
        report = wait_signal(window.bridge.runFinished, window.run, timeout_s, "the run's report")
        wait_until(lambda: not window.bridge.busy, timeout_s, "the bridge to be idle after the run")
        settle()
        return report

    # ---------------------------------------------------------------- pictures and records
    def shot(self, widget, name: str, screen: bool = False, above=(), full_colour: bool = False) -> dict:
        """Save `widget` as benchmarks/results/<session>/<name>.png, an 8-bit palette PNG (text in
        the dark theme keeps its shape; a window is then ~100 KB). Returns its file, size and
        pixel statistics, refused when the picture is blank. `screen`: what the X server shows
        where the window is (`screen_image`, with `above` raised over it), not Qt's rendering of
        the widget. `full_colour`: 24-bit (the palette's 6×6×6 cube maps a dark tint such as the
        debugger's stopped-line background onto the editor's own background)."""
        from PySide6.QtCore import Qt
        from PySide6.QtGui import QImage

        settle()
        plots_drawn(widget, name)
        image = screen_image(widget, above) if screen else widget.grab().toImage()
        assert not image.isNull() and image.width() > 50 and image.height() > 50, f"{name}: nothing drawn"
        stats = pixel_stats(image)
        assert stats["distinct_colours"] > 8 and stats["luminance_sd"] > 5, f"{name} looks blank: {stats}"
        palette = (
            image.convertToFormat(QImage.Format.Format_RGB888)
            if full_colour
            else image.convertToFormat(QImage.Format.Format_Indexed8, Qt.ImageConversionFlag.ThresholdDither)
        )
        path = self.out_dir / f"{name}.png"
        assert palette.save(str(path), "PNG", 0), f"cannot write {path}"
        return {
            "file": str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path),
            "width": image.width(),
            "height": image.height(),
            "bytes": path.stat().st_size,
            **stats,
        }

    def run_states(self, states: dict[str, State], only: list[str] | None) -> None:
        for key, state in states.items():
            if only and key not in only:
                continue
            started = time.perf_counter()
            print(f"[{self.name}] {key} …", file=sys.stderr, flush=True)
            try:
                facts = state(self)
                record = {"ok": True, **facts}
            except Exception as exc:  # noqa: BLE001 - recorded, and the next state still runs
                record = {
                    "ok": False,
                    "error": f"{type(exc).__name__}: {exc}",
                    "trace": traceback.format_exc(),
                }
                print(record["trace"], file=sys.stderr, flush=True)
            finally:
                for window in list(self.windows):
                    self.close(window)
            record["seconds"] = round(time.perf_counter() - started, 1)
            self.records[key] = record
            print(
                f"[{self.name}] {key}: {'ok' if record['ok'] else record['error']}",
                file=sys.stderr,
                flush=True,
            )

    def write(self, extra: dict) -> Path:
        from PySide6.QtWidgets import QApplication

        path = self.out_dir / f"{self.name}.json"
        data = {
            "session": self.name,
            "command": " ".join([Path(sys.executable).name, *sys.argv]),
            "platform": QApplication.platformName(),
            "screen": QApplication.primaryScreen().availableGeometry().getRect(),
            "uptime": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(),
            "cpus": os.cpu_count(),
            "date": time.strftime("%Y-%m-%d %H:%M"),
            **extra,
            "states": self.records,
        }
        if self.only and path.is_file():  # a partial rerun: the other states keep their record
            earlier = json.loads(path.read_text())
            data["states"] = {**earlier.get("states", {}), **self.records}
            data["reruns"] = [
                *earlier.get("reruns", []),
                {
                    "states": sorted(self.records),
                    "date": data["date"],
                    "uptime": data["uptime"],
                    "command": data["command"],
                },
            ]
            data = {**earlier, **{k: v for k, v in data.items() if k in ("states", "reruns")}}
        path.write_text(json.dumps(data, indent=2, default=str) + "\n")
        return path


def parse_args(description: str, name: str, argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out-dir", default=str(REPO / "benchmarks" / "results" / name))
    parser.add_argument(
        "--cache-dir",
        default=str(REPO / ".wb-cache" / "screenshots"),
        help="build cache, kept between runs (default: REPO/.wb-cache/screenshots)",
    )
    parser.add_argument("--only", help="comma-separated state names")
    return parser.parse_args(argv)


def main(states: dict[str, State], description: str, name: str, argv: list[str] | None = None) -> int:
    args = parse_args(description, name, argv)
    code = reexec_under_xvfb([sys.argv[0], *(argv if argv is not None else sys.argv[1:])])
    if code is not None:
        return code
    shots = Shots(Path(args.out_dir), Path(args.cache_dir), name)
    shots.only = args.only.split(",") if args.only else None
    shots.start()
    uptime_before = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    try:
        shots.run_states(states, args.only.split(",") if args.only else None)
    finally:
        shots.finish()
    path = shots.write({"uptime_before": uptime_before})
    failed = [k for k, r in shots.records.items() if not r["ok"]]
    print(f"wrote {path}; {len(shots.records) - len(failed)} states ok, failed: {failed or 'none'}")
    return 1 if failed else 0


# ---------------------------------------------------------------- source edits that need no exact line
STORE = re.compile(r"(?m)^(?P<lead>\s*)(?P<target>\w+\[[^\]]+\])\s*=\s*(?P<value>[^;=]+);")


def store_line(text: str, last: bool = False) -> tuple[int, re.Match]:
    """The first (or `last`) `name[index] = value;` statement (the kernel's store) and its 1-based
    line. saxpy's plain form, the one built by default, is its last store (the first is the
    `vector = 4` form's scalar tail, compiled out at `vector = 1`)."""
    found = list(STORE.finditer(text))
    assert found, "no `name[index] = value;` statement found"
    match = found[-1] if last else found[0]
    return text.count("\n", 0, match.start("target")) + 1, match


def with_store_changed(text: str, change: Callable[[str], str], last: bool = False) -> str:
    """`text` with the first (or `last`) store's value replaced by `change(value)`."""
    _, match = store_line(text, last)
    return text[: match.start("value")] + change(match.group("value")) + text[match.end("value") :]
