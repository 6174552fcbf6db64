"""The instructions of one kernel entry in a build's code, each with its opcode and class (Qt-free).

One reading for every form a backend leaves in its artifact folder — PTX (nvptx, cuda-c,
rust-cuda), SASS (an nvptx build's `.sass`, where nvdisasm made one), x86-64 assembly (the cpu
build's `.lines.asm`), SPIR-V disassembly (`.spvasm`), WGSL (counted in the source: the driver's
compiled form is not visible here) — shared by the summary across backends (`ir_summary`) and the
diff of two builds (`ir_diff`).

Classes: `memory` (loads, stores, atomics, address-space traffic), `arithmetic` (integer, float,
logic, compare, convert), `control` (branches, calls, returns, exits, SPIR-V merges), `barrier`
(barriers and fences), `other` (register moves, special-register reads, anything unclassified).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

CLASSES = ("memory", "arithmetic", "control", "barrier", "other")


@dataclass(frozen=True)
class Instruction:
    line: int  # 1-based line of the listing
    opcode: str
    kind: str  # one of CLASSES
    text: str = ""  # the whole instruction (operands too)


@dataclass
class Listing:
    """One entry's instructions in one file of a build."""

    form: str  # "PTX", "SASS", "x86-64", "SPIR-V", "WGSL"
    path: Path
    text: str
    instructions: list[Instruction]


# ----------------------------------------------------------------------------- classes per form


def _ptx_class(op: str) -> str:
    base = op.split(".")[0]
    if base in {"ld", "st", "atom", "red", "ldu", "prefetch", "prefetchu", "tex", "tld4", "suld", "sust",
                "cp", "wmma", "ldmatrix", "stmatrix"}:  # fmt: skip
        return "memory"
    if base in {"bra", "brx", "ret", "exit", "call", "trap", "brkpt"}:
        return "control"
    if base in {"bar", "barrier", "membar", "fence"}:
        return "barrier"
    if base in {"mov", "cvta", "shfl", "vote", "activemask", "griddepcontrol"}:
        return "other"
    return "arithmetic"


_SASS_MEMORY = re.compile(r"^(U?LD\w*|ST\w*|ATOM\w*|RED\w*|LDGSTS|TEX\w*|SU\w+|UBLKCP|UTMA\w*|ULDC)$")


def _sass_class(op: str) -> str:
    base = op.split(".")[0]
    if _SASS_MEMORY.match(base):
        return "memory"
    if base in {"BRA", "BRX", "JMP", "JMX", "EXIT", "RET", "CALL", "BSSY", "BSYNC", "WARPSYNC", "BREAK",
                "KILL", "BPT", "YIELD"}:  # fmt: skip
        return "control"
    if base in {"BAR", "MEMBAR", "FENCE", "ERRBAR", "DEPBAR", "CCTL", "UCCTL", "SYNCS"}:
        return "barrier"
    if base in {"MOV", "UMOV", "S2R", "S2UR", "CS2R", "R2UR", "SHFL", "VOTE", "VOTEU", "MOV32I", "PRMT"}:
        return "other"
    return "arithmetic"


_X86_CONTROL = re.compile(r"^(j\w+|call\w*|ret\w*|loop\w*|ud2)$")


def _x86_class(op: str, operands: str) -> str:
    if op.startswith("call") and "barrier" in operands.lower():
        return "barrier"  # the kernel API's workgroup barrier (`Ctx::barrier`), called by the host build
    if _X86_CONTROL.match(op):
        return "control"
    if op in {"mfence", "lfence", "sfence"}:
        return "barrier"
    if op.startswith("lock"):
        return "memory"  # an atomic read-modify-write (reference counts, the executor's counters)
    if "(" in operands and not op.startswith("lea") and not op.startswith("nop"):
        return "memory"
    if op.startswith(("mov", "vmov", "push", "pop", "xchg", "cmov")):
        return "other"
    return "arithmetic"


_SPIRV_MEMORY = {"OpLoad", "OpStore", "OpAccessChain", "OpInBoundsAccessChain", "OpPtrAccessChain",
                 "OpCopyMemory", "OpCopyMemorySized", "OpImageRead", "OpImageWrite", "OpImageFetch"}  # fmt: skip
_SPIRV_CONTROL = {"OpBranch", "OpBranchConditional", "OpSwitch", "OpReturn", "OpReturnValue", "OpKill",
                  "OpUnreachable", "OpFunctionCall", "OpLoopMerge", "OpSelectionMerge", "OpPhi"}  # fmt: skip
