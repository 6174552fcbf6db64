"""SASS of an nvptx build, linked to its PTX and Rust lines (Qt-free).

The machine code ptxas makes of the PTX is what runs; reading it answers what PTX cannot (did the
multiply and add fuse, how many loads, which predicates). Built on demand, like the line tables
(`workbench.build.line_info`), and only where the CUDA toolkit has `nvdisasm`:

1. the build's line-table PTX (`<crate>.lines.ptx`, `.loc` → Rust) becomes `<crate>.sass.ptx`:
   `.target sm_XX, debug` loses `, debug` and the DWARF sections after the code are cut (ptxas
   refuses LLVM's newer debug sections) — every kept line keeps its number, so a PTX line number
   means the same line in both files;
2. `ptxas -arch=sm_XX -lineinfo` → `<crate>.sass.cubin` (line tables for the PTX lines);
3. `nvdisasm -gp -c` → `<crate>.sass`: each instruction under a `//## File ".nv_debug_ptx_txt",
   line N` comment naming its PTX line; the Rust line is that PTX line's `.loc`.

So one map serves both links: `SassLines.parse(sass, ptx_lines)` is a `PtxLines` of SASS lines →
Rust lines (the artifacts view's line map), with `ptx_line_of` / `sass_lines_for_ptx` for PTX.
`nvdisasm -g` output (`//## File "src/lib.rs", line N`: Rust lines directly) is read too.

The fixture `tests/build/data/sass/` is real nvdisasm 13.0 output from an H200 host.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from workbench import childproc
from workbench.build.adapters.base import cuda_bin
from workbench.build.artifacts import read_build, write_build
from workbench.build.line_info import LineInfoError, ensure_line_table
from workbench.build.process import Budget
from workbench.build.ptx_lines import PtxLines
from workbench.project import Project

#: nvdisasm's name for the PTX text a `-lineinfo` cubin carries (its `-gp` line comments name it).
PTX_TEXT = ".nv_debug_ptx_txt"
MISSING = (
    "nvdisasm is not installed here, so there is no SASS: it is the CUDA toolkit's disassembler "
    "(the toolkit's package cuda-nvdisasm-<version>, or `pip install nvidia-cuda-nvdisasm` into the "
    "workbench's Python environment). Put it on PATH, in $CUDA_HOME/bin or /usr/local/cuda/bin, or "
    "name it with $WB_NVDISASM; ptxas is needed too. Then this view shows the SASS ptxas makes of "
    "this PTX, each instruction linked to its PTX and Rust lines."
)
SASS_SUFFIX = ".sass"

_COMMENT = re.compile(r'^\s*//##\s*File\s+"([^"]*)",\s*line\s+(\d+)')
_INSTRUCTION = re.compile(r"^\s*/\*[0-9a-fA-F]+\*/\s+(.*?)\s*;?\s*$")
_TARGET_DEBUG = re.compile(r"^(\s*\.target\s+[^,\n/]+?)\s*,\s*debug\b")


class SassError(LineInfoError):
    """Why a build has no SASS view (said in the artifacts view)."""


def ptx_for_lineinfo(lines_ptx: str) -> str:
    """The line-table PTX as ptxas -lineinfo takes it: no `, debug` target, no DWARF sections
    (everything from the first `.section` on). Line numbers of the kept lines do not move."""
    out = []
    for line in lines_ptx.splitlines():
        if line.lstrip().startswith(".section"):
            break
        out.append(_TARGET_DEBUG.sub(r"\1", line))
    return "\n".join(out) + "\n"


@dataclass
class SassLines(PtxLines):
    """SASS lines (1-based) → Rust lines (the inherited map), and → PTX lines."""

    ptx_line_of: dict[int, int] = field(default_factory=dict)  # SASS line -> PTX line
    opcode_of: dict[int, str] = field(default_factory=dict)  # SASS line -> opcode (FMUL, LDG.E, …)

    @classmethod
    def parse(cls, text: str, ptx: PtxLines | None = None) -> SassLines:  # type: ignore[override]
        """`nvdisasm -gp` (PTX lines, mapped to Rust through `ptx`) or `-g` (Rust lines) output."""
        out = cls()
        if ptx is not None:
            out.files = dict(ptx.files)
        index = {path: i for i, path in out.files.items()}
        ptx_line: int | None = None
        source: tuple[int, int] | None = None
        for number, line in enumerate(text.splitlines(), start=1):
            if m := _COMMENT.match(line):
                path, at = m.group(1), int(m.group(2))
                if path == PTX_TEXT:
                    ptx_line = at
                    source = ptx.line_of.get(at) if ptx is not None else None
                else:
                    if path not in index:
                        index[path] = len(out.files) + 1
                        out.files[index[path]] = path
                    source = (index[path], at)
                continue
            if line.lstrip().startswith(".section"):
                ptx_line = source = None  # a new function: its first instruction has its own comment
                continue
            if m := _INSTRUCTION.match(line):
                code = re.sub(r"^@!?U?P\w+\s+", "", m.group(1))  # the guard predicate is not the opcode
                out.opcode_of[number] = code.split()[0] if code else ""
                if ptx_line is not None:
                    out.ptx_line_of[number] = ptx_line
                if source is not None:
                    out.line_of[number] = source
        return out

    def sass_lines_for_ptx(self, ptx_line: int) -> list[int]:
        """The SASS lines made from one PTX line."""
        return sorted(n for n, p in self.ptx_line_of.items() if p == ptx_line)


def nvdisasm() -> str | None:
    """The CUDA toolkit's disassembler: $WB_NVDISASM (only it, when set), PATH, $CUDA_HOME/bin,
    /usr/local/cuda/bin, then NVIDIA's PyPI wheel in this Python (`nvidia/cu*/bin/nvdisasm`)."""
    found = cuda_bin("nvdisasm")
    if found or os.environ.get("WB_NVDISASM"):
        return found
    try:
        import nvidia  # the namespace package of NVIDIA's wheels (nvidia-cuda-nvdisasm)
    except ImportError:
        return None
    for root in getattr(nvidia, "__path__", []):
        for candidate in sorted(Path(root).glob("cu*/bin/nvdisasm"), reverse=True):
            if os.access(candidate, os.X_OK):
                return str(candidate)
    return None


