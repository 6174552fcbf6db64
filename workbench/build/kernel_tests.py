"""A kernel crate's Rust tests (`cargo test`): listed, run all or one, each outcome at its Rust line
(Qt-free: `workbench test` and the window's Tests dock, through `workbench test --json` in a child
process, call these).

1. `build_tests` compiles the test binaries (`cargo test --no-run`, the build's cargo and rustc:
   `host_rust`) in a target dir of their own (`<cache>/targets/test`: never the builds' folder,
   whose cargo lock a build holds); compile errors are diagnostics.
2. `list_tests` asks each binary for its tests (libtest's JSON, `RUSTC_BOOTSTRAP=1`): name, file
   and line of the `#[test]` function.
3. `run_tests` runs each binary (or the one test asked for) as a child process under a time limit:
   a test that hangs is stopped and reported as timed out, a binary that crashes (an abort, a
   signal) has its unfinished tests reported as crashed. A failed test's captured output gives its
   panic's `file:line` and any cpu-sim finding `gpu_kernel::testing` printed (`file:line:col:
   cpu-sim: error[kind]: ...`): each is an error diagnostic at its line. The output a report
   keeps is its first and last characters (`clip_output`): a test may print megabytes.

Doc tests are not run (rustdoc's own harness; the kernel tests are `#[test]` functions).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from workbench import childproc
from workbench.build import cache
from workbench.build.adapters.host_rust import cargo, rustc
from workbench.build.diagnostics import from_cargo_message, parse_cargo_json_line
from workbench.build.install_hints import TOOL_HINTS
from workbench.kernel_api import ensure_crate
from workbench.records import Diagnostic

#: The source the window files test diagnostics under.
SOURCE = "tests"
BUILD_TIMEOUT_S = 300.0
RUN_TIMEOUT_S = 60.0
#: A test's output kept in its report (`TestCase.output`, a failure's diagnostic): its first and
#: last characters, the middle left out with a line saying how much (`clip_output`). A test that
#: printed 100 MB (a println! in a loop) froze the window for 16 s when the run ended and 12 s
#: when the test was selected; its cpu-sim findings are read from the whole output first.
OUTPUT_HEAD_CHARS = 16_000
OUTPUT_TAIL_CHARS = 48_000
#: Lines printed outside libtest's events kept while a binary runs (its stderr, uncaptured output).
LOOSE_LINES = 2_000
#: libtest's unstable JSON output (names, lines, captured output), allowed on a stable rustc.
LIBTEST_JSON = ["-Z", "unstable-options", "--format", "json"]
_PANIC = re.compile(r"panicked at (?P<file>[^\s:][^:]*):(?P<line>\d+):(?P<column>\d+):")
_FINDING = re.compile(
    r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?P<column>\d+): cpu-sim: error\[(?P<kind>[a-z-]+)\]: (?P<message>.*)$"
)


class CargoMissing(RuntimeError):
    def __init__(self) -> None:
        super().__init__(f"cargo is not installed: {TOOL_HINTS['cargo']}")


@dataclass
class TestBinary:
    target: str  # the test target: the crate's name for src/ (unit tests), else tests/NAME.rs's NAME
    kind: str  # "lib" or "test"
    path: str


@dataclass
class TestCase:
    id: str  # "TARGET::NAME": unique across the crate's binaries
    binary: str
    name: str
    file: str | None = None  # relative to the project
    line: int | None = None
    ignored: bool = False
    status: str = "not run"  # "passed" | "failed" | "ignored" | "timed out" | "crashed" | "not run"
    seconds: float | None = None
    output: str = ""  # the test's captured output (a failure's panic message included)
    message: str = ""  # one line: why it failed
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "id": self.id, "name": self.name, "file": self.file, "line": self.line, "ignored": self.ignored,
            "status": self.status, "seconds": self.seconds, "output": self.output, "message": self.message,
            "diagnostics": [d.to_dict() for d in self.diagnostics],
        }  # fmt: skip


def _env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    # RUST_BACKTRACE=0: a failure's output is its message and findings, not the runtime's frames.
    env.update({"CARGO_TERM_COLOR": "never", "CARGO_TERM_PROGRESS_WHEN": "never", "RUSTC_BOOTSTRAP": "1",
                "RUST_BACKTRACE": "0"})  # fmt: skip
    env.update(extra or {})
    return env


def _rel(name: str, base: Path, root: Path) -> str:
    path = Path(name) if Path(name).is_absolute() else base / name
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)


@dataclass
class TestBuild:
    ok: bool
    binaries: list[TestBinary] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    log: list[str] = field(default_factory=list)


def build_tests(
    crate_dir: Path, root: Path, cache_dir: str | Path | None = None, check=lambda: None
) -> TestBuild:
    """Compile the crate's test binaries. Raises CargoMissing."""
    cargo_path, rustc_path = cargo(), rustc()
    if not cargo_path or not rustc_path:
        raise CargoMissing()
    # The kernel API crate first, as every build does (`kernel_api.ensure_crate`).
    problem = ensure_crate(Path(crate_dir))
    if problem is not None:
        return TestBuild(ok=False, diagnostics=[problem.diagnostic(SOURCE, Path(root).resolve())])
    target_dir = cache.target_dir(cache.cache_root(cache_dir), "test")
    cmd = [
        cargo_path,
        "test",
        "--no-run",
        "--offline",
        "--message-format=json",
        "--target-dir",
        str(target_dir),
    ]
    manifest = (Path(crate_dir) / "Cargo.toml").resolve()
    out = TestBuild(ok=False)
    deadline = time.monotonic() + BUILD_TIMEOUT_S

    def limited() -> None:
        check()
        if time.monotonic() > deadline:
            raise TimeoutError(f"building the tests took more than {BUILD_TIMEOUT_S:g} s")

    def on_line(stream: str, line: str) -> None:
        record = parse_cargo_json_line(line) if stream == "stdout" else None
        if record is None:
            out.log.append(line)
        elif record["reason"] == "compiler-message":
            diag = from_cargo_message(record, Path(root).resolve(), SOURCE)
            if diag is not None and diag.severity == "error":
                out.diagnostics.append(diag)
        elif record["reason"] == "compiler-artifact" and record.get("executable"):
            if Path(record.get("manifest_path", "")).resolve() == manifest and (
                record.get("profile") or {}
            ).get("test"):
                target = record.get("target") or {}
                kinds = target.get("kind") or []
                kind = "test" if "test" in kinds else "lib"
                out.binaries.append(TestBinary(target.get("name", ""), kind, record["executable"]))

    done = childproc.stream(
        cmd, cwd=crate_dir, env=_env({"RUSTC": rustc_path}), check=limited, on_line=on_line
    )
    out.ok = done.returncode == 0
    return out