#: Declarations inside a function body: not instructions the device executes.
_SPIRV_SKIP = {"OpLabel", "OpFunction", "OpFunctionParameter", "OpFunctionEnd", "OpLine", "OpNoLine",
               "OpVariable", "OpName", "OpDecorate"}  # fmt: skip


def _spirv_class(op: str) -> str:
    if op in _SPIRV_MEMORY or op.startswith("OpAtomic"):
        return "memory"
    if op in _SPIRV_CONTROL:
        return "control"
    if op in {"OpControlBarrier", "OpMemoryBarrier"}:
        return "barrier"
    if op in {"OpCopyObject", "OpUndef", "OpCompositeExtract", "OpCompositeConstruct", "OpCompositeInsert",
              "OpVectorShuffle", "OpBitcast"} or op.startswith("OpGroup"):  # fmt: skip
        return "other"
    return "arithmetic"


# ----------------------------------------------------------------------------- readers per form

_PTX_ENTRY = r"^\s*(?:\.visible\s+|\.weak\s+)?\.entry\s+{name}\s*\("
_PTX_STATEMENT = re.compile(r"^\s*(?:@!?%\w+\s+)?([a-z][\w.]*)")


def ptx_instructions(text: str, entry: str | None = None) -> list[Instruction]:
    """The instructions of `.entry entry` (all entries when None): one per `;`-ended statement."""
    lines = text.splitlines()
    start, end = 0, len(lines)
    if entry is not None:
        pattern = re.compile(_PTX_ENTRY.format(name=re.escape(entry)))
        start = next((i for i, ln in enumerate(lines) if pattern.match(ln)), None)
        if start is None:
            return []
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("}")), len(lines))
    out = []
    body = False
    for i in range(start, end):
        line = lines[i].split("//", 1)[0]
        if line.lstrip().startswith(".section"):
            break
        if line.strip() == "{":
            body = True
            continue
        if not body or line.lstrip().startswith((".", "$", "{", "}")) or ":" in line.split(";")[0]:
            continue
        for statement in line.split(";")[:-1]:
            if m := _PTX_STATEMENT.match(statement):
                out.append(
                    Instruction(i + 1, m.group(1), _ptx_class(m.group(1)), " ".join(statement.split()))
                )
    return out


_SASS_LINE = re.compile(r"^\s*/\*[0-9a-fA-F]+\*/\s+((?:@!?U?P\w+\s+)?([A-Z][\w.]*)[^;]*)")
_SASS_FUNCTION = re.compile(r"^\s*\.section\s+\.text\.([\w$.]+)")


def sass_instructions(text: str, entry: str | None = None) -> list[Instruction]:
    """The SASS instructions of `.text.entry` (all when None), NOP padding left out."""
    out = []
    inside = entry is None
    for number, line in enumerate(text.splitlines(), start=1):
        if m := _SASS_FUNCTION.match(line):
            inside = entry is None or m.group(1) == entry
            continue
        if inside and (m := _SASS_LINE.match(line)) and m.group(2) != "NOP":
            text = " ".join(m.group(1).split())
            out.append(Instruction(number, m.group(2), _sass_class(m.group(2)), text))
    return out


_X86_LINE = re.compile(r"^\s+([a-z][\w.]*)\s*(.*)$")


def _holds_entry_code(label: str, entry: str) -> bool:
    """`entry` itself, a closure defined in it (Rust v0 mangling `_RNC…<len><entry>…`), or a generic
    function instantiated for such a closure (`_RIN…NCNv…<len><entry>…`). A kernel-API host entry
    runs the kernel body as a closure (`Kernel::run(|ctx| body(ctx, …))`); the executor's per-kernel
    code is generic over it, and the body is inlined there: `run_invocations::<closure>` (a
    workgroup's invocations) and `call_body::<closure>` (an invocation on a fiber, after a
    barrier), or stays the closure's own function when too large to inline."""
    if label == entry:
        return True
    if not label.startswith(("_RNC", "_RIN")):
        return False
    # The closure's path: `NC`, the entry's (`Nv`, its crate, `<len><entry>`), then the closure's
    # empty name `0` (after a disambiguator `s…_` when there are several): so a crate named like
    # the entry (`5saxpy9saxpy_cpu0`) is not taken for an entry `saxpy`.
    closure = rf"NCNv\w*?(?<!\d){len(entry)}{re.escape(entry)}(?:s[0-9A-Za-z]*_)?0"
    return re.search(closure, label) is not None


