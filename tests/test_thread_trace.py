"""benchmarks/thread_trace: a process's threads read from /proc in a process of its own, summed
over a gap."""

from __future__ import annotations

import platform
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.thread_trace import ThreadTrace

#: A main thread asleep (as a GUI thread waiting for a lock) beside a thread burning a core.
CHILD = r"""
import sys, threading, time
def burn():
    end = time.monotonic() + 2.0
    while time.monotonic() < end:
        pass
thread = threading.Thread(target=burn, name="burner")
thread.start()
print(thread.native_id, flush=True)
thread.join()
"""


def test_a_gap_names_the_thread_that_ran_and_the_main_threads_wait(tmp_path: Path):
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True)
    burner = child.stdout.readline().strip()
    trace = ThreadTrace(tmp_path / "trace.jsonl", pid=child.pid)
    time.sleep(0.4)  # the sampler under way
    start = time.perf_counter()
    time.sleep(0.8)
    end = time.perf_counter()
    assert child.wait(timeout=30) == 0
    trace.stop()
    [gap] = trace.summary([("burn", start, end)], {burner: "burner"})
    assert gap["step"] == "burn" and gap["ms"] >= 800
    tasks = {t["task"]: t for t in gap["tasks"]}
    # The burner ran (or waited for a core) the whole gap; the main thread slept in join (a futex).
    assert tasks["burner"]["cpu_ms"] + tasks["burner"]["runnable_ms"] > 600
    assert tasks["burner"]["policy"] == "other"
    assert "GUI" not in tasks  # asleep: under the summary's floor
    futex = {"x86_64": "202", "aarch64": "98"}.get(platform.machine())
    if futex is not None:
        assert set(gap["gui_syscalls"]) == {futex}
    # Too short a gap is left out.
    assert trace.summary([("short", start, start + 0.01)], {}) == []
