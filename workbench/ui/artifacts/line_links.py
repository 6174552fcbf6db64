"""The artifacts view's two-way links between the Rust source and a listing (PTX, SPIR-V, SASS,
assembly): a Rust line marks the instructions made from it, an instruction the Rust line it came
from, and the note under them says which. Functions over the view (`self` is the `ArtifactsView`);
the line maps are `workbench.build.ptx_lines` / `spirv_lines`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workbench.build.source_match import best_match
from workbench.ui.artifacts.code_panes import NumberedView

#: The view these functions serve (`view.ArtifactsView`; not imported: the view imports this module).
ArtifactsView = Any


def from_source(self: ArtifactsView) -> None:
    """The Rust cursor moved: highlight the PTX lines generated from its line."""
    if not self._source_path:
        return
    line = self.source_view.textCursor().blockNumber() + 1
    views = self.line_views()
    if not views:
        return
    self.source_view.set_linked([line], scroll=False)
    hits = {}
    for view in views:
        lines = view.line_map.ptx_lines_for(self._source_path, line)
        view.set_linked(lines)
        hits[view] = lines
    current = self.tabs.currentWidget()
    if not hits.get(current):
        best = next((v for v, lines in hits.items() if lines), None)
        if best is not None:
            self.tabs.setCurrentWidget(best)
    shown = hits.get(self.tabs.currentWidget()) or []
    kind = getattr(self.tabs.currentWidget(), "code_kind", "") or views[0].code_kind
    rel = self.source_box.currentText()
    self.lines_note.setText(
        f"{rel}:{line} → {kind} lines {ranges(shown)}"
        if shown
        else f"{rel}:{line} generated no {kind} instructions"
    )


def from_artifact(self: ArtifactsView, view: NumberedView) -> None:
    """A PTX / SPIR-V cursor moved: highlight the Rust line it came from, and that line's
    PTX / SPIR-V lines."""
    if view.line_map is None or not view.line_map.has_lines:
        return
    number = view.textCursor().blockNumber() + 1
    hit = view.line_map.source_for(number)
    kind = view.code_kind
    if hit is None:
        view.set_linked([], scroll=False)
        self.lines_note.setText(f"{kind} line {number}: no source line")
        return
    file, line = hit
    index = source_index(self, file)
    if index < 0:
        view.set_linked(view.line_map.ptx_lines_for(file, line), scroll=False)
        self.lines_note.setText(f"{kind} line {number} comes from {file}:{line} (not a file of this project)")
        return
    if index != self.source_box.currentIndex():
        self.source_box.setCurrentIndex(index)
    view.set_linked(view.line_map.ptx_lines_for(file, line), scroll=False)
    self.source_view.set_linked([line])
    ptx_line = getattr(view.line_map, "ptx_line_of", {}).get(number)
    if ptx_line is not None:  # SASS: its PTX line too, in the line-table PTX
        for other in self.line_views():
            if other.code_kind == "PTX":
                other.set_linked([ptx_line])
        self.lines_note.setText(
            f"SASS line {number} ← PTX line {ptx_line} ← {self.source_box.currentText()}:{line}"
        )
        return
    self.lines_note.setText(f"{kind} line {number} ← {self.source_box.currentText()}:{line}")


def source_index(self: ArtifactsView, file: str) -> int:
    """The source box entry of a `.file` path (the same file, or the same tail when the build
    ran in another copy of the project)."""
    entries = [(i, self.source_box.itemData(i)) for i in range(self.source_box.count())]
    same = next((i for i, path in entries if Path(path) == Path(file)), None)
    if same is not None:
        return same
    best = best_match(file, entries)
    return -1 if best is None else best


def ranges(lines: list[int]) -> str:
    """[3, 4, 5, 9] -> "3–5, 9"."""
    out: list[str] = []
    start = prev = None
    for n in [*sorted(lines), None]:
        if start is not None and (n is None or n != prev + 1):
            out.append(str(start) if start == prev else f"{start}–{prev}")
            start = None
        if n is not None and start is None:
            start = n
        prev = n
    return ", ".join(out)
