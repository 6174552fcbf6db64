"""The window's session without Qt (issue 38, item 1): a real `WindowSession` over real services
records every run it finishes, once, with the sources its build read, and says so through typed
events on the thread that pumps it. Real cargo builds, real cpu and wgpu (llvmpipe) runs, a real
SQLite file."""

from __future__ import annotations

import threading
from concurrent.futures import Future

import pytest

from tests.waits import WORK_GUARD_S
from workbench.profile.live import session_events as ev
from workbench.profile.live.recordings import NOT_OURS
from workbench.profile.live.window_session import WindowSession
from workbench.profile.sessions.recorder import SessionRecorder
from workbench.profile.sessions.store import SessionStore

pytestmark = pytest.mark.slow


@pytest.fixture
def session(tmp_path, shared_cache_dir):
    made = WindowSession(cache_dir=shared_cache_dir, recorder=SessionRecorder(tmp_path / "sessions.db"))
    yield made
    made.shutdown()


def pump_until(session, predicate, timeout_s=WORK_GUARD_S):
    import time

    end = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < end, "the session never got there"
        session.pump(timeout_s=0.2)


def test_a_run_is_recorded_once_with_its_rows_and_said_on_the_pumping_thread(session, example_copy, tmp_path):
    seen: list[object] = []
    threads: set[str] = set()

    def listen(event):
        seen.append(event)
        threads.add(threading.current_thread().name)

    session.subscribe(listen)
    session.set_project(example_copy("saxpy"))
    session.set_backends(["cpu", "wgsl"])
    session.set_sizes({"n": 4099})
    session.run()
    assert session.busy
    pump_until(session, lambda: any(isinstance(e, ev.RunRecorded) for e in seen) and not session.busy)

    assert threads == {threading.current_thread().name}  # never a service thread
    kinds = [type(e) for e in seen]
    assert kinds.index(ev.ProjectChanged) < kinds.index(ev.RunFinished) < kinds.index(ev.RunRecorded)
    assert [e.sizes for e in seen if isinstance(e, ev.SizesChanged)] == [{"n": 4099}]
    report = session.last_report
    assert {r.backend for r in report.results} == {"cpu", "wgsl"}
    recorded = next(e for e in seen if isinstance(e, ev.RunRecorded)).outcome
    assert "error" not in recorded, recorded

    # Each shown result knows its recording, and the database holds exactly those rows.
    ids = session.run_ids()
    assert len(ids) == 2
    for result in report.results:
        recording = session.recording_of(result)
        assert isinstance(recording, Future) and recording.done()
    store = SessionStore(tmp_path / "sessions.db")
    try:
        rows = store.list_runs()
        assert sorted(r["id"] for r in rows) == sorted(ids.values())
        assert {r["backend"] for r in rows} == {"cpu", "wgsl"}
    finally:
        store.close()


def test_a_console_run_is_a_future_recorded_like_the_windows(session, example_copy):
    seen: list[object] = []
    session.subscribe(seen.append)
    session.set_project(example_copy("saxpy"))
    future = session.start_run(["cpu"])  # no defer given: its thread starts at once
    report = future.result(timeout=600)
    assert [r.backend for r in report.results] == ["cpu"]
    pump_until(session, lambda: any(isinstance(e, ev.RunRecorded) for e in seen) and not session.busy)
    assert session.last_report is report
    assert len(session.run_ids()) == 1


def test_a_result_from_elsewhere_has_no_recording_and_counters_say_why(session, example_copy):
    seen: list[object] = []
    session.subscribe(seen.append)
    session.set_project(example_copy("saxpy"))
    report = session.start_run(["cpu"]).result(timeout=600)
    pump_until(session, lambda: not session.busy)
    session.set_project(example_copy("reduction"))  # another project: its map starts empty
    assert session.recording_of(report.results[0]) == NOT_OURS
    from workbench.run.counters.nsight import record_key

    key = record_key(report.results[0])
    session.record_counters(report, {key: {"metrics": {}}})
    outcome = next(e for e in seen if isinstance(e, ev.CountersRecorded)).outcome
    assert outcome["ids"] == {} and set(outcome["not_recorded"]) == {key}
