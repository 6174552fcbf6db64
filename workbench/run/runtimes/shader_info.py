"""What a compute shader declares: entry points, resource bindings (with their access), immediates
and overridable constants. Read from SPIR-V words or WGSL text, so the wgpu runtime can build an
explicit bind group layout that matches the module exactly (wgpu requires the layout's storage
access to equal the shader's) and tell the user what is missing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from workbench import spirv

# SPIR-V opcodes, decorations and storage classes used below (SPIR-V spec, section 3).
_OP_NAME, _OP_ENTRY_POINT, _OP_TYPE_ARRAY, _OP_TYPE_RUNTIME_ARRAY = 5, 15, 28, 29
_OP_TYPE_STRUCT, _OP_TYPE_POINTER, _OP_VARIABLE, _OP_DECORATE, _OP_MEMBER_DECORATE = 30, 32, 59, 71, 72
_OP_SPEC_CONSTANTS = (48, 49, 50, 51)  # OpSpecConstantTrue/False/-/Composite
_DEC_SPEC_ID, _DEC_BUFFER_BLOCK, _DEC_NON_WRITABLE, _DEC_BINDING, _DEC_SET = 1, 3, 24, 33, 34
_SC_UNIFORM, _SC_PUSH_CONSTANT, _SC_STORAGE_BUFFER = 2, 9, 12
_GL_COMPUTE = 5


@dataclass
class ShaderInfo:
    """Declarations of one shader module (group 0 only: the workbench uses one bind group)."""

    entry_points: list[str] = field(default_factory=list)  # compute entry points
    #: binding -> "uniform" | "storage" (read-write) | "read-only-storage"
    bindings: dict[int, str] = field(default_factory=dict)
    #: binding -> variable name, where the module names it
    names: dict[int, str] = field(default_factory=dict)
    uses_immediates: bool = False
    overrides: list[str] = field(default_factory=list)  # WGSL override names / SPIR-V spec ids


def spirv_info(data: bytes) -> ShaderInfo:
    """Parse the declarations of a SPIR-V module."""
    info = ShaderInfo()
    decorations: dict[int, dict[int, list[int]]] = {}
    member_non_writable: dict[int, set[int]] = {}
    names: dict[int, str] = {}
    struct_members: dict[int, int] = {}
    element_of: dict[int, int] = {}  # array type -> element type
    pointers: dict[int, tuple[int, int]] = {}  # pointer type -> (storage class, pointee)
    variables: list[tuple[int, int, int]] = []  # (id, pointer type, storage class)
    spec_ids: list[int] = []
    for opcode, ops in spirv.instructions(spirv.words(data)):
        if opcode == _OP_ENTRY_POINT and ops[0] == _GL_COMPUTE:
            info.entry_points.append(spirv.string(ops[2:]))
        elif opcode == _OP_NAME:
            names[ops[0]] = spirv.string(ops[1:])
        elif opcode == _OP_DECORATE:
            decorations.setdefault(ops[0], {})[ops[1]] = ops[2:]
            if ops[1] == _DEC_SPEC_ID:
                spec_ids.append(ops[2])
        elif opcode == _OP_MEMBER_DECORATE and ops[2] == _DEC_NON_WRITABLE:
            member_non_writable.setdefault(ops[0], set()).add(ops[1])
        elif opcode == _OP_TYPE_STRUCT:
            struct_members[ops[0]] = len(ops) - 1
        elif opcode in (_OP_TYPE_ARRAY, _OP_TYPE_RUNTIME_ARRAY):
            element_of[ops[0]] = ops[1]
        elif opcode == _OP_TYPE_POINTER:
            pointers[ops[0]] = (ops[1], ops[2])
        elif opcode == _OP_VARIABLE:
            variables.append((ops[1], ops[0], ops[2]))

    for var, pointer, storage_class in variables:
        if storage_class == _SC_PUSH_CONSTANT:
            info.uses_immediates = True
            continue
        if storage_class not in (_SC_UNIFORM, _SC_STORAGE_BUFFER):
            continue
        decor = decorations.get(var, {})
        if decor.get(_DEC_SET, [0])[0] != 0 or _DEC_BINDING not in decor:
            continue
        binding = decor[_DEC_BINDING][0]
        pointee = pointers.get(pointer, (0, 0))[1]
        while pointee in element_of:  # binding arrays: look at the block type
            pointee = element_of[pointee]
        block_decor = decorations.get(pointee, {})
        is_storage = storage_class == _SC_STORAGE_BUFFER or _DEC_BUFFER_BLOCK in block_decor
        if not is_storage:
            info.bindings[binding] = "uniform"
        else:
            # naga's rule: writable unless the variable, or every member of its block, is NonWritable.
            members = struct_members.get(pointee, 0)
            read_only = _DEC_NON_WRITABLE in decor or (
                members > 0 and len(member_non_writable.get(pointee, ())) >= members
            )
            info.bindings[binding] = "read-only-storage" if read_only else "storage"
        if var in names and names[var]:
            info.names[binding] = names[var]
    info.overrides = [str(s) for s in spec_ids]
    return info


_WGSL_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_WGSL_VAR = re.compile(r"((?:@\s*\w+\s*(?:\([^)]*\))?\s*)+)var\s*<\s*([\w\s,]+?)\s*>\s*(\w+)", re.S)
_WGSL_ATTR = re.compile(r"@\s*(group|binding)\s*\(\s*(\d+)\s*\)")
_WGSL_COMPUTE = re.compile(r"@\s*compute\b[^{;]*?\bfn\s+(\w+)", re.S)
_WGSL_OVERRIDE = re.compile(r"\boverride\s+(\w+)")
_WGSL_IMMEDIATE = re.compile(r"var\s*<\s*(immediate|push_constant)\s*>")


def wgsl_info(text: str) -> ShaderInfo:
    """Read the declarations of a WGSL module (a light scan, not a parser: naga has the last word)."""
    code = _WGSL_COMMENTS.sub(" ", text)
    info = ShaderInfo()
    info.entry_points = _WGSL_COMPUTE.findall(code)
    info.overrides = _WGSL_OVERRIDE.findall(code)
    info.uses_immediates = bool(_WGSL_IMMEDIATE.search(code))
    for attrs, space, name in _WGSL_VAR.findall(code):
        found = dict(_WGSL_ATTR.findall(attrs))
        if int(found.get("group", -1)) != 0 or "binding" not in found:
            continue
        binding = int(found["binding"])
        parts = [p.strip() for p in space.split(",")]
        if parts[0] == "uniform":
            info.bindings[binding] = "uniform"
        elif parts[0] == "storage":
            access = parts[1] if len(parts) > 1 else "read"
            info.bindings[binding] = "read-only-storage" if access == "read" else "storage"
        else:
            continue
        info.names[binding] = name
    return info
