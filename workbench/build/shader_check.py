"""Shader validation at build time with naga, as wgpu itself validates at pipeline creation.

wgpu-native runs naga when a shader module is created; wgpu-py raises its message, which carries
`┌─ wgsl:LINE:COL` and the offending source line. The check runs in a child process
(`main(["wgsl"|"spirv", FILE])`, one JSON line on stdout) so a broken
driver cannot take the build service down; `naga_diagnostics` turns the message into
`Diagnostic`s with file, line and column, like the Rust ones.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from workbench.records import Diagnostic

_HEAD = re.compile(r"Shader (?:'[^']*' )?(parsing error|validation error):\s*(.*)")
_LOCATION = re.compile(r"┌─\s*[^\n]*?:(\d+):(\d+)")
_CARETS = re.compile(r"^\s*│\s*(\^+)\s*(.*)$")
_NOTE = re.compile(r"^\s*=\s*(.+)$")


def child_command(kind: str, path: Path) -> list[str]:
    """The command that validates `path` (`kind` is "wgsl" or "spirv") in a child process."""
    # `-c`, not `-m`: the build package has imported this module already (runpy would warn).
    code = "import sys; from workbench.build.shader_check import main; sys.exit(main(sys.argv[1:]))"
    return [sys.executable, "-c", code, kind, str(path)]


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
        summary = next((x for x in reversed(lines) if x not in skip), text or "invalid shader")
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


def _validate(kind: str, path: Path) -> dict:
    try:
        import wgpu
    except ImportError:
        return {"shader_check": "skipped", "reason": "wgpu is not installed"}
    try:
        adapter = wgpu.gpu.request_adapter_sync(power_preference="low-power")
        device = adapter.request_device_sync()
    except Exception as exc:  # no adapter: nothing validates here, the run will say more
        return {"shader_check": "skipped", "reason": f"no wgpu adapter to validate with ({exc})"}
    code: str | bytes = path.read_text() if kind == "wgsl" else path.read_bytes()
    try:
        device.create_shader_module(label=path.name, code=code)
    except Exception as exc:
        return {"shader_check": "error", "message": str(exc)}
    return {"shader_check": "ok"}


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("wgsl", "spirv"):
        print("usage: python -m workbench.build.shader_check wgsl|spirv FILE", file=sys.stderr)
        return 2
    print(json.dumps(_validate(argv[0], Path(argv[1]))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
