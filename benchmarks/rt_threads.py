"""A benchmark's window process ahead of the shared machine's load, every thread of it.

`chrt -R -f 10 python benchmarks/….py` runs the benchmark's process at a real-time policy with
reset on fork, so that the window's own work is measured as on a quiet machine while its child
processes (builds, runs, the comparing process) run as usual. Linux applies the reset to every
task the process creates, threads included; `threads_share_scheduler` gives the policy back to
the process's threads (`day_sequence.py`, `sessions_window.py`).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path


def threads_share_scheduler() -> bool:
    """Under `chrt -R -f N` (a real-time policy with reset on fork) give every thread of this
    process the process's policy, those running and those started later; True if it did.

    Linux resets the policy of every task the flag's holder creates, threads as well as processes
    (`sched_fork` runs for both), so only the GUI thread was ahead of the load. The window's other
    threads ran among it, and the GUI thread waited for them: for the GIL a worker thread held
    while it waited for a core (the live loop, the builds, the recorder, the sweep), and for Qt's
    pooled threads that convert large images in segments while the GUI thread waits on a
    semaphore. At load 11 that made stalls of 40-190 ms with about 1 ms of the GUI thread's own
    CPU (/proc showed it asleep on a futex and the other thread runnable for those milliseconds).
    Python threads take the policy before their target runs; threads started by C++ (Qt's pool)
    within 20 ms of naming themselves, from a watcher thread. The reset flag stays set, so the window's child processes
    (builds, runs, the comparing process) still run as usual."""
    import threading

    reset = getattr(os, "SCHED_RESET_ON_FORK", 0x40000000)
    policy = os.sched_getscheduler(0)
    if policy & ~reset not in (os.SCHED_FIFO, os.SCHED_RR):
        return False
    param = os.sched_getparam(0)

    def share(task: int) -> None:
        try:
            if os.sched_getscheduler(task) != policy:
                os.sched_setscheduler(task, policy, param)  # 0: the calling thread
        except OSError:
            pass  # ended meanwhile, or refused: it runs at SCHED_OTHER, as before

    def take(*_args) -> None:  # a Python thread's first profile event: before its target runs
        sys.setprofile(None)
        share(0)

    def watch() -> None:
        # C++ threads once they have named themselves (Qt's "Thread (pooled)"): one that sets its
        # own policy as it starts (ZeroMQ's, under the console's kernel) aborts on EINVAL if the
        # policy changes under it before, and names itself after. Python threads keep the
        # process's name (`take` gives them the policy): after 200 ms unnamed a task is left.
        own = Path("/proc/self/comm").read_text()
        first_seen: dict[str, float] = {}
        while True:
            now = time.monotonic()
            tasks = os.listdir("/proc/self/task")
            first_seen = {task: first_seen.get(task, now) for task in tasks}
            for task, seen in first_seen.items():
                if seen < 0 or now - seen > 0.2:
                    continue  # done with
                try:
                    named = Path(f"/proc/self/task/{task}/comm").read_text() != own
                except OSError:
                    continue  # ended meanwhile
                if named:
                    share(int(task))
                    first_seen[task] = -1.0
            time.sleep(0.02)

    start_new_thread = threading._start_new_thread  # type: ignore[attr-defined]

    def start_inheriting(function, args, kwargs=None):
        # `Thread.start` waits until the new thread runs: created at SCHED_OTHER, it waited for
        # a core behind the load meanwhile (the GUI thread asleep up to 100 ms, starting a
        # build's or a pump's thread). Without the reset flag for that moment the new thread is
        # created with the policy; `take` sets the flag again in it before its target runs.
        try:
            os.sched_setscheduler(0, policy & ~reset, param)
        except OSError:
            pass
        try:
            return start_new_thread(function, args, kwargs or {})
        finally:
            share(0)

    threading._start_new_thread = start_inheriting  # type: ignore[attr-defined]
    threading.setprofile(take)
    threading.Thread(target=watch, name="bench-scheduler", daemon=True).start()
    return True
