"""Toolchain commands of a build: run through `workbench.childproc`, stopped by the build's budget.

Compilers spawn children (cargo -> rustc -> build scripts); `childproc` runs each command in its
own process group and a cancel or timeout stops the whole tree (SIGTERM, then SIGKILL).

A build's time limit counts one of two clocks (`Budget.counts`):

- "wall": seconds since the build started (a build someone waits for, at normal priority);
- "share": a niced background build's. Wall time counts at the rate of the machine's share that was
  free or this build's own: rate = (idle CPU + the build tree's CPU) / (cores × elapsed), read from
  /proc every `SHARE_SAMPLE_S`. On a quiet machine it is the wall clock (a hung build still
  stops); while other processes take every core the clock all but stops, so a build that yields
  the cores as asked never times out for having yielded them (issue 36: a niced nvptx build hit
  its 300 s limit on a busy machine, 164 s from the command line).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from workbench import childproc

GRACE_S = childproc.GRACE_S
#: How often the "share" clock samples the machine (its idle time and the build's processes' CPU):
#: each sample is Python on the build's thread, holding the GIL the window's GUI thread needs.
SHARE_SAMPLE_S = 1.0
#: Below this rate the share clock is said to be paused for a busy machine (`Budget.progress`).
PAUSED_RATE = 0.5

#: What `run_command` returns: return code and the stdout / stderr lines.
ProcessResult = childproc.Completed


class BuildCancelled(Exception):
    """The build was cancelled (a newer request, or `BuildService.cancel`)."""


class BuildTimeout(Exception):
    """The toolchain ran past the build's time limit and was stopped."""


def tree_cpu_seconds(pids: Iterable[int]) -> float:
    """CPU seconds used by the processes `pids` and all their descendants, reaped children included
    (a finished rustc's time lands in cargo's children times); `childproc.tree_cpu_seconds`."""
    return sum(sum(childproc.tree_cpu_seconds(pid).values()) for pid in list(pids))


def idle_seconds() -> float:
    """CPU seconds all CPUs spent idle (or waiting for I/O) since boot."""
    times = psutil.cpu_times()
    return times.idle + getattr(times, "iowait", 0.0)


def share_rate(idle_s: float, own_s: float, cores: int, elapsed_s: float) -> float:
    """The share clock's rate over one sample: the part of the machine's capacity (cores ×
    elapsed) that was idle or used by the build itself, in [0, 1]."""
    if elapsed_s <= 0 or cores <= 0:
        return 1.0
    return min(1.0, max(0.0, (max(0.0, idle_s) + max(0.0, own_s)) / (cores * elapsed_s)))


class ShareClock:
    """Seconds counted at the rate the machine leaves the build (see the module docstring)."""

    def __init__(self, counted_s: float = 0.0, cores: int | None = None):
        self.counted_s = counted_s
        self.cores = cores or os.cpu_count() or 1
        self.rate = 1.0  # over the last sample
        self.cpu_s = 0.0  # the build's processes' CPU seconds counted since the clock started
        self._last: tuple[float, float, float] | None = None  # (monotonic, idle s, own s)

    def sample(self, pids: Iterable[int]) -> bool:
        """Advance by the time since the last sample, at most every SHARE_SAMPLE_S; True when it did."""
        now = time.monotonic()
        if self._last is not None and now - self._last[0] < SHARE_SAMPLE_S:
            return False
        idle, own = idle_seconds(), tree_cpu_seconds(pids)
        if self._last is not None:
            then, idle0, own0 = self._last
            own_delta = max(0.0, own - own0)  # a command that ended takes its total with it
            self.cpu_s += own_delta
            self.rate = share_rate(idle - idle0, own_delta, self.cores, now - then)
            self.counted_s += (now - then) * self.rate
        self._last = (now, idle, own)
        return True


