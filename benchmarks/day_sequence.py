"""A user's day in the real window at 1280×800 on 100,000 recorded runs: how long the event loop stalls.

Issue 36's "done when": the real window (`create_window`, every panel) on the user's copy of the
saxpy example, with a sessions database of `--runs` runs recorded through the real recorder
(`sessions_db.py`, shared with `sessions_window.py`), goes through the day's steps in order and
each is measured with `sessions_window.py`'s probe (a 5 ms timer's longest gap, the GUI thread's
own CPU in a gap beside it; each step runs from the event loop as a click does, and the meter
keeps running 300 ms after it, so what it queued counts too):

- open: File › Open on the example (the window opens its user copy) while the Sessions panel is
  in view;
- Run: cpu + wgsl (llvmpipe here) until the report is shown and the bridge is idle;
- edit on disk: another program saves the kernel (src/lib.rs) with hot reload on: the watcher's
  rebuild and rerun, until its report is shown;
- tuning sweep: the Tuning dock raised, Sweep clicked, until the sweep's result is shown (the copy's
  `[kernel.tunables]` narrowed to two values of `threads`, `vector` at its default);
- Sessions: the dock raised; select a row (the first Run's wgsl row); Set as baseline; Compare (the
  edit's wgsl row clicked, until its comparison is shown);
- Counters: the dock raised without a GPU: its absence line shown, "Take counters" disabled.

Goal: ≤ 50 ms each. The window's start-up (built on the GUI thread before its loop runs) is given
apart, not as a step.

    python benchmarks/day_sequence.py [--runs 100000] [--repeat 1] [--out FILE.json] [--table FILE.txt] [--diagnose] [--trace]
    chrt -R -f 10 python benchmarks/day_sequence.py ...   # as root: the window's process ahead of the load

The JSON and table keep the load average before and after and the scheduler (see sessions_window.py
for why a run under `chrt -R -f 10` separates the window's own work from the shared machine's load).
Under a real-time policy every thread of the window's process takes it (`rt_threads.py`: Linux
resets threads too, and the GUI thread then waited for worker threads behind the load);
`--gui-thread-only` leaves them at SCHED_OTHER, as the results before it.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.bench_output import OUT_HELP, machine, output_path, write_json  # noqa: E402
from benchmarks.hot_reload import StackSampler, _prepare_environment  # noqa: E402
from benchmarks.rt_threads import threads_share_scheduler  # noqa: E402
from benchmarks.sessions_db import ensure_db  # noqa: E402
from benchmarks.sessions_window import (  # noqa: E402
    GOAL_MS,
    CpuStallMeter,
    Steps,
    _scheduler,
    _spin,
    _until_idle,
    step_summary,
    table,
)

SIZE = (1280, 800)
EXAMPLE = REPO / "resources" / "examples" / "saxpy"
STEPS = (
    "open", "Run", "edit on disk", "tuning sweep", "Sessions shown", "select a row", "Set as baseline",
    "Compare", "Counters without a GPU",
)  # fmt: skip
#: The copy's sweep: two values of one tunable (the first is the default), the other at its default.
TUNABLES = "[kernel.tunables]\nthreads = [256, 64]\nvector = [1]\n"


def prepare_copy() -> Path:
    """The user's copy of saxpy (`user_folders.user_copy`, as File › Open example makes it) with its
    tunables narrowed to `TUNABLES`: the window opens the example and finds this copy."""
    from workbench.user_folders import user_copy

    copy = user_copy(EXAMPLE)
    manifest = copy / "workbench.toml"
    text, count = re.subn(
        r"(?ms)^\[kernel\.tunables\].*?(?=^\[)", TUNABLES + "\n", manifest.read_text(), count=1
    )
    assert count == 1, f"no [kernel.tunables] table in {manifest}"
    manifest.write_text(text)
    return copy


class ThreadsSampler(StackSampler):
    """`StackSampler`, plus, while the GUI thread is stalled, the innermost project (or library)
    frame of every other Python thread of the window's process: a gap in which the GUI thread's
    own CPU is small is a wait, for a core or for the GIL, and these say who ran meanwhile."""

    def __init__(self, meter, threshold_s: float = 0.015):
        import threading

        super().__init__(meter, threshold_s)
        self.native_id = threading.get_native_id()  # made on the GUI thread

    def _gui_state(self) -> str:
        """The GUI thread's scheduler state and system call as the kernel reports them: R waiting
        for a core (or running), D in uninterruptible I/O, S asleep in the call named (a futex:
        a lock, the GIL)."""
        task = Path(f"/proc/self/task/{self.native_id}")
        try:
            state = (task / "stat").read_text().rsplit(")", 1)[1].split()[0]
            call = (task / "syscall").read_text().split()[0]
        except (OSError, IndexError):
            return "?"
        names = {"0": "read", "1": "write", "7": "poll", "202": "futex", "4": "stat", "262": "fstatat",
                 "257": "openat", "74": "fsync", "75": "fdatasync", "271": "ppoll", "232": "epoll_wait"}  # fmt: skip
        return f"{state} {names.get(call, call)}"

    def _work(self) -> None:
        import threading
        import traceback

        while not self._stop.wait(0.002):
            if time.perf_counter() - self.meter.last < self.threshold_s:
                continue
            self.samples.append((time.perf_counter(), f"[GUI kernel state] {self._gui_state()}"))
            frames = sys._current_frames()
            # Named now, not from a map kept since: an ended thread's ident is reused by the next.
            names = {t.ident: t.name for t in threading.enumerate()}
            for ident, frame in frames.items():
                if ident == threading.get_ident():
                    continue
                stack = traceback.extract_stack(frame)
                ours = [f for f in stack if "/workbench/" in f.filename] or stack[-1:]
                inner = f"{Path(ours[-1].filename).name}:{ours[-1].name}"
                last = f"{Path(stack[-1].filename).name}:{stack[-1].name}"
                who = "GUI" if ident == self.thread_id else names.get(ident, str(ident))
                self.samples.append((time.perf_counter(), f"[{who}] {inner} .. {last}"))

    def top(self, count: int = 12, start: float = 0.0, end: float = float("inf")) -> list[dict]:
        return super().top(max(count, 12), start, end)  # every thread's: more than the GUI's 3


class Day:
    """The day's steps on one window, each measured by `Steps.measure`."""

    def __init__(self, window, steps: Steps, copy: Path, after=None):
        self.window = window
        #: Called with a state's name once it is reached (`--shots`: its X11 screenshot).
        self.after = after or (lambda _state: None)
        self.steps = steps
        self.copy = copy
        self.reports: list = []
        self.recorded: list[list[int]] = []  # the run ids of each recorded report
        window.bridge.runFinished.connect(self.reports.append)
        self.panel = window.panels["sessions"]
        self.panel.recorded.connect(lambda outcome: self.recorded.append(list(outcome.get("ids") or [])))
        self.facts: dict = {}

    def idle(self) -> bool:
        return not self.window.bridge.busy

    def open(self) -> None:
        self.window.docks["sessions"].raise_()
        _spin(200)
        self.steps.measure(
            "open",
            lambda: self.window.open_project(EXAMPLE),
            lambda: self.window.project is not None and self.idle(),
        )
        assert self.window.project.root == self.copy.resolve(), (self.window.project.root, self.copy)
        self.after("open")

    def run(self) -> None:
        done = len(self.reports)
        self.steps.measure(
            "Run", self.window.run, lambda: len(self.reports) > done and self.idle(), timeout_s=900
        )
        self.facts["run"] = {r.backend: r.status for r in self.reports[-1].results}
        self.window.docks["results"].raise_()
        self.after("run")

    def edit(self) -> None:
        self.window.hot_reload_action.setChecked(True)
        _spin(300)
        source = self.copy / "src" / "lib.rs"
        done = len(self.reports)
        self.steps.measure(
            "edit on disk",
            lambda: source.write_text(source.read_text() + f"\n// edited at {time.time()}\n"),
            lambda: len(self.reports) > done and self.idle(),
            timeout_s=900,
        )
        self.window.hot_reload_action.setChecked(False)
        self.facts["edit"] = {r.backend: r.status for r in self.reports[-1].results}
        self.after("edit")

    def sweep(self) -> None:
        from workbench.run.timing import TimingOptions

        panel = self.window.panels["tuning"]
        panel.timing = TimingOptions(
            min_n=5, min_time_s=0.02, warmup_max_n=6, warmup_max_s=0.3, max_time_s=2.0
        )
        panel.rounds.setValue(2)
        results: list = []
        panel.sweepFinished.connect(results.append)

        def start() -> None:
            self.window.docks["tuning"].raise_()
            panel.sweep_button.click()

        self.steps.measure("tuning sweep", start, lambda: bool(results) and self.idle(), timeout_s=900)
        panel.sweepFinished.disconnect(results.append)
        self.facts["sweep"] = {
            "configurations": len({str(e.get("config")) for e in panel.entries}),
            "verdict": panel.verdict.text(),
            "status": panel.status.text(),
        }
        self.after("sweep")

    def _wgsl_id(self, ids: list[int]) -> int:
        runs = [self.panel.table.shown_run(i) for i in ids]
        return next(r["id"] for r in runs if r is not None and r.get("backend") == "wgsl")

    def sessions(self) -> None:
        panel = self.panel
        self.window.docks["plots"].raise_()
        _spin(200)
        self.steps.measure("Sessions shown", self.window.docks["sessions"].raise_, lambda: panel.shown_ids())
        run_ids, edit_ids = self.recorded[0], self.recorded[1]
        baseline, compared = self._wgsl_id(run_ids), self._wgsl_id(edit_ids)
        self.steps.measure("select a row", lambda: self.steps.click_row(panel.shown_ids().index(baseline)))
        self.steps.measure(
            "Set as baseline", panel.baseline_button.click, lambda: panel.baseline_id == baseline
        )
        shown = lambda: (panel.compare_result or {}).get("run") == compared  # noqa: E731
        self.steps.measure("Compare", lambda: self.steps.click_row(panel.shown_ids().index(compared)), shown)
        self.facts["compare"] = {
            "baseline": baseline,
            "run": compared,
            "rows": len(panel.compare_result["rows"]),
        }
        self.after("compare")

    def counters(self) -> None:
        view = self.window.panels["counters"]
        self.steps.measure("Counters without a GPU", self.window.docks["counters"].raise_)
        assert view.unavailable and view.status.text() == view.unavailable, view.status.text()
        assert not view.take_button.isEnabled()
        self.facts["counters"] = {"line": view.status.text(), "take_enabled": view.take_button.isEnabled()}
        self.after("counters")


