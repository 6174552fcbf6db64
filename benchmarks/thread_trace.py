"""Who the GUI thread waited for: every thread of a process (and of its children) read from /proc.

A stall in which the GUI thread spent little CPU is a wait: for a core, for the GIL, for a lock,
for a thread it started. An in-process sampler needs the GIL itself, so it sees the holder only
after it let go; this one runs in a process of its own (`ThreadTrace`, under `chrt -f 5` when the
benchmark runs at a real-time policy: behind the window, ahead of the load) and reads each task's
state, policy and `schedstat` (CPU time and time spent runnable waiting for a core) every 3 ms,
and the GUI thread's system call (202: futex, the GIL or a lock).

`summary` gives, for each gap of the stall probe, the tasks that ran or waited in it: the GUI
thread asleep on a futex while a thread of its process waits for a core the whole gap is a GIL
(or lock) held by a thread behind the load (`day_sequence.py --trace`).

    python benchmarks/thread_trace.py PID OUT.jsonl   # the sampler itself, until PID ends
"""

from __future__ import annotations

import bisect
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

INTERVAL_S = 0.003
#: Tasks below this much CPU and runnable wait in a gap are left out of its summary.
QUIET_MS = 1.0


def _tasks(pid: int) -> list[tuple[int, str]]:
    """(process, task id) of `pid` and of its descendants."""
    found, todo = [], [pid]
    while todo:
        proc = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{proc}/task")
        except OSError:
            continue
        for task in tasks:
            found.append((proc, task))
            try:
                todo += [int(c) for c in Path(f"/proc/{proc}/task/{task}/children").read_text().split()]
            except OSError:
                pass
    return found


def sample(pid: int, out: Path) -> None:
    """Append a line per `INTERVAL_S` to `out` until `pid` ends: [monotonic, {"proc/task": [state,
    CPU ns, runnable-wait ns, policy]}, the GUI thread's system call]; ["name", "proc/task", comm]
    the first time a task is seen."""
    files: dict[str, tuple[int, int]] = {}
    last_scan = 0.0
    with out.open("w") as lines:
        while os.path.exists(f"/proc/{pid}"):
            now = time.monotonic()
            if now - last_scan > 0.05:  # new tasks: a scan of the tree is dearer than a sample
                last_scan = now
                for proc, task in _tasks(pid):
                    key = f"{proc}/{task}"
                    if key in files:
                        continue
                    base = f"/proc/{proc}/task/{task}"
                    try:
                        name = Path(f"{base}/comm").read_text().strip()
                        files[key] = (
                            os.open(f"{base}/stat", os.O_RDONLY),
                            os.open(f"{base}/schedstat", os.O_RDONLY),
                        )
                    except OSError:
                        continue
                    lines.write(json.dumps(["name", key, name]) + "\n")
            row = {}
            for key, (stat, sched) in list(files.items()):
                try:
                    fields = os.pread(stat, 1024, 0).decode().rsplit(")", 1)[1].split()
                    run_ns, wait_ns = os.pread(sched, 128, 0).decode().split()[:2]
                except (OSError, IndexError, ValueError):
                    os.close(stat)
                    os.close(sched)
                    del files[key]
                    continue
                row[key] = [fields[0], int(run_ns), int(wait_ns), int(fields[38])]
            try:
                call = Path(f"/proc/{pid}/task/{pid}/syscall").read_text().split()[0]
            except (OSError, IndexError):
                call = "?"
            lines.write(json.dumps([now, row, call]) + "\n")
            time.sleep(INTERVAL_S)


class ThreadTrace:
    """The sampler in a process of its own, for `pid` (this process by default)."""

    def __init__(self, out: Path, pid: int | None = None):
        self.pid = pid or os.getpid()
        self.out = out
        command = [sys.executable, str(Path(__file__).resolve()), str(self.pid), str(out)]
        chrt = shutil.which("chrt")
        if chrt and os.sched_getscheduler(0) & ~getattr(os, "SCHED_RESET_ON_FORK", 0x40000000) in (
            os.SCHED_FIFO, os.SCHED_RR,
        ):  # fmt: skip
            command = [chrt, "-f", "5", *command]  # behind the window's threads, ahead of the load
        self.process = subprocess.Popen(command)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)

    def summary(self, gaps: list[tuple[str, float, float]], names: dict[str, str], min_ms: float = 30.0):
        """For each gap (step, start, end: `time.perf_counter`, the same clock as `time.monotonic`
        here) of at least `min_ms`: the GUI thread's system calls seen, and each task that ran or
        waited for a core in it, most first. `names`: a task id's thread name (Python's)."""
        samples, comm = [], {}
        for line in self.out.read_text().splitlines():
            item = json.loads(line)
            if item[0] == "name":
                comm[item[1]] = item[2]
            else:
                samples.append(item)
        stamps = [s[0] for s in samples]
        found = []
        for step, start, end in gaps:
            if (end - start) * 1000 < min_ms or not samples:
                continue
            a = min(bisect.bisect_left(stamps, start), len(samples) - 1)
            b = min(bisect.bisect_left(stamps, end), len(samples) - 1)
            first, last = samples[a][1], samples[b][1]
            calls: dict[str, int] = {}
            for s in samples[a : b + 1]:
                calls[s[2]] = calls.get(s[2], 0) + 1
            tasks = []
            for key in first.keys() & last.keys():
                cpu_ms = (last[key][1] - first[key][1]) / 1e6
                wait_ms = (last[key][2] - first[key][2]) / 1e6
                if cpu_ms < QUIET_MS and wait_ms < QUIET_MS:
                    continue
                proc, task = key.split("/")
                if proc != str(self.pid):
                    who = f"child {proc} ({comm.get(key, '?')})"
                else:
                    who = "GUI" if task == proc else names.get(task, comm.get(key, "?"))
                policy = {0: "other", 1: "fifo", 2: "rr"}.get(last[key][3], str(last[key][3]))
                tasks.append(
                    {
                        "task": who,
                        "policy": policy,
                        "cpu_ms": round(cpu_ms, 1),
                        "runnable_ms": round(wait_ms, 1),
                    }
                )
            tasks.sort(key=lambda t: -(t["cpu_ms"] + t["runnable_ms"]))
            found.append(
                {
                    "step": step,
                    "ms": round((end - start) * 1000, 1),
                    "gui_syscalls": calls,
                    "tasks": tasks[:8],
                }
            )
        return found


if __name__ == "__main__":
    sample(int(sys.argv[1]), Path(sys.argv[2]))
