"""Worker processes seen from the caller: start, talk to with deadlines, detect death, restart.

One `WorkerProcess` per runtime runs `python -m workbench.run.worker RUNTIME` through
`workbench.childproc` (its own process group, so a kill reaches anything it started), talks to it over its stdin/stdout with the frames
of `protocol.py`, and keeps the tail of its stderr for error messages. A request that outlives its
deadline kills the whole group; a worker that dies is reported with its signal's name.

A launcher (`workbench.remote.launcher.RemoteLauncher`) may supply the command instead: then the
worker runs on a GPU host over ssh, its errors name the host (`place`) and the launcher's
`explain(stderr_lines)` turns ssh's failures into advice.
"""

from __future__ import annotations

import collections
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from workbench import childproc
from workbench.errors import WorkbenchError
from workbench.frozen import python_command
from workbench.run import shm
from workbench.run.protocol import Connection, ProtocolError
from workbench.run.runtimes.cpu_launch import kernel_panic
from workbench.run.worker import FD_SOCKET_ENV

#: How long a fresh worker may take to import its runtime and answer hello.
STARTUP_TIMEOUT_S = 120.0
#: Seconds a run allows a worker for steps other than launches (loading a module, compiling a
#: shader, copies, a device probe).
SETUP_TIMEOUT_S = 120.0
STDERR_LINES = 200


#: Requests that need the state a `prepare` left in this worker process.
_SESSION_OPS = frozenset({"upload", "launch", "measure", "download", "close"})


class WorkerError(WorkbenchError):
    """A request to a worker did not succeed; `fatal` means the worker must be restarted."""

    fatal = True


class WorkerCrashed(WorkerError):
    """The worker process died (a signal or an exit) while serving a request."""


class WorkerTimeout(WorkerError):
    """A request outlived its deadline; the worker's process group was killed."""


class RequestFailed(WorkerError):
    """The worker answered {"error": ...}: the runtime refused or failed the request."""

    def __init__(self, message: str, fatal: bool = False):
        super().__init__(message)
        self.fatal = fatal


def signal_name(returncode: int | None) -> str:
    """`SIGSEGV (Segmentation fault)` for a negative return code, `exit code N` otherwise."""
    if returncode is None:
        return "an unknown status"
    if returncode < 0:
        try:
            sig = signal.Signals(-returncode)
        except ValueError:
            return f"signal {-returncode}"
        description = signal.strsignal(sig) or ""
        return f"{sig.name} ({description})" if description else sig.name
    return f"exit code {returncode}"


class _DeadlineReader:
    """A readable stream over a pipe's file descriptor whose reads fail past a deadline."""

    def __init__(self, fd: int, on_timeout):
        self.fd = fd
        self.deadline: float | None = None
        self._on_timeout = on_timeout

    def readinto(self, buffer: memoryview) -> int:
        if self.deadline is not None:
            while True:
                remaining = self.deadline - time.monotonic()
                if remaining <= 0:
                    self._on_timeout()
                try:
                    ready, _, _ = select.select([self.fd], [], [], remaining)
                except InterruptedError:
                    continue
                if ready:
                    break
        return os.readv(self.fd, [buffer])