def measure(
    db: Path, cache: Path, sizes: list[tuple[int, int]], diagnose: bool, each: bool, shots=None, trace=None
) -> dict:
    """Each day at its size in `sizes` (a fresh window each); `shots`: a `window_shots.Shots` that
    takes an X11 screenshot of each state reached, named `<width>x<height>-<n>-<state>`; `trace`:
    a `thread_trace.ThreadTrace` of this process, whose summary of each gap of 30 ms or more goes
    to the result's "waits"."""
    from workbench.ui.app import create_application, create_window, settle_heap
    from workbench.ui.settings import Settings

    app = create_application()
    load_before = os.getloadavg()
    runs: list[dict] = []
    stalls: dict[str, list[float]] = {step: [] for step in STEPS}
    cpu: dict[str, list[float]] = {step: [] for step in STEPS}
    where: dict[str, list[dict]] = {}
    pictures: dict[str, dict] = {}
    gaps: list[tuple[str, float, float]] = []
    names: dict[str, str] = {}
    for size in sizes:
        copy = prepare_copy()
        settings = Settings(sessions_db=str(db), record_runs=True, backends=["cpu", "wgsl"],
                            devices=["cpu", "wgpu:0"])  # fmt: skip
        started = time.perf_counter()
        window = create_window(cache_dir=cache, settings=settings)
        window.persist_settings = False
        window.ask_before_discarding = False
        window.show()
        window.resize(*size)  # after show, as sessions_window.py does
        app.processEvents()
        startup_s = time.perf_counter() - started
        settle_heap()
        idle_after_s = _until_idle()
        meter = CpuStallMeter()
        sampler = ThreadsSampler(meter) if diagnose else None
        if sampler is not None:
            sampler.start()
        steps = Steps(window, meter, sampler, each, steps=STEPS)
        states = iter(range(1, 99))

        def after(state: str, size=size, window=window, states=states) -> None:
            if shots is not None:
                name = f"{size[0]}x{size[1]}-{next(states)}-{state}"
                pictures[name] = shots.shot(window, name, screen=True)

        day = Day(window, steps, copy, after)
        try:
            day.open()
            day.run()
            day.edit()
            day.sweep()
            day.sessions()
            day.counters()
            geometry = {"window": [window.width(), window.height()]}
            assert geometry["window"] == list(size), f"the window is {geometry['window']}, not {size}"
        finally:
            if sampler is not None:
                sampler.stop()
            window.close()
            app.processEvents()
            shutil.rmtree(copy, ignore_errors=True)
        for step in STEPS:
            stalls[step] += steps.stalls[step]
            cpu[step] += steps.cpu[step]
        for step, found in steps.where.items():
            where.setdefault(step, []).extend(found)
        gaps += steps.gaps
        names.update(steps.thread_names)
        runs.append({"startup_s": round(startup_s, 2), "idle_after_s": idle_after_s, **geometry, **day.facts})
    waits = []
    if trace is not None:
        trace.stop()
        waits = trace.summary(gaps, names)
    return {"stalls_ms": stalls, "cpu_ms": cpu, "where": where, "days": runs, "load_before": load_before,
            "pictures": pictures, "waits": waits}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=1, help="days gone through (a fresh window each)")
    parser.add_argument("--out", metavar="PATH", help=OUT_HELP)
    parser.add_argument(
        "--table", metavar="PATH", help="also write the table here (default: beside the JSON)"
    )
    parser.add_argument(
        "--cache-dir", default=str(REPO / ".wb-cache" / "day-sequence"), help="build cache, kept between runs"
    )
    parser.add_argument("--diagnose", action="store_true", help="sample the GUI thread's stack during stalls")
    parser.add_argument("--each", action="store_true", help="print each step's wall, CPU and stall times")
    parser.add_argument(
        "--trace", action="store_true",
        help="read every thread of the window's process (and children) from /proc in a process of its own: "
        "who ran or waited for a core in each gap of 30 ms or more (printed, and under 'waits' in the JSON)",
    )  # fmt: skip
    parser.add_argument(
        "--gui-thread-only", action="store_true",
        help="under chrt: leave the window's other threads at SCHED_OTHER, as the results committed before this option did "
        "(the GUI thread then waits for a GIL held by a thread waiting for a core)",
    )  # fmt: skip
    parser.add_argument(
        "--shots", metavar="DIR",
        help="instead: a day at 1280×800 and one at 1600×1000 on an X display (QT_QPA_PLATFORM=xcb), "
        "an X11 screenshot of each state into DIR (PNG) with DIR/day_shots.json",
    )  # fmt: skip
    args = parser.parse_args(argv)
    sizes = [(1280, 800), (1600, 1000)] if args.shots else [SIZE] * args.repeat

    every_thread = not args.gui_thread_only and threads_share_scheduler()
    work = Path(tempfile.mkdtemp(prefix="wb-day-sequence-"))
    try:
        _prepare_environment(work)
        os.environ["WB_PROJECTS_DIR"] = str(work / "projects")  # the user's copy lives here
        cached, fill_s = ensure_db(args.runs)
        db = work / "sessions.db"
        shutil.copyfile(cached, db)  # the day records into it: the cached file stays as made
        shots = None
        if args.shots:
            from benchmarks.window_shots import Shots

            shots = Shots(Path(args.shots), Path(args.cache_dir), "day_shots")
            shots.out_dir.mkdir(parents=True, exist_ok=True)
        trace = None
        if args.trace:
            from benchmarks.thread_trace import ThreadTrace

            trace = ThreadTrace(work / "thread_trace.jsonl")
        measured = measure(db, Path(args.cache_dir), sizes, args.diagnose, args.each, shots, trace)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if shots is not None:
            shots.finish()
    steps = step_summary(measured)
    total = max(row["max_ms"] for row in steps.values())
    result = {
        "benchmark": "day_sequence",
        "runs": args.runs,
        "size": list(SIZE),
        "repeat": args.repeat,
        "platform": os.environ.get("QT_QPA_PLATFORM", ""),
        "goal_ms": GOAL_MS,
        "steps": steps,
        "longest_stall_ms": total,
        "all_ok": all(row["ok"] for row in steps.values()),
        "days": measured["days"],
        **({"where": measured["where"]} if args.diagnose else {}),
        **({"waits": measured["waits"]} if args.trace else {}),
        "load_average_before": measured["load_before"],
        "load_average": os.getloadavg(),
        "scheduler": _scheduler() + (", every thread" if every_thread else ""),
        "machine": machine(),
        "python": platform.python_version(),
        "db_recorded_s": round(fill_s, 1) or None,
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if args.shots:  # the pictures and what each state showed; the stalls under X11 beside them
        result.update(benchmark="day_shots", sizes=[list(s) for s in sizes], pictures=measured["pictures"])
        for key in ("size", "repeat"):
            result.pop(key)
        path = write_json(str(Path(args.shots) / "day_shots.json"), "day_shots.json", result, default=str)
        print(f"{len(measured['pictures'])} screenshots and {path}")
        return 0
    load = lambda values: ", ".join(f"{v:.1f}" for v in values)  # noqa: E731
    startup = ", ".join(f"{d['startup_s']:.2f} s" for d in measured["days"])
    text = "\n".join([
        f"A day's sequence at {args.runs:,} runs, {SIZE[0]}×{SIZE[1]}, {args.repeat} day(s) "
        f"(load {load(result['load_average_before'])} before, {load(result['load_average'])} after; "
        f"{result['scheduler']}; {os.cpu_count()} CPUs):",
        table(result),
        f"  in total           {total:.1f} ms longest stall (goal ≤ {GOAL_MS:.0f} ms each); window start-up {startup} (before its loop runs, not a step)",
    ])  # fmt: skip
    print(text)
    for wait in measured["waits"]:
        tasks = "; ".join(f"{t['task']} [{t['policy']}] CPU {t['cpu_ms']} ms, runnable {t['runnable_ms']} ms"
                          for t in wait["tasks"])  # fmt: skip
        print(
            f"  {wait['step']}: {wait['ms']} ms gap (GUI thread's system calls {wait['gui_syscalls']}): {tasks}"
        )
    if args.diagnose:
        for step, found in measured["where"].items():
            print(f"  {step}: " + "; ".join(f"{w['where']} ({w['ms']} ms)" for w in found[:12]))
    path = write_json(args.out, "day_sequence.json", result, default=str)
    table_path = (
        Path(args.table) if args.table else output_path(args.out, "day_sequence.json").with_suffix(".txt")
    )
    table_path.write_text(text + "\n")
    print(f"JSON: {path}; table: {table_path}")
    return 0 if result["all_ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
