"""One kernel launch under gdb, driven through its machine interface (pygdbmi): stops in one
invocation at Rust lines, and at writes of one element, each read back as a `Stop`.

gdb runs the launcher (`launcher.py`: the cpu runtime's call of the entry, one worker thread) on
the debug build. It first stops at the entry (a temporary breakpoint: the library is loaded, so
breakpoint conditions and watch addresses resolve), then:

- `--break FILE:LINE` becomes a breakpoint whose condition is the executor's current invocation
  (`gpu_kernel::host::debug::gpu_kernel_debug_current`, the six coordinates): it stops only in
  the chosen one, whichever fiber runs the line;
- `--watch BUF[I]` becomes a hardware watchpoint on the element's address (from the launcher's
  `addresses` file): any invocation's write stops, with the old and the new value.

Each stop reads the frame of the kernel's own code (the first frame in the project's files: a
write stops inside the kernel API's `set`), its locals and arguments as gdb prints Rust values,
the call stack in Rust names and the invocation running. A panic (the entry cannot unwind: the
process aborts) stops at SIGABRT and is reported with its stack; a stop that does not come within
the time limit is reported, and gdb and the launcher are killed whatever happens.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.build.install_hints import DEBUGGER_HINT
from workbench.errors import WorkbenchError

#: The executor's current invocation in a debug build (host/debug.rs), as gdb names it.
CURRENT = "gpu_kernel::host::debug::gpu_kernel_debug_current"

#: --commands' words → gdb's machine-interface commands (`print EXPR` is read apart; `barrier`:
#: `Debugger.resume`).
STEPS = {"next": "-exec-next", "step": "-exec-step", "finish": "-exec-finish", "continue": "-exec-continue"}

#: A watched element's C type, by the manifest's element type (the watch expression is C).
C_TYPES = {
    "f32": "float",
    "f64": "double",
    "i32": "int",
    "u32": "unsigned int",
    "i64": "long",
    "u64": "unsigned long",
}


class DebugError(WorkbenchError):
    """gdb is missing, or refused a breakpoint, a watch or a command (its message said)."""


def gdb_path() -> str:
    """gdb on PATH; DebugError with the one-line hint otherwise."""
    path = shutil.which("gdb")
    if path is None:
        raise DebugError(f"gdb is not installed: {DEBUGGER_HINT}")
    try:
        import pygdbmi  # noqa: F401
    except ImportError:
        raise DebugError(f"pygdbmi is not installed: {DEBUGGER_HINT}") from None
    return path


@dataclass
class Stop:
    """One stop, as `workbench debug --json` prints it."""

    reason: str  # breakpoint, step, watch, panic, signal, exited, timeout
    file: str | None = None  # relative to the project (the kernel's own frame)
    line: int | None = None
    function: str | None = None
    invocation: dict[str, list[int]] | None = None  # {"group": [x, y, z], "local": [x, y, z]}
    locals: list[dict[str, str]] = field(default_factory=list)  # {"name", "value", "arg"?}
    stack: list[dict[str, Any]] = field(default_factory=list)  # {"function", "file", "line"}
    watch: dict[str, Any] | None = None  # {"element", "old", "new"}
    prints: list[dict[str, str]] = field(default_factory=list)  # `print EXPR` of --commands
    workgroup: dict[str, Any] | None = None  # the workgroup's invocations (`workgroup_states`)
    detail: str = ""  # the signal, the exit code, what the panic printed

    def to_json(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if v not in (None, [], "")}
        out["reason"] = self.reason
        return out


def parse_commands(text: str) -> list[str]:
    """--commands' lines (`next`, `step`, `finish`, `continue`, `print EXPR`; `#` comments)."""
    out = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        word = line.split(None, 1)[0]
        if word not in RESUMES and not (word == "print" and len(line.split(None, 1)) == 2):
            raise DebugError(
                f"--commands line {number}: {line!r}; expected one of {', '.join(RESUMES)} or print EXPR"
            )
        out.append(line)
    return out