def sass_path(artifact_dir: str | Path) -> Path | None:
    """The build's `.sass` when it has one already."""
    folder = Path(artifact_dir)
    try:
        name = (read_build(folder).get("sass") or {}).get("artifact")
    except Exception:  # noqa: BLE001  no build.json: no SASS
        return None
    return folder / name if name and (folder / name).is_file() else None


def disassemble(lines_ptx: Path, arch: str, out_dir: Path, stem: str, budget: Budget | None = None) -> Path:
    """`<stem>.sass.ptx` → `<stem>.sass.cubin` (ptxas -lineinfo) → `<stem>.sass` (nvdisasm -gp)."""
    ptxas, disasm = cuda_bin("ptxas"), nvdisasm()
    if disasm is None or ptxas is None:
        raise SassError(MISSING)
    budget = budget or Budget.with_timeout(120.0)
    ptx = out_dir / f"{stem}.sass.ptx"
    ptx.write_text(ptx_for_lineinfo(lines_ptx.read_text(errors="replace")))
    cubin = out_dir / f"{stem}.sass.cubin"
    steps = (
        [ptxas, f"-arch={arch}", "-lineinfo", ptx.name, "-o", cubin.name],
        [disasm, "-gp", "-c", cubin.name],
    )
    outputs = []
    for cmd in steps:
        budget.check()
        left = 120.0 if budget.deadline is None else budget.deadline - time.monotonic()
        proc = childproc.capture(cmd, cwd=out_dir, timeout_s=max(1.0, min(120.0, left)))
        if proc.returncode != 0:
            text = "\n".join(proc.stdout + proc.stderr).strip()
            raise SassError(f"{Path(cmd[0]).name} failed (exit {proc.returncode}):\n{text}")
        outputs.append("\n".join(proc.stdout) + "\n")
    sass = out_dir / f"{stem}{SASS_SUFFIX}"
    tmp = out_dir / f".{sass.name}.tmp"
    tmp.write_text(outputs[-1])
    os.replace(tmp, sass)
    return sass


def ensure_sass(project: Project, artifact_dir: str | Path, budget: Budget | None = None) -> Path:
    """An nvptx build's `<crate>.sass`, built now (line tables first) if needed; SassError says why not."""
    folder = Path(artifact_dir)
    existing = sass_path(folder)
    if existing is not None:
        return existing
    data = read_build(folder)
    if data.get("backend") != "nvptx":
        raise SassError(f"{data.get('backend')} builds have no SASS view (nvptx builds do)")
    if nvdisasm() is None or cuda_bin("ptxas") is None:
        raise SassError(MISSING)  # said before a line-table build that would serve nothing here
    lines = ensure_line_table(project, folder, budget)
    stem = lines.name.removesuffix(".lines.ptx")
    arch = data.get("target") or "sm_90"
    sass = disassemble(lines, arch, folder, stem, budget)
    data = read_build(folder)  # ensure_line_table wrote it
    data["sass"] = {
        "artifact": sass.name,
        "ptx": f"{stem}.sass.ptx",
        "note": f"nvdisasm -gp of ptxas -arch={arch} -lineinfo {stem}.sass.ptx (from {lines.name})",
    }
    write_build(folder, data)
    return sass


def ensure_line_views(project: Project, artifact_dir: str | Path, budget: Budget | None = None) -> Path:
    """What the artifacts view asks for: the line table (`ensure_line_table`), then, for nvptx where
    nvdisasm is present, the SASS. A failed SASS is kept in build.json (`sass.error`, the view says
    it) and leaves the line table."""
    path = ensure_line_table(project, artifact_dir, budget)
    folder = Path(artifact_dir)
    data = read_build(folder)
    if data.get("backend") == "nvptx" and nvdisasm() is not None and cuda_bin("ptxas") is not None:
        try:
            ensure_sass(project, folder, budget)
        except SassError as exc:
            data = read_build(folder)
            data["sass"] = {"error": str(exc)}
            write_build(folder, data)
    return path


def sass_error(artifact_dir: str | Path) -> str:
    """Why the last SASS of this build failed ('' when it did not)."""
    try:
        return str((read_build(Path(artifact_dir)).get("sass") or {}).get("error") or "")
    except Exception:  # noqa: BLE001  no build.json
        return ""
