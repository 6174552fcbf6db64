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
the time limit is reported, and gdb and the launcher are killed whatever happens. A step off the
kernel's end, which gdb would stop in the launcher's closure, is reported as the invocation's
return (`returned`). A `next` or `continue` that stops again where the stop before was (the same
line, frames and locals: a line split in blocks by inlined calls) steps on (`Debugger.resume`).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from workbench.debug.gdb_mi import (
    BARRIER,
    C_TYPES,
    CURRENT,
    RESUMES,
    STATES_TABLE,
    STEPS,
    DebugError,
    GdbSession,
    Stop,
)


def workgroup_states(words: list[int]) -> dict[str, Any]:
    """The executor's table (`STATES_TABLE`'s first 3 + 2·count words) as a stop's `workgroup`:
    the invocation running (`current`, its linear local id) and each invocation `running` (the one
    stopped), `ready` (released, not at a barrier yet), `not started` (before the workgroup's first
    barrier opened), `waiting` (at barrier N, line L) or `returned`."""
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
    return {"barriers_opened": opened, "current": current, "invocations": invocations}


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


#: A stop's headline, by its reason (`stop_headline`): what happened, then where.
_HEADS = {
    "breakpoint": "stopped at a breakpoint",
    "step": "stopped after a step",
    "watch": "stopped at a write",
    "returned": "returned",
    "panic": "panicked",
    "signal": "stopped by a signal",
    "exited": "ended",
    "timeout": "timed out",
}


def trailing_zeros_dropped(values: list[int] | tuple[int, ...]) -> list[int]:
    """A workgroup or local id without its trailing zero dimensions ([4, 0, 0] → [4]; at least one)."""
    values = list(values)
    while len(values) > 1 and values[-1] == 0:
        values.pop()
    return values


def short_coords(values: list[int]) -> str:
    """`4` for [4, 0, 0], `(1, 2)` for [1, 2, 0]: a workgroup or local id, short."""
    values = trailing_zeros_dropped(values)
    return str(values[0]) if len(values) == 1 else f"({', '.join(map(str, values))})"


def stop_headline(stop: dict[str, Any]) -> str:
    """One stop in a line, as the CLI and the Debug dock say it: `stopped at a breakpoint:
    src/lib.rs:62, workgroup 4 local 210`, `returned: workgroup 4 local 210`, `panicked:
    src/lib.rs:43, workgroup 1 local 44`; a watch adds the element's old and new value."""
    parts = []
    if stop.get("file"):
        parts.append(f"{stop['file']}:{stop.get('line')}")
    elif stop["reason"] in ("breakpoint", "step", "watch"):
        parts.append("outside the project's code")
    if stop.get("invocation"):
        inv = stop["invocation"]
        parts.append(f"workgroup {short_coords(inv['group'])} local {short_coords(inv['local'])}")
    head = _HEADS.get(stop["reason"], stop["reason"]) + (f": {', '.join(parts)}" if parts else "")
    if stop.get("watch"):
        w = stop["watch"]
        head += f"; {w['element']}: {w.get('old')} → {w.get('new')}"
    return head


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
        self._kernel_function: str | None = None  # the kernel code's function the last stop was in
        self.returned = False  # a step left the kernel's code: the invocation has returned
        self._place: tuple | None = None  # the last stop's `_place` (a re-stop there steps on)
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
        barrier) first finishes it, back to the kernel's line. A step that leaves the kernel's
        code for the launcher's stops as `returned` (`_returned`); after it every step continues."""
        if how not in RESUMES:
            raise DebugError(f"no such step {how!r}; expected one of {', '.join(RESUMES)}")
        if self.ended:
            raise DebugError("the launch has ended: start another session")
        if self.returned:  # nothing of the invocation is left to step: the launch runs on
            how = "continue"
        at_barrier, self._at_barrier = self._at_barrier, how == "barrier"
        if how == "barrier":
            self.session.command(f"-break-insert -t {self._condition()}{BARRIER}")
            return self._go("-exec-continue")
        if how in ("next", "step") and at_barrier:  # stopped in the barrier: out of it, past it
            return self._go("-exec-finish", step=True)
        before = self._place
        stop = self._go(STEPS[how], step=how != "continue")
        if how in ("next", "continue"):
            # One source line's code is not one block of addresses: the kernel API's calls in it
            # (`scratch.get`, `scratch.set`: `#[inline(always)]`, so inlined even unoptimised)
            # split it, and gdb's line table has the line several times (reduction's fold line
            # three is-stmt entries; its breakpoint one location, the first block's). gdb's
            # `next` from the first block stops again at the second, after the inlined `get`
            # returns (infrun: "stepped to a different line", the step range having been
            # refreshed to the inlined code's); and a `next` onto the line stops at its first
            # inlined call's site, before the breakpoint's address, so `continue` then hits the
            # breakpoint in the same round of the loop. Neither is a new place for the user: a
            # stop on the same line, in the same frames, with the same locals as the stop before
            # (the same round of the loop) is stepped on, as gdb's `next` does in a plain
            # program; a later round changes a local (the loop's counter), so it still stops.
            for _ in range(_RESTOPS):
                if before is None or stop.reason not in ("step", "breakpoint") or self._place != before:
                    break
                stop = self._go(STEPS[how], step=how != "continue")
        return stop

    def evaluate(self, expression: str) -> str:
        return self.session.evaluate(expression)

    def _go(self, command: str, step: bool = False) -> Stop:
        self.session.command(command)
        stop = _classify(self.session, self.session.wait_stopped(), self.watched)
        if stop.reason in ("exited", "timeout", "panic", "signal"):
            self.ended = True
        elif step and stop.reason == "step" and self._kernel_function and self._launcher(stop.function):
            stop = self._returned(stop)
        elif stop.function and not self._launcher(stop.function):
            self._kernel_function = stop.function
        self._place = _place(stop)
        if stop.reason not in ("exited", "timeout"):
            stop.workgroup = self.states()
            if stop.reason == "returned" and stop.workgroup is not None:
                # The executor notes a return at its next switch of invocation; the step saw it.
                for entry in stop.workgroup["invocations"]:
                    if entry["state"] == "running":
                        entry["state"] = "returned"
        return stop

    def _launcher(self, function: str | None) -> bool:
        """Not the kernel's code: no frame of the project's (the executor's), or the entry or a
        closure of it (`saxpy::saxpy_cpu::{closure#0}`: the launcher that calls the body)."""
        return function is None or self.session.entry in function.split("::")

    def _returned(self, stop: Stop) -> Stop:
        """A step out of the kernel's last line went on into the launcher (gdb's `next` at a
        function's end stops in its caller), where the invocation's locals are gone: reported as
        the invocation's return, held there; the steps after it continue the launch."""
        self.returned = True
        detail = f"{self._kernel_function} returned: this invocation has ended (Continue runs the launch on)"
        return Stop("returned", invocation=stop.invocation, stack=stop.stack, detail=detail)

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


#: At most this many steps on from a stop that did not move (`Debugger.resume`): a line's code
#: is split in a few blocks, never this many.
_RESTOPS = 16


def _place(stop: Stop) -> tuple | None:
    """Where a stop is, for the user: its line, its frames and its locals' values (None off the
    kernel's code). Two stops alike are the same moment of the invocation's story."""
    if stop.file is None or stop.reason not in ("step", "breakpoint"):
        return None
    frames = tuple((f.get("function"), f.get("file"), f.get("line")) for f in stop.stack)
    values = tuple((v.get("name"), v.get("value")) for v in stop.locals)
    return stop.file, stop.line, stop.function, json.dumps(stop.invocation), frames, values


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
