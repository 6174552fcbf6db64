"""The Sessions panel's runs table: one row per recorded run, its verdict cell, the baseline's star,
and which runs are shown and selected.

Every item of a row carries its run's id (`Qt.ItemDataRole.UserRole`), so selection and export
read ids, never texts. Its texts come from `workbench.result_text` and `workbench.units`, its one
colour (a failed verdict) from `workbench.ui.theme`.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem, QWidget

from workbench.profile.sessions.conditions import series_text
from workbench.result_text import cell_of, row_verdict, verdict_tone
from workbench.ui import theme
from workbench.units import format_time

RUN_COLUMNS = (
    "#", "time (UTC)", "kernel", "backend", "device", "verified", "median", "IQR", "n", "sources", "series",
    "conditions",
)  # fmt: skip
_ID, _DEVICE, _VERIFIED = RUN_COLUMNS.index("#"), RUN_COLUMNS.index("device"), RUN_COLUMNS.index("verified")


def verified_text(run: dict[str, Any]) -> str:
    """A recorded run's verdict cell, as the results table and `sessions list` show it."""
    return cell_of(row_verdict(run))


def _cells(run: dict[str, Any], extra: dict[str, Any]) -> tuple[str, ...]:
    """A run's row, column by column (`RUN_COLUMNS`)."""
    return (
        str(run["id"]), run["time"].replace("T", " ").rstrip("Z"), f"{run['project']}/{run['kernel']}",
        run["backend"], run["device"], verified_text(run),
        format_time(run["median_s"], "–"), format_time(run["iqr_s"], "–"), str(run["n"] or "–"), (run["snapshot_hash"] or "")[:10],
        series_text(extra["series"]), ", ".join(extra["condition_flags"]),
    )  # fmt: skip


class RunsTable(QTableWidget):
    """The recorded runs the panel's filters let through, newest first."""

    #: The current (last selected) run changed: its id.
    currentRunChanged = Signal(int)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(0, len(RUN_COLUMNS), parent)
        #: The rows shown (`SessionStore.list_runs`), in table order.
        self.runs: list[dict[str, Any]] = []
        self.setHorizontalHeaderLabels(RUN_COLUMNS)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.verticalHeader().hide()
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.horizontalHeader().setStretchLastSection(True)
        self.itemSelectionChanged.connect(self._selection_changed)

    def fill(
        self, runs: list[dict[str, Any]], extras: dict[int, dict[str, Any]], baseline_id: int | None
    ) -> None:
        """Show `runs` with their series and condition flags (`extras`: `run_conditions`), the baseline
        starred. Runs selected before stay selected; refilling emits no selection change."""
        selected = set(self.selected_ids())
        self.runs = runs
        self.blockSignals(True)
        self.setRowCount(len(runs))
        for row, run in enumerate(runs):
            for column, text in enumerate(_cells(run, extras[run["id"]])):
                item = QTableWidgetItem(text)
                item.setData(Qt.ItemDataRole.UserRole, run["id"])
                if column == _DEVICE:
                    item.setToolTip(run["device_name"])
                if run.get("invalid"):  # a poisoned row the store sanitised (bundle_check)
                    item.setToolTip("invalid values, shown as –: " + "; ".join(run["invalid"]))
                if column == _ID and run["id"] == baseline_id:
                    item.setText(f"{run['id']} ★")
                if column == _VERIFIED and verdict_tone(row_verdict(run)) == "bad":
                    item.setForeground(QColor(theme.VERDICT["slower"]))
                self.setItem(row, column, item)
            if run["id"] in selected:
                self.selectRow(row)
        self.blockSignals(False)

    def shown_run(self, run_id: int) -> dict[str, Any] | None:
        """The shown row of run `run_id`, or None."""
        return next((run for run in self.runs if run["id"] == run_id), None)

    def _id_at(self, row: int) -> int:
        return int(self.item(row, _ID).data(Qt.ItemDataRole.UserRole))

    def shown_ids(self) -> list[int]:
        return [self._id_at(row) for row in range(self.rowCount())]

    def selected_ids(self) -> list[int]:
        rows = sorted({index.row() for index in self.selectionModel().selectedRows()})
        return [self._id_at(row) for row in rows]

    def current_id(self) -> int | None:
        ids = self.selected_ids()
        return ids[-1] if ids else None

    def select_run(self, run_id: int) -> None:
        for row in range(self.rowCount()):
            if self._id_at(row) == run_id:
                self.selectRow(row)
                return

    def _selection_changed(self) -> None:
        run_id = self.current_id()
        if run_id is not None:
            self.currentRunChanged.emit(run_id)
