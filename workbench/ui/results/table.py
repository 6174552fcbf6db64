"""The results table: one row per backend × device with its check, timing, throughput and resources.

"% peak" is hidden while it is empty on every row (no roof known for any device: nothing measured,
no datasheet): the GB/s header and cells say why and how to fill it (`NO_ROOF`), and the column
returns once a roof is known. Its room goes to the check, which at 1280×800 with the Sessions dock
open (the Results pane ~430 px wide) was pushed mostly out of view.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from PySide6.QtCore import Qt, SignalInstance
from PySide6.QtGui import QColor, QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QPushButton,
    QStyledItemDelegate,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.result_text import (
    TIMING_PENDING,
    buffer_lines,
    check_line,
    format_number,
    format_time,
    stale_label,
    stale_note,
    timing_line,
    verdict,
    verdict_cell,
    verdict_tone,
)
from workbench.run.ceilings_roof import ROOF_NAMES, rate_cell, read_roof, roof_cell, roof_line
from workbench.run.events import RunEvent, RunFinished, RunVerified
from workbench.run.host_load import describe, run_conditions
from workbench.run.labels import device_label
from workbench.run.service import RunReport
from workbench.ui import theme
from workbench.ui.ceilings_store import store_for
from workbench.ui.layout_fit import ElidedLabel, OnResize
from workbench.ui.plot_model.marks import result_order_key
from workbench.ui.results.details import ResultDetails
from workbench.units import format_tolerance

#: The columns by name (`row_texts` keys), in the order shown: what a run is judged by (time,
#: throughput, verdict and its check) first after the backend, so a narrow panel shows them without
#: scrolling; the device (elided in the middle) and the rest after them.
COLUMNS = (
    "Backend",
    "Median",
    "GB/s",
    "% of peak",
    "Verified",
    "Check",
    "Device",
    "Status",
    "Spread (IQR)",
    "Registers",
    "Spills",
)
(
    COL_BACKEND,
    COL_MEDIAN,
    COL_GBPS,
    COL_PEAK,
    COL_VERIFIED,
    COL_CHECK,
    COL_DEVICE,
    COL_STATUS,
    COL_SPREAD,
    COL_REGS,
    COL_SPILLS,
) = range(len(COLUMNS))
#: Shorter header titles (the full name is the header's tooltip).
HEADERS = {"% of peak": "% peak", "Spread (IQR)": "IQR", "Registers": "Regs"}
HEADER_TIPS = {
    "GB/s": "GB/s; where the kernel is compute-bound, GFLOP/s (its unit written)",
    "% of peak": "% of the roof the kernel's arithmetic intensity selects: the device's measured ceilings "
    f"({', '.join(ROOF_NAMES.values())}), else its datasheet; ⚠ more than 3 % above it: a measurement problem",
}
NO_ROOF = "no roof known for this device: measure its ceilings (Devices › Measure, or `workbench ceilings`)"
#: The GB/s header's tooltip while "% peak" is hidden (empty on every row).
PEAK_HIDDEN = f"% of peak hidden: {NO_ROOF}"
GOOD = QColor(theme.GOOD)
BAD = QColor(theme.BAD)
MUTED = QColor(theme.MUTED)
WARN = QColor(theme.WARN)
#: The colour of a verdict's tone (`result_text.verdict_tone`).
TONES = {"good": GOOD, "bad": BAD, "warn": WARN}
CHECK_WIDTH = 280
#: The check's least width when the panel is narrow (its text is elided, the tooltip has it whole).
CHECK_MIN_WIDTH = 90
#: No column wider than this (a long device name or verdict is elided, never the numbers).
MAX_COLUMN_WIDTH = 240
_NUMERIC = {COL_MEDIAN, COL_SPREAD, COL_GBPS, COL_PEAK, COL_REGS, COL_SPILLS}


@runtime_checkable
class ResultsBridge(Protocol):
    """The bridge members the results table (and the details dialog it opens) uses (`ServiceBridge` has
    them: tests/ui/test_typed_events.py)."""

    runEvent: SignalInstance
    runFinished: SignalInstance
    projectChanged: SignalInstance
    last_build: dict[str, Any] | None
    last_report: Any
    reference_changed: dict[str, Any] | None
    cache_dir: Any

    def expected_reference(self) -> str: ...


class ResultsTable(QWidget):
    """The last run's results; rows follow the report, one per backend × device."""

    def __init__(self, bridge: ResultsBridge, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("ResultsTable")
        self.bridge = bridge
        self.report: Any = None
        self.conditions: list[str] = []  # "busy" / "throttled" of the report shown (run_conditions)
        self._timing_pending: set[tuple[str, str]] = set()  # rows verified, their samples still taken
        # One line, elided (the tooltip has it whole): a wrapped caption took the rows' height.
        self.caption = ElidedLabel("No run yet: press Run, or save a source file.")
        self.caption.setObjectName("resultsCaption")
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setObjectName("results")
        self.table.setHorizontalHeaderLabels([HEADERS.get(name, name) for name in COLUMNS])
        for col, name in enumerate(COLUMNS):
            self.table.horizontalHeaderItem(col).setToolTip(HEADER_TIPS.get(name, name))
        self.table.verticalHeader().setVisible(False)
        self.table.setAlternatingRowColors(True)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setWordWrap(False)
        header = self.table.horizontalHeader()
        # No column sorts until the user clicks one: Qt's default (the first column, descending)
        # listed wgsl, nvptx, cpu where every plot lists the reference first, then the backend
        # table's order (`plot_model.marks.result_order_key`, the order rows are filled in).
        header.setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        header.setMaximumSectionSize(MAX_COLUMN_WIDTH)
        for col in range(len(COLUMNS) - 1):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        # The check's text next to the verdict, in the width the numbers leave (at most
        # CHECK_WIDTH): elided (the tooltip and the details view have it whole).
        header.setSectionResizeMode(COL_CHECK, QHeaderView.ResizeMode.Interactive)
        header.resizeSection(COL_CHECK, CHECK_WIDTH)
        header.setStretchLastSection(True)
        self._middle = _ElideMiddle(self.table)  # a device name keeps its start and its API
        self.table.setItemDelegateForColumn(COL_DEVICE, self._middle)
        header.sectionResized.connect(self._section_resized)
        self._fitter = OnResize(self._fit_columns, self.table.viewport())
        self.details_button = QPushButton("Details…")
        self.details_button.setObjectName("resultDetails")
        self.details_button.setToolTip("Mismatching elements of the selected result (or double-click a row)")
        self.details_button.setEnabled(False)
        self.report: Any = None
        self._dialogs: list[Any] = []
        top = QHBoxLayout()
        top.addWidget(self.caption, 1)
        top.addWidget(self.details_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(top)
        layout.addWidget(self.table, 1)
        self.table.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.table.cellDoubleClicked.connect(lambda row, _col: self.show_details(row))
        self.table.itemSelectionChanged.connect(
            lambda: self.details_button.setEnabled(self.table.currentRow() >= 0 and self.report is not None)
        )
        self.details_button.clicked.connect(lambda: self.show_details(self.table.currentRow()))
        # % of peak: each result against the roof its intensity selects, from the device's
        # ceilings as known now (measured later: the rows are filled again).
        self.ceilings = store_for(bridge)
        self.ceilings.changed.connect(lambda: self.report is not None and self.show_report(self.report))
        bridge.runFinished.connect(self._show_final)
        bridge.runEvent.connect(self._on_run_event)
        bridge.projectChanged.connect(self._clear)
        if bridge.last_report is not None:
            self.show_report(bridge.last_report)

    def _clear(self, *_: Any) -> None:
        self._timing_pending.clear()
        self.table.setRowCount(0)
        self.report = None
        self.conditions: list[str] = []
        self.details_button.setEnabled(False)
        self.caption.setText("No run yet: press Run, or save a source file.")

    def _on_run_event(self, event: RunEvent) -> None:
        """A result streams in as soon as its backend ran (the run does not wait for every build):
        its row replaces the one of the same backend × device; the others stay until the run ends.
        Its verdict comes first (`RunVerified`: the median reads "timing…"), then its timing."""
        if isinstance(event, RunVerified):
            self._timing_pending.add(_result_key(event.result))
            self.show_report(streamed_report(self.report, event.result))
        elif isinstance(event, RunFinished):
            self._timing_pending.discard(_result_key(event.result))
            self.show_report(streamed_report(self.report, event.result))

    def _show_final(self, report: Any) -> None:
        """The run's (or cycle's) report: every row final."""
        self._timing_pending.clear()
        self.show_report(report)

    def result_at(self, row: int) -> Any:
        """The RunResult shown in a table row (rows may be sorted)."""
        item = self.table.item(row, COL_BACKEND) if row >= 0 else None
        index = item.data(Qt.ItemDataRole.UserRole) if item is not None else None
        results = list(getattr(self.report, "results", []) or [])
        return results[index] if isinstance(index, int) and index < len(results) else None

    def show_details(self, row: int) -> Any:
        """Open the details of a row's result (mismatches per buffer, a plot around the first bad)."""
        result = self.result_at(row)
        if result is None:
            return None
        dialog = ResultDetails(self.report, result, self.bridge, self)
        self._dialogs = [d for d in self._dialogs if d.isVisible()] + [dialog]
        dialog.show()
        return dialog

    def show_report(self, report: Any) -> None:
        """Fill the table from a RunReport (resources come from the last build's results)."""
        results = list(getattr(report, "results", []) or [])
        builds = self.bridge.last_build or {}
        self.report = report
        self._reference = self.bridge.expected_reference() or getattr(report, "reference", "") or ""
        self._reference_failed = bool(getattr(report, "reference_failed", False))
        self._changed = self.bridge.reference_changed or {}
        # Rows are refilled in the plots' order; sorting is off meanwhile (a sort would move them).
        self.table.setSortingEnabled(False)
        self.table.setRowCount(len(results))
        # Each item change would re-run the resize-to-contents columns (~0.3 ms a cell): the
        # model is silenced while the cells change and announces them all at once.
        model = self.table.model()
        model.blockSignals(True)
        try:
            order = sorted(range(len(results)), key=lambda i: result_order_key(results[i], self._reference))
            for row, index in enumerate(order):
                self._fill_row(row, results[index], builds.get(results[index].backend))
                self._set(row, COL_BACKEND, Qt.ItemDataRole.UserRole, index)
        finally:
            model.blockSignals(False)
        if results:
            model.dataChanged.emit(model.index(0, 0), model.index(len(results) - 1, len(COLUMNS) - 1))
        self.table.setSortingEnabled(True)
        self._show_peak(
            any(self.table.item(row, COL_PEAK).text() for row in range(len(results))) or not results
        )
        fresh = [r for r in results if r.stale is None]
        stale = len(results) - len(fresh)
        verified = sum(1 for r in fresh if r.verified)
        disputed = sum(1 for r in fresh if r.verified is False and (r.check or {}).get("disputed"))
        failed = sum(1 for r in fresh if r.verified is False or r.status == "error") - disputed
        kernel = getattr(report, "kernel", "") or ""
        reference = self._reference
        parts = [
            f"{kernel}: {len(results)} result{'s' if len(results) != 1 else ''}, {verified} verified, {failed} failed"
            + (f", {disputed} disputed (the reference is in doubt)" if disputed else "")
        ]
        if stale:
            parts.append(f"{stale} stale (kept from the last good run, dimmed)")
        if reference:
            parts.append(
                f"checked against {reference}" + (" — reference failed" if self._reference_failed else "")
            )
        if self._changed:
            parts.append("⚠ " + self._changed["message"])
        self.conditions = run_conditions(report, fresh)
        if self.conditions:
            host = getattr(report, "host_conditions", None)
            parts.append(f"⚠ measured while {' and '.join(self.conditions)} ({describe(host)})")
        self.caption.setText(" · ".join(parts))
        warn = self._changed or self._reference_failed or self.conditions
        self.caption.setStyleSheet(f"color: {theme.WARN};" if warn else "")
        self.details_button.setEnabled(self.table.currentRow() >= 0)

    def _fill_row(self, row: int, result: Any, build: Any) -> None:
        timing = result.timing or {}
        throughput = result.throughput or {}
        device = result.device or {}
        kernel = (result.provenance or {}).get("kernel")
        resources = _resources_for(build, kernel)
        status = result.status
        stale = result.stale
        check_text = check_line(result)
        reading = read_roof(throughput, device, self.ceilings.get(device)) if status == "ok" else None
        if result.verified is False and result.backend in (self._changed.get("failed") or []):
            check_text = f"⚠ reference changed — {check_text}"
        values = {
            COL_BACKEND: result.backend,
            COL_DEVICE: device_label(device),
            COL_STATUS: stale_label(stale) if stale else status,
            COL_VERIFIED: verdict_cell(result),
            COL_MEDIAN: TIMING_PENDING
            if _result_key(result) in self._timing_pending
            else format_time(timing.get("median_s"), ""),
            COL_SPREAD: format_time(timing.get("iqr_s"), ""),
            COL_GBPS: rate_cell(throughput, reading),
            COL_PEAK: roof_cell(reading),
            COL_REGS: format_number(resources.get("registers")),
            COL_SPILLS: format_number(resources.get("spills")),
            COL_CHECK: check_text,
        }
        for col, text in values.items():
            self._cell(row, col, text)
        self._set(row, COL_MEDIAN, Qt.ItemDataRole.UserRole, timing.get("median_s"))
        self._set(row, COL_MEDIAN, Qt.ItemDataRole.ToolTipRole, timing_line(timing))
        tone = verdict_tone(verdict(result)) if status == "ok" else ""
        self._set(row, COL_VERIFIED, Qt.ItemDataRole.ForegroundRole, TONES.get(tone))
        self._set(row, COL_CHECK, Qt.ItemDataRole.ForegroundRole, BAD if result.verified is False else None)
        status_color = {"ok": GOOD, "error": BAD}.get(status, MUTED)
        self._set(row, COL_STATUS, Qt.ItemDataRole.ForegroundRole, status_color)
        # The full first-bad text is the tooltip (the cell elides it), then the per-buffer lines.
        changed = self._changed.get("message", "") if check_text.startswith("⚠ reference changed") else ""
        check = result.check or {}
        check_tip = "\n".join(
            x
            for x in (changed, check_text, format_tolerance(check) if check else "", *buffer_lines(check))
            if x
        )
        self._set(row, COL_CHECK, Qt.ItemDataRole.ToolTipRole, check_tip)
        device_tip = "\n".join(x for x in (values[COL_DEVICE], str(device.get("spec") or "")) if x)
        self._set(row, COL_DEVICE, Qt.ItemDataRole.ToolTipRole, device_tip)
        self._set(
            row,
            COL_VERIFIED,
            Qt.ItemDataRole.ToolTipRole,
            check.get("note") if result.reference_failed else "",
        )
        resources_tip = ", ".join(f"{k} {v}" for k, v in resources.items()) if resources else ""
        self._set(row, COL_REGS, Qt.ItemDataRole.ToolTipRole, resources_tip)
        self._set(row, COL_SPILLS, Qt.ItemDataRole.ToolTipRole, resources_tip)
        self._set(
            row,
            COL_PEAK,
            Qt.ItemDataRole.ToolTipRole,
            roof_line(reading) or (NO_ROOF if status == "ok" else ""),
        )
        self._set(
            row,
            COL_GBPS,
            Qt.ItemDataRole.ToolTipRole,
            roof_line(reading) or (NO_ROOF if status == "ok" else ""),
        )
        self._set(
            row, COL_PEAK, Qt.ItemDataRole.ForegroundRole, WARN if reading and reading["suspect"] else None
        )
        self._mark_stale(row, stale_note(stale) if stale else "")

    def _mark_stale(self, row: int, text: str) -> None:
        """Dim and italicise a kept row; its status tooltip says why, when and from what source."""
        for col in range(len(COLUMNS)):
            item = self.table.item(row, col)
            font = QFont(item.font())
            if font.italic() != bool(text):
                font.setItalic(bool(text))
                item.setFont(font)
            if text:
                item.setData(Qt.ItemDataRole.ForegroundRole, MUTED)
            elif col not in (COL_STATUS, COL_VERIFIED, COL_CHECK, COL_PEAK) and item.data(
                Qt.ItemDataRole.ForegroundRole
            ):
                item.setData(Qt.ItemDataRole.ForegroundRole, None)  # its _fill_row colour stands
        if text:
            self._set(row, COL_STATUS, Qt.ItemDataRole.ToolTipRole, text)
            tip = self.table.item(row, COL_CHECK).toolTip()
            self._set(row, COL_CHECK, Qt.ItemDataRole.ToolTipRole, f"{text}\n{tip}".strip())
        else:
            self._set(row, COL_STATUS, Qt.ItemDataRole.ToolTipRole, None)

    def _show_peak(self, shown: bool) -> None:
        """Show "% peak" when a row has a roof; hidden, the GB/s header says why (`PEAK_HIDDEN`)."""
        header_tip = HEADER_TIPS["GB/s"] + ("" if shown else f"\n{PEAK_HIDDEN}")
        self.table.horizontalHeaderItem(COL_GBPS).setToolTip(header_tip)
        if self.table.isColumnHidden(COL_PEAK) == shown:
            self.table.setColumnHidden(COL_PEAK, not shown)
            self._fit_columns()

    def _section_resized(self, col: int, _old: int, _new: int) -> None:
        if col < COL_CHECK:  # a number's column changed width: the check takes what is left
            self._fit_columns()

    def _fit_columns(self) -> None:
        """Give the check the width the columns before it leave in the viewport (between
        CHECK_MIN_WIDTH and CHECK_WIDTH), so the numbers and the verdict stay in view."""
        header = self.table.horizontalHeader()
        lead = sum(header.sectionSize(col) for col in range(COL_CHECK) if not header.isSectionHidden(col))
        room = self.table.viewport().width() - lead
        width = max(CHECK_MIN_WIDTH, min(CHECK_WIDTH, room))
        if header.sectionSize(COL_CHECK) != width:
            header.resizeSection(COL_CHECK, width)

    def column_rect(self, row: int, col: int) -> Any:
        """A cell's rectangle in the viewport's coordinates (used by the layout tests)."""
        return self.table.visualRect(self.table.model().index(row, col))

    def is_row_stale(self, row: int) -> bool:
        """Whether the row shows a result kept from an earlier run (its `RunResult.stale`)."""
        result = self.result_at(row)
        return result is not None and result.stale is not None

    def _cell(self, row: int, col: int, text: str) -> None:
        """Set a cell's text, reusing its item: every item change costs a pass of the
        resize-to-contents columns, so a rerun with the same texts changes nothing."""
        item = self.table.item(row, col)
        if item is None:
            item = QTableWidgetItem(text)
            if col in _NUMERIC:
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            self.table.setItem(row, col, item)
        elif item.text() != text:
            item.setText(text)

    def _set(self, row: int, col: int, role: Qt.ItemDataRole, value: Any) -> None:
        """Set one role of a cell when it differs (None and "" clear it)."""
        item = self.table.item(row, col)
        current = item.data(role)
        if role == Qt.ItemDataRole.ForegroundRole and current is not None:
            current = current.color() if hasattr(current, "color") else current
        if value in ("", None):
            if current not in ("", None):
                item.setData(role, None)
        elif current != value:
            item.setData(role, value)

    def row_texts(self) -> list[dict[str, str]]:
        """The table as {column title: text} per row (what a user reads; used by tests)."""
        rows = []
        for row in range(self.table.rowCount()):
            rows.append(
                {
                    title: (self.table.item(row, col).text() if self.table.item(row, col) else "")
                    for col, title in enumerate(COLUMNS)
                }
            )
        return rows


def _result_key(result: Any) -> tuple[str, str]:
    return result.backend, str((result.device or {}).get("spec", ""))


def streamed_report(report: Any, result: Any) -> Any:
    """The report shown while a run is in flight: `report`'s rows with `result` in place of the
    row of its backend × device (added when new); outputs of a replaced backend are dropped (they
    are the previous run's). The reference failed when a row so far says so (`reference_failed`)."""
    results = list(getattr(report, "results", []) or [])
    key = _result_key(result)
    shown = [result if _result_key(r) == key else r for r in results]
    if key not in {_result_key(r) for r in results}:
        shown.append(result)
    outputs = {
        name: arrays
        for name, arrays in (getattr(report, "outputs", {}) or {}).items()
        if name.partition("@")[0] != result.backend
    }
    return RunReport(
        project=getattr(report, "project", ""),
        kernel=getattr(report, "kernel", "") or (result.provenance or {}).get("kernel", ""),
        results=shown,
        outputs=outputs,
        reference=getattr(report, "reference", ""),
        reference_failed=any(r.reference_failed for r in shown if r.stale is None),
    )


class _ElideMiddle(QStyledItemDelegate):
    """Cells elided in the middle ("llvmpipe (LLVM…bits) · Vulkan"): both ends say what it is."""

    def initStyleOption(self, option, index) -> None:  # noqa: N802 (Qt's name)
        super().initStyleOption(option, index)
        option.textElideMode = Qt.TextElideMode.ElideMiddle


def _resources_for(build: Any, kernel: str | None) -> dict[str, Any]:
    resources = getattr(build, "resources", None) or {}
    if not resources:
        return {}
    if kernel and kernel in resources:
        return resources[kernel]
    return next(iter(resources.values()), {}) if len(resources) == 1 else {}
