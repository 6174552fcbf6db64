"""The build panel: one row per backend (state, time, cache), the selected backend's log, diagnostics."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from PySide6.QtCore import QElapsedTimer, Qt, QTimer, Signal, SignalInstance
from PySide6.QtGui import QColor, QIcon
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QPlainTextEdit,
    QPushButton,
    QStyle,
    QTabWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.build.builder import cached_result
from workbench.build.manifest_check import MANIFEST_SOURCE
from workbench.build.occupancy import occupancy_texts
from workbench.build.process import progress_text
from workbench.run.sim_findings import RUN_SOURCE, run_diagnostics
from workbench.ui import theme
from workbench.ui.build.diagnostics import DiagnosticsList, field_of
from workbench.ui.editor.code_editor import editor_font
from workbench.ui.layout_fit import ElidedLabel, OnResize
from workbench.ui.visibility import OnShow

#: State -> (label, colour) shown in the State column.
STATES = {
    "idle": ("idle", theme.MUTED),
    # A build whose runtime is unavailable here waits for the cycle's runs (BuildService's hold).
    "waiting": ("waiting for the runs", theme.MUTED),
    "building": ("building…", theme.BUSY),
    "ok": ("ok", theme.GOOD),
    "error": ("error", theme.BAD),
    "skipped": ("skipped – not installed", theme.MUTED),
    "cancelled": ("cancelled", theme.WARN),
}
COL_BACKEND, COL_STATE, COL_TIME, COL_CACHE, COL_ARTIFACTS = range(5)
#: What the log says while it has no line: nothing selected, an idle backend (looked up in the
#: cache, found not built), or the selected backend's state.
NO_SELECTION = "Select a backend to see its build log."
LOOKING = "Looking for {backend}'s build of these sources in the cache…"
NOT_BUILT = "{backend} is not built from these sources yet: Build or Run builds it, and its log shows here."
EMPTY_LOGS = {
    "waiting": "{backend} waits for the runs: it builds once the results are in, and its log shows here.",
    "building": "{backend} is building: no output yet.",
    "cancelled": "{backend}'s build was cancelled before it printed anything.",
    "ok": "{backend}'s build printed nothing.",
}
LOG_LIMIT_LINES = 5000


#: Words of the summary that take a plural; states like "ok" or "building…" do not.
_COUNTABLE = {"error": "errors", "diagnostic": "diagnostics"}


def _count(n: int, word: str) -> str:
    """ "1 error", "2 errors", "2 ok" (only nouns are pluralised)."""
    return f"{n} {_COUNTABLE.get(word, word) if n != 1 else word}"


class _Row:
    """What the panel knows about one backend's current build."""

    def __init__(self, item: QTreeWidgetItem):
        self.item = item
        self.state = "idle"
        self.clock = QElapsedTimer()
        self.result: Any = None  # the BuildResult shown, once the build finished
        self.log: list[str] = []


@runtime_checkable
class BuildPanelBridge(Protocol):
    """The bridge members the build panel uses (`ServiceBridge` has them:
    tests/ui/test_typed_events.py)."""

    buildEvent: SignalInstance
    buildFinished: SignalInstance
    busyChanged: SignalInstance
    projectChanged: SignalInstance
    backendsChanged: SignalInstance
    manifestChecked: SignalInstance
    project: Any
    build_service: Any

    def backends(self) -> list[str]: ...
    def tunables(self) -> dict: ...
    def build(self) -> None: ...
    def cancel(self) -> None: ...