class GdbSession:
    """gdb on the launcher, through pygdbmi; `close()` kills both (also on every error path)."""

    def __init__(self, argv: list[str], cwd: Path, project_root: Path, entry: str, timeout_s: float = 60.0):
        from pygdbmi.gdbcontroller import GdbController

        self.entry = entry  # the stack shown ends at the kernel's entry (the launcher's frames go)
        self.project_root = Path(project_root).resolve()
        self.timeout_s = float(timeout_s)
        self.output: list[str] = []  # what gdb passed on of the launcher's output
        self.printed: Path | None = None  # the file the launcher's stderr goes to
        self._events: list[dict[str, Any]] = []
        self._token = 0
        self.inferior_pid: int | None = None
        self.own_level: str | None = None  # the last stop's frame of the kernel's own code
        self.closed = False
        # Settings before anything loads (no round trip each). No symbols of shared libraries
        # unless asked (`run_session` reads the kernel's and the C library's): reading the
        # interpreter's and its extensions' took most of the way to the entry.
        settings = ("debuginfod enabled off", "pagination off", "confirm off", "print pretty off",
                    "startup-with-shell off", "auto-solib-add off", "print repeats unlimited")  # fmt: skip
        early = [arg for setting in settings for arg in ("-iex", f"set {setting}")]
        self.gdb = GdbController(
            command=[gdb_path(), "--nx", "--quiet", *early, "--interpreter=mi3", "--args", *argv],
            time_to_check_for_additional_output_sec=0.005,
        )
        self.command(f"-environment-cd {json.dumps(str(cwd))}")

    # ---------------------------------------------------------------- the machine interface

    def _take(self, records: list[dict[str, Any]]) -> None:
        for record in records:
            if record.get("type") in ("output", "target"):
                self.output.append(str(record.get("payload") or ""))
            elif record.get("type") == "notify" and record.get("message") == "thread-group-started":
                self.inferior_pid = int(record["payload"]["pid"])
            self._events.append(record)

    def command(self, text: str, timeout_s: float = 30.0) -> dict[str, Any]:
        """Send one MI command and wait for its result record; DebugError on `^error`."""
        self._token += 1
        token = self._token
        self.gdb.write(f"{token}{text}", read_response=False)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.closed:
                raise DebugError("the debugging session was ended")
            for k, record in enumerate(self._events):
                if record.get("type") == "result" and record.get("token") == token:
                    del self._events[k]
                    if record.get("message") == "error":
                        raise DebugError(f"gdb: {(record.get('payload') or {}).get('msg')} ({text})")
                    return record.get("payload") or {}
            self._take(self.gdb.get_gdb_response(timeout_sec=0.2, raise_error_on_timeout=False))
        raise DebugError(f"gdb did not answer {text!r} within {timeout_s:g} s")

    def wait_stopped(self) -> dict[str, Any] | None:
        """The next `*stopped` record's payload; None when none came within the time limit."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            for k, record in enumerate(self._events):
                if record.get("type") == "notify" and record.get("message") == "stopped":
                    del self._events[k]
                    return record.get("payload") or {}
            if self.closed:
                raise DebugError("the debugging session was ended")
            if time.monotonic() >= deadline:
                return None
            self._take(self.gdb.get_gdb_response(timeout_sec=0.2, raise_error_on_timeout=False))

    def close(self) -> None:
        """gdb and the launcher go, whatever state they are in; a wait for gdb in another thread
        (a window's) ends with a DebugError within its next poll (0.2 s)."""
        self.closed = True
        pid = self.inferior_pid
        try:
            self.gdb.exit()
        except Exception:  # noqa: BLE001 - gdb may be gone already; the kill below still runs
            pass
        if pid is not None:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    # ---------------------------------------------------------------- reading a stop

    def evaluate(self, expression: str) -> str:
        """`expression`'s value in the frame of the kernel's own code the last stop showed."""
        frame = f"--thread 1 --frame {self.own_level} " if self.own_level is not None else ""
        return str(self.command(f"-data-evaluate-expression {frame}{json.dumps(expression)}").get("value"))

    def _relative(self, fullname: str | None) -> str | None:
        if not fullname:
            return None
        try:
            return Path(fullname).resolve().relative_to(self.project_root).as_posix()
        except ValueError:
            return fullname

    def _own(self, fullname: str | None) -> bool:
        """A frame of the project's own code (not the kernel API's, which a project holds as
        `gpu_kernel/`, nor the standard library's)."""
        if not fullname or not Path(fullname).is_absolute():
            return False  # gdb names a project's file by its full path (the build's own folder)
        relative = self._relative(fullname) or "/"
        return not relative.startswith(("/", "gpu_kernel/"))

    def invocation(self) -> dict[str, list[int]] | None:
        # In Rust whatever frame stopped (a panic stops in the C library).
        self.command("-gdb-set language rust")
        try:
            values = [int(v) for v in self.evaluate(CURRENT).strip("[]").split(",")]
        except (DebugError, ValueError):
            return None
        finally:
            self.command("-gdb-set language auto")
        return {"group": values[:3], "local": values[3:6]}

    def store_line(self, stop: Stop) -> None:
        """A watchpoint stops after the store: where the kernel's own code made it is the line of
        the instruction before (the body's last store is followed by its caller's code)."""
        if not stop.stack or stop.stack[0].get("file") != stop.file:
            return  # the store was in the kernel API (`set`): the kernel's frame is its caller's line
        self.command('-interpreter-exec console "info line *($pc - 1)"')
        text = "".join(str(r.get("payload") or "") for r in self._events if r.get("type") == "console")
        self._events = [r for r in self._events if r.get("type") != "console"]
        match = re.search(r'Line (\d+) of "([^"]+)"', text)
        if match is not None and (self._own(match.group(2)) or not Path(match.group(2)).is_absolute()):
            stop.line = int(match.group(1))

    def read_stop(self, reason: str, payload: dict[str, Any]) -> Stop:
        """The stop's kernel frame, locals, stack and invocation."""
        frames = self.command("-stack-list-frames").get("stack") or []
        end = next(
            (k for k, f in enumerate(frames) if (f.get("func") or "").split("::")[-1] == self.entry), None
        )
        frames = frames[: end + 1] if end is not None else frames
        while frames and frames[-1].get("func") in (None, "??"):  # below a fiber's first frame
            frames.pop()
        stack = [
            {"function": f.get("func"), "file": self._relative(f.get("fullname")), "line": int(f["line"])}
            if f.get("line")
            else {"function": f.get("func"), "from": f.get("from")}
            for f in frames
        ]
        self.own_level = None
        stop = Stop(reason, stack=stack, invocation=self.invocation())
        own = next((f for f in frames if self._own(f.get("fullname"))), None)
        if own is not None:
            stop.file, stop.line, stop.function = (
                self._relative(own["fullname"]),
                int(own["line"]),
                own.get("func"),
            )
            level = self.own_level = own.get("level", "0")
            variables = self.command(f"-stack-list-variables --frame {level} --thread 1 --all-values")
            for v in variables.get("variables") or []:
                entry = {"name": v.get("name"), "value": v.get("value")}
                if v.get("arg"):
                    entry["arg"] = "1"
                stop.locals.append(entry)
        return stop


#: The kernel API's barrier (a stop in it shows its caller's line: `read_stop` finds the kernel's frame).
BARRIER = "gpu_kernel::host::exec::Ctx::barrier"
#: The executor's table of the running workgroup's invocations (host/debug.rs: count, barriers
#: opened, the invocation running, then per invocation state and line).
STATES_TABLE = "gpu_kernel::host::debug::gpu_kernel_debug_states"
#: Resumptions a session offers (`Debugger.resume`): the --commands words and `barrier`.
RESUMES = (*STEPS, "barrier")


def workgroup_states(words: list[int]) -> dict[str, Any]:
    """The executor's table (`STATES_TABLE`'s first 3 + 2·count words) as a stop's `workgroup`:
    each invocation `running` (the one stopped), `ready` (released, not at a barrier yet), `not
    started` (before the workgroup's first barrier opened), `waiting` (at barrier N, line L) or
    `returned`."""
    count, opened, current = words[0], words[1], words[2]
    invocations = []
    for t in range(count):
        state, line = words[3 + 2 * t], words[4 + 2 * t]
        entry: dict[str, Any] = {"local": t}
        if state == 1:
            entry.update(state="waiting", barrier=opened + 1, line=line)  # the barrier's line
        elif state == 2:
            entry["state"] = "returned"
        elif t == current:
            entry["state"] = "running"
        else:  # ready: before the first barrier opened it has not run a line yet
            entry["state"] = "not started" if opened == 0 and t > current else "ready"
        invocations.append(entry)
    return {"barriers_opened": opened, "invocations": invocations}


def states_summary(workgroup: dict[str, Any]) -> list[str]:
    """The workgroup's states as lines of runs of consecutive invocations alike
    (`locals 0-16: waiting at barrier 1 (line 83)`)."""
    runs: list[tuple[int, int, str]] = []
    for entry in workgroup.get("invocations", []):
        text = entry["state"]
        if text == "waiting":
            text = f"waiting at barrier {entry['barrier']} (line {entry['line']})"
        if runs and runs[-1][2] == text and runs[-1][1] == entry["local"] - 1:
            runs[-1] = (runs[-1][0], entry["local"], text)
        else:
            runs.append((entry["local"], entry["local"], text))
    return [f"local {a}: {t}" if a == b else f"locals {a}-{b}: {t}" for a, b, t in runs]


class Debugger:
    """One launch under gdb, stop by stop: `start` runs to the first stop, `resume` on to the
    next; breakpoints (in the session's invocation only) come and go between stops. `workbench
    debug` (`run_session`) and the window's Debug dock drive it the same way; it blocks while
    the kernel runs, so a window calls it off its thread. `close()` ends gdb and the launcher."""

    def __init__(
        self,
        launcher_argv: list[str],
        cwd: Path,
        project_root: Path,
        library: Path,
        entry: str,
        addresses_file: Path,
        invocation: tuple[tuple[int, int, int], tuple[int, int, int]] | None,
        timeout_s: float = 60.0,
        printed: Path | None = None,
    ):
        self.library, self.addresses_file, self.invocation = library, addresses_file, invocation
        self.session = GdbSession(launcher_argv, cwd, project_root, entry, timeout_s)
        self.session.printed = printed
        self.breakpoints: dict[tuple[str, int], str] = {}  # (full path, line) -> gdb's number
        self.watched: str | None = None
        self._at_barrier = False  # stopped inside the barrier by `resume("barrier")`
        self._table: int | None = None  # the states table's address
        self.loaded = False  # held at the kernel's entry (`load`)
        self.ended = False  # exited, panicked, stopped by a signal, timed out or closed

    def _condition(self) -> str:
        if self.invocation is None:
            return ""
        coords = [*self.invocation[0], *self.invocation[1]]
        condition = " && ".join(f"{CURRENT}[{k}] == {v}" for k, v in enumerate(coords))
        return f"-c {json.dumps(condition)} "

    def load(self) -> Stop | None:
        """Run to the kernel's entry and hold it there (None), or the stop that ended the launch
        before it (the library never loaded, the entry never reached). A window parks a session
        loaded ahead of a click (gdb's own start and the launcher's are most of the way)."""
        session = self.session
        # Stop when the kernel's library loads, read its symbols (and the C library's: a panic
        # stops in abort), then run to the entry.
        session.command(f"-catch-load -t {re.escape(self.library.name)}")
        session.command("-exec-run")
        loaded = session.wait_stopped()
        if loaded is None or loaded.get("reason") != "solib-event":
            return self._end(_ended(session, loaded, f"{self.library.name} was never loaded"))
        for name in (self.library.name, "libc.so", "libgcc_s"):
            session.command(f'-interpreter-exec console "sharedlibrary {name}"')
        session.command(f"-break-insert -t {self.session.entry}")
        session.command("-exec-continue")
        first = session.wait_stopped()
        if first is None or first.get("reason") != "breakpoint-hit":
            return self._end(_ended(session, first, "the entry was never reached"))
        self.loaded = True
        return None

    def start(self, breakpoints: list[tuple[Path, int]], watch: tuple[str, int] | None) -> Stop:
        """Run to the entry (unless `load` did), set the breakpoints and the watch, run to the
        first stop."""
        if not self.loaded and (ended := self.load()) is not None:
            return ended
        for path, line in breakpoints:
            self.add_breakpoint(path, line)
        if watch is not None:
            self.watched = _watch(self.session, self.addresses_file, watch)
        return self._go("-exec-continue")

    def add_breakpoint(self, path: Path, line: int) -> None:
        """A breakpoint at `path:line` that stops in the session's invocation only."""
        key = (str(Path(path).resolve()), int(line))
        if key not in self.breakpoints:
            reply = self.session.command(
                f"-break-insert {self._condition()}{json.dumps(f'{key[0]}:{key[1]}')}"
            )
            self.breakpoints[key] = str((reply.get("bkpt") or {}).get("number"))

    def remove_breakpoint(self, path: Path, line: int) -> None:
        number = self.breakpoints.pop((str(Path(path).resolve()), int(line)), None)
        if number is not None:
            self.session.command(f"-break-delete {number}")

    def resume(self, how: str) -> Stop:
        """`next`, `step`, `finish`, `continue`, or `barrier` (on to the invocation's next
        barrier, stopped before it waits). A step while stopped in the kernel API's code (at a
        barrier) first finishes it, back to the kernel's line."""
        if how not in RESUMES:
            raise DebugError(f"no such step {how!r}; expected one of {', '.join(RESUMES)}")
        if self.ended:
            raise DebugError("the launch has ended: start another session")
        at_barrier, self._at_barrier = self._at_barrier, how == "barrier"
        if how == "barrier":
            self.session.command(f"-break-insert -t {self._condition()}{BARRIER}")
            return self._go("-exec-continue")
        if how in ("next", "step") and at_barrier:  # stopped in the barrier: out of it, past it
            return self._go("-exec-finish")
        return self._go(STEPS[how])

    def evaluate(self, expression: str) -> str:
        return self.session.evaluate(expression)

    def _go(self, command: str) -> Stop:
        self.session.command(command)
        stop = _classify(self.session, self.session.wait_stopped(), self.watched)
        if stop.reason in ("exited", "timeout", "panic", "signal"):
            self.ended = True
        if stop.reason not in ("exited", "timeout"):
            stop.workgroup = self.states()
        return stop

    def _end(self, stop: Stop) -> Stop:
        self.ended = True
        return stop

    def states(self) -> dict[str, Any] | None:
        """The running workgroup's invocations (`workgroup_states`), read from the executor's
        table in the debug build (memory only: a call into the kernel's process would cost gdb
        its place in an inlined call, and `next` would then step into it)."""
        session = self.session
        try:
            if self._table is None:
                session.command("-gdb-set language rust")
                try:
                    value = session.evaluate(f"&{STATES_TABLE}")
                finally:
                    session.command("-gdb-set language auto")
                self._table = int(re.search(r"0x[0-9a-f]+", value).group(0), 16)
            head = self._words(self._table, 3)
            if head[0] <= 0:
                return None
            words = head + self._words(self._table + 12, 2 * head[0])
        except (DebugError, ValueError, AttributeError, KeyError, IndexError):
            return None  # a build without the table (an older one)
        return workgroup_states(words)

    def _words(self, address: int, count: int) -> list[int]:
        memory = self.session.command(f"-data-read-memory-bytes {address:#x} {4 * count}")
        raw = bytes.fromhex(memory["memory"][0]["contents"])
        return [int.from_bytes(raw[k : k + 4], "little") for k in range(0, len(raw), 4)]

    def close(self) -> None:
        self.ended = True
        self.session.close()


def run_session(
    debugger: Debugger,
    breakpoints: list[tuple[Path, int]],
    watch: tuple[str, int] | None,
    commands: list[str],
    max_stops: int = 100,
) -> list[Stop]:
    """Start `debugger` (to the breakpoints, in its invocation only, or the watch) and read each
    stop; after each, the next of `commands` (none left: the session ends). The caller closes it."""
    stops = [debugger.start(breakpoints, watch)]
    pending = list(commands)
    while len(stops) < max_stops and not debugger.ended:
        while pending and pending[0].startswith("print "):
            expression = pending.pop(0).split(None, 1)[1]
            try:
                value = debugger.evaluate(expression)
            except DebugError as exc:
                value = f"<{exc}>"
            stops[-1].prints.append({"expression": expression, "value": value})
        if not pending:
            break
        stops.append(debugger.resume(pending.pop(0)))
    return stops


def _watch(session: GdbSession, addresses_file: Path, watch: tuple[str, int]) -> str:
    """A hardware watchpoint on element `watch` (its address from the launcher); its name."""
    name, index = watch
    addresses = json.loads(Path(addresses_file).read_text())
    if name not in addresses:
        raise DebugError(f"--watch {name}[{index}]: no buffer {name!r} (buffers: {', '.join(addresses)})")
    buffer = addresses[name]
    if not 0 <= index < buffer["length"]:
        raise DebugError(f"--watch {name}[{index}]: past the end of {name} ({buffer['length']} elements)")
    address = buffer["address"] + index * buffer["itemsize"]
    session.command("-gdb-set language c")
    try:
        session.command(f"-break-watch *({C_TYPES[buffer['type']]}*){address:#x}")
    finally:
        session.command("-gdb-set language auto")
    return f"{name}[{index}]"


def _ended(session: GdbSession, payload: dict[str, Any] | None, why: str) -> Stop:
    if payload is None:
        return Stop("timeout", detail=f"no stop within {session.timeout_s:g} s ({why})")
    return _classify(session, payload, None)


def _classify(session: GdbSession, payload: dict[str, Any] | None, watched: str | None) -> Stop:
    """A `*stopped` payload as a `Stop`."""
    if payload is None:
        return Stop("timeout", detail=f"no stop within {session.timeout_s:g} s: the kernel was stopped")
    reason = payload.get("reason") or ""
    if reason.startswith("exited"):
        code = payload.get("exit-code")
        return Stop("exited", detail=f"the launch ended (exit code {int(code, 8) if code else 0})")
    if reason == "signal-received":
        name = payload.get("signal-name") or "?"
        stop = session.read_stop("signal", payload)
        panicked = name == "SIGABRT" and any("panic" in (f.get("function") or "") for f in stop.stack)
        stop.reason = "panic" if panicked else "signal"
        printed = "".join(session.output)
        if session.printed is not None and session.printed.is_file():
            printed += session.printed.read_text(errors="replace")
        printed = printed.strip()
        stop.detail = f"{name}: {printed}" if printed else name
        return stop
    if reason in ("watchpoint-trigger", "access-watchpoint-trigger"):
        stop = session.read_stop("watch", payload)
        session.store_line(stop)
        value = payload.get("value") or {}
        stop.watch = {"element": watched, "old": value.get("old"), "new": value.get("new")}
        return stop
    kind = "breakpoint" if reason == "breakpoint-hit" else "step"
    return session.read_stop(kind, payload)


def launcher_argv(job_file: Path) -> list[str]:
    """The launcher's command line (this interpreter, so the same workbench and numpy)."""
    return [sys.executable, "-m", "workbench.debug.launcher", str(job_file)]
