"""Toolchain commands of a build: run through `workbench.childproc`, stopped by the build's budget.

Compilers spawn children (cargo -> rustc -> build scripts); `childproc` runs each command in its
own process group and a cancel or timeout stops the whole tree (SIGTERM, then SIGKILL).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from workbench import childproc

GRACE_S = childproc.GRACE_S

#: What `run_command` returns: return code and the stdout / stderr lines.
ProcessResult = childproc.Completed


class BuildCancelled(Exception):
    """The build was cancelled (a newer request, or `BuildService.cancel`)."""


class BuildTimeout(Exception):
    """The toolchain ran past the build's time limit and was stopped."""


@dataclass
class Budget:
    """A build's cancel flag and deadline, shared by every command it runs."""

    cancel: threading.Event = field(default_factory=threading.Event)
    deadline: float | None = None  # time.monotonic() value
    timeout_s: float | None = None
    #: Added to the commands' CPU niceness: a build nobody waits for (its runtime is unavailable
    #: here) yields the cores to those on the path to the next result.
    niceness: int = 0
    #: The pids of the commands running under this budget (`lower_priority` reaches them).
    running: set[int] = field(default_factory=set)

    @classmethod
    def with_timeout(cls, timeout_s: float | None, niceness: int = 0) -> Budget:
        deadline = time.monotonic() + timeout_s if timeout_s else None
        return cls(deadline=deadline, timeout_s=timeout_s, niceness=niceness)

    def restart_clock(self) -> None:
        """The deadline counts from now (a build that waited for its turn)."""
        if self.timeout_s:
            self.deadline = time.monotonic() + self.timeout_s

    def lower_priority(self, niceness: int) -> None:
        """From now on run at `niceness`: the commands running already (and what they started)
        too, the ones started later from the beginning."""
        self.niceness = max(self.niceness, niceness)
        for pid in list(self.running):
            childproc.lower_priority(pid, niceness)

    def check(self) -> None:
        if self.cancel.is_set():
            raise BuildCancelled("cancelled")
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise BuildTimeout(f"timeout: the build ran longer than {self.timeout_s:g} s and was stopped")


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
