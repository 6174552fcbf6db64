"""The Tuning panel's controls: one per tunable (its allowed values; changing one is a hot reload)
and the sweep's options: the strategy (grid: every configuration; random; or a search: annealing,
genetic, diff_evo, tpe, cmaes), a budget of evaluations and/or seconds, the interleaved rounds."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QSignalBlocker, Qt
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QSpinBox

from workbench.profile.tuning import strategies


def tunable_control(name: str, values: list[Any], chosen: dict[str, Any]) -> QComboBox:
    """A tunable's choice of its allowed values, on the value `chosen` gives it if allowed."""
    control = QComboBox()
    control.setObjectName(f"tunable-{name}")
    for value in values:
        control.addItem(str(value), value)
    if name in chosen and chosen[name] in values:
        control.setCurrentIndex(values.index(chosen[name]))
    return control


def show_config(controls: dict[str, QComboBox], config: dict[str, Any]) -> None:
    """Each tunable's control on its value in `config`, with no hot reload (signals blocked)."""
    for name, value in config.items():
        control = controls.get(name)
        if control is not None and control.findData(value) >= 0:
            with QSignalBlocker(control):
                control.setCurrentIndex(control.findData(value))


class SweepOptions:
    """The strategy, the budgets and the rounds, in one row (`row`)."""

    def __init__(self):
        self.strategy = QComboBox()
        self.strategy.setObjectName("tuning-strategy")
        for name in strategies.NAMES:
            self.strategy.addItem(name)
            self.strategy.setItemData(self.strategy.count() - 1, strategies.DESCRIPTIONS[name],
                                      Qt.ItemDataRole.ToolTipRole)  # fmt: skip
        self.strategy.setCurrentText("grid")  # every configuration, until a budget asks for a search
        self.strategy.setToolTip(
            "how configurations are chosen (as `workbench tune --strategy`); "
            f"{strategies.DEFAULT} was best in benchmarks/strategies.py under a budget"
        )
        self.budget = QSpinBox()
        self.budget.setObjectName("tuning-budget")
        self.budget.setRange(0, 100000)
        self.budget.setSpecialValueText("all")
        self.budget.setToolTip("at most this many configurations, i.e. evaluations (all: the whole grid)")
        self.budget.valueChanged.connect(self._budget_changed)
        self.budget_s = QSpinBox()
        self.budget_s.setObjectName("tuning-budget-time")
        self.budget_s.setRange(0, 86400)
        self.budget_s.setSuffix(" s")
        self.budget_s.setSpecialValueText("no limit")
        self.budget_s.setToolTip("a search stops choosing configurations after this many seconds")
        self.rounds = QSpinBox()
        self.rounds.setRange(1, 50)
        self.rounds.setValue(3)
        self.rounds.setToolTip("interleaved rounds: every configuration measured once per round")
        self.row = QHBoxLayout()
        for widget in (QLabel("strategy"), self.strategy, QLabel("budget"), self.budget, self.budget_s,
                       QLabel("rounds"), self.rounds):  # fmt: skip
            self.row.addWidget(widget)
        self.row.addStretch(1)

    def _budget_changed(self, value: int) -> None:
        """A budget asks for a search: the measured default replaces grid (which would take the
        first N); the user's own choice of strategy stays."""
        if value and self.strategy.currentText() == "grid":
            self.strategy.setCurrentText(strategies.DEFAULT)
