"""The results table: one row per backend × device with its check, timing, throughput and resources."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

COLUMNS = (
    "Backend",
    "Device",
    "Status",
    "Verified",
    "Median",
    "Spread (IQR)",
    "GB/s",
    "% of peak",
    "Registers",
    "Spills",
    "Check",
)
(
    COL_BACKEND,
    COL_DEVICE,
    COL_STATUS,
    COL_VERIFIED,
    COL_MEDIAN,
    COL_SPREAD,
    COL_GBPS,
    COL_PEAK,
    COL_REGS,
    COL_SPILLS,
    COL_CHECK,
) = range(len(COLUMNS))
GOOD = QColor("#2e8b3d")
BAD = QColor("#c62828")
MUTED = QColor("#808080")
_NUMERIC = {COL_MEDIAN, COL_SPREAD, COL_GBPS, COL_PEAK, COL_REGS, COL_SPILLS}


def format_seconds(seconds: float | None) -> str:
    """A duration with a unit that keeps 3 significant digits (ns, µs, ms, s)."""
    if seconds is None:
        return ""
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if abs(seconds) >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def _number(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def check_summary(check: dict[str, Any]) -> str:
    """One line for a check: the first bad element and both values, or the worst error."""
    if not check:
        return ""
    first = check.get("first_bad") or {}
    if check.get("passed") is False:
        index = check.get("first_bad_index", first.get("index"))
        buffer = first.get("buffer")
        where = f"{buffer}[{index}]" if buffer else f"[{index}]"
        text = (
            f"first bad {where}: got {_number(first.get('got'))}, expected {_number(first.get('expected'))}"
        )
        if first.get("unwritten"):
            text += " (never written)"
        bad = check.get("bad")
        if bad:
            text += f"; {bad} bad element{'s' if bad != 1 else ''}"
        return text
    parts = []
    if check.get("max_abs_err") is not None:
        parts.append(f"max abs {_number(check['max_abs_err'])}")
    if check.get("max_ulp_err") is not None:
        parts.append(f"max {check['max_ulp_err']} ULP")
    return ", ".join(parts)


def _verified_text(result: Any) -> str:
    """✓ yes, "weak" for a pass that proves little, ✗ no, or why there was nothing to compare with."""
    check = result.check or {}
    if result.verified is True and check.get("weak"):
        return "⚠ weak"
    if result.verified is None and check.get("unverified"):
        return f"not verified ({check['unverified']})"
    return {True: "✓ yes", False: "✗ no", None: "—"}[result.verified]


def device_label(device: dict[str, Any]) -> str:
    name = device.get("name") or ""
    spec = device.get("spec") or device.get("runtime") or ""
    return f"{spec} · {name}" if name and name != spec else spec


class ResultsTable(QWidget):
    """The last run's results; rows follow the report, one per backend × device."""

    def __init__(self, bridge, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("ResultsTable")
        self.bridge = bridge
        self.caption = QLabel("No run yet: press Run, or save a source file.")
        self.caption.setObjectName("resultsCaption")
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setObjectName("results")
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.verticalHeader().setVisible(False)
        self.table.setAlternatingRowColors(True)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setWordWrap(False)
        header = self.table.horizontalHeader()
        for col in range(len(COLUMNS) - 1):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.caption)
        layout.addWidget(self.table, 1)
        bridge.runFinished.connect(self.show_report)
        bridge.projectChanged.connect(self._clear)
        if bridge.last_report is not None:
            self.show_report(bridge.last_report)

    def _clear(self, *_: Any) -> None:
        self.table.setRowCount(0)
        self.caption.setText("No run yet: press Run, or save a source file.")

    def show_report(self, report: Any) -> None:
        """Fill the table from a RunReport (resources come from the last build's results)."""
        results = list(getattr(report, "results", []) or [])
        builds = self.bridge.last_build or {}
        # Rows are refilled in report order; sorting is off meanwhile (a sort would move them).
        self.table.setSortingEnabled(False)
        self.table.setRowCount(len(results))
        # Each item change would re-run the resize-to-contents columns (~0.3 ms a cell): the
        # model is silenced while the cells change and announces them all at once.
        model = self.table.model()
        model.blockSignals(True)
        try:
            for row, result in enumerate(results):
                self._fill_row(row, result, builds.get(result.backend))
        finally:
            model.blockSignals(False)
        if results:
            model.dataChanged.emit(model.index(0, 0), model.index(len(results) - 1, len(COLUMNS) - 1))
        self.table.setSortingEnabled(True)
        verified = sum(1 for r in results if r.verified)
        failed = sum(1 for r in results if r.verified is False or r.status == "error")
        kernel = getattr(report, "kernel", "") or ""
        reference = getattr(report, "reference", "") or ""
        self.caption.setText(
            f"{kernel}: {len(results)} result{'s' if len(results) != 1 else ''}, {verified} verified, "
            f"{failed} failed" + (f" · checked against {reference}" if reference else "")
        )

    def _fill_row(self, row: int, result: Any, build: Any) -> None:
        timing = result.timing or {}
        throughput = result.throughput or {}
        device = result.device or {}
        kernel = (result.provenance or {}).get("kernel")
        resources = _resources_for(build, kernel)
        fraction = throughput.get("fraction_of_peak")
        status = result.status
        values = {
            COL_BACKEND: result.backend,
            COL_DEVICE: device_label(device),
            COL_STATUS: status,
            COL_VERIFIED: _verified_text(result),
            COL_MEDIAN: format_seconds(timing.get("median_s")),
            COL_SPREAD: format_seconds(timing.get("iqr_s")),
            COL_GBPS: f"{throughput['gbps']:.2f}" if throughput.get("gbps") is not None else "",
            COL_PEAK: f"{100 * fraction:.1f} %" if fraction is not None else "",
            COL_REGS: _number(resources.get("registers")),
            COL_SPILLS: _number(resources.get("spills")),
            COL_CHECK: result.error or check_summary(result.check or {}),
        }
        for col, text in values.items():
            self._cell(row, col, text)
        self._set(row, COL_MEDIAN, Qt.ItemDataRole.UserRole, timing.get("median_s"))
        tip = ""
        if timing:
            tip = (
                f"{timing.get('n', '?')} samples, {timing.get('method', '?')} timer "
                f"(resolution {format_seconds(timing.get('resolution_s'))}), "
                f"min {format_seconds(timing.get('min_s'))}, max {format_seconds(timing.get('max_s'))}"
            )
        self._set(row, COL_MEDIAN, Qt.ItemDataRole.ToolTipRole, tip)
        verified = {True: GOOD, False: BAD}.get(result.verified)
        self._set(row, COL_VERIFIED, Qt.ItemDataRole.ForegroundRole, verified)
        self._set(row, COL_CHECK, Qt.ItemDataRole.ForegroundRole, BAD if result.verified is False else None)
        status_color = {"ok": GOOD, "error": BAD}.get(status, MUTED)
        self._set(row, COL_STATUS, Qt.ItemDataRole.ForegroundRole, status_color)
        check_tip = result.error or _check_tooltip(result.check or {})
        self._set(row, COL_CHECK, Qt.ItemDataRole.ToolTipRole, check_tip)
        resources_tip = ", ".join(f"{k} {v}" for k, v in resources.items()) if resources else ""
        self._set(row, COL_REGS, Qt.ItemDataRole.ToolTipRole, resources_tip)
        self._set(row, COL_SPILLS, Qt.ItemDataRole.ToolTipRole, resources_tip)

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


def _resources_for(build: Any, kernel: str | None) -> dict[str, Any]:
    resources = getattr(build, "resources", None) or {}
    if not resources:
        return {}
    if kernel and kernel in resources:
        return resources[kernel]
    return next(iter(resources.values()), {}) if len(resources) == 1 else {}


def _check_tooltip(check: dict[str, Any]) -> str:
    if not check:
        return ""
    lines = [f"rtol {check.get('rtol')}, atol {check.get('atol')}, max ULP {check.get('max_ulp')}"]
    for name, buf in (check.get("buffers") or {}).items():
        state = "ok" if buf.get("passed") else f"{buf.get('bad', '?')} bad"
        lines.append(
            f"{name}: {state}; max abs {_number(buf.get('max_abs_err'))}, max rel {_number(buf.get('max_rel_err'))}"
        )
    return "\n".join(lines)
