"""SPIR-V validation errors at Rust lines: spirv-val's and naga's messages -> `Diagnostic`s.

spirv-val names the failing instruction by its 1-based index ("error: line 19: …") and prints it
disassembled; naga names an instruction kind, a capability, an id or an `OpName`. Each is found in
the module's disassembly (`SpirvLines`) and placed at the nearest preceding `OpLine` of its block:
the error is at that Rust file:line, the instruction shown with its `OpName`s, and a note keeps the
SPIR-V location. A module without `OpLine` gets the error at the module, saying which build option
adds line information (`spirv_lines.NO_LINES_HINT`).
"""

from __future__ import annotations

import re
from pathlib import Path

from workbench.build.shader_check import naga_diagnostics
from workbench.build.spirv_lines import NO_LINES_HINT, SpirvLines
from workbench.records import Diagnostic

_VAL_HEAD = re.compile(r"^(error|warning):\s*(?:line (\d+):\s*)?(.*)$")
_NAGA_INSTRUCTION = re.compile(r"unsupported instruction (\w+) at (\w+)")
_NAGA_CAPABILITY = re.compile(r"unsupported capability (\w+)")
_NAGA_ID = re.compile(r"InvalidId\((\d+)\)|\bid (\d+)\b")
_NAGA_NAME = re.compile(r"'([^']+)'")


class RustPaths:
    """OpString paths (as rustc wrote them, relative to the crate it compiled) -> project paths."""

    def __init__(self, crate: Path | None = None, project_root: Path | None = None):
        self.crate, self.root = crate, project_root

    def __call__(self, written: str) -> str:
        path = Path(written)
        if not path.is_absolute() and self.crate is not None:
            path = self.crate / path
        if self.root is not None:
            try:
                return path.resolve().relative_to(self.root.resolve()).as_posix()
            except (ValueError, OSError):
                pass
        return written


def nearest_location(lines: SpirvLines, text_line: int) -> tuple[str, int, int | None] | None:
    """(file as written, line, column) of a disassembly line: its own `OpLine`, else the nearest
    preceding one in the same block (an `OpNoLine` between them does not hide it)."""
    index = next((i for i, n in enumerate(lines.instruction_lines) if n == text_line), None)
    if index is None:
        return None
    for number in reversed(lines.instruction_lines[: index + 1]):
        if number in lines.line_of:
            file, line = lines.line_of[number]
            return lines.files.get(file, ""), line, lines.column_of.get(number)
        op = lines.instruction_text(number).split("=", 1)[-1].split()
        if number != text_line and op and op[0] in ("OpLabel", "OpFunction", "OpFunctionEnd"):
            return None  # the block (or function) starts here: nothing before it is this block's
    return None


def located(
    severity: str, summary: str, lines: SpirvLines | None, text_line: int | None, module: str,
    backend: str, paths: RustPaths, rendered: str = "",
) -> list[Diagnostic]:  # fmt: skip
    """The diagnostic at the Rust line behind a disassembly line, and a note with the SPIR-V place."""
    instruction = lines.instruction_text(text_line) if lines is not None and text_line else ""
    index = lines.instruction_lines.index(text_line) + 1 if instruction else None
    where = f"{module}: instruction {index} (disassembly line {text_line})" if index else module
    note = f"SPIR-V {where}" + (f": {instruction}" if instruction else "")
    hit = nearest_location(lines, text_line) if instruction else None
    if hit is None:
        why = NO_LINES_HINT if lines is None or not lines.has_lines else "no OpLine before it in its block"
        note += f" ({why})"
        text = "\n".join(x for x in (f"{severity}: {summary}", f"  {instruction}" if instruction else "",
                                      f"  = note: {note}", rendered) if x)  # fmt: skip
        return [Diagnostic(severity, summary + (f": {instruction}" if instruction else ""), rendered=text,
                           backend=backend),
                Diagnostic("note", note, backend=backend)]  # fmt: skip
    file, line, column = hit
    text = "\n".join(x for x in (f"{severity}: {summary}", f"  --> {paths(file)}:{line}", f"  {instruction}",
                                  f"  = note: {note}", rendered) if x)  # fmt: skip
    return [
        Diagnostic(severity, f"{summary}: {instruction}", file=paths(file), line=line, column=column,
                   rendered=text, backend=backend),
        Diagnostic("note", note, backend=backend),
    ]  # fmt: skip


def spirv_val_diagnostics(
    output: str, lines: SpirvLines | None, module: str, backend: str, paths: RustPaths | None = None
) -> list[Diagnostic]:
    """spirv-val's report on `module` -> diagnostics at Rust lines (each with its SPIR-V note)."""
    paths = paths or RustPaths()
    diags: list[Diagnostic] = []
    for head, body in _blocks(output):
        m = _VAL_HEAD.match(head)
        if m is None:
            continue
        severity, number, summary = m.group(1), m.group(2), m.group(3).strip()
        text_line = lines.text_line(int(number)) if lines is not None and number else None
        rendered = "\n".join([head, *body])
        diags += located(
            severity, f"spirv-val: {summary}", lines, text_line, module, backend, paths, rendered
        )
    return diags