def x86_instructions(text: str, entry: str | None = None) -> list[Instruction]:
    """The instructions of function `entry`, the closures defined in it and the generic code
    instantiated for them (`_holds_entry_code`; each from its label to `.Lfunc_end` / `.size`)."""
    out = []
    inside = entry is None
    for number, line in enumerate(text.splitlines(), start=1):
        if entry is not None and line.endswith(":") and not line.startswith((".", " ", "\t")):
            if _holds_entry_code(line[:-1], entry):
                inside = True
                continue
        if not inside:
            continue
        if entry is not None and (line.startswith(".Lfunc_end") or line.lstrip().startswith(".size")):
            inside = False
            continue
        code = line.split("#", 1)[0]
        if (m := _X86_LINE.match(code)) and not code.lstrip().startswith("."):
            op, operands = m.group(1), m.group(2)
            out.append(
                Instruction(number, op, _x86_class(op, operands), " ".join(f"{op} {operands}".split()))
            )
    return out


_SPIRV_OP = re.compile(r"^\s*(?:%[\w.]+\s*=\s*)?(Op\w+)")


def spirv_instructions(text: str, entry: str | None = None) -> list[Instruction]:
    """The instructions inside function bodies of a disassembled module (the whole module: rust-gpu
    inlines into the entry; declarations and debug lines left out)."""
    out = []
    inside = False
    for number, line in enumerate(text.splitlines(), start=1):
        m = _SPIRV_OP.match(line)
        if not m:
            continue
        op = m.group(1)
        if op == "OpFunction":
            inside = True
        elif op == "OpFunctionEnd":
            inside = False
        elif inside and op not in _SPIRV_SKIP:
            out.append(Instruction(number, op, _spirv_class(op), line[line.index(op) :].strip()))
    return out


_WGSL_TOKENS = (
    ("barrier", re.compile(r"\b(workgroupBarrier|storageBarrier|textureBarrier|workgroupUniformLoad)\b")),
    ("memory", re.compile(r"\batomic\w+\s*\(|\b[A-Za-z_]\w*\s*\[")),
    ("control", re.compile(r"\b(if|else|for|loop|while|switch|return|break|continue)\b")),
    ("arithmetic", re.compile(r"(?<![=!<>&|+\-*/%^])(?:[+\-*/%^]|<<|>>|[<>]=?|==|!=|&&|\|\|)(?![=>])|"
                              r"\b(fma|min|max|abs|sqrt|exp2?|log2?|sin|cos|select|clamp|dot|floor|ceil)\s*\(")),
)  # fmt: skip


_WGSL_GENERIC = re.compile(r"\b(array|vec[234]|mat[234]x[234]|atomic|ptr|var|texture_\w+)\s*<[^<>]*>")


def wgsl_instructions(text: str, entry: str | None = None) -> list[Instruction]:
    """WGSL counted in the source (comments left out): indexing and atomics as memory, operators
    and math builtins as arithmetic, control keywords, barriers. The whole shader: helpers are
    inlined by every compiler."""
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        code = line.split("//", 1)[0]
        if re.match(r"^\s*(@|var<|const |struct |alias |enable |fn |override |\w+\s*:)", code):
            code = code.split("{", 1)[1] if "{" in code else ""  # declarations: only a body after `{`
        for _ in range(2):  # type arguments (array<vec4<f32>, 4>) are not comparisons
            code = _WGSL_GENERIC.sub(r"\1", code)
        for kind, pattern in _WGSL_TOKENS:
            for m in pattern.finditer(code):
                token = m.group(0).strip(" ([").strip()
                out.append(Instruction(number, token, kind, token))
    return out


READERS = {"PTX": ptx_instructions, "SASS": sass_instructions, "x86-64": x86_instructions,
           "SPIR-V": spirv_instructions, "WGSL": wgsl_instructions}  # fmt: skip
#: File suffix → form, in the order a build's files are preferred for its summary.
SUFFIX_FORMS = ((".sass", "SASS"), (".lines.asm", "x86-64"), (".spvasm", "SPIR-V"), (".ptx", "PTX"),
                (".wgsl", "WGSL"))  # fmt: skip


def form_of(path: Path) -> str | None:
    name = path.name
    if name.endswith((".lines.ptx", ".sass.ptx")):
        return None  # line-table copies: the summary reads the timed PTX
    return next((form for suffix, form in SUFFIX_FORMS if name.endswith(suffix)), None)


def read_listing(path: Path, entry: str | None) -> Listing:
    form = form_of(path) or "PTX"
    text = path.read_text(errors="replace")
    return Listing(form, path, text, READERS[form](text, entry))


def counts(instructions: list[Instruction]) -> dict[str, int]:
    """Instructions per class, every class present."""
    out = dict.fromkeys(CLASSES, 0)
    for ins in instructions:
        out[ins.kind] += 1
    return out
