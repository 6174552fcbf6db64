"""The one child-process layer: start, stream, time-limit and stop whole process trees.

Builds (`build/process.py`), run workers (`run/pool.py`) and the device probe (`run/devices.py`)
all start their children here, so every child:

- runs in a new session, hence its own process group (a compiler's children, a worker's
  helpers and anything a kernel forks are reached by one signal to the group);
- has its output read by daemon pump threads (`pump_lines`), so a chatty child never blocks on
  a full pipe and the caller sees each line as it arrives;
- is stopped by `stop_tree`: SIGTERM to the group and to every descendant psutil finds (a
  descendant that called setsid() has left the group but is still found by parentage), then
  SIGKILL for whatever is left after the grace period.

Deadlines and cancellation are the caller's: `stream` polls a `check()` callback that raises
to stop the child (the build's `Budget`), `capture` takes a plain timeout.
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

#: How long a terminated tree gets to exit before it is killed.
GRACE_S = 2.0
#: After the leader exits, how long a straggler may hold the output pipes open.
STRAGGLER_S = 1.0


def spawn(
    cmd: list[str],
    *,
    cwd: str | Path | None = None,
    env: dict[str, str] | None = None,
    stdin: int | None = subprocess.DEVNULL,
    pass_fds: tuple[int, ...] = (),
    niceness: int = 0,
) -> subprocess.Popen:
    """Start `cmd` in a new session (its own process group) with stdout and stderr piped;
    `pass_fds` stay open in the child (a worker's shared-memory channel); `niceness` > 0 lowers
    its CPU priority (the processes it starts inherit it).

    Raises FileNotFoundError / PermissionError when the program cannot be started."""
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        env=env,
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        pass_fds=pass_fds,
    )
    if niceness > 0:
        lower_priority(proc.pid, niceness)
    return proc


def lower_priority(pid: int, niceness: int) -> None:
    """Lower the CPU priority of `pid` (a child that leads its own session, see `spawn`) and of
    every process it started so far by `niceness`; processes it starts later inherit it. Set from
    the parent, not in a preexec_fn (unsafe with threads): cargo reads its manifests for
    milliseconds before it starts rustc. Where Linux groups sessions for the scheduler (autogroup)
    a nice value only orders processes within their group: the group's own niceness is what yields
    the cores to other sessions (the window's, the other builds'), so both are set."""
    target = min(19, os.getpriority(os.PRIO_PROCESS, 0) + niceness) if hasattr(os, "getpriority") else 0
    procs = _tree(pid)  # empty: it already exited
    for proc in procs:
        try:
            proc.nice(max(target, proc.nice()))
        except (psutil.Error, OSError):
            pass  # exited meanwhile, or the platform refuses: it runs at its priority
    try:
        with open(f"/proc/{pid}/autogroup", "w") as group:
            group.write(str(min(19, niceness)))
    except OSError:
        pass  # no autogroup (other platforms, or scheduling groups off): the nice values alone


def pump_lines(stream, on_line: Callable[[str | None], None], name: str = "wb-pipe") -> threading.Thread:
    """Read `stream` line by line on a daemon thread: `on_line(text)` per line, then `on_line(None)`.

    The pipe is closed when it reaches end of file. A listener that raises does not stop the pump
    (the child would otherwise block on a full pipe)."""

    def pump() -> None:
        try:
            for raw in iter(stream.readline, b""):
                try:
                    on_line(raw.decode("utf-8", "replace").rstrip("\r\n"))
                except Exception:  # noqa: BLE001  a broken listener must not stall the child
                    pass
        except (OSError, ValueError):  # the pipe was closed under us (the process was reaped)
            pass
        finally:
            try:
                stream.close()
            except OSError:
                pass
            on_line(None)

    thread = threading.Thread(target=pump, name=name, daemon=True)
    thread.start()
    return thread


def descendants(pid: int) -> list[int] | None:
    """The pids of `pid`'s descendants, read from /proc/<pid>/task/*/children (each thread lists
    the processes it started) down the tree; None where the kernel has no such file (psutil's
    `children(recursive=True)` then). psutil reads the stat file of every process on the machine,
    in Python: milliseconds of a background thread holding the GIL while the window's GUI thread
    waits for it, at each run (`run.host_load`) and each sample of a build's share clock."""
    if not os.path.exists(f"/proc/self/task/{os.getpid()}/children"):
        return None
    found: list[int] = []
    pending = [pid]
    while pending:
        parent = pending.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue  # it exited meanwhile
        for task in tasks:
            try:
                with open(f"/proc/{parent}/task/{task}/children", encoding="ascii") as file:
                    children = [int(x) for x in file.read().split()]
            except (OSError, ValueError):
                continue  # the thread ended meanwhile
            for child in children:
                if child != pid and child not in found:
                    found.append(child)
                    pending.append(child)
    return found


def tree_cpu_seconds(pid: int) -> dict[int, float]:
    """CPU seconds of `pid` and every descendant ({pid: user + system + reaped children}); a
    process that exited meanwhile is left out."""
    pids = descendants(pid)
    if pids is None:
        seconds = {proc.pid: _cpu_seconds(proc) for proc in _tree(pid)}
        return {one: s for one, s in seconds.items() if s is not None}
    ticks = os.sysconf("SC_CLK_TCK")
    out: dict[int, float] = {}
    for one in (pid, *pids):
        try:
            with open(f"/proc/{one}/stat", encoding="ascii", errors="replace") as file:
                fields = file.read().rsplit(")", 1)[1].split()
            # After the name: state is field 3; utime, stime, cutime, cstime are fields 14-17.
            out[one] = sum(int(fields[i]) for i in range(11, 15)) / ticks
        except (OSError, IndexError, ValueError):
            continue
    return out