def naga_spirv_diagnostics(
    message: str, lines: SpirvLines | None, module: str, backend: str, paths: RustPaths | None = None
) -> list[Diagnostic]:
    """naga's refusal of a SPIR-V module -> a diagnostic at the Rust line of what it names."""
    (base,) = naga_diagnostics(message, None, backend)
    text_line = _naga_target(message, lines) if lines is not None else None
    return located("error", base.message, lines, text_line, module, backend, paths or RustPaths(),
                   base.rendered)  # fmt: skip


_LINK_HEAD = re.compile(r"^error: (?:error:(\d+):(\d+) - |line (\d+): )?(.*)$")
_LINK_MODULE = re.compile(r"^\s*= note: module `(.+)`\s*$")


def link_validation_errors(text: str) -> list[dict]:
    """rust-gpu's own spirv-val failures in rustc's rendering (crates/rustc_codegen_spirv/src/link.rs
    `do_spirv_val`: the spirv-tools error, `note: spirv-val failed`, `note: module PATH` in backquotes;
    the error reads `error:0:0 - MESSAGE` from the linked validator, rust-gpu#323) ->
    [{head, message, index, instruction, module}] (index None where the validator gave none)."""
    found: list[dict] = []
    current: dict | None = None
    for line in text.splitlines():
        if m := _LINK_HEAD.match(line):
            current = {"head": line[len("error: ") :], "message": m.group(4).strip(),
                       "index": int(m.group(3) or m.group(1) or 0) or None, "instruction": "",
                       "failed": False, "module": ""}  # fmt: skip
            continue
        if current is None:
            continue
        stripped = line.strip()
        if stripped == "= note: spirv-val failed":
            current["failed"] = True
        elif m := _LINK_MODULE.match(line):
            current["module"] = m.group(1)
            if current["failed"]:
                found.append(current)
            current = None
        elif stripped and not current["instruction"] and not stripped.startswith(("|", "=")):
            current["instruction"] = stripped
    return found


def link_diagnostics(
    error: dict, lines: SpirvLines | None, backend: str, paths: RustPaths | None = None
) -> list[Diagnostic]:
    """One of `link_validation_errors` at the Rust line of its instruction: found by its text in
    the module's disassembly (the validator's index is 0 there), else by its index."""
    text_line = None
    if lines is not None:
        wanted = " ".join(error["instruction"].split())
        text_line = next((n for n in lines.instruction_lines
                          if wanted and " ".join(lines.instruction_text(n).split()) == wanted), None)  # fmt: skip
        if text_line is None and error["index"]:
            text_line = lines.text_line(error["index"])
    module = Path(error["module"]).name
    summary = f"spirv-val: {error['message']}"
    rendered = "\n".join(x for x in (f"error: {error['head']}", f"  {error['instruction']}" if error["instruction"]
                                     else "", f"  = note: module `{error['module']}`") if x)  # fmt: skip
    diags = located("error", summary, lines, text_line, module, backend, paths or RustPaths(), rendered)
    if lines is None:  # the module could not be read: say so rather than point nowhere silently
        diags[-1].message += f" (module {error['module']} could not be disassembled)"
    return diags


def _naga_target(message: str, lines: SpirvLines) -> int | None:
    """The disassembly line of what naga's message names (an instruction kind and section, a
    capability, an id, an OpName), or None."""
    ops = [(n, lines.instruction_text(n).split("=", 1)[-1].split()) for n in lines.instruction_lines]
    if m := _NAGA_INSTRUCTION.search(message):
        wanted = "Op" + m.group(1)
        in_function = m.group(2) == "Function"
        inside = False
        for number, words in ops:
            inside = (inside or words[:1] == ["OpFunction"]) and words[:1] != ["OpFunctionEnd"]
            if words[:1] == [wanted] and inside == in_function:
                return number
    if m := _NAGA_CAPABILITY.search(message):
        return next((n for n, words in ops if words[:2] == ["OpCapability", m.group(1)]), None)
    if m := _NAGA_ID.search(message):
        return lines.definitions.get(f"%{m.group(1) or m.group(2)}")
    for name in reversed(_NAGA_NAME.findall(message)):  # the innermost thing naga names is last
        if (number := lines.defined_by_name(name)) is not None:
            return _first_located(lines, number)
    return None


def _first_located(lines: SpirvLines, number: int) -> int:
    """A function's definition line has no OpLine of its own: its first located line stands for it."""
    if lines.instruction_text(number).split("=", 1)[-1].split()[:1] != ["OpFunction"]:
        return number
    return next((n for n in lines.instruction_lines if n > number and n in lines.line_of), number)


def _blocks(output: str) -> list[tuple[str, list[str]]]:
    """spirv-val's output as (head line, the indented lines under it)."""
    blocks: list[tuple[str, list[str]]] = []
    for line in output.splitlines():
        if _VAL_HEAD.match(line):
            blocks.append((line, []))
        elif blocks and line.strip():
            blocks[-1][1].append(line)
    return blocks
