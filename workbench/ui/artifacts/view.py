"""Generated code beside the Rust source: PTX, SPIR-V disassembly, WGSL / CUDA C++, resource use.

PTX (`.loc`) and SPIR-V disassembly (`OpLine`) are linked to the Rust source both ways: a Rust line
highlights the instructions made from it, an instruction the Rust line it came from (one line map,
`PtxLines`; `SpirvLines` for SPIR-V). A module without line information says so and names the
build option that adds it.

A save during hot reload changes the Rust source shown here: the source view is updated in place
(only the changed lines are replaced) and highlighted by the editor's incremental Rust highlighter,
so a one-line edit re-highlights a line, not the file. Nothing is refreshed while the view is off
screen (its dock tabified behind another one); it catches up when it is shown. The panes themselves
(numbered, highlighted, linked lines, in-place updates): `code_panes.py`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from PySide6.QtCore import Qt, SignalInstance
from PySide6.QtGui import (
    QFont,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QSizePolicy,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from workbench.build.ptx_lines import PtxLines
from workbench.build.spirv_lines import NO_LINES_HINT, SpirvLines
from workbench.ui.artifacts import ir_panes, line_links
from workbench.ui.artifacts.code_panes import (
    TEXT_SUFFIXES,
    NumberedView,
    code_view,
    read_text,
    replace_changed,
    set_code,
)
from workbench.ui.editor.highlighter import RustHighlighter
from workbench.ui.layout_fit import wrap_within
from workbench.ui.visibility import WhenSeen

#: Artifact suffixes with a line map to the Rust source: (what the view calls them, parser).
LINE_MAPS = {
    ".ptx": ("PTX", PtxLines.parse),
    ".s": ("PTX", PtxLines.parse),
    ".asm": ("assembly", PtxLines.parse),  # same `.file` / `.loc` directives as PTX
    ".spvasm": ("SPIR-V", SpirvLines.parse),
}
#: The columns an IR pane is given room for: a PTX instruction with its operands
#: (`\tld.global.nc.f32 \t%f1, [%rd10];` spans 40 with its tabs) or a SPIR-V one
#: (`%26 = OpFMul %float %24 %25` …). Narrower than two of these, the panes stack.
INSTRUCTION_COLUMNS = 48
#: Listings whose line map needs a sibling file (SASS: its PTX's `.loc` lines): parser(path, text).
PATH_LINE_MAPS = {".sass": ("SASS", ir_panes.sass_map)}
#: Backends whose line tables are a build of their own, made when the view asks
#: (`workbench.build.line_info`): what the note says while it is built.
LINE_TABLE_BUILDS = {"nvptx": "Rust ↔ PTX view (a line-table build of its own; the timed PTX is not changed)",
                     "cpu": "Rust ↔ assembly view (rustc's assembly with line tables; the timed library is "
                            "not changed)"}  # fmt: skip
RESOURCE_KEYS = (("registers", "Registers"), ("spills", "Spills"), ("shared_bytes", "Shared memory (B)"),
                 ("stack_bytes", "Stack (B)"))  # fmt: skip


@runtime_checkable
class ArtifactsBridge(Protocol):
    """The bridge members the artifacts view uses (`ServiceBridge` has them:
    tests/ui/test_typed_events.py)."""

    buildFinished: SignalInstance
    lineInfoReady: SignalInstance
    projectChanged: SignalInstance
    project: Any
    last_build: dict[str, Any] | None

    def request_line_info(self, artifact_dir: str) -> bool: ...


class ArtifactsView(QWidget):
    """Per backend: each generated text artifact and the resource report, beside the Rust source."""

    def __init__(self, bridge: ArtifactsBridge, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("ArtifactsView")
        self.bridge = bridge
        self._results: dict[str, Any] = {}
        # Highlighting PTX and sources costs tens of milliseconds of GUI time: done only while
        # visible, and only when what is shown has changed (most saves leave artifacts cached).
        # Listing, reading and highlighting wait until the view is seen: 3-7 ms of the open step's
        # longest stall when done covered (day_sequence.py).
        self._outdated = WhenSeen(self, self._refresh)
        self._shown: tuple[str, str] | None = None
        # The project whose Rust sources the source list waits for (listing them walks the folder
        # and resolves each path): filled when the view is seen, as the highlighting is.
        self._sources_of: Any = None

        self.backend_box = QComboBox()
        self.backend_box.setObjectName("artifactBackend")
        self.backend_box.setMinimumContentsLength(10)
        self.info = QLabel("")
        self.info.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.info.setWordWrap(True)  # its long line must not set the dock's minimum width (issue 8)
        self.info.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.resources = QTableWidget(0, 1 + len(RESOURCE_KEYS))
        self.resources.setObjectName("resources")
        self.resources.setHorizontalHeaderLabels(["Entry", *(title for _, title in RESOURCE_KEYS)])
        self.resources.verticalHeader().setVisible(False)
        self.resources.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.resources.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.resources.horizontalHeader().setStretchLastSection(True)
        self.source_box = QComboBox()
        self.source_box.setObjectName("rustSource")
        self.source_view = code_view("rustSourceView")
        self.source_view.document().setUndoRedoEnabled(False)  # read-only: no undo history to keep
        self.source_highlighter = RustHighlighter(self.source_view.document())
        self._source_path: str | None = None  # the file the source view shows
        self._line_asked: dict[str, str] = {}  # artifact folder -> "" (in flight) or why there is none
        self.lines_note = QLabel("")
        self.lines_note.setObjectName("lineInfo")
        wrap_within(self.lines_note)
        self.lines_note.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(0, 0, 0, 0)
        bar = QHBoxLayout()
        bar.addWidget(QLabel("Backend:"))
        bar.addWidget(self.backend_box)
        bar.addWidget(self.info, 1)
        ll.addLayout(bar)
        ll.addWidget(self.tabs, 1)
        ll.addWidget(self.lines_note)
        right = QWidget()
        rl = QVBoxLayout(right)
        rl.setContentsMargins(0, 0, 0, 0)
        sbar = QHBoxLayout()
        title = QLabel("Rust source:")
        bold = QFont(title.font())
        bold.setBold(True)
        title.setFont(bold)
        sbar.addWidget(title)
        sbar.addWidget(self.source_box, 1)
        rl.addLayout(sbar)
        rl.addWidget(self.source_view, 1)
        # Side by side, half each (Compiler Explorer style) when both halves hold an instruction;
        # in a narrower dock (the right column at 1280 px) the generated code goes above the
        # Rust source, at full width: side by side, PTX lines were cut at ~200 px.
        self.splitter = splitter = QSplitter(Qt.Orientation.Horizontal)
        splitter.addWidget(left)
        splitter.addWidget(right)
        splitter.setStretchFactor(0, 1)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([1000, 1000])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(splitter)

        self.backend_box.currentTextChanged.connect(self.show_backend)
        self.source_box.currentIndexChanged.connect(self._show_source)
        self.source_view.cursorPositionChanged.connect(self._from_source)
        bridge.buildFinished.connect(self.set_results)
        bridge.lineInfoReady.connect(self._line_info_ready)
        bridge.projectChanged.connect(self._project_changed)
        self._project_changed(bridge.project)
        if bridge.last_build:
            self.set_results(bridge.last_build)

    # ------------------------------------------------------------------ inputs
    def _project_changed(self, project: Any) -> None:
        self._results = {}
        self._previous: dict[str, Any] = {}  # backend -> its build before the current one
        self._diff_waiting: set[str] = set()  # folders whose line tables the Diff pane waits for
        self._shown = None
        self.backend_box.clear()
        self.tabs.clear()
        self.source_box.blockSignals(True)
        self.source_box.clear()
        self.source_box.blockSignals(False)
        self._sources_of = project
        self._outdated.mark()

    def _fill_sources(self) -> None:
        """The source list of the project it waits for (`_sources_of`), its main source chosen."""
        project, self._sources_of = self._sources_of, None
        if project is None:
            return
        self.source_box.blockSignals(True)
        self.source_box.clear()
        main = project.main_source()
        for path in project.rust_sources():
            self.source_box.addItem(project.relative(path), str(path))
        if main is not None:
            self.source_box.setCurrentIndex(max(0, self.source_box.findData(str(main))))
        self.source_box.blockSignals(False)

    def set_results(self, results: dict[str, Any]) -> None:
        """Take a build's {backend: BuildResult}; keeps the shown backend when it is still there."""
        for backend, result in results.items():
            old = self._results.get(backend)
            if result.status == "ok" and old is not None and old.status == "ok" and old.key != result.key:
                self._previous[backend] = old  # the Diff pane compares the two
            if result.status == "ok" or backend not in self._results:
                self._results[backend] = result
        self._outdated.mark()

    def pane_width(self) -> int:
        """What one code pane needs: `INSTRUCTION_COLUMNS` of code, its gutter, a scroll bar."""
        view = self.source_view
        text = view.fontMetrics().horizontalAdvance("0" * INSTRUCTION_COLUMNS)
        bar = view.verticalScrollBar().sizeHint().width()
        return text + view.gutter_width() + bar + 2 * view.frameWidth() + 8

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        side_by_side = self.width() >= 2 * self.pane_width() + self.splitter.handleWidth() + 8
        orientation = Qt.Orientation.Horizontal if side_by_side else Qt.Orientation.Vertical
        if self.splitter.orientation() != orientation:
            self.splitter.setOrientation(orientation)
            self.splitter.setSizes([1000, 1000])

    def shutdown(self) -> None:
        """Stop the source highlighter's lazy pass (a large file is highlighted in chunks)."""
        self.source_highlighter.stop()

    def closeEvent(self, event) -> None:
        self.shutdown()
        super().closeEvent(event)

    def _refresh(self) -> None:
        self._outdated.clear()
        self._fill_sources()  # first: the backend's panes link their lines to these sources
        current = self.backend_box.currentText()
        self.backend_box.blockSignals(True)
        self.backend_box.clear()
        names = [b for b, r in self._results.items() if r.status == "ok"]
        self.backend_box.addItems(names)
        self.backend_box.blockSignals(False)
        target = current if current in names else (names[0] if names else "")
        if target:
            self.backend_box.setCurrentText(target)
        self.show_backend(target)
        self._show_source()  # a save may have changed it

    # ------------------------------------------------------------------ showing
    def show_backend(self, name: str) -> None:
        """Show one backend's artifacts and resource report."""
        if name and self.backend_box.currentText() != name and self.backend_box.findText(name) >= 0:
            self.backend_box.setCurrentText(name)  # re-enters through currentTextChanged
            return
        result = self._results.get(name)
        shown = (name, getattr(result, "key", "") or getattr(result, "artifact_dir", ""))
        if result is not None and shown == self._shown and self.tabs.count():
            return  # the same build is on screen already
        self.tabs.clear()
        self._shown = shown if result is not None else None
        if result is None:
            self.info.setText("no successful build yet" if not name else f"{name}: not built")
            return
        texts = self.artifact_files(result)
        for path in texts:
            view = code_view(f"artifact:{path.name}")
            text = read_text(path)
            set_code(view, text, TEXT_SUFFIXES.get(path.suffix))
            if path.suffix in LINE_MAPS or path.suffix in PATH_LINE_MAPS:
                if path.suffix in PATH_LINE_MAPS:
                    view.code_kind, parse_at = PATH_LINE_MAPS[path.suffix]
                    view.line_map = parse_at(path, text)
                else:
                    view.code_kind, parse = LINE_MAPS[path.suffix]
                    view.line_map = parse(text)
                view.cursorPositionChanged.connect(lambda v=view: self._from_artifact(v))
            view.setToolTip(str(path))
            self.tabs.addTab(view, path.name)
        self._describe_line_info(name)
        self._ask_line_info(name, result)
        binaries = [Path(a) for a in result.artifacts or [] if Path(a) not in texts]
        if binaries:  # a cdylib, a .spv: say what and where, the text views cannot show them
            view = code_view("artifact:files")
            lines = [f"{p.name}  ({p.stat().st_size:,} bytes)\n  {p}" for p in binaries if p.is_file()]
            view.setPlainText("Binary artifacts (not shown as text):\n\n" + "\n\n".join(lines))
            self.tabs.addTab(view, "Files")
        self._fill_resources(result)
        self.tabs.addTab(self.resources, "Resources")
        self._add_ir_panes(name, result)
        toolchain = result.toolchain or {}
        flags = " ".join(result.flags or [])
        info = " · ".join(
            x for x in (toolchain.get("version", ""), flags, "cache hit" if result.cached else "") if x
        )
        self.info.setToolTip(info)
        self.info.setText(self.info.fontMetrics().elidedText(info, Qt.TextElideMode.ElideRight, 420))

    def artifact_files(self, result: Any) -> list[Path]:
        """Text files to show for a build: its artifacts, siblings like .spvasm, reference sources."""
        files: list[Path] = []
        candidates = [Path(a) for a in result.artifacts or []]
        folder = Path(result.artifact_dir) if result.artifact_dir else None
        if folder is not None and folder.is_dir():
            candidates += sorted(p for p in folder.iterdir() if p.is_file())
        project = self.bridge.project
        if project is not None:
            for kernel in project.manifest.kernels:
                rel = kernel.reference.get(result.backend)
                if rel:
                    candidates.append(project.root / rel)
        for path in candidates:
            # A reference copied in as the artifact (wgsl) shows once: the copy is what ran.
            if path.name.endswith(".sass.ptx"):
                continue  # the PTX ptxas -lineinfo was given for the SASS: the .lines.ptx shows it
            if path.suffix in TEXT_SUFFIXES and path.is_file() and path.name not in {f.name for f in files}:
                files.append(path)
        return files

    def _fill_resources(self, result: Any) -> None:
        resources = result.resources or {}
        entries = [(entry, values) for entry, values in resources.items() if isinstance(values, dict)]
        self.resources.setRowCount(len(entries))
        shown = dict(RESOURCE_KEYS)
        for row, (entry, values) in enumerate(entries):
            self.resources.setItem(row, 0, QTableWidgetItem(entry))
            # What has no column of its own is the tooltip of every cell of the row.
            tooltip = "\n".join(f"{k}: {v}" for k, v in values.items() if k not in shown)
            for col, key in enumerate(shown, start=1):
                value = values.get(key)
                item = QTableWidgetItem("—" if value is None else str(value))
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if tooltip:
                    item.setToolTip(tooltip)
                self.resources.setItem(row, col, item)

    def _show_source(self, *_: Any) -> None:
        path = self.source_box.currentData()
        if not path:
            self._source_path = None
            self.source_view.setPlainText("")
            return
        text = read_text(Path(path))
        old = self.source_view.toPlainText()
        if text == old:
            self._source_path = path
            return
        if path == self._source_path:
            replace_changed(self.source_view, old, text)  # a save: usually a line or two
            return
        self._source_path = path
        bar = self.source_view.verticalScrollBar()
        position = bar.value()
        self.source_highlighter.set_text(self.source_view, text)  # the top now, the rest in chunks
        bar.setValue(position)

    # ------------------------------------------------------------------ Rust <-> PTX / SPIR-V lines
    def line_views(self) -> list[NumberedView]:
        """The artifact views that carry line information (PTX `.loc`, SPIR-V `OpLine`)."""
        views = [self.tabs.widget(i) for i in range(self.tabs.count())]
        return [v for v in views if isinstance(v, NumberedView) and v.line_map and v.line_map.has_lines]

    def _ask_line_info(self, backend: str, result: Any) -> None:
        """An nvptx or cpu build without line tables: have them built (once per build), off the GUI
        thread."""
        folder = getattr(result, "artifact_dir", "") or ""
        if backend not in LINE_TABLE_BUILDS or not folder or self.line_views():
            return
        if folder in self._line_asked:
            why = self._line_asked[folder]
            if why:
                self.lines_note.setText(f"{backend}: no line information: {why}")
            return
        self._line_asked[folder] = ""
        if self.bridge.request_line_info(folder):
            self.lines_note.setText(
                f"{backend}: building line information for the {LINE_TABLE_BUILDS[backend]}…"
            )

    def _add_ir_panes(self, backend: str, result: Any) -> None:
        """SASS note, Summary across backends, Diff with the previous build (`ir_panes`)."""
        added, waiting = ir_panes.panes(backend, result, self._previous.get(backend), self._results)
        for title, widget in added:
            self.tabs.addTab(widget, title)
        failed = {f: self._line_asked[f] for f in waiting if self._line_asked.get(f)}
        if failed:  # asked before and refused (e.g. the earlier build's sources changed since)
            diff = next(w for t, w in added if t == "Diff")
            diff.setPlainText(f"{backend}: the builds cannot be compared: no line tables for "
                              + "; ".join(f"{f}: {why}" for f, why in failed.items()))  # fmt: skip
            return
        for folder in waiting:
            if folder not in self._diff_waiting:
                self._diff_waiting.add(folder)
                self._line_asked.setdefault(folder, "")
                self.bridge.request_line_info(folder)

    def _line_info_ready(self, folder: str, path: Any, message: str) -> None:
        self._line_asked[folder] = "" if path else (message.splitlines()[0] if message else "unknown")
        if folder in self._diff_waiting:
            self._diff_waiting.discard(folder)
            if not self._diff_waiting:
                self._shown = None  # both builds' line tables are in (or refused): compare them
                self.show_backend(self.backend_box.currentText())
        shown = self._results.get(self.backend_box.currentText())
        if shown is None or getattr(shown, "artifact_dir", "") != folder:
            return
        if path:
            self._shown = None  # the folder has a new file: show the backend again
            self.show_backend(self.backend_box.currentText())
        else:
            backend = self.backend_box.currentText()
            self.lines_note.setText(f"{backend}: no line information: {self._line_asked[folder]}")

    def _describe_line_info(self, backend: str) -> None:
        views = [self.tabs.widget(i) for i in range(self.tabs.count())]
        mapped = [v for v in views if isinstance(v, NumberedView) and v.line_map is not None]
        ptx = [v for v in mapped if v.code_kind == "PTX"]
        spirv = [v for v in mapped if v.code_kind == "SPIR-V"]
        with_lines = self.line_views()
        if with_lines:
            names = ", ".join(self.tabs.tabText(self.tabs.indexOf(v)) for v in with_lines)
            kind = with_lines[0].code_kind
            without = [self.tabs.tabText(self.tabs.indexOf(v)) for v in ptx if v not in with_lines]
            text = (
                f"Rust ↔ {kind}: put the cursor on a Rust line to highlight its {kind} lines in {names}, "
                "and back."
            )
            if without:
                text += f" {', '.join(without)} (the timed build) has no line information."
        elif spirv:
            names = ", ".join(self.tabs.tabText(self.tabs.indexOf(v)) for v in spirv)
            text = f"{backend}: {names} has {NO_LINES_HINT}."
        elif ptx:
            text = (
                f"{backend}: its PTX has no line information (no .loc lines), so Rust lines map to nothing."
            )
        else:
            text = (
                f"{backend}: no line information (Rust lines map to PTX from the nvptx build and to "
                "SPIR-V disassembly from rust-gpu modules with OpLine)."
            )
        self.lines_note.setText(text)

    def _from_source(self) -> None:
        line_links.from_source(self)

    def _from_artifact(self, view: NumberedView) -> None:
        line_links.from_artifact(self, view)