def _cpu_seconds(proc: psutil.Process) -> float | None:
    try:
        t = proc.cpu_times()
    except psutil.Error:
        return None
    return t.user + t.system + getattr(t, "children_user", 0.0) + getattr(t, "children_system", 0.0)


def _tree(pid: int) -> list[psutil.Process]:
    """`pid`'s process and all its descendants that still exist."""
    pids = descendants(pid)
    try:
        leader = psutil.Process(pid)
        if pids is None:
            return [leader, *leader.children(recursive=True)]
    except psutil.Error:
        return []
    procs = [leader]
    for child in pids:
        try:
            procs.append(psutil.Process(child))
        except psutil.Error:
            continue  # exited meanwhile
    return procs


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _signal_tree(pgid: int, procs: list[psutil.Process], sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass
    for proc in procs:  # descendants that left the group (setsid, daemonized build scripts)
        try:
            proc.send_signal(sig)
        except psutil.Error:
            pass


def stop_tree(proc: subprocess.Popen, grace_s: float = GRACE_S) -> None:
    """Terminate `proc`'s process group and descendants; kill what is left after `grace_s`.

    `grace_s=0` kills at once (a hung worker gets no say). Safe from any thread, safe twice; the
    leader is reaped so it does not linger as a zombie."""
    pgid = proc.pid  # spawn() starts a new session: the leader's pid is the group id
    procs = _tree(proc.pid) if proc.poll() is None else []
    steps = [(signal.SIGKILL, 5.0)] if grace_s <= 0 else [(signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)]
    for sig, wait_s in steps:
        procs = [p for p in procs if _alive(p)]
        if not procs and not _group_alive(pgid):
            break
        _signal_tree(pgid, procs, sig)
        end = time.monotonic() + wait_s
        while time.monotonic() < end:
            proc.poll()
            if not _group_alive(pgid) and not any(_alive(p) for p in procs):
                break
            time.sleep(0.02)
        else:
            continue
        break
    try:
        proc.wait(timeout=5.0)
    except subprocess.TimeoutExpired:
        pass


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


@dataclass
class Completed:
    returncode: int
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)


def stream(
    cmd: list[str],
    *,
    cwd: str | Path | None = None,
    env: dict[str, str] | None = None,
    check: Callable[[], None] = lambda: None,
    on_line: Callable[[str, str], None] | None = None,
    grace_s: float = GRACE_S,
    stdin: str | Path | None = None,
    niceness: int = 0,
    running: set[int] | None = None,
) -> Completed:
    """Run `cmd`, calling `on_line(stream_name, line)` for each stdout/stderr line as it arrives.

    `stdin` names a file whose contents become the child's standard input (e.g. a tar archive
    sent over ssh); without it the child reads /dev/null. `niceness` lowers its priority from the
    start; `running` holds the child's pid while it runs (whoever may lower it later reads it).

    `check()` is called every 50 ms and whenever a line arrives; whatever it raises (a cancel, a
    deadline) stops the whole tree and propagates. A leader that exits while a straggler of its
    tree keeps the pipes open gets the straggler stopped; stragglers are stopped at the end too."""
    check()
    if stdin is not None:
        with open(stdin, "rb") as source:  # the child holds its own copy of the descriptor
            proc = spawn(cmd, cwd=cwd, env=env, stdin=source.fileno(), niceness=niceness)
    else:
        proc = spawn(cmd, cwd=cwd, env=env, niceness=niceness)
    if running is not None:
        running.add(proc.pid)
    lines: queue.Queue = queue.Queue()
    for name, pipe in (("stdout", proc.stdout), ("stderr", proc.stderr)):
        pump_lines(pipe, lambda line, _n=name: lines.put((_n, line)), name=f"wb-{name}-{proc.pid}")
    result = Completed(returncode=0)
    open_streams = 2
    exited_at: float | None = None
    try:
        while open_streams or proc.poll() is None:
            check()
            if exited_at is None and proc.poll() is not None:
                exited_at = time.monotonic()
            elif exited_at is not None and time.monotonic() - exited_at > STRAGGLER_S:
                stop_tree(proc, grace_s=0.5)
                exited_at = float("inf")
            if not open_streams:
                # Both pipes closed, the child not yet reaped: wait for it, not for a line that
                # cannot come (a 50 ms poll here cost every build command up to 50 ms at its end).
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=0.05)
                continue
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
        stop_tree(proc, grace_s)
        if running is not None:
            running.discard(proc.pid)
        raise
    result.returncode = proc.wait()
    if _group_alive(proc.pid):  # a daemonized child of a finished leader
        stop_tree(proc, grace_s=0.5)
    if running is not None:
        running.discard(proc.pid)
    return result


def capture(
    cmd: list[str],
    *,
    timeout_s: float,
    env: dict[str, str] | None = None,
    cwd: str | Path | None = None,
    stdin: str | Path | None = None,
) -> Completed:
    """Run `cmd` to completion and return its output; raises `TimeoutError` (after stopping the
    whole tree) when it runs past `timeout_s`, OSError when it cannot start."""
    deadline = time.monotonic() + timeout_s

    def check() -> None:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{cmd[0]} did not finish within {timeout_s:g} s")

    return stream(cmd, cwd=cwd, env=env, check=check, grace_s=0.5, stdin=stdin)


def children_of(pid: int | None = None) -> list[psutil.Process]:
    """Live descendants of `pid` (default: this process), zombies excluded."""
    try:
        procs = psutil.Process(pid or os.getpid()).children(recursive=True)
    except psutil.Error:
        return []
    return [p for p in procs if _alive(p)]
