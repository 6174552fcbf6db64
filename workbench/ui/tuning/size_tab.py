"""The Tuning panel's Size sweep tab: a size range (`n=2^10..2^20` or `n=1024,4096`) run through
the panel's sweep runner, drawn as GB/s (or time) against the size, one curve per backend ×
device, with each device's measured copy ceiling as a dashed line (`plots/size_sweep_plot.py`:
log axes, ceilings and legend outside the data, failed sizes in a lane)."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLineEdit, QPushButton, QVBoxLayout, QWidget

from workbench.profile.tuning import ranking
from workbench.ui.plots.size_sweep_plot import SizeSweepPlot


class SizeSweepTab(QWidget):
    """The range field, the metric, the Size sweep button and the plot; `data` is what was
    measured: {"symbol", "curves": {slot: {"x", "gbps", "median_s", "failed", "failed_why"}},
    "ceilings"}."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.data: dict[str, Any] = {}
        layout = QVBoxLayout(self)
        row = QHBoxLayout()
        self.spec = QLineEdit()
        self.spec.setPlaceholderText("n=2^10..2^20  or  n=1024,4096")
        self.button = QPushButton("Size sweep")
        self.metric = QComboBox()
        self.metric.addItems(["GB/s", "time"])
        self.metric.currentTextChanged.connect(lambda _t: self.draw())
        row.addWidget(self.spec, 1)
        row.addWidget(self.metric)
        row.addWidget(self.button)
        layout.addLayout(row)
        self.view = SizeSweepPlot()
        layout.addWidget(self.view, 1)

    def start(self, symbol: str) -> None:
        """A new size sweep of `symbol`: what the last one measured goes."""
        self.data = {"symbol": symbol, "curves": {}}

    def add_entries(self, entries: list[dict[str, Any]]) -> None:
        name = self.data["symbol"]
        for e in entries:
            curve = self.data["curves"].setdefault(
                ranking.slot(e), {"x": [], "gbps": [], "median_s": [], "failed": [], "failed_why": []}
            )
            if e["status"] == "ok" and e["verified"] is not False and e.get("gbps"):
                curve["x"].append(e["sizes"][name])
                curve["gbps"].append(e["gbps"])
                curve["median_s"].append((e.get("timing") or {}).get("median_s"))
            else:
                curve["failed"].append(e["sizes"][name])
                curve["failed_why"].append(
                    str(e.get("error") or e.get("verdict") or e["status"]).split("\n")[0]
                )
        self.draw()

    def set_ceilings(self, ceilings: dict[str, Any]) -> None:
        self.data["ceilings"] = ceilings or {}
        self.draw()

    def draw(self) -> None:
        self.view.set_data(self.data, "gbps" if self.metric.currentText() == "GB/s" else "median_s")
