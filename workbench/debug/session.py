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

#: --commands' words → gdb's machine-interface commands (`print EXPR` is read apart).
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
        if word not in STEPS and not (word == "print" and len(line.split(None, 1)) == 2):
            raise DebugError(
                f"--commands line {number}: {line!r}; expected one of {', '.join(STEPS)} or print EXPR"
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
        # Settings before anything loads (no round trip each). No symbols of shared libraries
        # unless asked (`run_session` reads the kernel's and the C library's): reading the
        # interpreter's and its extensions' took most of the way to the entry.
        settings = ("debuginfod enabled off", "pagination off", "confirm off", "print pretty off",
                    "startup-with-shell off", "auto-solib-add off")  # fmt: skip
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
            if time.monotonic() >= deadline:
                return None
            self._take(self.gdb.get_gdb_response(timeout_sec=0.2, raise_error_on_timeout=False))

    def close(self) -> None:
        """gdb and the launcher go, whatever state they are in."""
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
        return str(self.command(f"-data-evaluate-expression {json.dumps(expression)}").get("value"))

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
        stop = Stop(reason, stack=stack, invocation=self.invocation())
        own = next((f for f in frames if self._own(f.get("fullname"))), None)
        if own is not None:
            stop.file, stop.line, stop.function = (
                self._relative(own["fullname"]),
                int(own["line"]),
                own.get("func"),
            )
            level = own.get("level", "0")
            variables = self.command(f"-stack-list-variables --frame {level} --thread 1 --all-values")
            for v in variables.get("variables") or []:
                entry = {"name": v.get("name"), "value": v.get("value")}
                if v.get("arg"):
                    entry["arg"] = "1"
                stop.locals.append(entry)
        return stop


def run_session(
    launcher_argv: list[str],
    cwd: Path,
    project_root: Path,
    library: Path,
    entry: str,
    addresses_file: Path,
    breakpoint: tuple[Path, int] | None,
    invocation: tuple[tuple[int, int, int], tuple[int, int, int]] | None,
    watch: tuple[str, int] | None,
    commands: list[str],
    timeout_s: float = 60.0,
    max_stops: int = 100,
    printed: Path | None = None,
) -> list[Stop]:
    """Run the launcher under gdb to the entry, set the breakpoint (in `invocation` only) and the
    watch, run, and read each stop; after each, the next of `commands` (none left: the session
    ends). Always ends gdb and the launcher."""
    session = GdbSession(launcher_argv, cwd, project_root, entry, timeout_s)
    session.printed = printed
    stops: list[Stop] = []
    try:
        # Stop when the kernel's library loads, read its symbols (and the C library's: a panic
        # stops in abort), then run to the entry.
        session.command(f"-catch-load -t {re.escape(library.name)}")
        session.command("-exec-run")
        loaded = session.wait_stopped()
        if loaded is None or loaded.get("reason") != "solib-event":
            return [_ended(session, loaded, f"{library.name} was never loaded")]
        for name in (library.name, "libc.so", "libgcc_s"):
            session.command(f'-interpreter-exec console "sharedlibrary {name}"')
        session.command(f"-break-insert -t {entry}")
        session.command("-exec-continue")
        first = session.wait_stopped()
        if first is None or first.get("reason") != "breakpoint-hit":
            return [_ended(session, first, "the entry was never reached")]
        if breakpoint is not None:
            path, line = breakpoint
            condition = ""
            if invocation is not None:
                coords = [*invocation[0], *invocation[1]]
                condition = " && ".join(f"{CURRENT}[{k}] == {v}" for k, v in enumerate(coords))
                condition = f"-c {json.dumps(condition)} "
            session.command(f"-break-insert {condition}{json.dumps(f'{path}:{line}')}")
        watched = None
        if watch is not None:
            watched = _watch(session, addresses_file, watch)
        pending = list(commands)
        session.command("-exec-continue")
        while len(stops) < max_stops:
            payload = session.wait_stopped()
            stop = _classify(session, payload, watched)
            stops.append(stop)
            if stop.reason in ("exited", "timeout", "panic", "signal") or not pending:
                break
            while pending and pending[0].startswith("print "):
                expression = pending.pop(0).split(None, 1)[1]
                try:
                    value = session.evaluate(expression)
                except DebugError as exc:
                    value = f"<{exc}>"
                stop.prints.append({"expression": expression, "value": value})
            if not pending:
                break
            session.command(STEPS[pending.pop(0)])
        return stops
    finally:
        session.close()


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
