"""The Counters view: Nsight Compute counters of the last run, one column per backend × device.

Rows are the metric set of `workbench.run.counters.metrics` (ncu's duration beside the event median,
throughput % of peak, occupancy, hit rates) and the top warp-stall reasons; a row whose values
differ between the columns is highlighted. A column with no counters says why in its status row
(`absence.py`'s line); a machine where no result can have counters (no CUDA device, no ncu) shows
no table at all, only the line saying what would make it work, and "Take counters" is disabled
with that line as its tooltip (`absence.unavailable`); a run's table never outlives the next run.
"Take counters" profiles the last run's CUDA results under ncu on a thread
of its own (`nsight.collect`, the same as `workbench run --counters`); the result comes back as a
queued signal. What the numbers are relative to the event timing is stated under the table.

The counters are recorded with the runs they were taken of: the view hands them to the bridge
(`record_counters`; recording is a core duty, the view never opens the database), and the status
line says which runs have them, or that they are shown but not recorded, and why.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, runtime_checkable

from PySide6.QtCore import Signal, SignalInstance
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.run.counters import absence
from workbench.run.counters.metrics import METRICS, TOP_STALLS, differs, format_value
from workbench.run.counters.nsight import NCU_ENV, RELATION, find_ncu
from workbench.ui import theme
from workbench.units import format_time

HIGHLIGHT = QColor(theme.COUNTERS_DIFFER)  # a row whose backends differ
TAKE_TIP = "Profile the last run's CUDA results once more under Nsight Compute (ncu)"
READY_TEXT = "Run, then take counters (CUDA backends, with ncu installed)."
AFTER_RUN_TEXT = "Take counters to profile this run's CUDA results under ncu."
COLUMN_MAX_PX = 260


@runtime_checkable
class CountersBridge(Protocol):
    """The bridge members the Counters view uses (`ServiceBridge` has them:
    tests/ui/test_typed_events.py)."""

    runFinished: SignalInstance
    countersRecorded: SignalInstance
    devicesListed: SignalInstance
    project: Any
    devices_info: Any

    def record_counters(self, report, records) -> None: ...


def recording_text(outcome: dict[str, Any]) -> str:
    """How the counters' recording went, in one line: the runs that have them, or that they are
    shown but not recorded, and why."""
    if "error" in outcome:
        return f"shown, not recorded: {outcome['error']}"
    ids = outcome.get("ids") or {}
    why = outcome.get("not_recorded") or {}
    parts = []
    if ids:
        parts.append("recorded with run " + ", ".join(f"#{i}" for i in ids.values()))
    if why and len(set(why.values())) == 1 and not ids:
        parts.append(f"shown, not recorded: {next(iter(why.values()))}")
    else:
        parts.extend(f"{b} on {d} not recorded: {reason}" for (b, d), reason in why.items())
    return "; ".join(parts)


class CountersView(QWidget):
    #: {(backend, device): record}, from the collecting thread (queued to the GUI thread)
    collected = Signal(object)

    def __init__(self, bridge, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("CountersView")
        self.bridge = bridge
        self.report: Any = None
        self._taking: Any = None  # the report whose counters are being taken
        self.records: dict[tuple[str, str], dict[str, Any]] = {}
        self._shown = ""  # the status line's first part: what the table shows
        self._rows: list[dict[str, Any]] = []
        self._pool: ThreadPoolExecutor | None = None

        self.take_button = QPushButton("Take counters")
        self.take_button.setToolTip(TAKE_TIP)
        self.take_button.setEnabled(False)
        #: Why no result can have counters on this machine (None: they may be taken).
        self.unavailable: str | None = None
        self.status = QLabel(READY_TEXT)
        self.status.setWordWrap(True)
        self.table = QTableWidget(0, 0)
        self.table.setObjectName("countersTable")
        self.table.setWordWrap(False)  # one line a cell: a long reason is elided, whole in its tooltip
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.relation = QLabel(RELATION)
        self.relation.setWordWrap(True)
        buttons = QHBoxLayout()
        buttons.addWidget(self.take_button)
        buttons.addWidget(self.status, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(buttons)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.relation)
        layout.addStretch(0)  # with the table hidden, the line stays at the top

        self.take_button.clicked.connect(self.take)
        self.collected.connect(self._on_collected)
        bridge.runFinished.connect(self._on_run)
        bridge.countersRecorded.connect(self._on_recorded)
        bridge.devicesListed.connect(self._check_availability)
        self._check_availability()

    def _check_availability(self, *_: Any) -> None:
        """Whether counters can be taken here (`absence.unavailable`): if not, that one line,
        no table, and Take counters disabled with the line as its tooltip."""
        info = self.bridge.devices_info
        cuda = info.get("cuda") if isinstance(info, dict) and "error" not in info else None
        chosen = os.environ.get(NCU_ENV)
        self.unavailable = absence.unavailable(cuda, find_ncu() is not None, chosen)
        if self.unavailable:
            self._clear()
            self.status.setText(self.unavailable)
            self.table.hide()
            self.relation.hide()
            self.take_button.setEnabled(False)
            self.take_button.setToolTip(self.unavailable)
            return
        self.take_button.setToolTip(TAKE_TIP)
        self.take_button.setEnabled(self.report is not None and self._taking is None)
        if not self.records:
            self.status.setText(READY_TEXT if self.report is None else AFTER_RUN_TEXT)
        self.table.setVisible(bool(self._rows))
        self.relation.show()

    def _clear(self) -> None:
        """No table: nothing of an earlier run is shown."""
        self.records, self._rows, self._shown = {}, [], ""
        self.table.clear()
        self.table.setRowCount(0)
        self.table.setColumnCount(0)

    def _on_run(self, report: Any) -> None:
        self.report = report
        if self._taking is None:  # counters being taken keep their line; they end with their own
            self._clear()  # the last run's counters (and their run numbers) are not this run's
            self.table.hide()
        self._check_availability()

    def take(self) -> None:
        """Collect counters of the last run off the GUI thread."""
        if self.report is None or self.bridge.project is None:
            return
        from workbench.run.counters.nsight import collect

        self.take_button.setEnabled(False)
        self.status.setText("taking counters under ncu ...")
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="wb-counters")
        report, project = self.report, self.bridge.project
        self._taking = report
        future = self._pool.submit(collect, report, project)
        future.add_done_callback(
            lambda f: self.collected.emit(f.result() if not f.exception() else f.exception())
        )

    def _on_collected(self, records: Any) -> None:
        """Show what came back, then have it recorded with the runs it was taken of."""
        self.show_records(records)
        if isinstance(records, BaseException) or self._taking is None:
            return
        report, self._taking = self._taking, None
        self.status.setText(f"{self._shown}; recording them with their runs ...")
        self.bridge.record_counters(report, dict(records))

    def _on_recorded(self, outcome: dict[str, Any]) -> None:
        self.status.setText(f"{self._shown}; {recording_text(outcome)}")

    def show_records(self, records: Any) -> None:
        """Fill the table from {(backend, device): record} (a failure of the thread: its message)."""
        self.take_button.setEnabled(self.report is not None and not self.unavailable)
        if isinstance(records, BaseException):
            self.status.setText(f"counters failed: {records}")
            return
        self.records = dict(records)
        if not any(r.get("status") == "ok" for r in self.records.values()):
            # Nothing to compare: each result's reason as a line, not a grid of dashes.
            self._rows = []
            self.table.clear()
            self.table.hide()
            reasons = dict.fromkeys(f"{b} on {d}: {r['message']}" for (b, d), r in self.records.items())
            self._shown = "\n".join(reasons) or "no counters for this run"
            self.status.setText(self._shown)
            return
        self.table.show()
        columns = list(self.records)
        # "ok" where ncu answered (its summary in the tooltip); else the one-line reason
        rows: list[dict[str, Any]] = [{"label": "status", "differs": False, "cells": [
            "ok" if r.get("status") == "ok" else r["message"] for r in self.records.values()],
            "tips": [r["message"] for r in self.records.values()]}]  # fmt: skip
        medians = [r.get("event_median_s") for r in self.records.values()]
        rows.append({"label": "event median (workbench)", "cells": [format_time(v) if v else "–" for v in medians],
                     "differs": differs(medians)})  # fmt: skip
        for metric in METRICS:
            values = [(r.get("metrics") or {}).get(metric.key) for r in self.records.values()]
            rows.append({"label": metric.label, "cells": [format_value(metric.key, v) for v in values],
                         "differs": differs(values, metric.key)})  # fmt: skip
        for rank in range(TOP_STALLS):
            cells = []
            for r in self.records.values():
                stalls = r.get("stalls") or []
                cells.append(f"{stalls[rank][0]} {stalls[rank][1]:.1f}" if rank < len(stalls) else "")
            rows.append({"label": f"stall #{rank + 1} (cycles per issue)", "cells": cells,
                         "differs": len(set(c.split(" ")[0] for c in cells if c)) > 1})  # fmt: skip
        self._rows = rows
        self.table.clear()
        self.table.setColumnCount(len(columns))
        self.table.setRowCount(len(rows))
        self.table.setHorizontalHeaderLabels([f"{b}\n{d}" for b, d in columns])
        self.table.setVerticalHeaderLabels([row["label"] for row in rows])
        for i, row in enumerate(rows):
            for j, text in enumerate(row["cells"]):
                item = QTableWidgetItem(text)
                item.setToolTip((row.get("tips") or row["cells"])[j])
                if row["differs"]:
                    item.setBackground(HIGHLIGHT)
                    item.setForeground(QColor(theme.COUNTERS_DIFFER_TEXT))
                self.table.setItem(i, j, item)
        for column in range(len(columns)):  # fitted, within reason: a long reason never takes the view
            self.table.setColumnWidth(
                column, min(max(self.table.sizeHintForColumn(column), 120), COLUMN_MAX_PX)
            )
        ok = sum(1 for r in self.records.values() if r.get("status") == "ok")
        self._shown = f"counters of {ok} of {len(columns)} result(s)"
        self.status.setText(self._shown)

    def table_data(self) -> dict[str, Any]:
        """What the table shows: its columns and rows (label, cell texts, highlighted)."""
        return {"columns": [list(key) for key in self.records], "rows": [dict(row) for row in self._rows]}

    def shutdown(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def closeEvent(self, event) -> None:  # noqa: N802
        self.shutdown()
        super().closeEvent(event)
