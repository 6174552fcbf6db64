"""gdb's machine interface for one debug launch (pygdbmi): the process, its records, a command
and its answer, the stop read back as a `Stop` (the kernel's own frame, its locals and arguments as
gdb prints Rust values, the call stack, the invocation running). `session.Debugger` drives it;
`session`'s docstring says how a launch is stopped in one invocation."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
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

    reason: str  # breakpoint, step, returned, watch, panic, signal, exited, timeout
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
