"""The window's Sessions panel on a database of 100,000 recorded runs: how long the event loop stalls.

Opens the real window (offscreen unless $QT_QPA_PLATFORM says otherwise) at 1280×800 on a copy
of a database of `--runs` runs recorded through the real recorder (`sessions_db.py`: made once,
cached in the temp folder), and measures with the hot-reload benchmark's stall probe
(`hot_reload.StallMeter`: the longest gap between ticks of a 5 ms timer) each user step, each
`--repeat` times:

- show the panel: the Sessions dock raised (its first page read and painted);
- refill after a Run: a finished run's report handed to the bridge's recorder as a Run's is (a
  row selected meanwhile), until the panel has shown the new rows;
- select a row: a click on a row;
- Set as baseline: a click on the button;
- Compare: a click on another row (compared against the baseline in the panel's comparing process,
  until the comparison is shown);
- History tab: brought up (the selected run's kernel plotted: its newest runs);
- scroll: the list scrolled to its end (the next page fetched);
- filter: a kernel chosen, then any again; a date range chosen, then any time again.

Each step runs from the event loop (as a click does) and the meter keeps running 300 ms after
it, so work it queues counts too. Goal (issue 36): ≤ 50 ms each. Beside each stall the table gives
the most CPU time the GUI thread spent within one gap: on a loaded machine (the load average is
printed and kept) a gap also holds the time the thread waited for a core.

    python benchmarks/sessions_window.py [--runs 100000] [--repeat 5] [--out FILE.json] [--diagnose] [--each]
    chrt -R -f 10 python benchmarks/sessions_window.py ...   # as root: the shared VM quiet for the window

On the shared 2-core VM other work takes the window's core for tens of milliseconds at a time, so
a stall there is the code's work plus that wait; the table's last column (the GUI thread's own CPU
in a gap) and a run under `chrt -R -f 10` (the window's process ahead of every ordinary one, its
children as usual: a quiet machine) tell them apart. The JSON keeps the load and the scheduler.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.bench_output import OUT_HELP, machine, write_json  # noqa: E402
from benchmarks.hot_reload import StackSampler, StallMeter, _prepare_environment  # noqa: E402
from benchmarks.sessions_db import ensure_db, report  # noqa: E402

GOAL_MS = 50.0
SIZE = (1280, 800)
#: How long the meter keeps running after a step's own work (what it queued counts too).
AFTER_MS = 300
STEPS = (
    "show the panel", "refill after a Run", "select a row", "Set as baseline", "Compare", "History tab", "scroll",
    "filter",
)  # fmt: skip


class CpuStallMeter(StallMeter):
    """`StallMeter`, plus the GUI thread's own CPU time within each gap (`time.thread_time`): on a
    shared machine a gap is the code's work or the thread waiting for a core; the CPU part is the
    code's alone. `max_cpu_gap_s` is the most CPU the GUI thread spent between two ticks."""

    def start(self):
        self.last_cpu = time.thread_time()
        self.max_cpu_gap_s = 0.0
        super().start()

    def _tick(self):
        now = time.thread_time()
        self.max_cpu_gap_s = max(self.max_cpu_gap_s, now - self.last_cpu)
        self.last_cpu = now
        super()._tick()


def _spin(ms: int) -> None:
    from PySide6.QtCore import QEventLoop, QTimer

    loop = QEventLoop()
    QTimer.singleShot(ms, loop.quit)
    loop.exec()


