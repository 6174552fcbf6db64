"""The Tuning panel's Configurations tab: one row per configuration × backend × device, with its
check, median, confidence interval and rank (`profile/tuning/ranking.py`): the best is a winner
only beyond noise, else the tie set; a failed configuration is flagged and never ranked, a skipped
one (runtime unavailable) is shown as skipped."""

from __future__ import annotations

from typing import Any

import pyqtgraph as pg
from PySide6.QtWidgets import QHeaderView, QTableWidget, QTableWidgetItem

from workbench.profile.tuning import ranking
from workbench.ui import theme
from workbench.units import format_time

FAILED = theme.FAILED_MARK
COLUMNS = ("configuration", "backend @ device", "verified", "median", "95% CI", "rank")


def config_text(config: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in config.items())


def rank_text(entry: dict[str, Any], best: dict[str, Any] | None) -> str:
    """The table's rank cell: FAILED, skipped, not ranked, best, same build, tied, or nothing."""
    kind = ranking.outcome(entry)
    if kind == "failed":
        return f"FAILED: {entry.get('error') or entry.get('verdict') or 'not verified'}"
    if kind == "skipped":
        return f"skipped: {entry.get('error') or 'runtime unavailable'}"
    if kind != "ok":
        return f"not ranked: {entry.get('verdict') or 'not verified'}"
    if not best:
        return ""
    config = entry["config"]
    if best["verdict"] == ranking.NO_EFFECT:
        return f"one build for all: {', '.join(best['no_effect']) or 'the tunables'} no effect"
    if best["winner"] == config:
        return "best"
    if best["winner"] is not None and config in best["same_build_as"]:
        return "best (same build)"
    if config in best["ties"] or config in best["same_build_as"]:
        return "tied (no unique winner)"
    if any(config == t["config"] or config in t["same_build_as"] for t in best["tied_with"]):
        return "tied (no unique winner)"
    return ""


class ConfigurationsTable(QTableWidget):
    """The sweep's entries, refilled whole at each event (`fill`)."""

    def __init__(self):
        super().__init__(0, len(COLUMNS))
        self.setHorizontalHeaderLabels(COLUMNS)
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)

    def fill(self, entries: list[dict[str, Any]], best: dict[str, dict[str, Any]]) -> None:
        self.setRowCount(len(entries))
        for row, e in enumerate(entries):
            slot = ranking.slot(e)
            timing = e.get("timing") or {}
            rank = rank_text(e, best.get(slot))
            ci = timing.get("ci_s")
            verified = {True: "yes", False: "NO"}.get(e["verified"], e.get("verdict") or "-")
            cells = (config_text(e["config"]), slot, verified,
                     format_time(timing.get("median_s")),
                     f"[{format_time(ci[0])}, {format_time(ci[1])}]" if ci else "-", rank)  # fmt: skip
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if rank.startswith("FAILED"):
                    item.setForeground(pg.mkColor(FAILED))
                self.setItem(row, col, item)
