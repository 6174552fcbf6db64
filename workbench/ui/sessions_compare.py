"""The Sessions panel's Compare tab: the pinned baseline, the selected run against it.

It compares as `workbench sessions compare` does (`workbench.profile.sessions.compare`): "Pair
whole invocations" is its `--invocation`, on by default; each row's texts are that module's
`cells`, the verdict coloured from `workbench.ui.theme`; rows that measured different things say
what differs below the table, with the method named. Like the History tab it reads the store the
panel hands it and reports a failed query through `failed`.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.errors import WorkbenchError
from workbench.profile.sessions.compare import COLUMNS, cells, compare_runs
from workbench.ui import theme
from workbench.ui.layout_fit import wrap_within

NO_BASELINE = "No baseline: select a run and press “Set as baseline”."


class SessionCompare(QWidget):
    """A run against the baseline, row by row per backend × device, each verdict coloured."""

    #: A query failed: the error's text (the panel shows it).
    failed = Signal(str)
    #: "Pair whole invocations" was switched: the panel compares its selected run again.
    pairingChanged = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.baseline_id: int | None = None
        #: The last comparison shown (`compare_runs`' answer), None before the first.
        self.compare_result: dict[str, Any] | None = None

        self.baseline_label = QLabel(NO_BASELINE)
        wrap_within(self.baseline_label)
        self.compare_table = QTableWidget(0, len(COLUMNS))
        self.compare_table.setHorizontalHeaderLabels(COLUMNS)
        self.compare_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.compare_table.verticalHeader().hide()
        self.compare_table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.compare_table.horizontalHeader().setStretchLastSection(True)
        self.method_label = QLabel("")
        wrap_within(self.method_label)
        self.invocation_box = QCheckBox("Pair whole invocations")
        self.invocation_box.setChecked(True)
        self.invocation_box.setToolTip(
            "On: the baseline's and the selected run's whole invocations, row by row per backend × device "
            "(sessions compare --invocation). Off: the two selected rows only."
        )
        self.invocation_box.toggled.connect(lambda _checked: self.pairingChanged.emit())
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.baseline_label)
        layout.addWidget(self.invocation_box)
        layout.addWidget(self.compare_table, 1)
        layout.addWidget(self.method_label)

    def set_baseline(self, store: Any, run_id: int) -> bool:
        """Pin run `run_id` as the baseline; False (and `failed`) when the store cannot read it."""
        try:
            run = store.get_run(run_id, samples=False)
        except WorkbenchError as exc:
            self.failed.emit(str(exc))
            return False
        self.baseline_id = run_id
        self.baseline_label.setText(
            f"Baseline: run #{run_id} — {run['project']}/{run['kernel']}, {run['backend']} on {run['device']}, "
            f"{run['time']}. Select another run to compare."
        )
        return True

    def compare(self, store: Any, run_id: int) -> None:
        """Show run `run_id` against the baseline (nothing without one, or against itself)."""
        if self.baseline_id is None or run_id == self.baseline_id:
            return
        try:
            result = compare_runs(store, self.baseline_id, run_id, invocation=self.invocation_box.isChecked())
        except WorkbenchError as exc:
            self.failed.emit(str(exc))
            return
        self.compare_result = result
        self.compare_table.setRowCount(len(result["rows"]))
        for row, entry in enumerate(result["rows"]):
            texts = cells(entry)
            for column, text in enumerate(texts):
                item = QTableWidgetItem(text)
                if column == len(texts) - 1:
                    item.setToolTip(entry["verdict"])
                    if entry["outcome"] in theme.VERDICT:
                        item.setForeground(QColor(theme.VERDICT[entry["outcome"]]))
                self.compare_table.setItem(row, column, item)
        differs = [
            f"{e['backend']} on {e['device']}: {'; '.join(e['differs'])}"
            for e in result["rows"]
            if e["differs"]
        ]
        self.method_label.setText(
            f"Run #{run_id} against baseline #{self.baseline_id}. Method: {result['method']}."
            + "".join(f"\nDiffers — {line}" for line in differs)
        )
