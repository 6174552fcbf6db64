"""Rust ↔ SPIR-V line map from a module's disassembly (`spirv-dis`): the PTX view's map, for SPIR-V.

rust-gpu keeps source positions only when asked (`--spirv-metadata full`): `%N = OpString "src/lib.rs"`
names a file and `OpLine %N LINE COL` applies to the instructions after it until the next `OpLine`,
an `OpNoLine`, or the end of its block (SPIR-V spec, 3.42.2). `NonSemantic.Shader.DebugInfo.100`'s DebugLine /
DebugNoLine say the same and are read too. rust-gpu's own `SetDebugSrcLoc` / `ClearDebugSrcLoc`
(`OpExtInstImport "Rust.rustc_codegen_spirv.…"`, crates/rustc_codegen_spirv/src/custom_insts.rs)
never reach a module it writes: its linker lowers them to `OpLine` / `OpNoLine` (and spirv-dis /
spirv-val refuse that instruction set), so `OpLine` is what a built module carries.

    lines = SpirvLines.parse(spvasm_text)
    lines.source_for(24)                  # -> ("src/lib.rs", 8): disassembly line 24 came from there
    lines.ptx_lines_for("/abs/src/lib.rs", 8)   # -> [24] (the same call as for PTX)
    lines.text_line(19)                   # -> 24: spirv-val's "line 19" is the 19th instruction
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from workbench.build.ptx_lines import PtxLines

#: What to say when a module has no line information, and the build option that adds it.
NO_LINES_HINT = (
    "no line information (no OpLine): build with `--spirv-metadata full` (cargo gpu build) or "
    "spirv-builder's `.spirv_metadata(SpirvMetadata::Full)` to keep Rust lines and names"
)

_INSTRUCTION = re.compile(r"^\s*(?:(%[\w.\-]+)\s*=\s*)?(Op\w+)\b\s*(.*)$")
_STRING = re.compile(r'^"((?:[^"\\]|\\.)*)"')
#: Instructions that end a block: an OpLine before them does not reach past them.
_TERMINATORS = {"OpBranch", "OpBranchConditional", "OpSwitch", "OpReturn", "OpReturnValue", "OpKill",
                "OpUnreachable", "OpTerminateInvocation", "OpIgnoreIntersectionKHR",
                "OpTerminateRayKHR", "OpEmitMeshTasksEXT"}  # fmt: skip
_ENDS_SCOPE = {"OpNoLine", "OpLabel", "OpFunctionEnd"}
DEBUG_INFO_SET = "NonSemantic.Shader.DebugInfo.100"


@dataclass
class SpirvLines(PtxLines):
    """PtxLines over a disassembly (1-based text lines), with the instruction ↔ text line index."""

    #: the text line (1-based) of each instruction, in module order (spirv-val counts them from 1)
    instruction_lines: list[int] = field(default_factory=list)
    #: result id as written (`%sum`, `%24`) -> the text line that defines it
    definitions: dict[str, int] = field(default_factory=dict)
    #: disassembly line -> the column its OpLine gives (where it gives one)
    column_of: dict[int, int] = field(default_factory=dict)
    #: OpName target id -> its name
    names: dict[str, str] = field(default_factory=dict)
    text: list[str] = field(default_factory=list)

    @classmethod
    def parse(cls, text: str) -> SpirvLines:
        out = cls(text=text.splitlines())
        strings: dict[str, int] = {}  # OpString / DebugSource id -> file index
        constants: dict[str, int] = {}
        ext_sets: dict[str, str] = {}
        current: tuple[int, int] | None = None
        column = 0
        for number, line in enumerate(out.text, start=1):
            m = _INSTRUCTION.match(line)
            if not m or line.lstrip().startswith(";"):
                continue
            result, op, rest = m.group(1), m.group(2), m.group(3).strip()
            out.instruction_lines.append(number)
            if result:
                out.definitions[result] = number
            words = rest.split()
            if op == "OpString" and result and (s := _STRING.match(rest)):
                strings[result] = len(out.files) + 1
                out.files[strings[result]] = s.group(1)
                continue
            if op == "OpName" and words and (s := _STRING.match(rest[len(words[0]) :].strip())):
                out.names[words[0]] = s.group(1)
                continue
            if op == "OpExtInstImport" and result and (s := _STRING.match(rest)):
                ext_sets[result] = s.group(1)
                continue
            if op in ("OpConstant", "OpSpecConstant") and result and len(words) >= 2:
                try:
                    constants[result] = int(words[1], 0)
                except ValueError:
                    pass
            if op == "OpLine" and len(words) >= 2 and words[0] in strings:
                line_no = _int(words[1])
                current = (strings[words[0]], line_no) if line_no else None
                column = _int(words[2]) if len(words) > 2 else 0
                if current is not None:  # the OpLine itself belongs to the line it names
                    out.line_of[number] = current
                continue
            if op == "OpExtInst" and len(words) >= 3:
                kind = ext_sets.get(words[1], "")
                located = _debug_location(kind, words[2], words[3:], strings, constants, result)
                if located is not _NOT_DEBUG:
                    if isinstance(located, str):  # a DebugSource naming a file
                        strings[result] = strings[located]
                    else:
                        current, column = located if located else (None, 0)
                        if current is not None:
                            out.line_of[number] = current
                    continue
            if op in _ENDS_SCOPE:
                current = None
            if current is not None:
                out.line_of[number] = current
                if column:
                    out.column_of[number] = column
            if op in _TERMINATORS:
                current = None
        return out

    def text_line(self, instruction: int) -> int | None:
        """The disassembly line of the 1-based `instruction` (spirv-val's "line N"), or None."""
        if 1 <= instruction <= len(self.instruction_lines):
            return self.instruction_lines[instruction - 1]
        return None

    def instruction_text(self, text_line: int) -> str:
        """The instruction on a disassembly line, as spirv-dis wrote it (names from OpName)."""
        return self.text[text_line - 1].strip() if 1 <= text_line <= len(self.text) else ""

    def defined_by_name(self, name: str) -> int | None:
        """The text line defining the id OpName calls `name` (naga names what it rejects so)."""
        for target, given in self.names.items():
            if given == name and target in self.definitions:
                return self.definitions[target]
        return None


_NOT_DEBUG = object()


def _debug_location(kind, instruction, operands, strings, constants, result):
    """What a `NonSemantic.Shader.DebugInfo.100` instruction says: ((file, line), column), None
    (cleared), a file id (DebugSource, as the OpString id it names), or _NOT_DEBUG for any other
    extended instruction."""
    if kind != DEBUG_INFO_SET:
        return _NOT_DEBUG
    if instruction == "DebugSource" and operands and operands[0] in strings and result:
        return operands[0]
    if instruction == "DebugLine" and len(operands) >= 2 and operands[0] in strings:
        line = constants.get(operands[1], 0)
        column = constants.get(operands[3], 0) if len(operands) > 3 else 0
        return ((strings[operands[0]], line), column) if line else None
    if instruction == "DebugNoLine":
        return None
    return _NOT_DEBUG


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        return 0
