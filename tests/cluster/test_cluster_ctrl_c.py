"""Ctrl-C of `workbench tune --cluster local:2` (issue 35): a terminal sends SIGINT to the whole
foreground process group, the Dask worker processes included. The sweep stops with its one line,
no KeyboardInterrupt traceback from any worker, the scheduler and workers are gone, and what was
recorded stays. Real Dask processes; the signal is sent on the sweep's own progress line."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from tests.waits import HANG_GUARD_S, WORK_GUARD_S, default_ctrl_c, wait_until

from .conftest import DASK_ENV, REPO, recorded_rows


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def test_ctrl_c_stops_a_local_cluster_sweep_quietly_and_keeps_what_was_recorded(
    example_copy, shared_cache_dir, tmp_path
):
    project, db = example_copy("saxpy", tunables=("threads",)), tmp_path / "s.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "workbench", "tune", str(project), "--backend", "cpu", "--size", "n=4096",
         "--rounds", "3", "--confirm", "0", "--param", "threads=64,128,256,512,1024", "--db", str(db),
         "--cluster", "local:2", "--cache-dir", str(shared_cache_dir)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, start_new_session=True, preexec_fn=default_ctrl_c,
        env={**os.environ, **DASK_ENV, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    seen = []
    try:
        for line in proc.stderr:
            seen.append(line)
            if "] round 1: ran" in line:  # a configuration ran on a worker and was recorded
                os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in the terminal does
                break
        _out, err = proc.communicate(timeout=WORK_GUARD_S)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    said = "".join(seen) + err
    assert proc.returncode == 130, said
    assert "interrupted: the finished configurations are recorded; rerun to resume" in err
    assert "Traceback" not in said and "KeyboardInterrupt" not in said, said
    # The workers are stopped by the sweep; none outlives it (they may take a moment to exit).
    gone = wait_until(lambda: not _group_alive(proc.pid), HANG_GUARD_S)
    assert gone, subprocess.run(["ps", "-o", "pid,args", "-g", str(proc.pid)],
                                capture_output=True, text=True).stdout  # fmt: skip
    rows = recorded_rows(db)  # what finished before Ctrl-C stays, whole
    assert rows and all(r["status"] == "ok" and r["cluster"]["worker"] for r in rows), rows
