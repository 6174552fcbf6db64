"""Two builds of one backend compared line by line of the kernel's source (Qt-free).

Two tunable values, or a build before and after an edit: which Rust lines (WGSL lines for the
wgsl reference) now make different instructions, and the instruction classes before and after.

    diff = diff_builds(folder_a, folder_b)      # after ensure_line_maps(project, [a, b])
    diff.changed   # [LineChange(file, line, before={"mul.rn.f32": 1, ...}, after={...})]

Each build is read in its listing with line information: the nvptx build's SASS where both have
one, else its line-table PTX (`.lines.ptx`); the cpu build's `.lines.asm`; rust-gpu's `.spvasm`
(`OpLine`); the wgsl reference's own source (each WGSL line is its own line). Lines are compared
by file name and number: after an edit that moved lines, a moved line shows as changed.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from workbench.build.artifacts import read_build
from workbench.build.ir_instructions import CLASSES, READERS, Instruction, counts
from workbench.build.ptx_lines import PtxLines
from workbench.errors import WorkbenchError


class IrDiffError(WorkbenchError):
    """Why two builds cannot be compared (named: which build, what is missing)."""


@dataclass
class LineChange:
    file: str  # as the line tables name it (the build's own copy of the project)
    line: int
    #: instruction (register and label numbers left out: `normalize`) -> count in build A / B
    before: dict[str, int] = field(default_factory=dict)
    after: dict[str, int] = field(default_factory=dict)

    @property
    def delta(self) -> int:
        return sum(self.after.values()) - sum(self.before.values())


@dataclass
class IrDiff:
    backend: str
    kernel: str
    form: str
    a: str  # what tells the builds apart: tunables, or the folder
    b: str
    classes_before: dict[str, int] = field(default_factory=dict)
    classes_after: dict[str, int] = field(default_factory=dict)
    changed: list[LineChange] = field(default_factory=list)
    unchanged_lines: int = 0
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        for row, change in zip(out["changed"], self.changed, strict=True):
            row["delta"] = change.delta
        return out


#: Per backend: build.json keys / suffixes of the listing with line information, in preference order.
def _listing(folder: Path, data: dict[str, Any], prefer_sass: bool) -> tuple[str, Path, PtxLines | None]:
    backend = data.get("backend")
    if backend == "nvptx":
        lines = (data.get("line_info") or {}).get("artifact")
        if not lines:
            raise IrDiffError(
                f"{folder}: the nvptx build has no line-table PTX yet (`workbench ir diff PATH --folders A B` builds it)"
            )
        ptx_path = folder / lines
        ptx = PtxLines.parse(ptx_path.read_text(errors="replace"))
        sass = (data.get("sass") or {}).get("artifact")
        if prefer_sass and sass:
            from workbench.build.sass import SassLines

            return "SASS", folder / sass, SassLines.parse((folder / sass).read_text(errors="replace"), ptx)
        return "PTX", ptx_path, ptx
    if backend == "cpu":
        lines = (data.get("line_info") or {}).get("artifact")
        if not lines:
            raise IrDiffError(
                f"{folder}: the cpu build has no assembly listing yet (`workbench ir diff PATH --folders A B` builds it)"
            )
        path = folder / lines
        return "x86-64", path, PtxLines.parse(path.read_text(errors="replace"))
    if backend == "rust-gpu":
        from workbench.build.spirv_lines import NO_LINES_HINT, SpirvLines

        found = sorted(folder.glob("*.spvasm"))
        if not found:
            raise IrDiffError(f"{folder}: the rust-gpu build has no .spvasm (spirv-dis was missing)")
        lines = SpirvLines.parse(found[0].read_text(errors="replace"))
        if not lines.has_lines:
            raise IrDiffError(f"{folder}: {found[0].name} has {NO_LINES_HINT}")
        return "SPIR-V", found[0], lines
    if backend == "wgsl":
        found = sorted(folder.glob("*.wgsl"))
        if not found:
            raise IrDiffError(f"{folder}: the wgsl build has no .wgsl file")
        return "WGSL", found[0], None  # each WGSL line is its own source line
    raise IrDiffError(
        f"{backend} builds carry no line information to compare (cpu, nvptx, rust-gpu, wgsl do)"
    )


#: Register and label numbers are renumbered by any change: compared without them.
_NUMBERED = re.compile(r"(%[A-Za-z_]*|\$L__\w*?|\.LBB|\bU?R|\bU?P|\.L_x_)\d+(?:_\d+)?")


def normalize(text: str) -> str:
    """An instruction with register / label / id numbers left out (`%rd12` → `%rd`, `R4` → `R`)."""
    return _NUMBERED.sub(lambda m: m.group(1), text)


def short_path(path: str) -> str:
    """A line table's path as both builds share it: Rust's own sources from `library/`, the crate's
    from its `src/` (two copies of one project built in different folders compare equal)."""
    if "/library/" in path:
        return "library/" + path.rsplit("/library/", 1)[1]
    if "/src/" in path:
        return "src/" + path.rsplit("/src/", 1)[1]
    return Path(path).name


def _by_line(
    form: str, path: Path, lines: PtxLines | None, entry: str | None
) -> dict[tuple[str, int], Counter]:
    text = path.read_text(errors="replace")
    instructions: list[Instruction] = READERS[form](text, None if form in {"SPIR-V", "WGSL"} else entry)
    out: dict[tuple[str, int], Counter] = {}
    for ins in instructions:
        if lines is None:
            key = (path.name, ins.line)
        else:
            hit = lines.source_for(ins.line)
            if hit is None:
                key = ("(no source line)", 0)
            else:
                key = (short_path(hit[0]), hit[1])
        out.setdefault(key, Counter())[normalize(ins.text or ins.opcode)] += 1
    return out


def _label(data: dict[str, Any], folder: Path) -> str:
    tunables = data.get("tunables") or {}
    return " ".join(f"{k}={v}" for k, v in sorted(tunables.items())) or folder.name[:12]


def diff_builds(folder_a: str | Path, folder_b: str | Path, kernel: str | None = None) -> IrDiff:
    """Compare two builds of one backend (A before, B after)."""
    a, b = Path(folder_a), Path(folder_b)
    data_a, data_b = read_build(a), read_build(b)
    if data_a.get("backend") != data_b.get("backend"):
        raise IrDiffError(f"two builds of one backend are compared: {a} is {data_a.get('backend')}, "
                          f"{b} is {data_b.get('backend')}")  # fmt: skip
    kernels = list(data_a.get("kernels") or {})
    name = kernel or (kernels[0] if kernels else "")
    if name not in kernels or name not in (data_b.get("kernels") or {}):
        raise IrDiffError(f"kernel {name!r} is not in both builds (A has {', '.join(kernels) or 'none'})")
    entry = data_a["kernels"][name].get("entry") or name
    prefer_sass = bool(
        (data_a.get("sass") or {}).get("artifact") and (data_b.get("sass") or {}).get("artifact")
    )
    form, path_a, lines_a = _listing(a, data_a, prefer_sass)
    _, path_b, lines_b = _listing(b, data_b, prefer_sass)
    before, after = _by_line(form, path_a, lines_a, entry), _by_line(form, path_b, lines_b, entry)
    label_a, label_b = _label(data_a, a), _label(data_b, b)
    if data_a.get("source_hash") != data_b.get("source_hash"):
        label_a, label_b = f"before the edit ({label_a})", f"after ({label_b})"
    out = IrDiff(str(data_a.get("backend")), name, form, label_a, label_b)
    for key in sorted(set(before) | set(after), key=lambda k: (k[0] == "(no source line)", k)):
        x, y = before.get(key, Counter()), after.get(key, Counter())
        if x == y:
            out.unchanged_lines += 1
        else:
            out.changed.append(LineChange(key[0], key[1], dict(sorted(x.items())), dict(sorted(y.items()))))
    all_a = READERS[form](path_a.read_text(errors="replace"), None if form in {"SPIR-V", "WGSL"} else entry)
    all_b = READERS[form](path_b.read_text(errors="replace"), None if form in {"SPIR-V", "WGSL"} else entry)
    out.classes_before, out.classes_after = counts(all_a), counts(all_b)
    if data_a.get("source_hash") != data_b.get("source_hash"):
        out.note = "the sources differ: lines are compared by number (a moved line shows as changed)"
    return out


def ensure_line_maps(project, folders: list[str | Path], budget=None) -> None:
    """Build the line-table listings the diff reads (cpu assembly, nvptx line-table PTX, SASS where
    nvdisasm is present); IrDiffError names the build that cannot have one."""
    from workbench.build.line_info import LineInfoError, ensure_line_table
    from workbench.build.sass import SassError, ensure_sass, nvdisasm

    for folder in folders:
        backend = read_build(folder).get("backend")
        try:
            if backend in {"cpu", "nvptx"}:
                ensure_line_table(project, folder, budget)
            if backend == "nvptx" and nvdisasm() is not None:
                ensure_sass(project, folder, budget)
        except (LineInfoError, SassError) as exc:
            raise IrDiffError(f"{folder}: {exc}") from None


def describe(diff: IrDiff) -> list[str]:
    """The diff as text lines: the one formatter of `workbench ir diff` and the window's view."""
    out = [f"{diff.backend} · {diff.kernel} · {diff.form}: A = {diff.a}, B = {diff.b}"]
    classes = ", ".join(
        f"{c} {diff.classes_before.get(c, 0)}→{diff.classes_after.get(c, 0)}" for c in CLASSES
    )
    out.append(f"instructions by class (A→B): {classes}")
    if not diff.changed:
        out.append(f"no source line changed its instructions ({diff.unchanged_lines} lines compared)")
    for change in diff.changed:
        where = change.file if change.line == 0 else f"{change.file}:{change.line}"
        ops = sorted(set(change.before) | set(change.after))
        parts = [
            f"{op} {change.before.get(op, 0)}→{change.after.get(op, 0)}"
            for op in ops
            if change.before.get(op, 0) != change.after.get(op, 0)
        ]
        out.append(f"  {where}: {change.delta:+d} instructions ({', '.join(parts)})")
    if diff.note:
        out.append(diff.note)
    return out
