"""Shader validation at build time with naga, as wgpu itself validates at pipeline creation.

wgpu-native runs naga when a shader module is created; wgpu-py raises its message, which carries
`┌─ wgsl:LINE:COL` and the offending source line. The check runs in a child process, so a broken
driver cannot take the build service down: `Validator` keeps one alive (`serve()`: one JSON
request per stdin line, one JSON answer per stdout line), because starting Python, wgpu and an
adapter costs most of a second and a WGSL save must stay well under that; a child that dies or
hangs is killed and replaced. `main(["wgsl"|"spirv", FILE])` is the one-shot form; both run as
`python -m workbench.build.naga_child` (through `workbench.frozen.python_command`, so the
installed bundle starts them too).
`naga_diagnostics` turns naga's message into `Diagnostic`s with file, line and column.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

from workbench import childproc
from workbench.build import wgpu_features
from workbench.build.scratch import runtime_dir
from workbench.frozen import python_command
from workbench.records import Diagnostic

#: The child's module (`python -m`, or the bundle's child dispatch).
CHILD_MODULE = "workbench.build.naga_child"

_HEAD = re.compile(r"Shader (?:'[^']*' )?(parsing error|validation error):\s*(.*)")
_LOCATION = re.compile(r"┌─\s*[^\n]*?:(\d+):(\d+)")
_CARETS = re.compile(r"^\s*│\s*(\^+)\s*(.*)$")
_NOTE = re.compile(r"^\s*=\s*(.+)$")


def child_command(kind: str, path: Path) -> list[str]:
    """The command that validates `path` (`kind` is "wgsl" or "spirv") in a one-shot child."""
    return python_command(CHILD_MODULE, kind, str(path))


def naga_diagnostics(message: str, file: str | None, backend: str) -> list[Diagnostic]:
    """naga's error text (as wgpu raises it) -> one error Diagnostic, located when naga says where."""
    text = message.strip()
    head = _HEAD.search(text)
    summary = head.group(2).strip() if head else ""
    line = column = end_column = None
    if m := _LOCATION.search(text):
        line, column = int(m.group(1)), int(m.group(2))
    label = ""
    notes: list[str] = []
    for raw in text.splitlines():
        if m := _CARETS.match(raw):
            end_column = (column or 1) + len(m.group(1))
            label = label or m.group(2).strip()
        elif m := _NOTE.match(raw):
            if m.group(1) not in notes:
                notes.append(m.group(1).strip())
    if not summary:  # no "Shader … error:" line (e.g. a SPIR-V module naga cannot read)
        lines = [x.strip() for x in text.splitlines() if x.strip()]
        skip = ("Validation Error", "Caused by:", "In wgpuDeviceCreateShaderModule")
        summary = next(
            (x for x in reversed(lines) if x not in skip and not _NOTE.match(x)), text or "invalid shader"
        )
    if label and not label.startswith("naga::") and label not in summary:
        summary += f": {label}"
    if notes:
        summary += " (" + "; ".join(notes) + ")"
    kind = head.group(1) if head else "validation error"
    rendered = text[head.start() :] if head else text
    return [
        Diagnostic(
            "error",
            f"naga {kind}: {summary}",
            file=file,
            line=line,
            column=column,
            end_line=line if end_column else None,
            end_column=end_column,
            rendered=rendered,
            backend=backend,
        )
    ]


def parse_child_output(stdout_line: str) -> dict | None:
    """The child's JSON answer, or None when the line is something else."""
    try:
        data = json.loads(stdout_line)
    except ValueError:
        return None
    return data if isinstance(data, dict) and "shader_check" in data else None


_DEVICE: list = []  # the child's wgpu device, made once
_ADAPTERS: dict[str, list[str]] = {}  # every adapter here -> its features (for capability errors)


def _device():
    """The device shaders are validated on: of the adapters here, the one granting the most of
    the runtime's features, opened as the runtime opens it (`wgpu_features.open_device`)."""
    import wgpu

    if not _DEVICE:
        adapters = list(wgpu.gpu.enumerate_adapters_sync())
        if not adapters:
            raise RuntimeError("wgpu found no adapter")
        for adapter in adapters:
            name = adapter.info.get("device") or adapter.info.get("description") or "adapter"
            _ADAPTERS[f"{name} · {adapter.info.get('backend_type', '')}"] = sorted(adapter.features)
        best = max(adapters, key=lambda a: len(wgpu_features.granted(a.features)))
        _DEVICE.append(wgpu_features.open_device(best, "workbench naga validator"))
    return _DEVICE[0]