class Steps:
    """The user's steps on the window's Sessions panel, each run from the event loop."""

    def __init__(
        self, window, meter: CpuStallMeter, sampler: StackSampler | None, each: bool = False, steps=STEPS
    ):
        self.window = window
        self.each = each
        self.panel = window.panels["sessions"]
        self.meter = meter
        self.sampler = sampler
        self.stalls: dict[str, list[float]] = {step: [] for step in steps}
        self.cpu: dict[str, list[float]] = {step: [] for step in steps}
        self.where: dict[str, list[dict]] = {}
        #: Each gap of the probe over `REPORTED_STALL_S`: (step, start, end), `time.perf_counter`.
        self.gaps: list[tuple[str, float, float]] = []
        #: Task id -> Python thread name, of the threads seen while a step ran (`thread_trace`).
        self.thread_names: dict[str, str] = {}
        self.recorded = 0
        #: Comparable rows in each comparison shown; runs in each history plotted.
        self.compared: list[int] = []
        self.plotted: list[int] = []

    def measure(self, step: str, action, until=None, timeout_s: float = 60.0) -> None:
        """Run `action` from the event loop, wait for `until()` (if given), then `AFTER_MS` more;
        the longest stall meanwhile goes to `step`."""
        from PySide6.QtCore import QTimer

        _spin(100)
        self.meter.start()
        start = time.perf_counter()
        process_cpu, gui_cpu = time.process_time(), time.thread_time()
        QTimer.singleShot(0, action)
        deadline = time.monotonic() + timeout_s
        _spin(10)
        while until is not None and not until():
            if time.monotonic() > deadline:
                raise SystemExit(f"{step}: not done within {timeout_s} s")
            self._name_threads()
            _spin(10)
        self._name_threads()
        _spin(AFTER_MS)
        self.meter.stop()
        self.gaps += [(step, end - gap, end) for end, gap in self.meter.gaps]
        if self.each:
            spent = time.perf_counter() - start
            print(
                f"{step}: wall {spent * 1000:.0f} ms, process CPU {(time.process_time() - process_cpu) * 1000:.0f} ms, "
                f"GUI thread CPU {(time.thread_time() - gui_cpu) * 1000:.0f} ms, stall {self.meter.max_gap_s * 1000:.0f} ms"
            )
        self.stalls[step].append(round(self.meter.max_gap_s * 1000, 1))
        self.cpu[step].append(round(self.meter.max_cpu_gap_s * 1000, 1))
        if self.sampler is not None:
            for where in self.sampler.top(3, start, time.perf_counter()):
                self.where.setdefault(step, []).append(where)

    def _name_threads(self) -> None:
        import threading

        self.thread_names.update({str(t.native_id): t.name for t in threading.enumerate()})

    def click_row(self, row: int) -> None:
        from PySide6.QtCore import Qt
        from PySide6.QtTest import QTest

        table = self.panel.table
        table.scrollTo(table.model().index(row, 1))
        rect = table.visualRect(table.model().index(row, 1))
        QTest.mouseClick(
            table.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, rect.center()
        )

    def show_panel(self) -> None:
        self.window.docks["plots"].raise_()
        _spin(200)
        self.measure("show the panel", self.window.docks["sessions"].raise_, lambda: self.panel.shown_ids())

    def refill(self, index: int) -> None:
        bridge = self.window.bridge
        first = self.panel.shown_ids()[0]
        self.click_row(3)  # as in the issue: a row selected while runs arrive
        _spin(100)
        fresh = report(1_000_000 + index, _rng(index), time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        # The path a finished Run takes to the database and back (`WindowSession._record`).
        self.measure(
            "refill after a Run",
            lambda: bridge.session._record(fresh, None),
            lambda: self.panel.shown_ids()[0] > first,
        )
        self.recorded += len(fresh.results)

    def select_baseline_compare(self, index: int) -> None:
        """Baseline: a row of the newest invocations; compared: the same place in the invocation
        of the same kernel 8 invocations (32 rows) older, which shares most of its backends and
        devices: comparable pairs, each reading its A/A history for the noise floor."""
        self.measure("select a row", lambda: self.click_row(4 + index))
        self.measure("Set as baseline", self.panel.baseline_button.click)
        target = self.panel.shown_ids()[36 + index]
        shown = lambda: (self.panel.compare_result or {}).get("run") == target  # noqa: E731
        self.measure("Compare", lambda: self.click_row(36 + index), shown)
        rows = self.panel.compare_result["rows"]
        self.compared.append(sum(1 for row in rows if not row["differs"]))
        tabs = self.panel.tabs
        self.measure("History tab", lambda: tabs.setCurrentWidget(self.panel.history))
        self.plotted.append(self.panel.history.history_shown)
        tabs.setCurrentWidget(self.panel.compare)

    def scroll_and_filter(self, index: int) -> None:
        table = self.panel.table
        loaded = len(self.panel.shown_ids())
        self.measure(
            "scroll",
            lambda: table.verticalScrollBar().setValue(table.verticalScrollBar().maximum()),
            lambda: len(self.panel.shown_ids()) > loaded,
        )
        box = self.panel.kernel_box
        self.measure("filter", lambda: box.setCurrentIndex(1 + index % (box.count() - 1)))
        self.measure("filter", lambda: box.setCurrentIndex(0))
        since = self.panel.since_box  # "last hour", "last 24 hours", "last 7 days", ...
        self.measure("filter", lambda: since.setCurrentIndex(1 + index % (since.count() - 1)))
        self.measure("filter", lambda: since.setCurrentIndex(0))


def _until_idle(timeout_s: float = 60.0) -> float:
    """Let the new window finish what it starts with (the device probe, the console's kernel)
    before measuring: until the process used under 5 % of a core over half a second. The seconds
    that took."""
    start = time.perf_counter()
    while time.perf_counter() - start < timeout_s:
        cpu = time.process_time()
        _spin(500)
        if time.process_time() - cpu < 0.025:
            break
    return round(time.perf_counter() - start, 1)


def _rng(seed: int):
    import numpy as np

    return np.random.default_rng(seed)


def measure(db: Path, repeat: int, diagnose: bool, each: bool = False) -> dict:
    from workbench.ui.app import create_application, create_window, settle_heap
    from workbench.ui.settings import Settings

    app = create_application()
    settings = Settings(sessions_db=str(db), record_runs=True, backends=["cpu"], devices=["cpu"])
    window = create_window(settings=settings)
    window.persist_settings = False
    window.ask_before_discarding = False
    window.show()
    window.resize(*SIZE)
    app.processEvents()
    settle_heap()  # as `workbench gui` does once the window is up
    idle_after_s = _until_idle()
    meter = CpuStallMeter()
    sampler = StackSampler(meter) if diagnose else None
    if sampler is not None:
        sampler.start()
    steps = Steps(window, meter, sampler, each)
    try:
        for index in range(repeat):
            steps.show_panel()
            steps.refill(index)
            steps.select_baseline_compare(index)
            steps.scroll_and_filter(index)
        table = steps.panel.table
        geometry = {
            "window": [window.width(), window.height()],
            "panel": [steps.panel.width(), steps.panel.height()],
            "list_viewport": [table.viewport().width(), table.viewport().height()],
            "columns_shown": table.shown_columns(),
        }
    finally:
        if sampler is not None:
            sampler.stop()
        window.close()
    return {
        "window_idle_after_s": idle_after_s,
        "stalls_ms": steps.stalls,
        "cpu_ms": steps.cpu,
        "comparable_rows": steps.compared,
        "history_points": steps.plotted,
        "where": steps.where,
        "geometry": geometry,
        "recorded": steps.recorded,
    }


def step_summary(measured: dict) -> dict:
    """Each step's longest and median stall and the GUI thread's CPU in them, against GOAL_MS
    (`measured`: the probe's `stalls_ms` and `cpu_ms` by step; day_sequence.py's too)."""
    return {
        step: {
            "max_ms": max(values),
            "median_ms": round(statistics.median(values), 1),
            "each_ms": values,
            "max_gui_cpu_ms": max(measured["cpu_ms"][step]),
            "each_gui_cpu_ms": measured["cpu_ms"][step],
            "ok": max(values) <= GOAL_MS,
        }
        for step, values in measured["stalls_ms"].items()
    }


def _scheduler() -> str:
    """SCHED_OTHER as a user runs it; SCHED_FIFO under `chrt -R -f N` (what the committed "quiet"
    result used): the shared machine's other processes then wait for the window's, as on a quiet
    machine, and its children (the comparing process) run as usual (`-R`: reset on fork)."""
    reset = getattr(os, "SCHED_RESET_ON_FORK", 0x40000000)
    policy = os.sched_getscheduler(0)
    name = {os.SCHED_OTHER: "SCHED_OTHER", os.SCHED_FIFO: "SCHED_FIFO", os.SCHED_RR: "SCHED_RR"}
    return name.get(policy & ~reset, str(policy)) + (", reset on fork" if policy & reset else "")


def table(result: dict) -> str:
    rows = [("step", "longest stall", "median", "goal", "GUI thread's CPU in a gap, most")]
    for step, row in result["steps"].items():
        rows.append((step, f"{row['max_ms']:.1f} ms", f"{row['median_ms']:.1f} ms", f"≤ {GOAL_MS:.0f} ms",
                     f"{row['max_gui_cpu_ms']:.1f} ms"))  # fmt: skip
    width = [max(len(r[i]) for r in rows) for i in range(5)]
    return "\n".join(
        "  " + "  ".join(c.ljust(w) for c, w in zip(r, width, strict=True)).rstrip() for r in rows
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5, help="times each step is measured")
    parser.add_argument("--out", metavar="PATH", help=OUT_HELP)
    parser.add_argument("--diagnose", action="store_true", help="sample the GUI thread's stack during stalls")
    parser.add_argument("--each", action="store_true", help="print each step's wall, CPU and stall times")
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="wb-sessions-window-"))
    try:
        _prepare_environment(work)
        cached, fill_s = ensure_db(args.runs)
        db = work / "sessions.db"
        shutil.copyfile(cached, db)  # the benchmark records into it: the cached file stays as made
        measured = measure(db, args.repeat, args.diagnose, args.each)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    steps = step_summary(measured)
    result = {
        "benchmark": "sessions_window",
        "runs": args.runs,
        "db_bytes": cached.stat().st_size,
        "db_recorded_s": round(fill_s, 1) or None,
        "repeat": args.repeat,
        "platform": os.environ.get("QT_QPA_PLATFORM", ""),
        **measured["geometry"],
        "window_idle_after_s": measured["window_idle_after_s"],
        "comparable_rows_per_compare": measured["comparable_rows"],
        "runs_per_history_plot": measured["history_points"],
        "goal_ms": GOAL_MS,
        "steps": steps,
        **({"where": measured["where"]} if args.diagnose else {}),
        "all_ok": all(row["ok"] for row in steps.values()),
        "load_average": os.getloadavg(),
        "scheduler": _scheduler(),
        "machine": machine(),
        "python": platform.python_version(),
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    load = ", ".join(f"{v:.1f}" for v in result["load_average"]) + f"; {result['scheduler']}"
    print(
        f"Sessions panel at {args.runs:,} runs, {SIZE[0]}×{SIZE[1]}, {args.repeat} times each (load {load}):"
    )
    print(table(result))
    if args.diagnose:
        for step, where in measured["where"].items():
            print(f"  {step}: " + "; ".join(f"{w['where']} ({w['ms']} ms)" for w in where[:6]))
    path = write_json(args.out, "sessions_window.json", result)
    print(f"JSON: {path}")
    return 0 if result["all_ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
