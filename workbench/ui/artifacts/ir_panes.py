"""The artifacts view's comparison panes: Summary (one table across backends) and Diff (the shown
backend's previous build against its current one, by source line), plus the SASS note.

Widgets only: the numbers and texts are `workbench.build.ir_summary.table` and
`workbench.build.ir_diff.describe`, the same as `workbench ir summary|diff` prints. The artifacts
view calls `panes(view, backend, result, previous)` after its own tabs (the one hook it has).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QPlainTextEdit, QTableWidget, QTableWidgetItem

from workbench.build.ir_diff import IrDiffError, describe, diff_builds
from workbench.build.ir_summary import summarize, table
from workbench.build.sass import MISSING, nvdisasm, sass_error, sass_path
from workbench.errors import WorkbenchError
from workbench.ui.editor.code_view import editor_font

#: Backends whose diff needs line-table listings the view has the bridge build (the rest read files
#: every build keeps).
NEEDS_LINE_TABLES = {"cpu", "nvptx"}


def summary_table(results: dict[str, Any]) -> QTableWidget:
    """Every successful build's row: instructions by class, registers, spills, shared, stack."""
    folders = [r.artifact_dir for r in results.values() if r.status == "ok" and r.artifact_dir]
    rows = []
    for folder in folders:
        try:
            rows += summarize([folder])
        except (WorkbenchError, OSError):
            continue  # a folder replaced under us: the next refresh has it
    headers, cells = table(rows)
    widget = QTableWidget(len(cells), len(headers))
    widget.setObjectName("irSummary")
    widget.setHorizontalHeaderLabels(headers)
    widget.verticalHeader().setVisible(False)
    widget.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    widget.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    for r, (row, texts) in enumerate(zip(rows, cells, strict=True)):
        tip = "\n".join(x for x in (f"counted in {row.source}" if row.source else "", row.note) if x)
        for c, text in enumerate(texts):
            item = QTableWidgetItem(text)
            if c >= 3:
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            if tip:
                item.setToolTip(tip)
            widget.setItem(r, c, item)
    widget.rows = rows  # the records behind the cells (tests and tooltips read them)
    return widget


def _text(name: str, text: str) -> QPlainTextEdit:
    view = QPlainTextEdit()
    view.setObjectName(name)
    view.setReadOnly(True)
    view.setFont(editor_font())
    view.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
    view.setPlainText(text)
    return view


def diff_text(backend: str, previous: Any, result: Any) -> tuple[str, list[str]]:
    """The Diff pane's text, and the folders whose line tables it still waits for."""
    if previous is None:
        return (f"{backend}: one build so far. Change a tunable or edit the source: the next build is "
                "compared with this one here, line by line."), []  # fmt: skip
    folders = [previous.artifact_dir, result.artifact_dir]
    if backend in NEEDS_LINE_TABLES:
        from workbench.build.artifacts import read_build

        missing = [f for f in folders if not (read_build(f).get("line_info") or {}).get("artifact")]
        if missing:
            return f"{backend}: building the line tables of both builds to compare them…", missing
    try:
        diff = diff_builds(previous.artifact_dir, result.artifact_dir)
    except (IrDiffError, WorkbenchError, OSError) as exc:
        return f"{backend}: the builds cannot be compared: {exc}", []
    return "\n".join(describe(diff)), []


def sass_note(result: Any) -> QPlainTextEdit | None:
    """An nvptx build without SASS: why (nvdisasm missing: what would make it work)."""
    folder = getattr(result, "artifact_dir", "") or ""
    if not folder or sass_path(folder) is not None:
        return None
    if nvdisasm() is None:
        return _text("sassMissing", MISSING)
    if why := sass_error(folder):
        return _text("sassMissing", f"SASS could not be made: {why}")
    return _text("sassMissing", "SASS: built with the line tables (ptxas -lineinfo, nvdisasm -gp)…")


def panes(
    backend: str, result: Any, previous: Any, results: dict[str, Any]
) -> tuple[list[tuple[str, Any]], list[str]]:
    """(tab title, widget) for the artifacts view, after its own tabs, and the folders whose line
    tables the Diff pane waits for (the view asks the bridge to build them)."""
    out: list[tuple[str, Any]] = []
    if backend == "nvptx":
        note = sass_note(result)
        if note is not None:
            out.append(("SASS", note))
    out.append(("Summary", summary_table(results)))
    text, waiting = diff_text(backend, previous, result)
    out.append(("Diff", _text("irDiff", text)))
    return out, waiting


def sass_map(path: Path, text: str):
    """A `.sass` listing's line map, through its `.sass.ptx` sibling's `.loc` lines."""
    from workbench.build.ptx_lines import PtxLines
    from workbench.build.sass import SassLines

    ptx = path.with_name(path.name + ".ptx")
    try:
        ptx_text = ptx.read_text(errors="replace")
    except OSError:
        ptx_text = ""
    return SassLines.parse(text, PtxLines.parse(ptx_text))
