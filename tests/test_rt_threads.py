"""benchmarks/rt_threads: under `chrt -R` every thread of the process keeps its real-time policy,
and the processes they start run as usual (SCHED_OTHER)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

#: Run under `chrt -R -f 1`: prints the policy of a thread started after the call, of a process
#: that thread starts, and of the main thread once the thread has started.
SCRIPT = r"""
import os, subprocess, sys, threading
sys.path.insert(0, sys.argv[1])
from benchmarks.rt_threads import threads_share_scheduler
print(threads_share_scheduler())
seen = {}
def work():
    seen["thread"] = os.sched_getscheduler(0)
    child = [sys.executable, "-c", "import os; print(os.sched_getscheduler(0))"]
    seen["child"] = subprocess.run(child, capture_output=True, text=True, check=True).stdout.strip()
thread = threading.Thread(target=work)
thread.start()
thread.join()
print(seen["thread"], seen["child"], os.sched_getscheduler(0))
"""


def _chrt() -> str:
    chrt = shutil.which("chrt")
    if chrt is None:
        pytest.skip("chrt (util-linux) is not installed")
    if subprocess.run([chrt, "-R", "-f", "1", "true"], capture_output=True).returncode != 0:
        pytest.skip("a real-time policy needs root or CAP_SYS_NICE here")
    return chrt


def test_threads_keep_the_real_time_policy_their_children_do_not():
    chrt = _chrt()
    out = subprocess.run(
        [chrt, "-R", "-f", "1", sys.executable, "-c", SCRIPT, str(REPO)],
        capture_output=True, text=True, check=True, timeout=120,
    ).stdout.split()  # fmt: skip
    fifo_reset = os.SCHED_FIFO | os.SCHED_RESET_ON_FORK
    assert out == ["True", str(fifo_reset), str(os.SCHED_OTHER), str(fifo_reset)]


def test_without_a_real_time_policy_nothing_changes():
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(REPO)], capture_output=True, text=True, check=True, timeout=120
    ).stdout.split()
    assert out == ["False", str(os.SCHED_OTHER), str(os.SCHED_OTHER), str(os.SCHED_OTHER)]
