"""What each compiler made of the kernel, side by side (Qt-free): per backend and kernel, the
instructions by class (`ir_instructions.CLASSES`), registers, spills, shared memory and stack.

    rows = summarize([result.artifact_dir for result in build_project(project)])
    headers, cells = table(rows)        # the one formatter of `workbench ir summary` and the window

Where each number comes from (the row's `source` says it, the row's `note` what is missing):
- instructions: the code of the kernel's entry in the build's most telling listing — SASS where
  nvdisasm made one, else the PTX (nvptx, cuda-c, rust-cuda); the cpu build's assembly with line
  tables (`.lines.asm`, built on demand with `listings=True`); the SPIR-V disassembly; WGSL counted
  in its source (what the driver compiles it to is not visible here);
- registers, spills, stack, shared memory: ptxas -v (`build.json` resources) for PTX backends;
  `var<workgroup>` arrays for WGSL; the stack frame (`sub $N, %rsp`) of the cpu entry.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from workbench.build.artifacts import read_build
from workbench.build.ir_instructions import CLASSES, Listing, counts, form_of, read_listing
from workbench.errors import WorkbenchError

RESOURCE_COLUMNS = ("registers", "spills", "shared_bytes", "stack_bytes")
TITLES = {"registers": "registers", "spills": "spills (B)", "shared_bytes": "shared (B)",
          "stack_bytes": "stack (B)"}  # fmt: skip


@dataclass
class SummaryRow:
    backend: str
    kernel: str
    entry: str
    form: str  # PTX, SASS, x86-64, SPIR-V, WGSL
    source: str  # the file the instructions were counted in
    instructions: dict[str, int] = field(default_factory=dict)
    total: int = 0
    registers: int | None = None
    spills: int | None = None
    shared_bytes: int | None = None
    stack_bytes: int | None = None
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def listing_for(folder: Path, data: dict[str, Any], kernel: str) -> tuple[Path | None, str]:
    """The file whose code the summary and the diff read for one kernel of a build, and its entry."""
    record = (data.get("kernels") or {}).get(kernel) or {}
    entry = record.get("entry") or kernel
    sass = (data.get("sass") or {}).get("artifact")
    lines = (data.get("line_info") or {}).get("artifact")
    candidates = [folder / sass] if sass else []
    if data.get("backend") == "cpu" and lines:
        candidates.append(folder / lines)
    candidates += sorted(
        p for p in folder.iterdir() if p.is_file() and form_of(p) in {"SPIR-V", "PTX", "WGSL"}
    )
    artifact = record.get("artifact")
    if artifact:  # the kernel's own artifact first among PTX / WGSL files of the same form
        candidates.sort(key=lambda p: p.name != artifact and form_of(p) in {"PTX", "WGSL"})
    for path in candidates:
        if path.is_file() and form_of(path):
            return path, entry
    return None, entry


def summarize_folder(folder: str | Path) -> list[SummaryRow]:
    """One row per kernel of one build's artifact folder."""
    folder = Path(folder)
    try:
        data = read_build(folder)
    except WorkbenchError as exc:
        raise WorkbenchError(f"{folder}: not a build folder ({exc})") from None
    backend = data.get("backend", "?")
    rows = []
    for kernel in data.get("kernels") or {}:
        path, entry = listing_for(folder, data, kernel)
        row = SummaryRow(backend, kernel, entry, "", "")
        resources = (data.get("resources") or {}).get(kernel) or {}
        for key in RESOURCE_COLUMNS:
            if isinstance(resources.get(key), int):
                setattr(row, key, resources[key])
        if path is None:
            row.note = _missing(backend)
            row.instructions = dict.fromkeys(CLASSES, 0)
            rows.append(row)
            continue
        listing = read_listing(path, entry if form_of(path) != "SPIR-V" else None)
        row.form, row.source = listing.form, path.name
        row.instructions = counts(listing.instructions)
        row.total = len(listing.instructions)
        _extra(row, listing)
        if not listing.instructions:
            row.note = f"entry {entry} not found in {path.name}"
        rows.append(row)
    return rows


def _missing(backend: str) -> str:
    if backend == "cpu":
        return "no assembly yet: `workbench ir summary` builds it (the artifacts view does too)"
    return "no text listing in this build's folder"


def _extra(row: SummaryRow, listing: Listing) -> None:
    """Resources the listing itself tells (what ptxas does not report for these forms)."""
    if listing.form == "WGSL":
        row.shared_bytes = _wgsl_shared_bytes(listing.text)
        row.note = "counted in the WGSL source: the driver's compiled form is not visible here"
    elif listing.form == "x86-64":
        frames = [int(m) for m in re.findall(r"\bsubq?\s+\$(\d+),\s*%rsp", listing.text)]
        first = [ins.line for ins in listing.instructions[:1]]
        row.stack_bytes = frames[0] if frames and first else 0
        row.note = "the cpu entry's own code (calls it makes are not followed)"
    elif listing.form == "SPIR-V":
        row.note = "the whole module's function bodies"


_SIZES = {"f32": 4, "u32": 4, "i32": 4, "f16": 2, "bool": 4, "atomic<u32>": 4, "atomic<i32>": 4,
          "vec2<f32>": 8, "vec4<f32>": 16, "vec2<u32>": 8, "vec4<u32>": 16}  # fmt: skip
_WORKGROUP = re.compile(r"var<workgroup>\s+\w+\s*:\s*array<\s*([\w<>, ]+?)\s*,\s*(\d+)u?\s*>\s*;")


def _wgsl_shared_bytes(text: str) -> int:
    total = 0
    for m in _WORKGROUP.finditer(text):
        total += _SIZES.get(m.group(1).replace(" ", ""), 4) * int(m.group(2))
    return total


def summarize(folders: list[str | Path]) -> list[SummaryRow]:
    """Rows for every build folder given, in that order."""
    return [row for folder in folders for row in summarize_folder(folder)]


def ensure_listings(project, folders: list[str | Path], budget=None) -> dict[str, str]:
    """Build what the summary reads and a build does not keep: the cpu assembly with line tables
    (and SASS where nvdisasm is present). {folder: why not} for those that could not be made."""
    from workbench.build.line_info import LineInfoError, ensure_line_table
    from workbench.build.sass import SassError, ensure_sass, nvdisasm

    problems = {}
    for folder in folders:
        backend = read_build(folder).get("backend")
        try:
            if backend == "cpu":
                ensure_line_table(project, folder, budget)
            elif backend == "nvptx" and nvdisasm() is not None:
                ensure_sass(project, folder, budget)
        except (LineInfoError, SassError) as exc:
            problems[str(folder)] = str(exc)
    return problems


def table(rows: list[SummaryRow]) -> tuple[list[str], list[list[str]]]:
    """Headers and cells (text) of the summary: the command line and the window show these."""
    headers = ["backend", "kernel", "code", *CLASSES, "total", *(TITLES[k] for k in RESOURCE_COLUMNS)]
    cells = []
    for row in rows:
        cells.append(
            [row.backend, row.kernel, row.form or "—", *(str(row.instructions.get(c, 0)) for c in CLASSES),
             str(row.total), *("—" if getattr(row, k) is None else str(getattr(row, k)) for k in RESOURCE_COLUMNS)]
        )  # fmt: skip
    return headers, cells
