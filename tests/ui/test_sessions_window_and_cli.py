"""The window and the command line share one sessions database: every run of both survives.

The window holds several stores on the file (its recorder, the Sessions panel); `workbench`
processes open and close it meanwhile. When a store read the header with `open()`/`close()`, the
window's other stores lost their POSIX locks, a closing `workbench` process took itself for the
last user and deleted `-wal`/`-shm`, and the window's later runs vanished when it closed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.waits import HANG_GUARD_MS, WORK_GUARD_MS

REPO = Path(__file__).resolve().parents[2]


def workbench(*args: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.Popen(
        [sys.executable, "-m", "workbench", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, env=env,
    )  # fmt: skip


def finished(process: subprocess.Popen) -> tuple[str, str]:
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    return out, err


def test_window_and_command_line_record_into_one_database_and_lose_nothing(
    make_window, example_copy, private_sessions_db, shared_cache_dir, qtbot
):
    project = example_copy("saxpy")
    db = str(private_sessions_db)
    window = make_window(project, panels=("sessions", "results"))
    panel = window.panels["sessions"]
    assert panel.database_path() == private_sessions_db
    window_ids: list[int] = []

    def record_in_window() -> None:
        with qtbot.waitSignal(panel.recorded, timeout=WORK_GUARD_MS) as done:
            window.bridge.start_run(["cpu"], ["cpu"])
        assert done.args[0].get("ids"), done.args[0]
        window_ids.extend(done.args[0]["ids"])

    record_in_window()  # the recorder's store
    panel.refresh()  # the panel's store: two stores of this process on the file
    assert panel.shown_ids() == window_ids

    run_args = ["run", str(project), "--backend", "cpu", "--size", "n=4096", "--db", db,
                "--cache-dir", str(shared_cache_dir)]  # fmt: skip
    cli_run = workbench(*run_args)
    record_in_window()  # while the command line records too
    _out, err = finished(cli_run)
    assert "recorded as run(s)" in err, err

    # Another process opens and closes the file while the window's stores are open ...
    listed, _ = finished(workbench("sessions", "list", "--json", "--limit", "0", "--db", db))
    assert len(json.loads(listed)["runs"]) == 3
    assert Path(f"{db}-wal").exists()  # ... and leaves the log the window still uses
    record_in_window()  # ... then the window writes again
    cli_again = workbench(*run_args)
    _out, err = finished(cli_again)
    assert "recorded as run(s)" in err, err

    panel.refresh()
    qtbot.waitUntil(lambda: len(panel.shown_ids()) == 5, timeout=HANG_GUARD_MS)
    window.close()  # the window closes last
    qtbot.waitUntil(lambda: not Path(f"{db}-wal").exists(), timeout=HANG_GUARD_MS)

    listed, _ = finished(workbench("sessions", "list", "--json", "--limit", "0", "--db", db))
    runs = json.loads(listed)["runs"]
    ids = sorted(run["id"] for run in runs)
    assert len(ids) == 5 and set(window_ids) <= set(ids), (window_ids, ids)
    assert sorted(run["backend"] for run in runs) == ["cpu"] * 5
    check = subprocess.run(
        [sys.executable, "-c", "import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("
         "'PRAGMA integrity_check').fetchone()[0])", db],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert check.stdout.strip() == "ok"
