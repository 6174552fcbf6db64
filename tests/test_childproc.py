"""workbench.childproc on real processes: streamed lines, deadlines, whole-tree stops (also a
descendant that left the process group), and the leak check of tests/conftest.py."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

import psutil
import pytest

from tests.waits import HANG_GUARD_S, wait_until
from workbench import childproc

from .conftest import _leaks

# A child that starts a grandchild in a new session (outside its process group) and prints its pid.
# Both sleep far longer than the test waits for them to go: only the stop can end them in time.
ESCAPER = """
import subprocess, sys, time
g = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"], start_new_session=True)
print(g.pid, flush=True)
time.sleep(3600)
"""


def test_stream_delivers_lines_as_they_come_and_the_exit_code():
    seen = []
    done = childproc.stream(
        [sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"],
        on_line=lambda name, line: seen.append((name, line)),
    )
    assert done.returncode == 3 and done.stdout == ["out"] and done.stderr == ["err"]
    assert sorted(seen) == [("stderr", "err"), ("stdout", "out")]


def test_a_deadline_stops_the_whole_tree_even_a_descendant_that_left_the_group():
    pids, sessions = [], []

    def on_line(name: str, line: str) -> None:
        pids.append(int(line))
        sessions.append(os.getsid(int(line)))

    def check():
        if pids and time.monotonic() > start + 0.5:
            raise TimeoutError("deadline")

    start = time.monotonic()
    with pytest.raises(TimeoutError):
        childproc.stream([sys.executable, "-c", ESCAPER], check=check, on_line=on_line, grace_s=0.5)
    (grandchild,) = pids
    assert sessions == [grandchild]  # it had left the child's session and process group

    def gone() -> bool:
        try:
            return psutil.Process(grandchild).status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True

    try:
        assert wait_until(gone), "the grandchild in its own session survived the stop"
    finally:
        if not gone():
            os.kill(grandchild, signal.SIGKILL)


def test_a_grandchild_holding_the_pipes_after_the_child_exits_is_stopped_and_the_stream_ends():
    # The child exits at once; its background grandchild keeps both pipes open for an hour.
    start = time.monotonic()
    done = childproc.stream(["sh", "-c", "sleep 3600 & echo $!; exit 4"])
    assert done.returncode == 4 and time.monotonic() - start < HANG_GUARD_S
    grandchild = int(done.stdout[0])
    assert wait_until(lambda: not psutil.pid_exists(grandchild) or psutil.Process(grandchild).status()
                      == psutil.STATUS_ZOMBIE), "the grandchild holding the pipes survived"  # fmt: skip


def test_a_child_that_closed_its_pipes_is_waited_for_and_a_deadline_still_stops_it():
    # Both pipes closed while the child runs on: the stream waits for its exit (its code kept) ...
    done = childproc.stream(["sh", "-c", "echo early; exec >/dev/null 2>&1; sleep 0.3; exit 5"])
    assert done.returncode == 5 and done.stdout == ["early"]
    # ... and a deadline passed while it waits still stops it.
    start = time.monotonic()

    def check():
        if time.monotonic() > start + 0.5:
            raise TimeoutError("deadline")

    with pytest.raises(TimeoutError):
        childproc.stream(["sh", "-c", "exec >/dev/null 2>&1; sleep 3600"], check=check, grace_s=0.5)
    assert time.monotonic() - start < HANG_GUARD_S


def test_capture_times_out_with_a_clear_error(tmp_path):
    before = {p.pid for p in childproc.children_of()}  # e.g. a session's run workers
    woke = tmp_path / "woke"  # written only by a sleeper that was left to finish
    sleeper = f"import time; time.sleep(30); open({str(woke)!r}, 'w').close()"
    with pytest.raises(TimeoutError, match="did not finish within 0.3 s"):
        childproc.capture([sys.executable, "-c", sleeper], timeout_s=0.3)
    assert not woke.exists()  # stopped at its deadline, not waited for
    assert [p for p in childproc.children_of() if p.pid not in before] == []  # the sleeper is gone


def test_leak_check_reports_threads_and_child_processes():
    threads_before = set(threading.enumerate())
    pids_before = {p.pid for p in childproc.children_of()}
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, name="left-behind", daemon=True)
    thread.start()
    proc = childproc.spawn([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        threads, procs = _leaks(threads_before, pids_before)
        assert thread in threads and proc.pid in [p.pid for p in procs]
    finally:
        stop.set()
        thread.join()
        childproc.stop_tree(proc, grace_s=0)
        proc.stdout.close()
        proc.stderr.close()
    assert _leaks(threads_before, pids_before) == ([], [])


def test_a_niceness_lowers_the_childs_priority_and_its_children_inherit_it():
    """A background build's commands (Budget.niceness) yield the cores: the leader is reniced as
    it starts and a process it starts afterwards (rustc under cargo) runs at that priority too."""
    base = os.getpriority(os.PRIO_PROCESS, 0)
    # The grandchild starts only once the leader was reniced (as cargo starts rustc after reading
    # its manifests): the leader waits for that, not for a guessed pause (a hang guard only).
    script = (
        "import os, subprocess, sys, time\n"
        f"end = time.monotonic() + {HANG_GUARD_S}\n"
        f"while os.getpriority(os.PRIO_PROCESS, 0) < {min(19, base + 5)} and time.monotonic() < end:\n"
        "    time.sleep(0.01)\n"
        "subprocess.run([sys.executable, '-c', 'import os; print(os.getpriority(os.PRIO_PROCESS, 0))'])\n"
    )
    done = childproc.stream([sys.executable, "-c", script], niceness=5)
    assert done.returncode == 0 and done.stdout == [str(min(19, base + 5))]
    plain = childproc.stream([sys.executable, "-c", "import os; print(os.getpriority(os.PRIO_PROCESS, 0))"])
    assert plain.stdout == [str(base)]
    proc = childproc.spawn([sys.executable, "-c", "import time; time.sleep(30)"], niceness=7)
    try:
        assert psutil.Process(proc.pid).nice() == min(19, base + 7)
    finally:
        childproc.stop_tree(proc, grace_s=0.5)
