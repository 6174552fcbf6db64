"""Rust ↔ PTX line map from a PTX file's `.file` / `.loc` directives (Compiler Explorer style).

The same directives (GNU assembler syntax) are in rustc's CPU assembly with line tables, so the
cpu backend's `.lines.asm` (`workbench.build.cpu_asm`) is read by the same parser.

LLVM's NVPTX backend writes `.file N "path"` once per source file and `.loc N LINE COL` before the
instructions generated from that source position; every instruction line after a `.loc` belongs to
it until the next one. Line 0 (`.loc 2 0 8`) means "no particular line" and is ignored.

    lines = PtxLines.parse(ptx_text)
    lines.ptx_lines_for("/abs/src/lib.rs", 11)   # -> [62, 63, 65, 69] (1-based PTX lines)
    lines.source_for(65)                          # -> ("/abs/src/lib.rs", 11)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

#: `.file N "path"` (PTX), or `.file N "dir" "name" [md5 …]` (DWARF 5 assembly, e.g. x86-64 from rustc).
_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"(?:\s+"([^"]*)")?')
_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)(?:\s+(\d+))?")
#: Lines that are not instructions: labels, braces, comments, directives, declarations.
_NOT_CODE = re.compile(r"^\s*($|//|\$?[\w.$]+:\s*$|[{}]|\.)")


@dataclass
class PtxLines:
    """Which PTX lines (1-based) came from which source (file, line)."""

    files: dict[int, str] = field(default_factory=dict)  # .file index -> path as written
    #: PTX line -> (file index, source line) for each instruction line under a `.loc`.
    line_of: dict[int, tuple[int, int]] = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str) -> PtxLines:
        out = cls()
        current: tuple[int, int] | None = None
        for number, line in enumerate(text.splitlines(), start=1):
            if m := _FILE.match(line):
                name = m.group(2) if m.group(3) is None else str(Path(m.group(2)) / m.group(3))
                out.files[int(m.group(1))] = name
                continue
            if m := _LOC.match(line):
                file, src = int(m.group(1)), int(m.group(2))
                current = (file, src) if src > 0 else None
                continue
            if line.lstrip().startswith(".section"):
                current = None  # debug sections follow the code: nothing there maps to source
                continue
            if current is not None and not _NOT_CODE.match(line):
                out.line_of[number] = current
        return out

    @property
    def has_lines(self) -> bool:
        """Whether the PTX carries any line information at all."""
        return bool(self.line_of)

    def _indices(self, path: str | Path) -> set[int]:
        """The `.file` indices naming `path` (same resolved path, else the same file name suffix)."""
        target = Path(path)
        try:
            resolved = target.resolve()
        except OSError:
            resolved = target
        found = {i for i, p in self.files.items() if _same(Path(p), resolved)}
        if not found:  # built elsewhere (a copied artifact folder): the longest common tail
            tails = {i: common_tail(Path(p), target) for i, p in self.files.items()}
            best = max(tails.values(), default=0)
            found = {i for i, n in tails.items() if n == best and n >= 2}
        return found

    def ptx_lines_for(self, path: str | Path, line: int) -> list[int]:
        """PTX lines (1-based, ascending) generated from `path`:`line`."""
        indices = self._indices(path)
        return sorted(n for n, (f, src) in self.line_of.items() if f in indices and src == line)

    def source_for(self, ptx_line: int) -> tuple[str, int] | None:
        """(source path as written in the PTX, 1-based line) of a PTX line, or None."""
        hit = self.line_of.get(ptx_line)
        if hit is None:
            return None
        return self.files.get(hit[0], ""), hit[1]

    def source_lines(self, path: str | Path) -> set[int]:
        """Every line of `path` that has generated code."""
        indices = self._indices(path)
        return {src for f, src in self.line_of.values() if f in indices}


def common_tail(a: Path, b: Path) -> int:
    """How many trailing path parts `a` and `b` share: the one rule for finding a project's file
    in a listing built from another copy of the project ("saxpy/src/lib.rs" is closer to another
    saxpy's "src/lib.rs" than its "gpu_kernel/src/lib.rs" is)."""
    n = 0
    for x, y in zip(reversed(a.parts), reversed(b.parts), strict=False):
        if x != y:
            break
        n += 1
    return n


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b
    except OSError:
        return False
