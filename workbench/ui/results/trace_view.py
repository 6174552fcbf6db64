"""The Trace tab of a cpu-sim result's details: the values one invocation recorded with
`ctx.trace(name, value)`, in order (`RunResult.trace`, words from `workbench.run.sim_trace`), and
a field to pick the invocation the next runs trace (`GX,GY:LX,LY`) with a button that runs again;
the tab shows the new run's trace when it comes."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from PySide6.QtCore import SignalInstance
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.run.sim_trace import FORMAT, TracePoint, TraceSpecError, lines, parse_point, value_text

COLUMNS = ("Line", "Name", "Value", "Type", "Barriers passed")


@runtime_checkable
class TraceBridge(Protocol):
    """The bridge members the Trace tab uses (`ServiceBridge` has them: tests/ui/test_typed_events.py)."""

    runFinished: SignalInstance

    def trace(self) -> TracePoint | None: ...
    def set_trace(self, point: TracePoint | None) -> None: ...
    def run(self) -> None: ...


def point_text(point: TracePoint | None) -> str:
    """`GX,GY,GZ:LX,LY,LZ` (what the field takes), "" for none."""
    if point is None:
        return ""
    return f"{','.join(map(str, point.group))}:{','.join(map(str, point.local))}"


class TraceView(QWidget):
    """The traced values of `result` (a cpu-sim `RunResult`) and the invocation to trace next."""

    def __init__(self, result: Any, bridge: TraceBridge | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("traceView")
        self.bridge = bridge
        self.backend = result.backend
        self.spec = (result.device or {}).get("spec")
        self.field = QLineEdit()
        self.field.setObjectName("tracePoint")
        self.field.setPlaceholderText("workgroup:local id, e.g. 0:3 or 1,2:0,5")
        self.field.setToolTip(f"The invocation whose ctx.trace values the next runs record: {FORMAT}")
        current = bridge.trace() if bridge is not None else None
        shown = result.trace or {}
        self.field.setText(
            point_text(current)
            or (point_text(TracePoint(tuple(shown["group"]), tuple(shown["local"]))) if shown else "")
        )  # type: ignore[arg-type]
        self.button = QPushButton("Trace and run")
        self.button.setToolTip("Trace this invocation in the next runs, and run now")
        self.button.setEnabled(bridge is not None)
        self.message = QLabel()
        self.message.setObjectName("traceMessage")
        self.message.setWordWrap(True)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setObjectName("traceRecords")
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        row = QHBoxLayout()
        row.addWidget(QLabel("Invocation"))
        row.addWidget(self.field, 1)
        row.addWidget(self.button)
        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addWidget(self.message)
        layout.addWidget(self.table, 1)
        self.button.clicked.connect(self.trace_and_run)
        self.field.returnPressed.connect(self.trace_and_run)
        if bridge is not None:
            bridge.runFinished.connect(self._on_run)
        self.show_trace(result.trace)

    def show_trace(self, trace: dict[str, Any] | None) -> None:
        """One row a record; the heading (or why there is none) above."""
        if trace is None:
            self.message.setText(
                "No invocation was traced in this run: name one (workgroup:local id) and run; the "
                "kernel's ctx.trace(name, value) calls record its values."
            )
            self.table.setRowCount(0)
            return
        self.message.setText(lines(trace)[0].replace("cpu-sim trace of ", "Trace of "))
        records = trace.get("records") or []
        self.table.setRowCount(len(records))
        for r, record in enumerate(records):
            where = f"{record.get('file')}:{record.get('line')}:{record.get('column')}"
            texts = (
                where,
                str(record.get("name")),
                value_text(record),
                str(record.get("type")),
                str(record.get("epoch")),
            )
            for c, text in enumerate(texts):
                self.table.setItem(r, c, QTableWidgetItem(text))

    def rows(self) -> list[tuple[str, ...]]:
        """The table's texts (what the user sees; tests read it)."""
        return [
            tuple(self.table.item(r, c).text() for c in range(self.table.columnCount()))
            for r in range(self.table.rowCount())
        ]

    def trace_and_run(self) -> None:
        """The field's invocation becomes the bridge's trace (empty: none), then a run."""
        if self.bridge is None:
            return
        text = self.field.text().strip()
        try:
            point = parse_point(text) if text else None
        except TraceSpecError as exc:
            self.message.setText(str(exc).replace("--trace ", ""))
            return
        self.bridge.set_trace(point)
        self.message.setText(f"running, tracing {point.text()}…" if point else "running, tracing nothing…")
        self.bridge.run()

    def _on_run(self, report: Any) -> None:
        for result in getattr(report, "results", []):
            if result.backend == self.backend and (result.device or {}).get("spec") == self.spec:
                self.show_trace(result.trace)