def list_tests(binaries: list[TestBinary], crate_dir: Path, root: Path) -> list[TestCase]:
    """Every test of the binaries, with the file and line of its function."""
    cases = []
    for binary in binaries:
        try:
            done = childproc.capture(
                [binary.path, "--list", *LIBTEST_JSON], timeout_s=30, cwd=crate_dir, env=_env()
            )
        except (OSError, TimeoutError):
            continue
        for line in done.stdout:
            event = _event(line)
            if event.get("type") == "test" and event.get("event") == "discovered":
                source = event.get("source_path")
                cases.append(
                    TestCase(
                        id=f"{binary.target}::{event['name']}",
                        binary=binary.path,
                        name=event["name"],
                        file=_rel(source, Path(crate_dir), Path(root)) if source else None,
                        line=event.get("start_line"),
                        ignored=bool(event.get("ignore")),
                    )  # fmt: skip
                )
    return cases


def _event(line: str) -> dict:
    if not line.startswith("{"):
        return {}
    try:
        value = json.loads(line)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def failure_diagnostics(case: TestCase, crate_dir: Path, root: Path) -> list[Diagnostic]:
    """A failed test's errors: each cpu-sim finding at its line, the panic at its line (an assertion,
    or the launch the findings failed), else the test function's line."""
    diags = []
    for line in case.output.splitlines():
        found = _FINDING.match(line.strip())
        if found:
            diags.append(
                Diagnostic(
                    "error",
                    f"{found['message']} (test {case.name})",
                    file=_rel(found["file"], crate_dir, root),
                    line=int(found["line"]),
                    column=int(found["column"]),
                    code=found["kind"],
                    rendered=line.strip(),
                    backend=SOURCE,
                )  # fmt: skip
            )
    panic = _PANIC.search(case.output)
    where = (
        (_rel(panic["file"], crate_dir, root), int(panic["line"]), int(panic["column"]))
        if panic and not Path(panic["file"]).is_absolute()
        else (case.file, case.line, None)
    )
    diags.append(
        Diagnostic(
            "error",
            f"test {case.name} {case.status}: {case.message}",
            file=where[0],
            line=where[1],
            column=where[2],
            code="test",
            rendered=clip_output(case.output).strip(),
            backend=SOURCE,
        )  # fmt: skip
    )
    return diags


def clip_output(text: str) -> str:
    """`text` itself, or its first `OUTPUT_HEAD_CHARS` and last `OUTPUT_TAIL_CHARS` (cut at line
    ends; the panic's message is at the end) with a line saying what was left out between."""
    if len(text) <= OUTPUT_HEAD_CHARS + OUTPUT_TAIL_CHARS:
        return text
    head = text[:OUTPUT_HEAD_CHARS]
    head = head[: head.rfind("\n") + 1] or head
    tail = text[-OUTPUT_TAIL_CHARS:]
    tail = tail[tail.find("\n") + 1 :] or tail
    left = len(text) - len(head) - len(tail)
    lines = text.count("\n", len(head), len(text) - len(tail))
    return (
        f"{head}[… {left:,} characters ({lines:,} lines) of this test's output left out; "
        f"`cargo test` in the crate shows all of it …]\n{tail}"
    )


