"""The window's runs are recorded by the core (the bridge's `SessionRecorder`), not by a panel:
with no Sessions panel, or one that fails to build, every run still reaches the database, with
the sources its build read, not the ones on disk when the result arrives."""

from __future__ import annotations

import pytest

from tests.run_runtimes.test_cuda_fault_fake import fake_pycuda_on_path  # noqa: F401
from tests.waits import WORK_GUARD_MS
from workbench.profile.sessions.store import SessionStore
from workbench.run.events import RunStarted


def _cpu_only(window) -> None:
    window.bridge.set_backends(["cpu"])
    window.bridge.set_devices(["cpu"])


def _broken_panel(monkeypatch) -> None:
    from workbench.ui.sessions import panel as sessions_panel

    def fail(self):
        raise RuntimeError("the sessions panel is broken")

    monkeypatch.setattr(sessions_panel.SessionsPanel, "_build_ui", fail)


@pytest.mark.parametrize("panel", ["not built", "fails to build"])
def test_a_window_run_is_recorded_without_a_sessions_panel(
    panel, make_window, example_copy, private_sessions_db, qtbot, monkeypatch
):
    if panel == "fails to build":
        _broken_panel(monkeypatch)
        panels = ("sessions", "results")
    else:
        panels = ("results",)
    root = example_copy("saxpy")
    window = make_window(root, panels=panels)
    assert not hasattr(window.panels.get("sessions"), "recorded")  # no working Sessions panel
    _cpu_only(window)
    with qtbot.waitSignal(window.bridge.runRecorded, timeout=WORK_GUARD_MS) as done:
        window.bridge.run()  # the window's Run (through the live loop)
    ids = done.args[0].get("ids")
    assert ids, done.args[0]
    with qtbot.waitSignal(window.bridge.runRecorded, timeout=WORK_GUARD_MS) as again:
        window.bridge.start_run(["cpu"], ["cpu"])  # the console's run()
    assert again.args[0].get("ids"), again.args[0]
    with SessionStore(private_sessions_db) as store:
        runs = store.list_runs()
        assert sorted(r["id"] for r in runs) == sorted(ids + again.args[0]["ids"])
        assert {(r["backend"], r["kernel"]) for r in runs} == {("cpu", "saxpy")}
        files = store.source(runs[0]["snapshot_hash"])
        assert files["src/lib.rs"] == (root / "src" / "lib.rs").read_text()


def test_the_recorded_sources_are_the_ones_built_not_the_ones_saved_meanwhile(
    make_window, example_copy, private_sessions_db, qtbot
):
    root = example_copy("saxpy")
    lib = root / "src" / "lib.rs"
    built = lib.read_text()
    window = make_window(root, panels=("results",))
    _cpu_only(window)
    edited = []

    def edit_once_running(event) -> None:
        # The build is done and the run under way: an editor saves the file before the result.
        if isinstance(event, RunStarted) and not edited:
            lib.write_text(built + "\n// saved while the run was going\n")
            edited.append(True)

    window.bridge.runEvent.connect(edit_once_running)
    with qtbot.waitSignal(window.bridge.runRecorded, timeout=WORK_GUARD_MS) as done:
        window.bridge.run()
    assert edited and done.args[0].get("ids"), done.args[0]
    with SessionStore(private_sessions_db) as store:
        (run,) = store.list_runs()
        recorded = store.source(run["snapshot_hash"])
    assert recorded["src/lib.rs"] == built != lib.read_text()


NCU_STAND_IN = """import shutil, subprocess, sys
args = sys.argv[1:]
log = args[args.index("--log-file") + 1]
done = subprocess.run(args[args.index("--log-file") + 2 :], capture_output=True, text=True)
if done.returncode != 0 or "launched saxpy once" not in done.stdout:
    sys.exit("the launch child failed: " + done.stderr[-2000:])
shutil.copy({capture!r}, log)
"""


