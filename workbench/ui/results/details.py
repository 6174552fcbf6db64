"""The details of one result: what the check found, element by element.

Per buffer: the first mismatching elements (index, expected, got, abs / rel / ULP error, never
written) computed from the report's arrays by `workbench.run.mismatches`, and a small plot of
expected and got around the first bad index. The full first-bad text, the settings, the note of
a stale or unverifiable result and the reference-changed notice are spelled out on top.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, SignalInstance
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from workbench.result_text import ELEMENT_DIGITS, check_line, format_number, outcome_text, stale_note
from workbench.run.labels import device_label
from workbench.run.mismatches import BufferMismatches, result_mismatches
from workbench.run.sim_device import SIM_BACKEND
from workbench.run.sim_writers import writer_text
from workbench.ui import theme
from workbench.ui.results.trace_view import TraceBridge, TraceView
from workbench.units import format_tolerance

MISMATCH_COLUMNS = ("Index", "Expected", "Got", "Abs error", "Rel error", "ULP", "Never written")
#: How many mismatching elements a buffer's table lists.
LIMIT = 100


def _num(value: Any) -> str:
    """An element's value or error: every digit a float32 has (`result_text.ELEMENT_DIGITS`)."""
    return format_number(value, ELEMENT_DIGITS, missing="—")


@runtime_checkable
class DetailsBridge(TraceBridge, Protocol):
    """The bridge members the details dialog uses, its Trace tab's with them (`ServiceBridge` has
    them: tests/ui/test_typed_events.py)."""

    reference_changed: dict[str, Any] | None
    #: The Debug dock's request (`ui/debug`): {"buffer", "index", "writer"}.
    debugRequested: SignalInstance


