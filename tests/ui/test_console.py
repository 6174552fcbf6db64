"""The console off the GUI thread: `build()` / `run()` return at once with a Job, the event loop
keeps turning while they work, and their results reach the panels like the window's own Run.

Nothing here is timed (the event loop's longest stall is a figure of `benchmarks/hot_reload.py`):
the cpu build is held in its build.rs until the test opens a gate, and the test opens it only
once the event loop has delivered HEARTBEATS timer ticks meanwhile, which a GUI thread blocked
on the build could never do, however fast or loaded the machine."""

from __future__ import annotations

import threading

from PySide6.QtCore import QTimer

from tests.waits import HANG_GUARD_MS, WORK_GUARD_MS
from workbench.ui.console.panel import CONSOLE_STYLE, ConsolePanel
from workbench.ui.results.table import COL_BACKEND, COL_VERIFIED, ResultsTable

HEARTBEAT_MS = 5
#: Timer ticks the event loop must deliver while the cpu build is held at its gate.
HEARTBEATS = 20
TIMEOUT_MS = WORK_GUARD_MS


class Heartbeat:
    """A GUI-thread timer every HEARTBEAT_MS, counting its ticks."""

    def __init__(self):
        self.ticks = 0
        self.timer = QTimer()
        self.timer.setInterval(HEARTBEAT_MS)
        self.timer.timeout.connect(self._tick)

    def _tick(self) -> None:
        self.ticks += 1

    def start(self) -> None:
        self.timer.start()

    def stop(self) -> None:
        self.timer.stop()


def test_console_build_and_run_never_block_the_window(qtbot, make_widget, bridge, gated_saxpy):
    root, gates = gated_saxpy  # the cpu build waits in build.rs for gates["host"]
    bridge.set_project(root)
    bridge.set_backends(["cpu", "wgsl"])
    bridge.set_devices(["cpu", "wgpu:0"])
    bridge.loop.reference = "wgsl"  # the run below needs no cpu build: the two jobs are independent
    table = make_widget(ResultsTable, bridge, show=True)
    console = make_widget(ConsolePanel, bridge, show=True)
    qtbot.waitUntil(lambda: "In [1]" in console.widget._control.toPlainText(), timeout=HANG_GUARD_MS)
    namespace = console.namespace()
    assert (
        console.widget.style_sheet == CONSOLE_STYLE and "#1e1f22" in CONSOLE_STYLE
    )  # the window's dark base
    build_threads: set[str] = set()
    bridge.build_service.subscribe(lambda event: build_threads.add(threading.current_thread().name))

    heartbeat = Heartbeat()
    heartbeat.start()
    try:
        with qtbot.waitSignal(bridge.runFinished, timeout=TIMEOUT_MS) as finished:
            # A cargo build of the cpu backend and a build + run of wgsl, both in flight at once.
            console.execute("b = build('cpu'); r = run('wgsl'); in_flight = (b.done(), r.done())")
            qtbot.waitUntil(lambda: "in_flight" in namespace, timeout=HANG_GUARD_MS)
            assert namespace["in_flight"] == (False, False)  # both returned at once, still working
            assert "running" in repr(namespace["r"])
        # The wgsl run finished while the cpu build is held; the window keeps turning meanwhile.
        beats = heartbeat.ticks
        qtbot.waitUntil(lambda: heartbeat.ticks >= beats + HEARTBEATS, timeout=TIMEOUT_MS)
        assert not namespace["b"].done() and "running" in repr(namespace["b"])
        gates["host"].touch()
        qtbot.waitUntil(lambda: namespace["b"].done(), timeout=TIMEOUT_MS)
    finally:
        heartbeat.stop()
    # The build's work (its events) happened on the build service's threads, never the GUI's.
    assert build_threads and threading.main_thread().name not in build_threads, build_threads

    # The run's results reached the panels through the window's own signal.
    report = finished.args[0]
    assert report is bridge.last_report and report is namespace["r"].result()
    assert [r.backend for r in report.results] == ["wgsl"] and report.reference == "wgsl"
    rows = {table.table.item(i, COL_BACKEND).text(): i for i in range(table.table.rowCount())}
    assert set(rows) == {"wgsl"}
    assert table.table.item(rows["wgsl"], COL_VERIFIED).text() == "reference"
    built = namespace["b"].result()["cpu"]
    assert built.status == "ok" and not built.cached

    # `results` and `outputs` print short summaries, not array dumps.
    console.execute("text = repr(results) + repr(outputs)")
    qtbot.waitUntil(lambda: "text" in namespace, timeout=HANG_GUARD_MS)
    text = namespace["text"]
    assert "RunResult(wgsl @ wgpu:0: ok, reference, median" in text
    assert "'wgsl': {y: float32[4096]}" in text and len(text) < 1000
    console.shutdown()


def test_results_table_shows_weak_and_unverified_checks(qtbot, make_widget, bridge, example_copy):
    """A real run: with atol 10 every saxpy output is below atol (weak); with a reference that
    cannot run here the others are not verified. The table says so instead of a plain pass."""
    root = example_copy("saxpy")
    manifest = root / "workbench.toml"
    manifest.write_text(manifest.read_text().replace("atol = 1e-6", "atol = 10.0"))
    bridge.set_project(root)
    table = make_widget(ResultsTable, bridge, show=True)
    for reference, expected in (("cpu", "⚠ weak"), ("cuda-c", "not verified (reference failed)")):
        bridge.loop.reference = reference
        with qtbot.waitSignal(bridge.runFinished, timeout=TIMEOUT_MS):
            bridge.start_run(["cpu", "wgsl"], ["cpu", "wgpu:0"])
        rows = {row["Backend"]: row for row in table.row_texts()}
        assert rows["wgsl"]["Verified"] == expected, rows["wgsl"]