class WorkerProcess:
    """One worker process for one runtime, restarted on demand after a crash."""

    def __init__(
        self,
        runtime: str,
        command: list[str] | None = None,
        env: dict[str, str] | None = None,
        on_stderr=None,
        launcher=None,
        shared_memory: bool | None = None,
    ):
        self.runtime = runtime
        self.launcher = launcher
        # Shared memory only with a local worker: one on another host (a launcher, or a command
        # of the caller's) gets its arrays in frames.
        local = command is None and launcher is None
        self.want_shared = shm.available() and (local if shared_memory is None else shared_memory)
        if command is None and launcher is not None:
            command = launcher.command(runtime)
        self.command = command or python_command("workbench.run.worker", runtime)
        place = getattr(launcher, "place", None)
        self.label = f"the {runtime} worker" + (f" on {place}" if place else "")
        self._channel: shm.FdChannel | None = None
        self.env = env
        self.on_stderr = on_stderr  # fn(runtime, line), called from a reader thread
        self._proc: subprocess.Popen | None = None
        self._connection: Connection | None = None
        self._reader: _DeadlineReader | None = None
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)
        self._stderr_thread: threading.Thread | None = None
        self._lock = threading.RLock()
        self.info: dict[str, Any] = {}
        self.starts = 0
        #: Why its pool let it go (stopped, or the pool closed): it never starts again, not even
        #: for a request of a caller still holding it (the pool's next `get` makes a fresh one).
        self.retired: str | None = None

    # ------------------------------------------------------------------ life cycle

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def start(self) -> None:
        """Start the process (if not running) and wait for its hello."""
        with self._lock:
            if self.alive:
                return
            if self.retired:
                raise WorkerError(f"{self.label} is not started again: {self.retired}")
            self._cleanup()
            from workbench.run.devices import child_env

            env = child_env() if self.env is None else dict(self.env)
            env.setdefault("PYTHONUNBUFFERED", "1")
            self._stderr_tail.clear()
            child_sock = None
            if self.want_shared:
                self._channel, child_sock = shm.FdChannel.pair()
                env[FD_SOCKET_ENV] = str(child_sock.fileno())
            # Its own process group: a timeout kills all of it.
            try:
                self._proc = childproc.spawn(
                    self.command,
                    env=env,
                    stdin=subprocess.PIPE,
                    pass_fds=(child_sock.fileno(),) if child_sock is not None else (),
                )
            finally:
                if child_sock is not None:
                    child_sock.close()  # the child holds its own copy
            self.starts += 1
            self._stderr_thread = childproc.pump_lines(
                self._proc.stderr, self._on_stderr_line, name=f"wb-worker-{self.runtime}-stderr"
            )
            self._reader = _DeadlineReader(self._proc.stdout.fileno(), self._timed_out)
            self._connection = Connection(self._reader, self._proc.stdin)
            self.info = self.request({"op": "hello"}, timeout_s=STARTUP_TIMEOUT_S, phase="start-up")[0]

    def _on_stderr_line(self, line: str | None) -> None:
        if line is None:
            return
        self._stderr_tail.append(line)
        if self.on_stderr is not None:
            self.on_stderr(self.runtime, line)  # childproc.pump_lines survives a listener that raises

    @property
    def threads(self) -> list[threading.Thread]:
        """The threads this worker owns (its stderr pump) while they run."""
        thread = self._stderr_thread
        return [thread] if thread is not None and thread.is_alive() else []

    @property
    def shared(self) -> bool:
        """True when this worker maps shared segments (buffers then travel as descriptors)."""
        return self._channel is not None and bool(self.info.get("shared_memory"))

    def stderr_tail(self, lines: int = 20) -> list[str]:
        return list(self._stderr_tail)[-lines:]

    def kill(self) -> None:
        """Kill the worker's whole process group now (safe from any thread, safe twice)."""
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        childproc.stop_tree(proc, grace_s=0)

    def shutdown(self, timeout_s: float = 2.0) -> None:
        """Ask the worker to exit; kill it if it does not within `timeout_s`."""
        with self._lock:
            if self.alive:
                try:
                    self.request({"op": "shutdown"}, timeout_s=timeout_s)
                    self._proc.wait(timeout=timeout_s)
                except (WorkerError, subprocess.TimeoutExpired, OSError):
                    pass
            self.kill()
            self._cleanup()

    def _cleanup(self) -> None:
        proc, self._proc = self._proc, None
        self._connection = None
        channel, self._channel = self._channel, None
        if channel is not None:
            channel.close()
        if proc is None:
            return
        if proc.poll() is None:
            self.kill()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        for stream in (proc.stdin, proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        if self._stderr_thread is not None:
            self._stderr_thread.join(timeout=1.0)  # the pump closes stderr at end of file

    # ------------------------------------------------------------------ requests

    def _timed_out(self) -> None:
        self.kill()
        raise _Deadline()

    def request(
        self,
        header: dict[str, Any],
        arrays: dict[str, np.ndarray] | None = None,
        timeout_s: float | None = None,
        phase: str | None = None,
        on_progress=None,
        fds: list[int] | None = None,
    ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Send one request, wait at most `timeout_s` for its reply (or for each interim progress
        frame, which restarts the clock and goes to `on_progress`); raise WorkerError on failure.
        `fds` (shared segments) go over the descriptor channel just before the request."""
        with self._lock:
            op = header.get("op")
            if self._proc is not None and not self.alive and op in _SESSION_OPS:
                # A worker that died after `prepare` took its prepared kernel with it: a fresh one
                # would answer "no kernel is prepared". Report how this one ended instead.
                raise self._died(phase or op, ConnectionError("the worker is gone"))
            if self._connection is None or not self.alive:
                if op != "hello":
                    self.start()
            assert self._connection is not None and self._reader is not None
            what = phase or header.get("op", "?")
            reader = self._reader

            def restart_clock() -> None:
                reader.deadline = None if timeout_s is None else time.monotonic() + timeout_s

            restart_clock()
            try:
                if fds is not None:
                    if self._channel is None:
                        raise RequestFailed(f"the {self.runtime} worker has no shared-memory channel")
                    self._channel.send(fds)
                self._connection.send(header, arrays)
                reply, out = self._connection.receive()
                while "progress" in reply:
                    restart_clock()
                    if on_progress is not None:
                        on_progress(reply["progress"])
                    reply, out = self._connection.receive()
            except _Deadline:
                self._cleanup()
                raise WorkerTimeout(
                    f"timed out after {timeout_s:g} s during {what} (endless loop or hung device?); "
                    f"{self.label} was killed"
                ) from None
            except (ProtocolError, OSError) as exc:
                raise self._died(what, exc) from None
            finally:
                if self._reader is not None:
                    self._reader.deadline = None
            if "error" in reply:
                raise RequestFailed(str(reply["error"]), fatal=bool(reply.get("fatal")))
            return reply, out

    def _died(self, what: str, exc: Exception) -> WorkerCrashed:
        proc = self._proc
        returncode = None
        if proc is not None:
            try:
                returncode = proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.kill()  # closed its stream but lives on: not usable
                returncode = proc.wait()
        if self._stderr_thread is not None:
            self._stderr_thread.join(timeout=1.0)
        tail = [line for line in self.stderr_tail(8) if line.strip()]
        self._cleanup()
        explained = self.launcher.explain(tail) if self.launcher is not None else None
        if explained:
            return WorkerCrashed(f"{self.label} failed during {what}: {explained}")
        if self.launcher is not None:
            returncode = self.launcher.status(returncode, tail)  # the remote worker's own status
        if returncode == 255 and self.launcher is not None:  # ssh's own status: the connection
            message = f"{self.label} lost its connection during {what} (ssh exit code 255)"
        elif returncode is not None:
            message = f"{self.label} died with {signal_name(returncode)} during {what}"
        else:
            message = f"lost {self.label} during {what}: {exc}"
        panic = kernel_panic(self.stderr_tail(STDERR_LINES))  # the message and line, not the frames
        if panic:
            return WorkerCrashed(f"{panic} ({message})")
        if tail:
            message += "; its last output: " + " | ".join(tail[-4:])
        return WorkerCrashed(message)


class _Deadline(Exception):
    """Raised inside a read when the request's deadline has passed (the worker is killed)."""


class WorkerPool:
    """At most one worker per runtime, started lazily and restarted after a crash.

    A worker the pool lets go (`stop`, `close`) is retired: a request of a caller still holding it
    (a device probe, `forget_inputs`) does not start it again. Once closed, the pool starts no
    worker at all: `get` raises `WorkerError` ("closed"), and a worker a `get` was starting while
    the pool closed is shut down before `get` raises. So no late caller (a probe still running
    when the window closes) leaves a live process behind that nobody will stop."""

    def __init__(self, on_stderr=None, command_for=None, launcher=None, shared_memory: bool | None = None):
        self.on_stderr = on_stderr
        self.command_for = command_for  # fn(runtime) -> argv
        self.launcher = launcher  # starts workers elsewhere (a GPU host over ssh) when given
        # None: shared memory with local workers where the platform has it, frames otherwise.
        self.shared_memory = shared_memory
        self._workers: dict[str, WorkerProcess] = {}
        self._lock = threading.Lock()
        self.closed = False

    def get(self, runtime: str) -> WorkerProcess:
        """The runtime's worker, started (and restarted after a crash); `WorkerError` once the
        pool is closed (class docstring)."""
        with self._lock:
            self._refuse_if_closed(runtime)
            worker = self._workers.get(runtime)
            if worker is None:
                command = self.command_for(runtime) if self.command_for else None
                worker = WorkerProcess(
                    runtime,
                    command=command,
                    on_stderr=self.on_stderr,
                    launcher=self.launcher,
                    shared_memory=self.shared_memory,
                )
                self._workers[runtime] = worker
        worker.start()
        with self._lock:
            closed = self.closed
        if closed:  # `close` came while it started: it may have missed the process
            worker.shutdown()
            self._refuse_if_closed(runtime)
        return worker

    def _refuse_if_closed(self, runtime: str) -> None:
        if self.closed:
            raise WorkerError(f"no {runtime} worker is started: the worker pool is closed")

    def stop(self, runtime: str) -> None:
        """Shut one runtime's worker down (a later `get` starts a fresh one)."""
        with self._lock:
            worker = self._workers.pop(runtime, None)
        if worker is not None:
            worker.retired = "its worker pool stopped it"
            worker.shutdown()

    def owned(self) -> list[int | threading.Thread]:
        """Live worker pids and their threads (what the pool must stop in `close`)."""
        with self._lock:
            workers = list(self._workers.values())
        return [x for w in workers for x in ([w.pid] if w.alive else []) + w.threads]

    def forget_inputs(self) -> None:
        """Let every live worker drop the input mappings it keeps between backends of a run
        (a run's inputs can be gigabytes; the next run brings its own)."""
        with self._lock:
            workers = [w for w in self._workers.values() if w.alive and w.shared]
        for worker in workers:
            try:
                worker.request({"op": "forget_inputs"}, timeout_s=10.0)
            except WorkerError:
                pass  # a dead or stuck worker holds nothing for long

    def kill_all(self) -> None:
        """Kill every worker now (from any thread): used to cancel a launch in flight."""
        for worker in list(self._workers.values()):
            worker.kill()

    def close(self) -> None:
        """Shut every worker down; from now on no worker starts (class docstring)."""
        with self._lock:
            self.closed = True
            workers, self._workers = list(self._workers.values()), {}
        for worker in workers:
            worker.retired = "its worker pool is closed"
        # Side by side: a worker's exit releases a CUDA context or a Vulkan device (a fraction of
        # a second each on a GPU host), and a command line waits for all of them.
        side_by_side([w.shutdown for w in workers], "wb-close")


def side_by_side(calls: list[Callable[[], Any]], name: str) -> None:
    """Run `calls` on a thread each and wait for all (one call runs here): worker start-ups and
    shutdowns spend their time in other processes, so one after the other they only add up."""
    if len(calls) < 2:
        for call in calls:
            call()
        return
    threads = [threading.Thread(target=call, name=f"{name}-{i}", daemon=True) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
