"""Compiler output -> `Diagnostic` records located in the project (cargo JSON, rustc text, nvcc, ptxas)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from workbench.records import Diagnostic

# rustc's closing summaries carry no location and repeat what the located messages say.
_SUMMARY = re.compile(r"^(aborting due to|\d+ warnings? emitted|could not compile)")


def _relative(path: Path, base: Path, root: Path) -> str:
    """`path` (taken from `base` when relative) relative to the project root when inside it."""
    path = path if path.is_absolute() else base / path
    try:
        return path.resolve().relative_to(root).as_posix()
    except (ValueError, OSError):
        return str(path)


def _primary_span(spans: list[dict[str, Any]], base: Path, root: Path) -> dict[str, Any] | None:
    """The primary span, followed out of macro expansions until it lands in the project."""
    span = next((s for s in spans if s.get("is_primary")), spans[0] if spans else None)
    seen = 0
    while span is not None and seen < 16:
        path = Path(span.get("file_name", ""))
        path = path if path.is_absolute() else base / path
        inside = path.resolve().is_relative_to(root)
        expansion = span.get("expansion")
        if inside or not expansion or not expansion.get("span"):
            break
        span = expansion["span"]
        seen += 1
    return span


def from_cargo_message(record: dict[str, Any], root: Path, backend: str = "") -> Diagnostic | None:
    """A `compiler-message` record of `cargo --message-format=json`, or None for summaries."""
    msg = record.get("message") or {}
    text = msg.get("message", "")
    if _SUMMARY.match(text) and not msg.get("spans"):
        return None
    base = Path(record.get("manifest_path", root / "Cargo.toml")).parent
    span = _primary_span(msg.get("spans") or [], base, root)
    diag = Diagnostic(
        severity=_severity(msg.get("level", "error")),
        message=text,
        code=(msg.get("code") or {}).get("code"),
        rendered=msg.get("rendered") or text,
        backend=backend,
    )
    if span:
        diag.file = _relative(Path(span["file_name"]), base, root)
        diag.line, diag.column = span.get("line_start"), span.get("column_start")
        diag.end_line, diag.end_column = span.get("line_end"), span.get("column_end")
    return diag


def json_record(line: str) -> dict[str, Any] | None:
    """One line of a JSON stream (rustc's `--error-format=json`, cargo's messages) as a dict, or
    None when it is plain text."""
    if not line.startswith("{"):
        return None
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def parse_cargo_json_line(line: str) -> dict[str, Any] | None:
    """One stdout line of cargo's JSON stream, or None when it is plain text."""
    record = json_record(line)
    return record if record is not None and "reason" in record else None


def _severity(level: str) -> str:
    level = level.lower()
    if level.startswith("error") or level == "fatal":
        return "error"
    if level.startswith("warn"):
        return "warning"
    return level if level in ("note", "help") else "note"


# error[E0425]: cannot find value `zz` in this scope
#   --> src/lib.rs:11:27
_RUST_HEAD = re.compile(r"^(error|warning)(?:\[(\w+)\])?: (.+)$")
_RUST_LOC = re.compile(r"^\s*--> (.+?):(\d+):(\d+)$")


def parse_rustc_text(text: str, base: Path, root: Path, backend: str = "") -> list[Diagnostic]:
    """rustc's human-readable diagnostics (cargo-gpu and cuda_builder print only these)."""
    diags: list[Diagnostic] = []
    current: Diagnostic | None = None
    block: list[str] = []

    def close() -> None:
        if current is not None:
            current.rendered = "\n".join(block).rstrip()
            if not (_SUMMARY.match(current.message) and current.file is None):
                diags.append(current)

    for line in text.splitlines():
        head = _RUST_HEAD.match(line)
        if head:
            close()
            current = Diagnostic(_severity(head[1]), head[3], code=head[2], backend=backend)
            block = [line]
            continue
        if current is None:
            continue
        if not line.strip() and block and not block[-1].strip():
            close()
            current, block = None, []
            continue
        block.append(line)
        loc = _RUST_LOC.match(line)
        if loc and current.file is None:
            current.file = _relative(Path(loc[1]), base, root)
            current.line, current.column = int(loc[2]), int(loc[3])
    close()
    return diags


# bad.cu(2): error: identifier "zz" is undefined      /  x.cu(7): warning #177-D: ...
_NVCC = re.compile(r"^(.+?)\((\d+)\): (error|warning|note|remark)(?: #[\w-]+)?: (.+)$")


def parse_nvcc(text: str, cwd: Path, root: Path, backend: str = "cuda-c") -> list[Diagnostic]:
    diags: list[Diagnostic] = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _NVCC.match(line)
        if not m:
            continue
        rendered = [line]
        # nvcc follows each message with the source line and a caret.
        for extra in lines[i + 1 : i + 3]:
            if _NVCC.match(extra) or not extra.strip():
                break
            rendered.append(extra)
        diags.append(
            Diagnostic(
                severity=_severity(m[3]),
                message=m[4],
                file=_relative(Path(m[1]), cwd, root),
                line=int(m[2]),
                rendered="\n".join(rendered),
                backend=backend,
            )
        )
    return diags


# ptxas bad.ptx, line 28; error   : Unknown modifier '.zz32'
_PTXAS = re.compile(r"^ptxas (.+?), line (\d+); (error|warning)\s*: (.+)$")
_PTXAS_FATAL = re.compile(r"^ptxas (fatal|error)\s*: (.+)$")


def parse_ptxas(text: str, artifact_name: str, backend: str = "") -> list[Diagnostic]:
    """ptxas messages; their file is the PTX artifact (its name inside the artifact folder)."""
    diags = []
    for line in text.splitlines():
        m = _PTXAS.match(line)
        if m:
            diags.append(
                Diagnostic(
                    severity=_severity(m[3]),
                    message=m[4].strip(),
                    file=artifact_name,
                    line=int(m[2]),
                    rendered=line,
                    code="ptxas",
                    backend=backend,
                )  # fmt: skip
            )
            continue
        m = _PTXAS_FATAL.match(line)
        if m:
            diags.append(Diagnostic("error", m[2].strip(), rendered=line, code="ptxas", backend=backend))
    return diags


def error(message: str, backend: str, rendered: str = "") -> Diagnostic:
    """A diagnostic of the workbench itself (missing entry point, timeout, ...)."""
    return Diagnostic("error", message, rendered=rendered or f"error: {message}", backend=backend)