class BuildPanel(QWidget):
    """Build states per backend, the selected backend's log, and clickable diagnostics."""

    #: Absolute path, 1-based line, 1-based column of a clicked diagnostic.
    openLocation = Signal(str, int, int)
    #: (backend, project, BuildResult or None): a cache lookup's answer, from its thread.
    _looked_up = Signal(str, object, object)

    def __init__(self, bridge: BuildPanelBridge, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("BuildPanel")
        self.bridge = bridge
        self._rows: dict[str, _Row] = {}
        self._icons: dict[str, QIcon] = {}
        self._manifest_diagnostics: list[dict] = []  # workbench.toml's, as last read (bridge.manifestChecked)

        self.build_button = QPushButton("Build")
        self.build_button.setIcon(self.style().standardIcon(QStyle.StandardPixmap.SP_BrowserReload))
        self.build_button.setToolTip("Build the selected backends")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setIcon(self.style().standardIcon(QStyle.StandardPixmap.SP_BrowserStop))
        self.cancel_button.setToolTip("Stop the build in flight (its processes are killed)")
        self.cancel_button.setEnabled(False)
        self.summary = ElidedLabel("")  # one line: a long summary never widens the dock
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        self.table = QTreeWidget()
        self.table.setObjectName("buildStates")
        self.table.setRootIsDecorated(False)
        self.table.setUniformRowHeights(True)
        self.table.setAlternatingRowColors(True)
        self.table.setHeaderLabels(["Backend", "State", "Time", "Cache", "Artifacts"])
        header = self.table.header()
        header.setStretchLastSection(True)
        for col in (COL_BACKEND, COL_STATE, COL_TIME, COL_CACHE):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)

        self.log_view = QPlainTextEdit()
        self.log_view.setObjectName("buildLog")
        self.log_view.setReadOnly(True)
        self.log_view.setFont(editor_font())
        self.log_view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.log_view.setMaximumBlockCount(LOG_LIMIT_LINES)
        self.log_view.setPlaceholderText(NO_SELECTION)
        self._lookups: set[tuple[str, int]] = set()  # (backend, id(project)) being looked up
        self._looked_up.connect(self._on_looked_up, Qt.ConnectionType.QueuedConnection)

        self.diagnostics = DiagnosticsList(bridge.backends)

        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(self.diagnostics, "Diagnostics")
        self.tabs.addTab(self.log_view, "Log")
        self._log_show_filter = OnShow(self._log_shown, self.log_view)

        buttons = QHBoxLayout()
        buttons.addWidget(self.build_button)
        buttons.addWidget(self.cancel_button)
        buttons.addSpacing(12)
        buttons.addWidget(self.summary, 1)
        # The states table is as tall as its rows (`_fit_rows`): every backend stays in view, the
        # diagnostics and the log below take the rest (a splitter there hid rows: 2½ of 3 shown).
        self._row_fitter = OnResize(self._fit_rows, self.table)
        # A wider state ("skipped – not installed") may bring the horizontal scroll bar.
        self.table.header().sectionResized.connect(lambda *_: self._fit_rows())
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(buttons)
        layout.addWidget(self.table)
        layout.addWidget(self.tabs, 1)

        # Elapsed times tick only while something builds; the timer is stopped otherwise.
        self._ticker = QTimer(self)
        self._ticker.setObjectName("buildElapsedTicker")
        self._ticker.setInterval(100)
        self._ticker.timeout.connect(self._tick)

        self.build_button.clicked.connect(bridge.build)
        self.cancel_button.clicked.connect(bridge.cancel)
        self.table.currentItemChanged.connect(self._show_selected_log)
        self.diagnostics.itemClicked.connect(self._open_diagnostic)
        bridge.buildEvent.connect(self._on_build_event)
        bridge.buildFinished.connect(self._on_build_finished)
        bridge.busyChanged.connect(self._on_busy)
        bridge.projectChanged.connect(self._reset)
        bridge.backendsChanged.connect(self._reset)
        bridge.manifestChecked.connect(self.show_manifest_diagnostics)
        bridge.runFinished.connect(self._on_run_finished)
        self._reset()

    # ------------------------------------------------------------------ state
    def state(self, backend: str) -> str:
        """The backend's row state (`idle`, `waiting`, `building`, `ok`, `error`, `skipped`,
        `cancelled`)."""
        row = self._rows.get(backend)
        return row.state if row else ""

    def _reset(self, *_: Any) -> None:
        self._ticker.stop()
        self.table.clear()
        self._rows.clear()
        self.diagnostics.clear()
        self.log_view.clear()
        self.summary.clear()
        for diagnostic in self._manifest_diagnostics:  # workbench.toml's stand until it is re-read
            self._add_diagnostic(MANIFEST_SOURCE, diagnostic)
        for backend in self.bridge.backends():
            self._row(backend)
        if self.table.topLevelItemCount():
            self.table.setCurrentItem(self.table.topLevelItem(0))
        self._fit_rows()

    def _fit_rows(self) -> None:
        """Make the states table exactly as tall as its rows (and its scroll bar, when its
        columns are wider than the panel)."""
        table = self.table
        rows = table.topLevelItemCount()
        row_height = table.sizeHintForRow(0) if rows else 0
        row_height = max(row_height, table.fontMetrics().height() + 4)
        need = table.header().sizeHint().height() + max(rows, 1) * row_height + 2 * table.frameWidth()
        if table.header().length() > table.viewport().width():
            need += table.horizontalScrollBar().sizeHint().height()
        if table.minimumHeight() != need or table.maximumHeight() != need:
            table.setFixedHeight(need)

    def _row(self, backend: str) -> _Row:
        row = self._rows.get(backend)
        if row is None:
            item = QTreeWidgetItem([backend, "", "", "", ""])
            item.setData(COL_BACKEND, Qt.ItemDataRole.UserRole, backend)
            item.setTextAlignment(COL_TIME, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            self.table.addTopLevelItem(item)
            row = self._rows[backend] = _Row(item)
            self._fit_rows()
            self._set_state(row, "idle")
        return row

    def _set_state(self, row: _Row, state: str, tooltip: str = "") -> None:
        label, colour = STATES.get(state, (state, theme.MUTED))
        if row.state == state and row.item.toolTip(COL_STATE) == (tooltip or label):
            return  # every build event lands here: repaint only on a change
        row.state = state
        row.item.setText(COL_STATE, label)
        row.item.setForeground(COL_STATE, QColor(colour))
        row.item.setIcon(COL_STATE, self._state_icon(state))
        row.item.setToolTip(COL_STATE, tooltip or label)
        if row.item is self.table.currentItem():
            self._show_placeholder()

    def _state_icon(self, state: str) -> QIcon:
        if state not in self._icons:  # the style's icons are loaded once
            self._icons[state] = self._load_state_icon(state)
        return self._icons[state]

    def _load_state_icon(self, state: str) -> QIcon:
        pixmap = {
            "ok": QStyle.StandardPixmap.SP_DialogApplyButton,
            "error": QStyle.StandardPixmap.SP_MessageBoxCritical,
            "skipped": QStyle.StandardPixmap.SP_MessageBoxInformation,
            "cancelled": QStyle.StandardPixmap.SP_BrowserStop,
            "building": QStyle.StandardPixmap.SP_BrowserReload,
        }.get(state)
        return self.style().standardIcon(pixmap) if pixmap is not None else QIcon()

    # ------------------------------------------------------------------ events from the bridge
    def _on_build_event(self, event: Any) -> None:
        backend = field_of(event, "backend") or ""
        kind = field_of(event, "kind")
        row = self._row(backend)
        if kind == "queued":
            self._set_state(
                row, "waiting", "its runtime is unavailable here: it builds once the results are in"
            )
        elif kind == "started":
            row.log = []
            row.result = None
            if self._selected_backend() == backend:
                self.log_view.clear()  # the view mirrors row.log: lines are appended as they come
            row.clock.start()
            row.item.setText(COL_CACHE, "")
            row.item.setText(COL_ARTIFACTS, "")
            self._set_state(row, "building")
            self.diagnostics.forget(backend)
            if not self._ticker.isActive():
                self._ticker.start()
            self._tick()
        elif kind == "progress":
            self._show_progress(row, field_of(event, "progress"))
            return  # the counts of the summary are the same
        elif kind == "output":
            line = field_of(event, "line") or ""
            row.log.append(line)
            if self._selected_backend() == backend:
                self.log_view.appendPlainText(line)
            return  # a log line changes no count of the summary
        elif kind == "diagnostic":
            diagnostic = field_of(event, "diagnostic")
            if diagnostic is not None:
                self._add_diagnostic(backend, diagnostic)
        elif kind == "finished":
            result = field_of(event, "result")
            if result is not None:
                self._apply_result(backend, result)
        self._update_summary()

    def _show_progress(self, row: _Row, progress: dict | None) -> None:
        """A niced build's "still working" line (`workbench.build.process.progress_text`) as the
        state's tooltip; the state reads "building… (machine busy)" while its limit is paused."""
        if row.state != "building" or not progress:
            return
        self._set_state(row, "building", progress_text(progress))
        label = STATES["building"][0] + (" (machine busy)" if progress.get("paused") else "")
        row.item.setText(COL_STATE, label)

    def _on_build_finished(self, results: dict[str, Any]) -> None:
        for backend, result in results.items():
            self._apply_result(backend, result)
        self._update_summary()

    def _apply_result(self, backend: str, result: Any) -> None:
        row = self._row(backend)
        if row.result is result:
            return  # it came as the build's "finished" event and again in the build's results
        row.result = result
        status = field_of(result, "status", "error")
        seconds = float(field_of(result, "seconds", 0.0) or 0.0)
        if row.clock.isValid() and row.state == "building" and not seconds:
            seconds = row.clock.elapsed() / 1000.0
        cached = bool(field_of(result, "cached", False))
        tooltip = field_of(result, "hint", "") or ""
        self._set_state(row, status if status in STATES else "error", tooltip)
        row.item.setText(COL_TIME, f"{seconds:.2f} s" if status != "skipped" else "")
        row.item.setText(COL_CACHE, "hit" if cached else ("miss" if status == "ok" else ""))
        row.item.setToolTip(COL_CACHE, "served from the build cache" if cached else "built now")
        artifacts = field_of(result, "artifacts", []) or []
        # A CUDA build's occupancy at the block size of the tunables it was built with.
        occupancy, lines = occupancy_texts(self.bridge.project, result)
        # The occupancy leads the (stretching, elided) artifacts cell: a column of its own pushed
        # the rows past a 1280-pixel window's build dock (tests/ui/test_layout.py).
        row.item.setText(COL_ARTIFACTS, " · ".join([*occupancy, ", ".join(Path(a).name for a in artifacts)]))
        row.item.setToolTip(COL_ARTIFACTS, "\n".join([*lines, *artifacts]))
        text = field_of(result, "log", "") or ""
        streamed = bool(row.log)  # the log view already shows streamed lines as they came
        if text and not row.log:
            row.log = text.splitlines()
        if status == "skipped" and not row.log and tooltip:
            row.log = [tooltip]
        for diagnostic in field_of(result, "diagnostics", []) or []:
            self._add_diagnostic(backend, diagnostic)
        if not streamed and self._selected_backend() == backend:
            self._show_selected_log()
        if not any(r.state == "building" for r in self._rows.values()):
            self._ticker.stop()

    def _on_busy(self, busy: bool) -> None:
        self.cancel_button.setEnabled(busy)
        if not busy:
            # Anything still "building" (or waiting to) when the bridge goes idle was abandoned.
            for row in self._rows.values():
                if row.state in ("building", "waiting"):
                    self._set_state(row, "cancelled")
            self._ticker.stop()

    def _tick(self) -> None:
        for row in self._rows.values():
            if row.state == "building" and row.clock.isValid():
                row.item.setText(COL_TIME, f"{row.clock.elapsed() / 1000.0:.1f} s")

    def _update_summary(self) -> None:
        counts: dict[str, int] = {}
        for row in self._rows.values():
            counts[row.state] = counts.get(row.state, 0) + 1
        errors = self.diagnostics.topLevelItemCount()
        parts = [_count(n, STATES.get(s, (s,))[0].split(" ")[0]) for s, n in counts.items() if s != "idle"]
        if errors:
            parts.append(f"{errors} diagnostic{'s' if errors != 1 else ''}")
        self.summary.setText(" · ".join(parts))

    # ------------------------------------------------------------------ log and diagnostics
    def _selected_backend(self) -> str | None:
        item = self.table.currentItem()
        return item.data(COL_BACKEND, Qt.ItemDataRole.UserRole) if item else None

    def _show_selected_log(self, *_: Any) -> None:
        backend = self._selected_backend()
        row = self._rows.get(backend) if backend else None
        self.log_view.setPlainText("\n".join(row.log) if row else "")
        self.log_view.verticalScrollBar().setValue(self.log_view.verticalScrollBar().maximum())
        if row is not None and not row.log and row.state == "idle" and self.log_view.isVisible():
            self._look_up(backend)
        self._show_placeholder()

    def _log_shown(self) -> None:
        """The Log came into view (its tab, or the dock): the selected idle row's cached log is
        looked up now. Not before: the look-up hashes the sources and asks the toolchain for its
        version on a background thread, Python that holds the GIL while the GUI thread waits (at
        every project opened and every backend change, seen or not)."""
        backend = self._selected_backend()
        row = self._rows.get(backend) if backend else None
        if row is not None and not row.log and row.state == "idle":
            self._look_up(backend)
            self._show_placeholder()

    def _show_placeholder(self) -> None:
        """What the log says while it has no line: about the selected backend, never "select one"
        with one selected."""
        backend = self._selected_backend()
        row = self._rows.get(backend) if backend else None
        if row is None:
            text = NO_SELECTION
        elif row.state == "idle":
            looking = (backend, id(self.bridge.project)) in self._lookups
            text = LOOKING if looking else NOT_BUILT
        else:
            text = EMPTY_LOGS.get(row.state, EMPTY_LOGS["ok"])
        self.log_view.setPlaceholderText(text.format(backend=backend))

    def _look_up(self, backend: str) -> None:
        """Find the selected idle backend's build of these sources in the cache (off the GUI
        thread: it hashes the sources), so its log shows without building (`cached_result`)."""
        project = self.bridge.project
        if project is None or (backend, id(project)) in self._lookups:
            return
        self._lookups.add((backend, id(project)))
        service, tunables = self.bridge.build_service, self.bridge.tunables() or None

        def work() -> None:
            try:
                found = cached_result(project, backend, service.cache_dir, tunables=tunables)
            except Exception:  # noqa: BLE001  no log to show is said as "not built yet"
                found = None
            try:
                self._looked_up.emit(backend, project, found)
            except RuntimeError:  # the panel was closed meanwhile
                pass

        threading.Thread(target=work, name=f"wb-cached-log-{backend}", daemon=True).start()

    def _on_looked_up(self, backend: str, project: Any, found: Any) -> None:
        self._lookups.discard((backend, id(project)))
        row = self._rows.get(backend)
        if row is not None and not row.log and row.state == "idle" and project is self.bridge.project:
            text = field_of(found, "log", "") or field_of(found, "hint", "") or ""
            row.log = text.splitlines()
            if row.log and self._selected_backend() == backend:
                self.log_view.setPlainText(text)
        if self._selected_backend() == backend:
            self._show_placeholder()

    def show_manifest_diagnostics(self, diagnostics: list[dict]) -> None:
        """What is wrong with workbench.toml as last read: rows at its lines, replacing the last."""
        self._manifest_diagnostics = list(diagnostics)
        self.diagnostics.forget(MANIFEST_SOURCE)
        for diagnostic in self._manifest_diagnostics:
            self._add_diagnostic(MANIFEST_SOURCE, diagnostic)
        self._update_summary()

    def show_source_diagnostics(self, source: str, diagnostics: list) -> None:
        """Rows of a source that is not a build (rustfmt, clippy, tests), replacing its last."""
        self.diagnostics.forget(source)
        for diagnostic in diagnostics:
            self._add_diagnostic(source, diagnostic)
        self._update_summary()

    def _on_run_finished(self, report: Any) -> None:
        """cpu-sim's findings (races, bad indexes, divergence) as rows at their Rust lines,
        replacing the last run's that checked."""
        found = run_diagnostics(report)
        if found is None:
            return
        self.diagnostics.forget(RUN_SOURCE)
        for diagnostic in found:
            self._add_diagnostic(RUN_SOURCE, diagnostic)
        self._update_summary()

    def _add_diagnostic(self, backend: str, diagnostic: Any) -> None:
        if (
            self.diagnostics.add(backend, diagnostic) == "error"
            and self.tabs.currentWidget() is not self.diagnostics
        ):
            self.tabs.setCurrentWidget(self.diagnostics)

    def diagnostic_rows(self) -> list[dict[str, str]]:
        """The diagnostics list as a user reads it: backend(s), location, message per row."""
        return self.diagnostics.rows()

    def _open_diagnostic(self, item: QTreeWidgetItem, *_: Any) -> None:
        file, line, column = self.diagnostics.location(item)
        if not file:
            return
        path = Path(file)
        project = self.bridge.project
        if not path.is_absolute() and project is not None:
            path = project.root / path
        self.openLocation.emit(str(path), int(line or 1), int(column or 1))

    def closeEvent(self, event) -> None:
        self._ticker.stop()
        super().closeEvent(event)