def test_counters_taken_in_the_window_are_recorded_with_their_runs(
    make_window,
    example_copy,
    private_sessions_db,
    qtbot,
    tmp_path,
    monkeypatch,
    fake_pycuda_on_path,  # noqa: F811
):
    """A window run (cpu, and cuda-c built by the real nvcc, run on cuda:0 through the pycuda
    double: no GPU here), then Take counters with an `ncu` stand-in that runs the launch child it
    is given and writes the real H200 capture (Nsight Compute cannot run here): the counters are
    read back from the database by run id and shown by `workbench sessions show` in another
    process. With Record runs off, the next run's counters are shown, and said not recorded."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    from tests.run_runtimes.test_counters_fake import CAPTURE, _fake_ncu
    from workbench.run.counters import absence

    if not shutil.which("nvcc"):
        pytest.skip("nvcc is not installed here")
    monkeypatch.setenv("WB_NCU", str(_fake_ncu(tmp_path / "bin", NCU_STAND_IN.format(capture=str(CAPTURE)))))
    root = example_copy("saxpy")
    window = make_window(root, panels=("results", "counters"))
    bridge, view = window.bridge, window.panels["counters"]
    bridge.set_sizes({"n": 4096})
    bridge.set_backends(["cpu", "cuda-c"])
    bridge.set_devices(["cpu", "cuda:0"])
    with qtbot.waitSignal(bridge.runRecorded, timeout=WORK_GUARD_MS) as recorded:
        bridge.run()
    rows = recorded.args[0].get("rows")
    assert rows and set(rows) == {("cpu", "cpu"), ("cuda-c", "cuda:0")}, recorded.args[0]
    qtbot.waitUntil(lambda: not bridge.busy and view.take_button.isEnabled(), timeout=WORK_GUARD_MS)
    assert bridge.run_ids() == rows  # the bridge remembers the ids of the report it shows
    with qtbot.waitSignal(bridge.countersRecorded, timeout=WORK_GUARD_MS) as attached:
        view.take_button.click()
    assert attached.args[0] == {"ids": rows, "not_recorded": {}}
    cuda_id, cpu_id = rows[("cuda-c", "cuda:0")], rows[("cpu", "cpu")]
    assert view.status.text() == f"counters of 1 of 2 result(s); recorded with run #{cpu_id}, #{cuda_id}"
    with SessionStore(private_sessions_db) as store:
        cuda = store.counters(cuda_id)
        assert (cuda["status"], cuda["metrics"]["dram_pct"]) == ("ok", 61.43)
        assert cuda["message"] == view.records[("cuda-c", "cuda:0")]["message"]
        assert store.counters(cpu_id)["message"] == absence.not_cuda("cpu", "cpu")
    show = subprocess.run(
        [sys.executable, "-m", "workbench", "sessions", "show", str(cuda_id), "--db", str(private_sessions_db)],
        capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    assert show.returncode == 0, show.stderr
    assert f"  counters (ok): {cuda['message']}" in show.stdout.splitlines()

    # A save that breaks cuda-c's build (the window reruns on save): its row is the last good
    # result, stale, and its counters go to the run that result was recorded as; cpu ran again.
    cu = root / "reference" / "saxpy.cu"
    good = cu.read_text()
    with qtbot.waitSignal(bridge.runRecorded, timeout=WORK_GUARD_MS) as again:
        cu.write_text(good + "\nthis does not compile;\n")
    qtbot.waitUntil(lambda: not bridge.busy, timeout=WORK_GUARD_MS)
    assert set(again.args[0]["rows"]) == {("cpu", "cpu")}, again.args[0]
    cpu_now, cuda_then = bridge.last_report.results
    assert (cpu_now.stale, cuda_then.stale is not None) == (None, True)
    cpu_later = bridge.recording_of(cpu_now).result(60)["rows"][("cpu", "cpu")]
    later = {("cpu", "cpu"): cpu_later, ("cuda-c", "cuda:0"): cuda_id}
    assert cpu_later > cpu_id and bridge.run_ids() == later
    with qtbot.waitSignal(bridge.countersRecorded, timeout=WORK_GUARD_MS) as attached:
        view.take_button.click()
    assert attached.args[0] == {"ids": later, "not_recorded": {}}
    with SessionStore(private_sessions_db) as store:
        assert [e["message"] for e in store.counters(cuda_id)["earlier"]] == [cuda["message"]]

    bridge.recorder.enabled = False  # the Sessions panel's "Record runs" unticked
    with qtbot.waitSignal(bridge.runFinished, timeout=WORK_GUARD_MS):
        cu.write_text(good)  # saved: both build and run again, unrecorded
    qtbot.waitUntil(lambda: not bridge.busy and view.take_button.isEnabled(), timeout=WORK_GUARD_MS)
    assert [r.stale for r in bridge.last_report.results] == [None, None]
    assert bridge.run_ids() == {}
    with qtbot.waitSignal(bridge.countersRecorded, timeout=WORK_GUARD_MS):
        view.take_button.click()
    assert view.status.text() == (
        "counters of 1 of 2 result(s); shown, not recorded: recording was off (Record runs) when it ran"
    )
    with SessionStore(private_sessions_db) as store:
        assert store.count() == 3  # the first run and cpu's second, with the counters taken of them
        assert store._query("SELECT run_id FROM counters ORDER BY run_id") == [
            {"run_id": i} for i in sorted({cpu_id, cuda_id, cpu_later})
        ]