def _why(output: str) -> str:
    """The panic's message, in one line (the line after "panicked at FILE:LINE:COL:")."""
    lines = output.splitlines()
    for k, line in enumerate(lines):
        if _PANIC.search(line):
            rest = line[_PANIC.search(line).end() :].strip()
            if rest:
                return rest
            return next((ln.strip() for ln in lines[k + 1 :] if ln.strip()), "panicked")
    return next((ln.strip() for ln in lines if ln.strip()), "")


def run_tests(cases: list[TestCase], crate_dir: Path, root: Path, only: str | None = None,
              timeout_s: float = RUN_TIMEOUT_S, check=lambda: None) -> list[TestCase]:  # fmt: skip
    """Run the tests (all, or the one whose id or name is `only`), each binary a child process
    under `timeout_s`; fills in each case's status, output, message and diagnostics."""
    chosen = [c for c in cases if only is None or only in (c.id, c.name)]
    by_binary: dict[str, list[TestCase]] = {}
    for case in chosen:
        by_binary.setdefault(case.binary, []).append(case)
    for binary, group in by_binary.items():
        _run_binary(binary, group, Path(crate_dir), Path(root), only is not None, timeout_s, check)
    return chosen


def _run_binary(binary: str, group: list[TestCase], crate_dir: Path, root: Path, one: bool,
                timeout_s: float, check) -> None:  # fmt: skip
    cmd = [binary, *LIBTEST_JSON, "--report-time"]
    if one:
        cmd += [group[0].name, "--exact"]
    _stream(cmd, group, crate_dir, timeout_s, check)
    # A crash (a panic inside a fiber aborts: it cannot unwind through the stack switch) takes
    # every test running beside it, and the captured output with it: each is run again alone,
    # its output not captured, so the one that crashed has its panic's message and line and the
    # others their own outcome.
    for case in [c for c in group if c.status == "crashed"]:
        alone = [binary, *LIBTEST_JSON, case.name, "--exact", "--nocapture", "--test-threads", "1"]
        _stream(alone, [case], crate_dir, timeout_s, check)
    for case in group:
        if case.status in ("failed", "timed out", "crashed"):
            case.diagnostics = failure_diagnostics(case, crate_dir, root)  # from the whole output
        case.output = clip_output(case.output)


def _stream(cmd: list[str], group: list[TestCase], crate_dir: Path, timeout_s: float, check) -> None:
    """Run one test binary under `timeout_s`, its JSON events filling in `group`'s cases."""
    names = {c.name: c for c in group}
    started: dict[str, float] = {}
    # What the binary printed outside its events (stderr, uncaptured output): its last lines.
    loose: deque[str] = deque(maxlen=LOOSE_LINES)
    deadline = time.monotonic() + timeout_s

    def limited() -> None:
        check()
        if time.monotonic() > deadline:
            raise TimeoutError

    def on_line(stream: str, line: str) -> None:
        event = _event(line) if stream == "stdout" else {}
        if not event:
            loose.append(line)
            return
        case = names.get(event.get("name", "")) if event.get("type") == "test" else None
        if case is None:
            return
        what = event.get("event")
        if what == "started":
            started[case.name] = time.monotonic()
            case.status, case.output, case.message = "running", "", ""
            return
        case.seconds = event.get("exec_time")
        case.output = event.get("stdout") or "\n".join(loose)
        case.status = {"ok": "passed", "failed": "failed", "ignored": "ignored"}.get(what, what or "")
        if case.status == "failed":
            case.message = event.get("message") or _why(case.output)

    timed_out, returncode = False, None
    try:
        returncode = childproc.stream(
            cmd, cwd=crate_dir, env=_env(), check=limited, on_line=on_line
        ).returncode
    except TimeoutError:
        timed_out = True
    for case in group:
        if case.status == "failed" and not case.output.strip():
            # Not captured (--nocapture): its panic went to stderr, read on a pipe of its own.
            case.output = "\n".join(list(loose)[-200:])
            case.message = case.message or _why(case.output)
        if case.status != "running":
            continue
        case.seconds = time.monotonic() - started.get(case.name, time.monotonic())
        case.output = "\n".join(list(loose)[-200:])
        if timed_out:
            case.status = "timed out"
            case.message = f"still running after {timeout_s:g} s: stopped"
        else:
            case.status = "crashed"
            why = _why(case.output) if _PANIC.search(case.output) else ""
            case.message = f"the test process died ({_signal(returncode)})" + (f": {why}" if why else "")


def _signal(returncode: int | None) -> str:
    if returncode is not None and returncode < 0:
        import signal

        try:
            return f"signal {signal.Signals(-returncode).name}"
        except ValueError:
            return f"signal {-returncode}"
    return f"exit status {returncode}"
