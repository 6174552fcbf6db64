"""A progress line for long runs on a terminal: the phase each backend is in, with a bar.

The run service's events drive it (`on_event`); it draws on stderr only when stderr is a terminal
and only once the run has taken longer than `delay_s` (a quick run prints nothing extra). Lines
printed through `print_line` clear the bar first, so the two never mix.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

from workbench.run.events import RunBuilding, RunEvent, RunFinished, RunPhase, RunProgress, RunStarted

#: A backend's phases in order (the run's own "inputs" phase comes before every backend).
PHASES = ("upload", "launch", "download", "verify", "timing")
WIDTH = 24


class ProgressLine:
    def __init__(self, stream: TextIO | None = None, delay_s: float = 1.5, period_s: float = 0.2):
        self.stream = stream or sys.stderr
        self.enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self.delay_s = delay_s
        self.period_s = period_s
        self.started = time.monotonic()
        self.backends: list[str] = []
        self.backend = ""
        self.phase = "starting"
        self.detail = ""
        self.finished = 0
        self._drawn = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if self.enabled:
            self._thread = threading.Thread(target=self._tick, name="wb-progress", daemon=True)
            self._thread.start()

    def on_event(self, event: RunEvent) -> None:
        with self._lock:
            if isinstance(event, RunBuilding):
                self.backends = list(event.backends)
                self.phase, self.detail = "building", ""
            elif isinstance(event, RunPhase):
                self.backend = event.backend or ""
                self.phase, self.detail = event.phase, ""
            elif isinstance(event, RunProgress):
                done = "" if event.done is None else event.done
                self.detail = f"{event.phase} {done}".strip()
            elif isinstance(event, RunStarted):
                self.backend, self.phase, self.detail = event.backend, "prepare", ""
            elif isinstance(event, RunFinished):
                self.finished += 1
        if isinstance(event, RunPhase | RunProgress | RunFinished):
            self._draw()

    def fraction(self) -> float:
        total = max(1, len(self.backends))
        if not self.backend:
            return 0.0
        step = (PHASES.index(self.phase) + 1) / (len(PHASES) + 1) if self.phase in PHASES else 0.0
        return min(1.0, (self.finished + step) / total)

    def text(self) -> str:
        filled = int(round(self.fraction() * WIDTH))
        bar = "#" * filled + "-" * (WIDTH - filled)
        where = f"{self.backend}: {self.phase}" if self.backend else self.phase
        detail = f" ({self.detail})" if self.detail else ""
        return f"[{bar}] {where}{detail}  {time.monotonic() - self.started:.1f} s"

    def _draw(self) -> None:
        if not self.enabled or time.monotonic() - self.started < self.delay_s:
            return
        with self._lock:
            line = self.text()
            self.stream.write("\r\x1b[2K" + line)
            self.stream.flush()
            self._drawn = True

    def _clear(self) -> None:
        if self._drawn:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
            self._drawn = False

    def print_line(self, text: str) -> None:
        with self._lock:
            self._clear()
            print(text, file=self.stream)

    def _tick(self) -> None:
        while not self._stop.wait(self.period_s):
            self._draw()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
        with self._lock:
            self._clear()
