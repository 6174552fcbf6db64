"""Run one toolchain command as its own process group: lines streamed, cancellable, time-limited.

Compilers spawn children (cargo -> rustc -> build scripts), so the command runs in a new session
and a cancel or timeout signals the whole group: SIGTERM, then SIGKILL after a grace period.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

GRACE_S = 2.0


class BuildCancelled(Exception):
    """The build was cancelled (a newer request, or `BuildService.cancel`)."""


class BuildTimeout(Exception):
    """The toolchain ran past the build's time limit and was stopped."""


@dataclass
class ProcessResult:
    returncode: int
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)


@dataclass
class Budget:
    """A build's cancel flag and deadline, shared by every command it runs."""

    cancel: threading.Event = field(default_factory=threading.Event)
    deadline: float | None = None  # time.monotonic() value
    timeout_s: float | None = None

    @classmethod
    def with_timeout(cls, timeout_s: float | None) -> Budget:
        deadline = time.monotonic() + timeout_s if timeout_s else None
        return cls(deadline=deadline, timeout_s=timeout_s)

    def check(self) -> None:
        if self.cancel.is_set():
            raise BuildCancelled("cancelled")
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise BuildTimeout(f"timeout: the build ran longer than {self.timeout_s:g} s and was stopped")


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def kill_group(proc: subprocess.Popen, grace_s: float = GRACE_S) -> None:
    """Terminate the process group of `proc`, then kill what is left after `grace_s`."""
    pgid = proc.pid  # start_new_session=True: the leader's pid is the group id
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            break
        end = time.monotonic() + wait_s
        while time.monotonic() < end:
            proc.poll()  # reap the leader so it does not linger as a zombie
            if not _group_alive(pgid):
                break
            time.sleep(0.02)
        else:
            continue
        break
    try:
        proc.wait(timeout=5.0)
    except subprocess.TimeoutExpired:
        pass


def _pump(stream, name: str, lines: queue.Queue) -> None:
    for raw in iter(stream.readline, b""):
        lines.put((name, raw.decode("utf-8", "replace").rstrip("\r\n")))
    stream.close()
    lines.put((name, None))


def run_command(
    cmd: list[str],
    *,
    cwd: str | Path | None = None,
    env: dict[str, str] | None = None,
    budget: Budget | None = None,
    on_line: Callable[[str, str], None] | None = None,
) -> ProcessResult:
    """Run `cmd`, calling `on_line(stream, line)` for each stdout/stderr line as it arrives.

    Raises BuildCancelled / BuildTimeout after stopping the whole process group, and
    FileNotFoundError when the program does not exist.
    """
    budget = budget or Budget()
    budget.check()
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    lines: queue.Queue = queue.Queue()
    readers = [
        threading.Thread(target=_pump, args=(proc.stdout, "stdout", lines), daemon=True),
        threading.Thread(target=_pump, args=(proc.stderr, "stderr", lines), daemon=True),
    ]
    for reader in readers:
        reader.start()
    result = ProcessResult(returncode=0)
    open_streams = 2
    exited_at: float | None = None
    try:
        while open_streams or proc.poll() is None:
            budget.check()
            if exited_at is None and proc.poll() is not None:
                exited_at = time.monotonic()
            elif exited_at is not None and time.monotonic() - exited_at > 1.0:
                # The leader is gone but a straggler in its group holds the pipes open.
                kill_group(proc, grace_s=0.5)
                exited_at = float("inf")
            try:
                name, line = lines.get(timeout=0.05)
            except queue.Empty:
                continue
            if line is None:
                open_streams -= 1
                continue
            (result.stdout if name == "stdout" else result.stderr).append(line)
            if on_line is not None:
                on_line(name, line)
    except BaseException:
        kill_group(proc)
        raise
    result.returncode = proc.wait()
    # A finished leader may leave stragglers in its group (a daemonized build script): stop them.
    if _group_alive(proc.pid):
        kill_group(proc, grace_s=0.5)
    return result