class ResultDetails(QDialog):
    """A non-modal window with one tab per checked buffer."""

    def __init__(
        self, report: Any, result: Any, bridge: DetailsBridge | None = None, parent: QWidget | None = None
    ):
        super().__init__(parent)
        self.setObjectName("resultDetails")
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        device = device_label(result.device or {})
        self.setWindowTitle(f"{result.backend} on {device} — check details")
        self.result = result
        self.bridge = bridge
        self.buffers: list[BufferMismatches] = result_mismatches(report, result, LIMIT)
        self.plots: dict[str, pg.PlotWidget] = {}

        self.summary = QLabel(self._summary_text(report, result, bridge))
        self.summary.setObjectName("detailsSummary")
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.tabs = QTabWidget()
        for buffer in self.buffers:
            self.tabs.addTab(self._buffer_page(buffer), f"{buffer.name} ({buffer.bad} bad)")
        if not self.buffers:
            empty = QLabel(self._why_no_elements(report, result))
            empty.setWordWrap(True)
            empty.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
            self.tabs.addTab(empty, "Elements")
        self.trace: TraceView | None = None
        if result.backend == SIM_BACKEND:  # one invocation's ctx.trace values, and which to trace
            self.trace = TraceView(result, bridge)
            self.tabs.addTab(self.trace, "Trace")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.close)
        layout = QVBoxLayout(self)
        layout.addWidget(self.summary)
        layout.addWidget(self.tabs, 1)
        layout.addWidget(buttons)
        self.resize(820, 560)

    # ------------------------------------------------------------------ text
    def _summary_text(self, report: Any, result: Any, bridge: DetailsBridge | None) -> str:
        check = result.check or {}
        lines = [f"<b>{result.backend}</b> on {device_label(result.device or {})} — {outcome_text(result)}"]
        if result.stale is not None:
            lines.append(f"<i>{_escape(stale_note(result.stale))}</i>")
        if result.error:
            lines.append(f"error: {_escape(result.error)}")
        summary = check_line(result) if result.status == "ok" else ""
        if summary and summary != check.get("note"):
            lines.append(_escape(summary))  # never elided here
        if check:
            lines.append(
                f"checked against {check.get('reference') or getattr(report, 'reference', '')}: "
                f"{format_tolerance(check)}"
            )
        if check.get("note"):
            lines.append(_escape(str(check["note"])))
        changed = (bridge.reference_changed if bridge is not None else None) or {}
        if changed and result.backend in (changed.get("failed") or []):
            innocent = result.backend in (changed.get("unchanged") or [])
            lines.append(
                f"<b>⚠ {_escape(changed['message'])}</b> since the last run in which every backend "
                "agreed" + (f"; {result.backend}'s own source did not change." if innocent else ".")
            )
        return "<br>".join(lines)

    @staticmethod
    def _why_no_elements(report: Any, result: Any) -> str:
        if result.verified is not False:
            return "Nothing to list: no element of this result failed its check."
        return "The arrays of this run were not kept, so its elements cannot be listed (run again)."

    # ------------------------------------------------------------------ per buffer
    def _buffer_page(self, buffer: BufferMismatches) -> QWidget:
        page = QWidget()
        layout = QVBoxLayout(page)
        head = f"{buffer.bad:,} of {buffer.size:,} elements bad"
        if buffer.unwritten:
            head += f", {buffer.unwritten:,} never written (still the poison value)"
        if buffer.bad > len(buffer.first):
            head += f"; the first {len(buffer.first)} are listed"
        if buffer.note:
            head += f" — {buffer.note}"
        layout.addWidget(QLabel(head))
        # cpu-sim with --writers (`RunResult.writers`): which invocation wrote each element, where.
        writers = {
            e["index"]: e for e in ((self.result.writers or {}).get(buffer.name) or {}).get("elements", [])
        }
        columns = (*MISMATCH_COLUMNS, "Written by") if writers else MISMATCH_COLUMNS
        table = QTableWidget(len(buffer.first), len(columns))
        table.setObjectName(f"mismatches:{buffer.name}")
        table.setHorizontalHeaderLabels(columns)
        table.verticalHeader().setVisible(False)
        table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        table.horizontalHeader().setStretchLastSection(True)
        for row, m in enumerate(buffer.first):
            texts = (
                str(m.index), _num(m.expected), _num(m.got), _num(m.abs_err), _num(m.rel_err),
                _num(m.ulp_err), "yes" if m.unwritten else "",
            )  # fmt: skip
            if writers:
                texts += (writer_text(writers[m.index]) if m.index in writers else "",)
            for col, text in enumerate(texts):
                item = QTableWidgetItem(text)
                if col < 6:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                table.setItem(row, col, item)
        layout.addWidget(table, 2)
        self._debug_button(layout, table, buffer, writers)
        if buffer.window is not None:
            layout.addWidget(self._window_plot(buffer), 1)
        return page

    def _debug_button(self, layout: QVBoxLayout, table: QTableWidget, buffer: BufferMismatches,
                      writers: dict[int, dict]) -> None:  # fmt: skip
        """The button "Debug element": the Debug dock stops at the selected element's writer (its
        line, in its invocation: the run recorded writers), else at the first write to it
        (`ui/debug`)."""
        if self.bridge is None:
            return
        requested = self.bridge.debugRequested
        button = QPushButton("Debug element")
        button.setObjectName(f"debugElement:{buffer.name}")
        button.setToolTip(
            "Stop in the invocation that wrote the selected element, at the line that wrote it (Debug dock)"
        )
        button.setEnabled(False)
        table.itemSelectionChanged.connect(lambda: button.setEnabled(table.currentRow() >= 0))

        def debug() -> None:
            row = table.currentRow()
            if 0 <= row < len(buffer.first):
                index = int(buffer.first[row].index)
                requested.emit({"buffer": buffer.name, "index": index, "writer": writers.get(index)})

        button.clicked.connect(debug)
        table.cellDoubleClicked.connect(lambda _r, _c: debug())
        row = QHBoxLayout()
        row.addWidget(button)
        row.addStretch(1)
        layout.addLayout(row)

    def _window_plot(self, buffer: BufferMismatches) -> pg.PlotWidget:
        index, expected, got = buffer.window
        plot = pg.PlotWidget()
        plot.setObjectName(f"window:{buffer.name}")
        plot.setBackground(None)
        plot.addLegend(offset=(10, 5))
        plot.setLabel("bottom", f"{buffer.name} index")
        plot.plot(index, _finite(expected), pen=pg.mkPen(theme.GOOD, width=2), name="expected",
                  symbol="o", symbolSize=4, symbolBrush=theme.GOOD)  # fmt: skip
        plot.plot(index, _finite(got), pen=pg.mkPen(theme.BAD, width=1), name="got",
                  symbol="x", symbolSize=6, symbolPen=theme.BAD)  # fmt: skip
        first = buffer.first[0].index if buffer.first else int(index[0])
        plot.addItem(pg.InfiniteLine(first, pen=pg.mkPen(theme.WARN, style=Qt.PenStyle.DashLine)))
        plot.setMinimumHeight(160)
        self.plots[buffer.name] = plot
        return plot

    def plot_data(self, buffer: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """{curve name: (x, y)} of a buffer's plot (what is drawn; used by tests)."""
        plot = self.plots[buffer]
        out = {}
        for item in plot.getPlotItem().listDataItems():
            x, y = item.getData()
            out[item.name()] = (np.asarray(x), np.asarray(y))
        return out


def _finite(values: np.ndarray) -> np.ndarray:
    """NaN and infinities cannot be drawn: shown as gaps."""
    return np.where(np.isfinite(values), values, np.nan)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
