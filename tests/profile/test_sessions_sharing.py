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
