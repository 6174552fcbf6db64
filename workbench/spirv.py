"""Reading SPIR-V modules: words, instructions, strings and entry points (SPIR-V spec, section 2.3).

Shared by the build (artifact and resource reports) and the wgpu runtime (what a module declares).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

MAGIC = 0x07230203
HEADER_WORDS = 5
OP_ENTRY_POINT, OP_EXECUTION_MODE = 15, 16
EXECUTION_MODE_LOCAL_SIZE = 17
EXECUTION_MODELS = {0: "vertex", 4: "fragment", 5: "compute", 5364: "task", 5365: "mesh"}


def words(data: bytes) -> list[int]:
    """The module as 32-bit words in host order, whichever byte order it was written in."""
    if len(data) < HEADER_WORDS * 4 or len(data) % 4:
        raise ValueError(f"not a SPIR-V module ({len(data)} bytes, expected a multiple of 4, ≥ 20)")
    for order in ("<", ">"):
        if struct.unpack_from(order + "I", data)[0] == MAGIC:
            return list(struct.unpack(f"{order}{len(data) // 4}I", data))
    raise ValueError("not a SPIR-V module (bad magic number)")


def string(operands: list[int]) -> str:
    """A literal string operand (UTF-8, nul-terminated, packed little-end first in each word)."""
    raw = b"".join(struct.pack("<I", w) for w in operands)
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


def instructions(module: list[int]) -> Iterator[tuple[int, list[int]]]:
    """(opcode, operands) of every instruction after the header."""
    i = HEADER_WORDS
    while i < len(module):
        count, opcode = module[i] >> 16, module[i] & 0xFFFF
        if count == 0:
            raise ValueError(f"malformed SPIR-V: zero-length instruction at word {i}")
        yield opcode, module[i + 1 : i + count]
        i += count


def entry_points(data: bytes) -> list[dict[str, Any]]:
    """OpEntryPoint records of a module: [{name, model, workgroup_size}]."""
    entries: dict[int, dict[str, Any]] = {}
    for opcode, operands in instructions(words(data)):
        if opcode == OP_ENTRY_POINT and len(operands) >= 3:
            model, function = operands[0], operands[1]
            entries[function] = {
                "name": string(operands[2:]),
                "model": EXECUTION_MODELS.get(model, str(model)),
                "workgroup_size": None,
            }
        elif opcode == OP_EXECUTION_MODE and len(operands) >= 5 and operands[1] == EXECUTION_MODE_LOCAL_SIZE:
            if operands[0] in entries:
                entries[operands[0]]["workgroup_size"] = list(operands[2:5])
    return list(entries.values())