def _validate(kind: str, path: Path) -> dict:
    try:
        import wgpu  # noqa: F401
    except ImportError:
        return {"shader_check": "skipped", "reason": "wgpu is not installed"}
    try:
        device = _device()
    except Exception as exc:  # no adapter: nothing validates here, the run will say more
        return {"shader_check": "skipped", "reason": f"no wgpu adapter to validate with ({exc})"}
    try:
        code: str | bytes = path.read_text() if kind == "wgsl" else path.read_bytes()
    except OSError as exc:
        return {"shader_check": "error", "message": f"cannot read {path}: {exc}"}
    try:
        device.create_shader_module(label=path.name, code=code)
    except Exception as exc:
        message = str(exc)
        # naga's own "= …" note form, so the diagnostic carries it after naga's summary
        if needs := wgpu_features.explain_missing(message, _ADAPTERS):
            message = message.rstrip() + f"\n  = {needs}\n"
        return {"shader_check": "error", "message": message}
    return {"shader_check": "ok"}


def serve() -> int:
    """The persistent child: {"kind", "path"} per stdin line -> one answer per stdout line."""
    for line in sys.stdin:
        try:
            request = json.loads(line)
            answer = _validate(request["kind"], Path(request["path"]))
        except (ValueError, KeyError, TypeError) as exc:
            answer = {"shader_check": "skipped", "reason": f"bad request: {exc}"}
        print(json.dumps(answer), flush=True)
    return 0


def child_env() -> dict[str, str]:
    """The environment, with a private XDG_RUNTIME_DIR when there is none (Mesa complains into
    the build log otherwise)."""
    env = dict(os.environ)
    if not os.path.isdir(env.get("XDG_RUNTIME_DIR", "")):
        env["XDG_RUNTIME_DIR"] = runtime_dir()
    return env


class Validator:
    """One persistent validator child, shared by every build of this process (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._stderr: threading.Thread | None = None

    def owned(self) -> list:
        """The child's pid and its stderr reader (they live as long as this process, on purpose)."""
        proc, reader = self._proc, self._stderr
        owned: list = [reader] if reader is not None else []
        if proc is not None and proc.poll() is None:
            owned.append(proc.pid)
        return owned

    def validate(self, kind: str, path: Path, timeout_s: float = 60.0) -> dict:
        with self._lock:
            for attempt in (1, 2):  # a child that died between builds is replaced once
                proc = self._child()
                try:
                    proc.stdin.write((json.dumps({"kind": kind, "path": str(path)}) + "\n").encode())
                    proc.stdin.flush()
                except (BrokenPipeError, OSError):
                    self._stop()
                    continue
                line = self._read_line(proc, timeout_s)
                answer = parse_child_output(line) if line else None
                if answer is not None:
                    return answer
                code = proc.poll()
                self._stop()
                if code is None:  # alive but silent: hung
                    return {"shader_check": "error", "message": f"the naga validator hung on {path.name}"}
                if attempt == 2 or code != 0:
                    # wgpu-native aborts on some inputs instead of raising: not valid either.
                    return {"shader_check": "error",
                            "message": f"the naga validator stopped (exit {code}) on {path.name}"}  # fmt: skip
            return {"shader_check": "skipped", "reason": "the validator could not be started"}

    def close(self) -> None:
        with self._lock:
            self._stop()

    def _child(self) -> subprocess.Popen:
        if self._proc is None or self._proc.poll() is not None:
            self._proc = childproc.spawn(
                python_command(CHILD_MODULE, "serve"), env=child_env(), stdin=subprocess.PIPE
            )
            # Drained, never read: wgpu's warnings about the environment are no shader's business.
            self._stderr = childproc.pump_lines(self._proc.stderr, lambda line: None, name="wb-naga-stderr")
        return self._proc

    @staticmethod
    def _read_line(proc: subprocess.Popen, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return ""
            ready, _, _ = select.select([proc.stdout], [], [], min(remaining, 0.5))
            if ready:
                return proc.stdout.readline().decode(errors="replace")  # "" at EOF (the child died)
            if proc.poll() is not None:
                return ""

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            childproc.stop_tree(proc, grace_s=0.5)


_VALIDATOR = Validator()
atexit.register(_VALIDATOR.close)


def validate(kind: str, path: Path, timeout_s: float = 60.0) -> dict:
    """naga's verdict on one shader file: {"shader_check": "ok" | "error" | "skipped", ...}."""
    return _VALIDATOR.validate(kind, path, timeout_s)


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("wgsl", "spirv"):
        print("usage: python -m workbench.build.shader_check wgsl|spirv FILE", file=sys.stderr)
        return 2
    print(json.dumps(_validate(argv[0], Path(argv[1]))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
