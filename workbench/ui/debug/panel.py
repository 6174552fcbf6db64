"""The Debug dock (issue 40): one invocation of the kernel stepped under gdb, in the window.

It drives the Qt-free session `workbench debug` uses (`workbench.debug`: the debug build of
cpu-sim, gdb through its machine interface) on a thread of its own (`worker.DebugWorker`): the
window never waits for gdb. What it offers:

- *Debug* the invocation typed (`3:17`, `1,2:0,5`), stopping at the editor's breakpoints (a click
  in the gutter; they stop in that invocation only), or *debug an element* (`debug_element`: the
  details view's button): at its writer's line in the writer's invocation when the run recorded
  writers (*Record writers* asks the window's runs for them), else at the first write to it;
- continue, step over / into / out, run to the invocation's next barrier, stop;
- per stop: the locals and arguments as gdb prints Rust values, the call stack, the workgroup's
  invocations (running, ready, waiting at barrier N at line L, returned), the shared arrays and
  buffers around the stopped index; the editor marks the line.

Without gdb (or pygdbmi) one line says how to get it and every action is disabled with it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from PySide6.QtCore import Qt, Signal, SignalInstance
from PySide6.QtGui import QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QTableView,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from workbench.debug.session import stop_headline, trailing_zeros_dropped
from workbench.debug.values import value_summary
from workbench.errors import WorkbenchError
from workbench.ui.debug.worker import DebugWorker

#: The step buttons: (label, resume word, tooltip).
STEP_BUTTONS = (
    ("Continue", "continue", "Run on to the next breakpoint in this invocation"),
    ("Over", "next", "Step over this line (a barrier lets the workgroup's other invocations run)"),
    ("Into", "step", "Step into the call on this line"),
    ("Out", "finish", "Run to the end of this function"),
    ("Barrier", "barrier", "Run to this invocation's next barrier"),
)


@runtime_checkable
class DebugBridge(Protocol):
    """The bridge members the Debug dock uses (`ServiceBridge` has them: tests/ui/test_typed_events.py)."""

    cache_dir: Any
    debugRequested: SignalInstance
    runFinished: SignalInstance

    def sizes(self) -> dict[str, int] | None: ...

    def set_writers(self, elements: list[tuple[str, int]] | None) -> None: ...


def _button(text: str, name: str, tip: str) -> QToolButton:
    button = QToolButton()
    button.setText(text)
    button.setObjectName(name)
    button.setToolTip(tip)
    button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
    return button


def _coords(values: tuple[int, ...]) -> str:
    """`4` for (4, 0, 0), `1,2` for (1, 2, 0): what the invocation field takes, short."""
    return ",".join(map(str, trailing_zeros_dropped(values)))


def _model(*headers: str) -> QStandardItemModel:
    model = QStandardItemModel(0, len(headers))
    model.setHorizontalHeaderLabels(list(headers))
    return model


def _table(model: QStandardItemModel, name: str) -> QTableView:
    view = QTableView()
    view.setObjectName(name)
    view.setModel(model)
    view.verticalHeader().setVisible(False)
    view.verticalHeader().setDefaultSectionSize(view.fontMetrics().height() + 4)  # compact rows
    view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    view.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    view.horizontalHeader().setStretchLastSection(True)
    view.setWordWrap(False)
    return view


def _fill(
    model: QStandardItemModel, rows: list[tuple[str, ...]], tips: list[tuple[str, ...]] | None = None
) -> None:
    """The model's rows; each cell's tooltip its full text (`tips`: those, when a cell shows less)."""
    model.removeRows(0, model.rowCount())
    for k, row in enumerate(rows):
        items = [QStandardItem(str(text)) for text in row]
        for item, tip in zip(items, tips[k] if tips else row, strict=True):
            item.setToolTip(str(tip))
        model.appendRow(items)


def state_text(entry: dict[str, Any]) -> str:
    if entry.get("state") == "waiting":
        return f"waiting at barrier {entry['barrier']} (line {entry['line']})"
    return str(entry.get("state"))


class DebugPanel(QWidget):
    """The Debug dock's widget. `window` gives the project, the editor and the bridge (None in
    tests of the panel alone: then `project`, `editor_tabs`, `cache_dir` are set directly)."""

    message = Signal(str)
    openLocation = Signal(str, int)  # the stopped line, to show in the editor
    sessionStarted = Signal()  # a session is starting: the dock is given room for its tables

    def __init__(self, window: Any = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("debugPanel")
        self.window = window
        self.bridge: DebugBridge | None = window.bridge if window is not None else None
        self.project: Any = None
        self.editor_tabs: Any = window.editor_tabs if window is not None else None
        self.cache_dir: Any = None
        self.sizes: dict[str, int] | None = None
        self.breakpoints: dict[str, set[int]] = {}  # full path -> lines
        self.last_stop: dict[str, Any] | None = None
        self.stops_seen = 0  # stops shown since the dock was made
        self.failures: list[str] = []  # what went wrong, in order (the last one is shown)
        self.worker = DebugWorker(self)
        self.worker.stopped.connect(self._on_stop)
        self.worker.failed.connect(self._on_failed)
        self.worker.closed.connect(self._on_closed)
        if self.bridge is not None:  # a run with wrong elements: a debug click is likely
            self.bridge.runFinished.connect(self._on_run_finished)

        self.missing = QLabel()
        self.missing.setObjectName("debugMissing")
        self.missing.setWordWrap(True)
        self.missing.hide()
        self.point = QLineEdit()
        self.point.setObjectName("debugInvocation")
        self.point.setPlaceholderText("workgroup:local, e.g. 3:17")
        self.point.setToolTip("The invocation to debug: workgroup, then local id (3:17, 1,2:0,5)")
        self.point.setMinimumWidth(60)
        self.point.returnPressed.connect(self.debug_typed)
        # Tool buttons, as wide as their words: the dock shares the bottom row with the build
        # panel and the results, and at 1280 px has about 300 px.
        self.debug_button = _button(
            "Debug", "debugStart", "Run the kernel under gdb, stopping at the breakpoints in this invocation"
        )
        self.debug_button.clicked.connect(self.debug_typed)
        self.stop_button = _button("Stop", "debugStop", "End the debugging session (gdb and the kernel)")
        self.stop_button.clicked.connect(self.stop_session)
        self.writers_box = QCheckBox("Record writers")
        self.writers_box.setObjectName("recordWriters")
        self.writers_box.setToolTip(
            "cpu-sim records which invocation wrote each output element, and where (the details "
            "view's 'Written by'; 'Debug element' stops at that line)"
        )
        self.writers_box.toggled.connect(self._record_writers)
        top = QHBoxLayout()
        top.addWidget(self.point, 1)
        top.addWidget(self.debug_button)
        top.addWidget(self.stop_button)
        top.addWidget(self.writers_box)
        self.step_buttons: dict[str, QToolButton] = {}
        steps = QHBoxLayout()
        steps.setSpacing(2)
        for label, word, tip in STEP_BUTTONS:
            button = _button(label, f"debug-{word}", tip)
            button.clicked.connect(lambda _=False, w=word: self.resume(w))
            self.step_buttons[word] = button
            steps.addWidget(button)
        steps.addStretch(1)
        self.where = QLabel("Not debugging: type an invocation, or use a bad element's 'Debug element'.")
        self.where.setObjectName("debugWhere")
        self.where.setWordWrap(True)
        self.where.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        self.locals_model = _model("Name", "Value")
        self.stack_model = _model("#", "Function", "Where")
        self.workgroup_model = _model("Local", "State")
        self.memory_model = _model("Array", "Index", "Value")
        self.tabs = QTabWidget()
        self.tabs.setObjectName("debugTabs")
        self.tabs.addTab(_table(self.locals_model, "debugLocals"), "Locals")
        self.tabs.addTab(_table(self.stack_model, "debugStack"), "Stack")
        self.workgroup_view = _table(self.workgroup_model, "debugWorkgroup")
        self.tabs.addTab(self.workgroup_view, "Workgroup")
        self.tabs.addTab(_table(self.memory_model, "debugMemory"), "Memory")
        # Shown after the stop (a hidden view scrolls by a size it does not have yet).
        self.tabs.currentChanged.connect(lambda _k: self._show_stopped_invocation())
        self.locals_view = self.tabs.widget(0)
        # The name column as wide as the names (`_on_stop`), the value column what is left: a long
        # value shows its summary, elided at the right, the full value in the cell's tooltip.
        self.locals_view.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)
        self.locals_view.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.locals_view.setTextElideMode(Qt.TextElideMode.ElideRight)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.missing)
        layout.addLayout(top)
        layout.addLayout(steps)
        layout.addWidget(self.where)
        layout.addWidget(self.tabs, 1)
        self._tips: dict[QToolButton, str] = {}  # each button's own tooltip (a reason is added)
        self.unavailable = self._check_tools()
        self._update_actions()

    # ------------------------------------------------------------------ set-up
    def _check_tools(self) -> str:
        """Why nothing can be debugged here ("" when gdb and pygdbmi are there)."""
        from workbench.debug.gdb_mi import DebugError, gdb_path

        try:
            gdb_path()
        except DebugError as exc:
            self.missing.setText(str(exc))
            self.missing.show()
            return str(exc)
        return ""

    def _session_open(self) -> bool:
        return self.worker.running()

    def _update_actions(self, busy: bool = False) -> None:
        stopped = self._session_open() and not busy and self.last_stop is not None and not self._ended()
        returned = stopped and (self.last_stop or {}).get("reason") == "returned"
        ready = not self.unavailable and not busy
        self.debug_button.setEnabled(ready)
        self.point.setEnabled(not self.unavailable)
        self.stop_button.setEnabled(self._session_open() and not self.unavailable)
        for word, button in self.step_buttons.items():
            # The invocation returned: nothing of it is left to step; Continue runs the launch on.
            button.setEnabled(stopped and (word == "continue" or not returned))
        why = self.unavailable or (
            "The invocation has returned" if returned else "" if stopped else "Not stopped in an invocation"
        )
        for button in [*self.step_buttons.values(), self.debug_button]:
            tip = self._tips.setdefault(button, button.toolTip())
            button.setToolTip(
                f"{tip}\n({self.unavailable or why})" if not button.isEnabled() and why else tip
            )

    def _ended(self) -> bool:
        return (self.last_stop or {}).get("reason") in ("exited", "timeout", "panic", "signal")

    def _project(self) -> Any:
        if self.window is not None:
            return self.window.project
        return self.project

    def _cache_dir(self) -> Any:
        return self.bridge.cache_dir if self.bridge is not None else self.cache_dir

    def _sizes(self) -> dict[str, int] | None:
        return (self.bridge.sizes() or None) if self.bridge is not None else self.sizes

    # ------------------------------------------------------------------ breakpoints
    def toggle_breakpoint(self, path: str, line: int) -> None:
        """A gutter click: a breakpoint at `path:line` (on in the session running, too), or off."""
        if self.unavailable:
            self._say(self.unavailable)
            return
        key = str(Path(path).resolve())
        lines = self.breakpoints.setdefault(key, set())
        on = line not in lines
        (lines.add if on else lines.discard)(line)
        self.worker.set_breakpoint(Path(key), line, on)
        self._show_marks()

    def breakpoints_moved(self, path: str, lines: list[int]) -> None:
        """An edit (or a reload from disk) moved the file's breakpoints with their statements, or
        removed those whose line went: gdb's follow (plain FILE:LINE, as the core takes them)."""
        key = str(Path(path).resolve())
        old, new = self.breakpoints.get(key, set()), set(lines)
        for line in sorted(old - new):
            self.worker.set_breakpoint(Path(key), line, False)
        for line in sorted(new - old):
            self.worker.set_breakpoint(Path(key), line, True)
        if new:
            self.breakpoints[key] = new
        else:
            self.breakpoints.pop(key, None)

    def _breakpoint_list(self) -> list[tuple[Path, int]]:
        return [(Path(p), line) for p, lines in sorted(self.breakpoints.items()) for line in sorted(lines)]

    def _show_marks(self) -> None:
        if self.editor_tabs is None:
            return
        stop, project = self.last_stop or {}, self._project()
        here = None
        if stop.get("file") and stop.get("line") and project is not None and not self._ended():
            here = (str(project.root / stop["file"]), int(stop["line"]))
        self.editor_tabs.set_debug_marks(self.breakpoints, here)

    # ------------------------------------------------------------------ sessions
    def debug_typed(self) -> bool:
        """Debug the invocation in the field, stopping at the breakpoints."""
        from workbench.run.sim_trace import parse_point

        try:
            point = parse_point(self.point.text().replace("/", ":"))
        except WorkbenchError as exc:
            self._say(str(exc))
            return False
        if not self._breakpoint_list():
            self._say("Set a breakpoint first: click in the editor's gutter at the line to stop at.")
            return False
        return self._open(point, self._breakpoint_list(), None)

    def debug_element(self, buffer: str, index: int, writer: dict[str, Any] | None = None) -> bool:
        """Debug the invocation that wrote `buffer[index]`: at the writer's line in its invocation
        (`writer`: the run's record, `sim_writers`), else stopping at the first write to it."""
        from workbench.run.sim_trace import TracePoint

        project = self._project()
        if writer and writer.get("file") and writer.get("line") and project is not None:
            point = TracePoint(tuple(writer["group"]), tuple(writer["local"]))
            self.point.setText(f"{_coords(point.group)}:{_coords(point.local)}")
            path = (project.root / writer["file"]).resolve()
            # With the gutter's others: what the editor marks is what gdb has (one set earlier
            # in the kernel stops there first, as in any debugger).
            self.breakpoints.setdefault(str(path), set()).add(int(writer["line"]))
            return self._open(point, self._breakpoint_list(), None)
        return self._open(None, [], (buffer, int(index)))

    def _open(self, point: Any, breakpoints: list[tuple[Path, int]], watch: tuple[str, int] | None) -> bool:
        project = self._project()
        if self.unavailable:
            self._say(self.unavailable)
            return False
        if project is None:
            self._say("Open a project first.")
            return False
        if self.window is not None and not self.window.trusted:
            self._say("This project is not trusted: nothing of it is built or run.")
            return False
        if self.window is not None:
            self.window.editor_tabs.save_all()
        self.last_stop = None
        self._clear()
        what = f"{watch[0]}[{watch[1]}]'s first write" if watch else f"workgroup/local {self.point.text()}"
        self.where.setText(f"Starting gdb on the debug build, to stop at {what}…")
        self.worker.open(project, None, self._sizes(), point, breakpoints, watch, self._cache_dir())
        self._update_actions(busy=True)
        self._show_marks()
        if self.parentWidget() is not None:
            self.parentWidget().raise_()  # the dock, in front of the tabs beside it
        self.sessionStarted.emit()
        return True

    def resume(self, how: str) -> None:
        if not self._session_open() or self.last_stop is None or self._ended():
            return
        self.where.setText(f"{self.where.text().split(' — ')[0]} — running ({how})…")
        self.worker.resume(how)
        self._update_actions(busy=True)

    def stop_session(self) -> None:
        self.worker.close()
        self.last_stop = None
        self.where.setText("Not debugging.")
        self._clear()  # the ended session's values would read as the state of a live one
        self._show_marks()
        self._update_actions()

    def shutdown(self) -> None:
        self.worker.shutdown()

    # ------------------------------------------------------------------ ahead of the first click
    def warm_up(self) -> bool:
        """Park a session now (a debug click became likely), so that even the window's first
        click only sets breakpoints and runs on: only with gdb, a trusted project, no session
        running, and the debug build already cached (`DebugWorker.park`: looked up off this
        thread; nothing is built). True: a look-up began."""
        project = self._project()
        if self.unavailable or project is None or self._session_open():
            return False
        if self.window is not None and not self.window.trusted:
            return False
        return self.worker.park(project, self._sizes(), self._cache_dir())

    def _on_run_finished(self, report: Any) -> None:
        """A run whose results show wrong elements or recorded writers: the details view's
        "Debug element" is the likely next click."""
        results = getattr(report, "results", None) or []
        if any(r.verified is False or r.writers for r in results):
            self.warm_up()

    # ------------------------------------------------------------------ answers
    def _say(self, text: str) -> None:
        self.where.setText(text)
        self.message.emit(text)

    def _on_failed(self, text: str) -> None:
        self.failures.append(text)
        self._say(f"Debugging failed: {text}")
        self._update_actions()

    def _on_closed(self) -> None:
        self._update_actions()

    def _clear(self) -> None:
        for model in (self.locals_model, self.stack_model, self.workgroup_model, self.memory_model):
            model.removeRows(0, model.rowCount())

    def _on_stop(self, stop: dict[str, Any]) -> None:
        self.last_stop = stop
        self.stops_seen += 1
        head = stop_headline(stop)
        if stop.get("detail"):
            head += f" — {stop['detail'][:300]}"
        self.where.setText(head)
        names = [v["name"] + (" (arg)" if v.get("arg") else "") for v in stop.get("locals", [])]
        values = [v["value"] for v in stop.get("locals", [])]
        _fill(self.locals_model, [(n, value_summary(v)) for n, v in zip(names, values, strict=True)],
              [(n, f"{n} = {v}") for n, v in zip(names, values, strict=True)])  # fmt: skip
        self.locals_view.resizeColumnToContents(0)
        _fill(self.stack_model, [
            (str(k), f.get("function") or "?", f"{f.get('file')}:{f.get('line')}" if f.get("line") else f.get("from") or "")
            for k, f in enumerate(stop.get("stack", []))
        ])  # fmt: skip
        _fill(self.workgroup_model, [(str(e["local"]), state_text(e))
                                     for e in (stop.get("workgroup") or {}).get("invocations", [])])  # fmt: skip
        rows = []
        for array in stop.get("memory", []):
            for k, value in enumerate(array["values"]):
                index = array["start"] + k
                mark = " ◀" if index == array["index"] else ""
                rows.append((f"{array['name']} ({array['kind']})", f"{index}{mark}", value))
        _fill(self.memory_model, rows)
        self._show_stopped_invocation()
        self._show_marks()
        if stop.get("file") and stop.get("line") and self._project() is not None:
            self.openLocation.emit(str(self._project().root / stop["file"]), int(stop["line"]))
        self._update_actions()

    def _show_stopped_invocation(self) -> None:
        """The Workgroup tab at the stopped invocation's row: selected, scrolled into view."""
        current = ((self.last_stop or {}).get("workgroup") or {}).get("current")
        if current is None or not 0 <= current < self.workgroup_model.rowCount():
            return
        self.workgroup_view.selectRow(current)
        self.workgroup_view.scrollTo(
            self.workgroup_model.index(current, 0), QAbstractItemView.ScrollHint.PositionAtCenter
        )

    # ------------------------------------------------------------------ writers
    def _record_writers(self, on: bool) -> None:
        if self.bridge is not None:
            self.bridge.set_writers([] if on else None)
            self.message.emit("cpu-sim records each output element's writer in the next runs" if on
                              else "cpu-sim records no writers")  # fmt: skip
