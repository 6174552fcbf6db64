"""Damage is found before anything is written (issue 35): garbage written into the middle of a
sessions database by another process, after this one opened it, stops the next recording with
what to do; a file only workbenches wrote to is not checked again. Real SQLite files, real
second processes."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import cli
from workbench.profile.sessions import write_check
from workbench.profile.sessions.export import render
from workbench.profile.sessions.recorder import SessionRecorder
from workbench.profile.sessions.store import SessionStore, SessionStoreError

QUICK_CHECK = "PRAGMA quick_check(1)"


def digest(path: Path) -> str:
    """Read by another process: closing a descriptor of a file SQLite holds here would drop this
    process's locks on it (store.py's connection policy)."""
    return subprocess.run(
        ["sha256sum", str(path)], capture_output=True, text=True, check=True
    ).stdout.split()[0]


def _oldest_runs_page(path: Path) -> tuple[int, int]:
    """(page number, page size) of the `runs` leaf holding the oldest rows: a new run is appended
    to the newest leaf, so SQLite's own checks on the pages a write touches never meet this one."""
    db = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    try:
        size = db.execute("PRAGMA page_size").fetchone()[0]
        page = db.execute(
            "SELECT min(pageno) FROM dbstat WHERE name = 'runs' AND pagetype = 'leaf'"
        ).fetchone()[0]
    except sqlite3.OperationalError as exc:
        pytest.skip(f"this SQLite has no dbstat table: {exc}")
    finally:
        db.close()
    return page, size


def _scribble(path: Path, page: int, size: int) -> None:
    """Another process writes garbage over one page in the middle of the file, as a stray `dd` would."""
    code = (
        "import sys; f = open(sys.argv[1], 'r+b'); f.seek(int(sys.argv[2])); "
        "f.write(b'\\x0d' + b'\\xa5' * (int(sys.argv[3]) - 1)); f.close()"
    )
    subprocess.run([sys.executable, "-c", code, str(path), str((page - 1) * size), str(size)], check=True)


def _page(path: Path, page: int, size: int) -> bytes:
    return path.read_bytes()[(page - 1) * size : page * size]


def _traced(store: SessionStore) -> list[str]:
    seen: list[str] = []
    store._db.set_trace_callback(seen.append)
    return seen


def test_garbage_written_by_another_process_stops_the_next_recording(tmp_path, make_report):
    path = tmp_path / "s.db"
    filler = SessionRecorder(path)
    for seed in range(40):
        filler.record(make_report(seed=seed, n=500))
    filler.close()  # the last connection: checkpointed into the file, then sealed
    assert write_check.unchanged(path)

    recorder = SessionRecorder(path)  # the window's or a sweep's: open while the damage happens
    recorder.record(make_report(seed=100))
    seen = _traced(recorder._store)
    recorder.record(make_report(seed=101))
    assert QUICK_CHECK not in seen  # as a workbench left it: written unchecked
    page, size = _oldest_runs_page(path)
    _scribble(path, page, size)
    assert not write_check.unchanged(path)
    damaged, log = digest(path), digest(Path(f"{path}-wal"))

    with pytest.raises(SessionStoreError) as caught:
        recorder.record(make_report(seed=102))
    message = str(caught.value)
    assert QUICK_CHECK in seen and caught.value.damaged
    assert message.startswith(f"not written: the sessions database {path} was changed outside the workbench")
    assert "quick check finds it corrupt" in message and f"Page {page}" in message
    assert f"run `workbench sessions check --db {path}`" in message and ".recover" in message
    with pytest.raises(SessionStoreError, match="not written"):  # and every later write of this process
        recorder.record(make_report(seed=103))
    assert recorder._store.count() == 84  # reading goes on
    assert (digest(path), digest(Path(f"{path}-wal"))) == (damaged, log)  # nothing was written
    recorder.close()  # SQLite's checkpoint moves the runs committed before into the file, not over the damage:
    assert _page(path, page, size) == b"\x0d" + b"\xa5" * (size - 1)
    damaged = digest(path)

    # SQLite alone would have taken the write: the damaged page is not one it touches.
    shutil.copy(path, tmp_path / "copy.db")
    db = sqlite3.connect(tmp_path / "copy.db")
    db.execute("INSERT INTO sources (hash, files) VALUES ('x', '{}')")
    db.commit()
    db.close()

    # The next process is refused too (the damaged note), and `sessions check` says what it says.
    bundle = tmp_path / "bundle.json"
    with SessionStore(tmp_path / "other.db") as other:
        SessionRecorder(store=other).record(make_report(seed=7))
        bundle.write_text(render(other, "json", None))
    done = cli("sessions", "import", bundle, "--db", path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "not written" in done.stderr and "quick check finds it corrupt" in done.stderr
    assert f"{path}.damaged" in done.stderr and "workbench sessions check" in done.stderr
    checked = cli("sessions", "check", "--db", path)
    assert checked.returncode == 1 and f"{path} is not sound: " in checked.stdout, (
        checked.stdout + checked.stderr
    )
    assert "it stays marked damaged" in checked.stdout
    assert digest(path) == damaged


def test_only_a_change_outside_the_workbench_costs_a_check(tmp_path, make_report):
    path = tmp_path / "s.db"
    with SessionStore(path) as store:
        seen = _traced(store)
        store.insert_runs([], None)  # a new file, never sealed: checked once
        assert seen.count(QUICK_CHECK) == 1
        SessionRecorder(store=store).record(make_report(seed=1))
        assert seen.count(QUICK_CHECK) == 1
        # Another workbench process writes (and checkpoints, and leaves the file sealed) ...
        other = tmp_path / "other.db"
        with SessionStore(other) as source:
            SessionRecorder(store=source).record(make_report(seed=2))
            (tmp_path / "b.json").write_text(render(source, "json", None))
        done = cli("sessions", "import", tmp_path / "b.json", "--db", path)
        assert done.returncode == 0, done.stderr
        SessionRecorder(store=store).record(make_report(seed=3))
        assert seen.count(QUICK_CHECK) == 1  # ... no check here
        # ... another program touches the file: checked once, and sealed again.
        subprocess.run(["touch", str(path)], check=True)
        SessionRecorder(store=store).record(make_report(seed=4))
        SessionRecorder(store=store).record(make_report(seed=5))
        assert seen.count(QUICK_CHECK) == 2
        assert store.count() == 10 and store.damaged() is None
    assert write_check.unchanged(path)