@dataclass
class Budget:
    """A build's cancel flag and time limit, shared by every command it runs."""

    cancel: threading.Event = field(default_factory=threading.Event)
    deadline: float | None = None  # time.monotonic() value, while the limit counts wall time
    timeout_s: float | None = None
    #: Added to the commands' CPU niceness: a build nobody waits for (its runtime is unavailable
    #: here) yields the cores to those on the path to the next result.
    niceness: int = 0
    #: The pids of the commands running under this budget (`lower_priority` reaches them).
    running: set[int] = field(default_factory=set)
    #: The clock the limit counts: "wall", or "share" for a niced build (module docstring).
    counts: str = "wall"
    #: Called (on the build's thread) after each sample of the share clock: see `progress`.
    on_sample: Callable[[], None] | None = None
    share: ShareClock | None = None
    started: float = field(default_factory=time.monotonic)

    @classmethod
    def with_timeout(cls, timeout_s: float | None, niceness: int = 0, counts: str | None = None) -> Budget:
        """A niced budget counts the share clock, any other the wall clock (unless `counts` says)."""
        budget = cls(timeout_s=timeout_s, niceness=niceness)
        if (counts or ("share" if niceness > 0 else "wall")) == "share":
            budget._count_share(0.0)
        else:
            budget.restart_clock()
        return budget

    def _count_share(self, counted_s: float) -> None:
        self.counts, self.deadline = "share", None
        self.share = ShareClock(counted_s)

    def restart_clock(self) -> None:
        """The limit counts from now (a build that waited for its turn)."""
        self.started = time.monotonic()
        if self.counts == "share":
            self._count_share(0.0)
        elif self.timeout_s:
            self.deadline = self.started + self.timeout_s

    def counted_s(self) -> float:
        """The seconds of the limit used so far."""
        if self.share is not None:
            return self.share.counted_s
        return time.monotonic() - self.started

    def lower_priority(self, niceness: int) -> None:
        """From now on run at `niceness`: the commands running already (and what they started)
        too, the ones started later from the beginning. The limit counts the share clock from now
        on (what it counted so far stays counted)."""
        self.niceness = max(self.niceness, niceness)
        for pid in list(self.running):
            childproc.lower_priority(pid, niceness)
        if self.niceness > 0 and self.counts != "share":
            self._count_share(self.counted_s())

    def progress(self) -> dict[str, float | bool] | None:
        """A share-clocked build's standing: wall and counted seconds, the limit, the build's CPU
        seconds, the machine's share over the last sample and whether the limit is paused (the
        build row's "still working" line; None for a wall-clocked build)."""
        if self.share is None:
            return None
        return {
            "wall_s": time.monotonic() - self.started, "counted_s": self.share.counted_s,
            "limit_s": self.timeout_s or 0.0, "cpu_s": self.share.cpu_s, "rate": self.share.rate,
            "paused": self.share.rate < PAUSED_RATE,
        }  # fmt: skip

    def check(self) -> None:
        if self.cancel.is_set():
            raise BuildCancelled("cancelled")
        if self.share is not None:
            if self.share.sample(self.running) and self.on_sample is not None:
                self.on_sample()
            if self.timeout_s and self.share.counted_s > self.timeout_s:
                raise BuildTimeout(
                    f"timeout: the build ran longer than {self.timeout_s:g} s (counted while the "
                    f"machine left it room; {time.monotonic() - self.started:.0f} s on the clock) "
                    "and was stopped"
                )
        elif self.deadline is not None and time.monotonic() > self.deadline:
            raise BuildTimeout(f"timeout: the build ran longer than {self.timeout_s:g} s and was stopped")


def progress_text(progress: dict) -> str:
    """One line for a share-clocked build's row: that it is working and where its limit stands."""
    line = (
        f"still working: {progress['cpu_s']:.1f} s of CPU in {progress['wall_s']:.0f} s; "
        f"{progress['counted_s']:.0f} of its {progress['limit_s']:g} s limit counted"
    )
    if progress["paused"]:
        line += f"; the machine is busy: the limit counts at {progress['rate']:.0%} of the clock"
    return line


def run_command(
    cmd: list[str],
    *,
    cwd: str | Path | None = None,
    env: dict[str, str] | None = None,
    budget: Budget | None = None,
    on_line: Callable[[str, str], None] | None = None,
) -> ProcessResult:
    """Run `cmd`, calling `on_line(stream, line)` for each stdout/stderr line as it arrives.

    Raises BuildCancelled / BuildTimeout after stopping the whole process tree, and
    FileNotFoundError when the program does not exist.
    """
    budget = budget or Budget()
    return childproc.stream(
        cmd,
        cwd=cwd,
        env=env,
        check=budget.check,
        on_line=on_line,
        niceness=budget.niceness,
        running=budget.running,
    )
