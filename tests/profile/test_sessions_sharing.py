"""Many stores and processes on one sessions database: no write is lost, `-wal` stays intact.

SQLite's "How To Corrupt" §2.2: closing any descriptor of the database file drops every POSIX lock
the process holds on it. The store used to read the header with `open()`, so a second store in a
process released the first one's locks, and another process closing the file took itself for the
last user and deleted `-wal` and `-shm`, and the first store's later writes with them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from workbench.profile.sessions.record import record_report
from workbench.profile.sessions.store import SessionStore, held_here

REPO = Path(__file__).resolve().parents[2]


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO)
    return env


def listed_ids(path: Path) -> list[int]:
    """The run ids `workbench sessions list` prints from another process (which opens and closes)."""
    done = subprocess.run(
        [sys.executable, "-m", "workbench", "sessions", "list", "--json", "--limit", "0", "--db", str(path)],
        capture_output=True, text=True, timeout=120, env=child_env(), check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return sorted(run["id"] for run in json.loads(done.stdout)["runs"])


def test_two_stores_here_and_a_process_that_opens_and_closes_lose_no_write(tmp_path, make_report):
    path = tmp_path / "s.db"
    first = SessionStore(path)
    second = SessionStore(path)  # the window holds several: recorder, Sessions panel, sweep
    try:
        assert held_here(path)
        before = record_report(first, make_report(seed=1))
        assert listed_ids(path) == before  # another process opened and closed the file
        assert Path(f"{path}-wal").exists() and Path(f"{path}-shm").exists()  # not deleted under us
        after = record_report(first, make_report(seed=2))
        assert listed_ids(path) == before + after  # the write after it reached the file
        more = record_report(second, make_report(seed=3))
        assert listed_ids(path) == before + after + more
        assert second.count() == first.count() == 6
    finally:
        second.close()
        first.close()
    assert not held_here(path)
    # The last store closed checkpointed the log into the file and removed it, as SQLite does.
    assert not Path(f"{path}-wal").exists()
    with SessionStore(path) as store:
        assert store.count() == 6 and store.integrity_check() == "ok"


def test_a_run_queued_while_another_process_locks_the_database_is_recorded_once_it_is_free(
    tmp_path, make_report
):
    """The window's recorder gave a run up ("stayed locked by another process for 30 s ...
    nothing was written") when another process held the database past SQLite's busy timeout: the
    run was lost. Its thread now waits on, says why (`on_wait`), and records it once the other
    process lets go; the report queued behind it follows, in order."""
    import threading

    from tests.waits import HANG_GUARD_S
    from workbench.profile.sessions.recorder import SessionRecorder

    path = tmp_path / "s.db"
    SessionStore(path).close()  # a database, as another workbench made it
    locker = subprocess.Popen(
        [sys.executable, "-c", "import sqlite3, sys\n"
         f"db = sqlite3.connect({str(path)!r}, isolation_level=None)\n"
         "db.execute('BEGIN EXCLUSIVE')\nprint('locked', flush=True)\nsys.stdin.readline()\ndb.execute('COMMIT')\n"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    recorder = SessionRecorder(path, lock_wait_s=0.2)
    waited: list[str] = []
    waiting = threading.Event()
    recorder.on_wait = lambda text: (waited.append(text), waiting.set())
    try:
        assert locker.stdout.readline().strip() == "locked"
        first = recorder.submit(make_report(seed=1))
        second = recorder.submit(make_report(seed=2))
        # Either it waits (now) or it gave the run up (before): whichever comes first.
        while not waiting.wait(0.05) and not first.done():
            pass
        assert not first.done(), first.result()
        assert "stayed locked by another process" in waited[0] and "tried again" in waited[0]
        locker.stdin.write("\n")
        locker.stdin.flush()
        assert locker.wait(HANG_GUARD_S) == 0
        one, two = first.result(HANG_GUARD_S), second.result(HANG_GUARD_S)
        assert "error" not in one and "error" not in two, (one, two)
        assert max(one["ids"]) < min(two["ids"])  # in the order they came
    finally:
        if locker.poll() is None:
            locker.kill()
            locker.wait()
        recorder.close()
    with SessionStore(path) as store:
        assert store.count() == len(one["ids"]) + len(two["ids"]) and store.integrity_check() == "ok"
