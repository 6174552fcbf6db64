"""The timing tab: each backend × device's median and IQR side by side (★ the fastest, ratios to the
reference), the spread of its samples around its own median, and the median per run over the
session with the edits marked. Rows come in series order (`plot_model.marks`); stale results are dimmed
and named, failed checks ringed in red, results that did not run listed as failed rows (compare)
or in the failure lane under the history, never drawn at a time they did not take."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QLabel, QSplitter, QVBoxLayout, QWidget

from workbench.backends import BACKENDS
from workbench.run.host_load import run_conditions
from workbench.ui.plot_model.marks import (
    Failure,
    failed_runs,
    marks_of,
    order_key,
)
from workbench.ui.plot_model.timing import (
    TimingRow,
    compare_note,
    log_scale_wanted,
    row_model,
    row_text,
    series_name,
    timing_rows,
)
from workbench.ui.plot_model.units import si_scale
from workbench.ui.plots.axes import AXIS, BACKGROUND, TEXT, UnitAxis
from workbench.ui.plots.base import PlotTab, legend_label, make_plot, settle_range
from workbench.ui.plots.lanes import FailureLane, lane_legend
from workbench.ui.theme import CHECK_FAILED as FAILED_COLOR
from workbench.ui.theme import STALE_ALPHA, STALE_TEXT

#: Runs kept per series in the history plot.
HISTORY = 200
#: Samples drawn per series in the spread view at most.
MAX_SPREAD_POINTS = 1500
FASTEST = "#ffd54f"
NO_RUN = "Run a kernel to compare backends."


class TimingTab(PlotTab):
    """Median and IQR per series, the spread of its samples, and its median per run."""

    name = "timing"
    title = "Timing"
    parts = ("compare", "spread", "history")

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        #: series -> [(run, median s)]; runs where the sources changed (an edit) since the last run.
        self.history: dict[str, list[tuple[int, float]]] = {}
        #: series -> runs whose check failed (their medians are in `history`, ringed in red).
        self.history_failed_checks: dict[str, set[int]] = {}
        #: (backend, device) -> [(run, why)]: runs without a new median (did not build or run, or
        #: only a stale result); device "" when the build failed (named at drawing, `_name_of`).
        self.history_failures: dict[tuple[str, str], list[tuple[int, str]]] = {}
        #: series -> sort key (series order, not arrival order).
        self._series_keys: dict[str, tuple] = {}
        self.edits: list[int] = []
        self.runs = 0
        self._last_source: str | None = None
        self._time_unit = ("s", "linear")
        self._compare_rows: list[TimingRow] = []

        self.compare_plot = make_plot("compare_plot", "Median and IQR (★ fastest)", "", "time", rows="left")
        self.compare_plot.getPlotItem().getViewBox().invertY(True)
        self.compare_plot.getPlotItem().getViewBox().setMouseEnabled(x=True, y=False)
        self.compare_plot.getPlotItem().getViewBox().sigResized.connect(self._fit_compare)
        self.whiskers = pg.PlotDataItem(pen=pg.mkPen(TEXT, width=2), connect="pairs")
        self.medians = pg.ScatterPlotItem(size=11, pen=pg.mkPen(BACKGROUND))
        self.compare_plot.addItem(self.whiskers)
        self.compare_plot.addItem(self.medians)
        self.compare_labels: list[pg.TextItem] = []

        self.spread_plot = make_plot(
            "spread_plot", "Spread around each median", "", "deviation from the median (%)", rows="left"
        )
        self.spread_plot.getPlotItem().getViewBox().invertY(True)
        self.spread_plot.getPlotItem().getViewBox().setMouseEnabled(x=True, y=False)
        self.spread_boxes = pg.PlotDataItem(pen=pg.mkPen("#8a8f98", width=7), connect="pairs")
        self.spread_boxes.setZValue(-1)  # the IQR box under the samples
        self.spread_points = pg.ScatterPlotItem(size=5, pen=None)
        self.spread_outliers = pg.ScatterPlotItem(size=8, pen=None)  # beyond the fences, at the edge
        self.spread_plot.addItem(self.spread_boxes)
        self.spread_plot.addItem(self.spread_points)
        self.spread_plot.addItem(self.spread_outliers)
        self.spread_plot.addItem(pg.InfiniteLine(0, angle=90, pen=pg.mkPen(AXIS, width=1)))

        self.history_plot = make_plot("history_plot", "Median per run", "time", "run")
        self.history_curves: dict[str, pg.PlotDataItem] = {}
        self.history_check_marks = pg.ScatterPlotItem(
            symbol="o", size=13, pen=pg.mkPen(FAILED_COLOR, width=2), brush=None
        )
        self.history_check_marks.setZValue(10)
        self.history_plot.addItem(self.history_check_marks)
        self.history_lane = FailureLane("history_lane", self.history_plot)
        self.edit_lines: list[pg.InfiniteLine] = []
        self.history_legend = legend_label()

        self.timing_note = QLabel(NO_RUN)
        self.timing_note.setWordWrap(True)
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.setChildrenCollapsible(False)
        splitter.addWidget(self.compare_plot)
        splitter.addWidget(self.spread_plot)
        history = QWidget()
        hl = QVBoxLayout(history)
        hl.setContentsMargins(0, 0, 0, 0)
        hl.setSpacing(2)
        hl.addWidget(self.history_plot, 1)
        hl.addWidget(self.history_lane)
        hl.addWidget(self.history_legend)
        splitter.addWidget(history)
        splitter.setSizes([300, 220, 260])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.timing_note)
        layout.addWidget(splitter, 1)

    # ---------------------------------------------------------------- data in
    def add_report(self, report: Any) -> None:
        """Count the run, note an edit of the sources, and add each result's median to its series."""
        self.runs += 1
        source = next(
            (
                r.provenance.get("source_hash")
                for r in report.results
                if (r.provenance or {}).get("source_hash") and r.stale is None
            ),
            None,
        )
        if source and self._last_source and source != self._last_source:
            self.edits.append(self.runs)
        self._last_source = source or self._last_source
        reference = getattr(report, "reference", "") or ""
        for result in report.results:
            name = series_name(result)
            device = result.device or {}
            self._series_keys.setdefault(
                name,
                order_key(result.backend, str(device.get("spec") or device.get("runtime") or ""), reference),
            )
            median = (result.timing or {}).get("median_s")
            marks = marks_of(result)
            if marks.stale:  # a row kept from an earlier run: its median was drawn then; none now
                self._add_failure(result.backend, result, f"stale: {marks.stale_reason or 'not rerun'}")
            elif median is not None and result.status == "ok":
                series = self.history.setdefault(name, [])
                series.append((self.runs, float(median)))
                del series[:-HISTORY]
                if marks.check_failed:
                    self.history_failed_checks.setdefault(name, set()).add(self.runs)
        for failure in failed_runs(report, self.context.builds()):
            self._add_failure(failure.backend, failure.device, f"did not run: {failure.why}")
        first_run = self.runs - HISTORY
        for runs in self.history_failed_checks.values():
            runs.difference_update([r for r in runs if r <= first_run])
        for key, failures in self.history_failures.items():
            self.history_failures[key] = [f for f in failures if f[0] > first_run]
        del self.edits[: max(0, len(self.edits) - HISTORY)]

    def _add_failure(self, backend: str, device: Any, why: str) -> None:
        if not isinstance(device, str):  # a result: its device spec
            device = str((device.device or {}).get("spec") or "")
        self.history_failures.setdefault((backend, device), []).append((self.runs, why))

    def _name_of(self, backend: str, device: str) -> str:
        """The series name of a failure; a failed build reached no device: the backend's known
        series (else its runtime) names it."""
        if device:
            return f"{backend} @ {device}"
        known = next((n for n in self._series_keys if n.startswith(f"{backend} @ ")), None)
        return known or f"{backend} @ {BACKENDS.get(backend, '?')}"

    def _series_order(self, names) -> list[str]:
        return sorted(names, key=lambda n: (self._series_keys.get(n, (True, 99)), n))

    def clear(self) -> None:
        super().clear()
        self.history.clear()
        self.history_failed_checks.clear()
        self.history_failures.clear()
        self._series_keys.clear()
        self.history_lane.set_failures({})
        self.history_check_marks.setData([], [])
        self.edits.clear()
        self.runs = 0
        self._last_source = None
        for curve in self.history_curves.values():
            self.history_plot.removeItem(curve)
        self.history_curves.clear()
        for line in self.edit_lines:
            self.history_plot.removeItem(line)
        self.edit_lines.clear()
        for label in self.compare_labels:
            self.compare_plot.removeItem(label)
        self.compare_labels.clear()
        for item in (
            self.whiskers,
            self.spread_boxes,
            self.medians,
            self.spread_points,
            self.spread_outliers,
        ):
            item.setData([], [])
        self.history_legend.setText("")
        self.timing_note.setText(NO_RUN)

    def draw(self, part: str, report: Any, wait: bool = False) -> None:
        if part == "compare":
            self._draw_compare(report)
        elif part == "spread":
            self._draw_spread(report)
        elif part == "history":
            self._draw_history()

    def curve_data(self) -> dict[str, Any]:
        return {
            "time": {name: curve.getData() for name, curve in self.history_curves.items()},
            "compare": {"medians": self.medians.getData(), "whiskers": self.whiskers.getData()},
            "spread": {"points": self.spread_points.getData(), "outliers": self.spread_outliers.getData()},
        }

    # ---------------------------------------------------------------- drawing
    def _time_axis(self, axis: UnitAxis, values: list[float], label: str, plot: pg.PlotWidget):
        """Pick log or linear and the unit for time values (s); returns fn(seconds) -> plotted value."""
        item = plot.getPlotItem()
        side = "bottom" if axis is item.getAxis("bottom") else "left"
        if log_scale_wanted(values):
            axis.set_log(True, "s")
            item.setLabel(side, f"{label} (log scale)", color=TEXT)
            self._time_unit = ("s", "log")
            return lambda s: np.log10(np.maximum(np.asarray(s, dtype=np.float64), 1e-15))
        scale, prefix = si_scale(max(values) if values else 1.0)
        axis.set_log(False)
        item.setLabel(side, f"{label} ({prefix}s)", color=TEXT)
        self._time_unit = (f"{prefix}s", "linear")
        return lambda s: np.asarray(s, dtype=np.float64) / scale

    def _draw_compare(self, report: Any) -> None:
        rows = timing_rows(report)
        failed = failed_runs(report, self.context.builds())
        plot = self.compare_plot
        item = plot.getPlotItem()
        axis: UnitAxis = item.getAxis("bottom")
        # Timed rows, then the results that did not run (a row each, no point: no time to draw).
        item.getAxis("left").set_names(
            [r.series + r.marks.suffix() for r in rows]
            + [f"{self._name_of(f.backend, f.device)} (failed)" for f in failed]
        )
        for label in self.compare_labels:
            plot.removeItem(label)
        self.compare_labels = []
        self._compare_rows = rows
        if not rows:
            self.whiskers.setData([], [])
            self.medians.setData([], [])
            self.model = {
                "y_unit": "s",
                "scale": "linear",
                "rows": [],
                "failed_runs": self._failed_model(failed),
            }
            self.timing_note.setText(
                f"No timing: {', '.join(self._name_of(f.backend, f.device) for f in failed)} did not run."
                if failed
                else NO_RUN
            )
            return
        to_x = self._time_axis(axis, [v for r in rows for v in (r.q1_s, r.q3_s, r.median_s)], "time", plot)
        xs, ys = [], []
        for i, row in enumerate(rows):
            lo, hi = float(to_x(row.q1_s)), float(to_x(row.q3_s))
            xs += [lo, hi, lo, lo, hi, hi]
            ys += [i, i, i - 0.18, i + 0.18, i - 0.18, i + 0.18]
        self.whiskers.setData(xs, ys)
        self.medians.setData([self._median_spot(r, i, to_x) for i, r in enumerate(rows)])
        for i, row in enumerate(rows):
            color = FASTEST if row.fastest else STALE_TEXT if row.marks.stale else TEXT
            label = pg.TextItem(row_text(row), color=color, anchor=(0, 0.5))
            label.setPos(float(to_x(row.q3_s)), i)
            plot.addItem(label, ignoreBounds=True)
            self.compare_labels.append(label)
        left = float(min(to_x(r.q1_s) for r in rows))
        for j, failure in enumerate(failed, start=len(rows)):
            # Elided to the plot's width (the whole reason is in the note above and in plots_data).
            room = max(160, int(item.getViewBox().width() * 0.75) - 24)  # it starts ~10 % in
            text = QFontMetrics(self.font()).elidedText(
                f"✗ did not run: {failure.why}", Qt.TextElideMode.ElideRight, room
            )
            label = pg.TextItem(text, color=FAILED_COLOR, anchor=(0, 0.5))
            label.setPos(left, j)
            plot.addItem(label, ignoreBounds=True)
            self.compare_labels.append(label)
        item.getViewBox().setYRange(-0.6, len(rows) + len(failed) - 0.4, padding=0)
        self._fit_compare()
        unit, scale = self._time_unit
        self.model = {
            "y_unit": unit,
            "scale": scale,
            "rows": [row_model(r) for r in rows],
            "failed_runs": self._failed_model(failed),
        }
        # A busy host or a throttled GPU is said here as in the results caption (one rule).
        conditions = run_conditions(report)
        self.model["conditions"] = conditions
        failures = [(self._name_of(f.backend, f.device), f.why) for f in failed]
        self.timing_note.setText(
            compare_note(rows, failures, getattr(report, "reference", "") or "", conditions)
        )

    def _median_spot(self, row: TimingRow, i: int, to_x) -> dict[str, Any]:
        """The median's marker: the series colour (dimmed when stale), a red ring when its check failed."""
        color = pg.mkColor(self.colors(row.series))
        if row.marks.stale:
            color.setAlpha(STALE_ALPHA)
        pen = pg.mkPen(FAILED_COLOR, width=2.5) if row.marks.check_failed else pg.mkPen(BACKGROUND)
        return {
            "pos": (float(to_x(row.median_s)), i),
            "brush": pg.mkBrush(color),
            "pen": pen,
            "symbol": "star" if row.fastest else "o",
            "size": 18 if row.fastest else 13 if row.marks.check_failed else 11,
        }

    def _failed_model(self, failed: list[Failure]) -> list[dict[str, Any]]:
        return [
            {
                "backend": f.backend,
                "device": f.device,
                "series": self._name_of(f.backend, f.device),
                "status": f.status,
                "error": f.why,
            }
            for f in failed
        ]

    def _fit_compare(self, *_: Any) -> None:
        """Leave room right of the whiskers for the labels (their width in pixels is known only now)."""
        rows = self._compare_rows
        if not rows or not self.compare_labels:
            return
        vb = self.compare_plot.getPlotItem().getViewBox()
        metrics = QFontMetrics(self.font())
        label_px = max(metrics.horizontalAdvance(row_text(r)) for r in rows) + 16
        width_px = max(vb.width(), 80.0)
        xs = [lab.pos().x() for lab in self.compare_labels[: len(rows)]]
        data = self.whiskers.getData()[0]
        lo, hi = float(np.min(data)), float(np.max(xs))
        span = max(hi - lo, abs(hi) * 0.05, 1e-9)
        lo -= span * 0.08
        fraction = min(label_px / width_px, 0.7)
        vb.setXRange(lo, lo + (hi - lo) / (1 - fraction), padding=0)

    def _draw_spread(self, report: Any) -> None:
        """Each series' samples as % deviation from its own median (so every backend is readable
        whatever its scale), jittered in its row, with its IQR as a bar. The view holds every row's
        far-out fences (3 IQR past the quartiles); outliers beyond sit at its edge as triangles."""
        rows = timing_rows(report)
        names = [r.series + r.marks.suffix() for r in rows]
        self.spread_plot.getPlotItem().getAxis("left").set_names(names)
        self.model["spread"] = {"rows": names}
        deviations = [(r.samples_s / r.median_s - 1.0) * 100.0 for r in rows]
        if not rows:
            self.spread_points.setData([], [])
            self.spread_outliers.setData([], [])
            self.spread_boxes.setData([], [])
            return
        # Tukey's far-out fences (3 IQR past the quartiles) of every row bound the view; the
        # quartiles in % of the median are the timing's own (a deviation is linear in the time).
        fences = []
        for row, deviation in zip(rows, deviations, strict=True):
            q1, q3 = (row.q1_s / row.median_s - 1) * 100, (row.q3_s / row.median_s - 1) * 100
            iqr = max(q3 - q1, 0.5)
            fences.append(
                (max(q1 - 3 * iqr, float(deviation.min())), min(q3 + 3 * iqr, float(deviation.max())))
            )
        lo, hi = min(f[0] for f in fences), max(f[1] for f in fences)
        lo, hi = min(lo, -1.0), max(hi, 1.0)  # 0 % always in view
        pad = 0.08 * (hi - lo)
        edge_lo, edge_hi = lo - pad / 2, hi + pad / 2  # where outliers are drawn, inside the view
        lo, hi = lo - pad, hi + pad
        rng = np.random.default_rng(0)  # a fixed jitter: the same run draws the same picture
        xs, ys, brushes, edge_x, edge_y, edge_symbols, edge_brushes = [], [], [], [], [], [], []
        boxes_x, boxes_y = [], []
        for i, (row, deviation) in enumerate(zip(rows, deviations, strict=True)):
            if deviation.size > MAX_SPREAD_POINTS:  # thousands of samples of a fast kernel: a sample of them
                deviation = rng.choice(deviation, MAX_SPREAD_POINTS, replace=False)
            color = pg.mkColor(self.colors(row.series))
            if row.marks.stale:
                color.setAlpha(STALE_ALPHA)
            brush = pg.mkBrush(color)
            jitter = i + rng.uniform(-0.28, 0.28, deviation.size)
            inside = (deviation >= edge_lo) & (deviation <= edge_hi)
            xs.append(deviation[inside])
            ys.append(jitter[inside])
            brushes += [brush] * int(inside.sum())
            out = ~inside
            edge_x.append(np.clip(deviation[out], edge_lo, edge_hi))
            edge_y.append(jitter[out])
            edge_symbols += ["t3" if v < edge_lo else "t2" for v in deviation[out]]
            edge_brushes += [brush] * int(out.sum())
            boxes_x += [(row.q1_s / row.median_s - 1) * 100, (row.q3_s / row.median_s - 1) * 100]
            boxes_y += [i, i]
        self.spread_points.setData(np.concatenate(xs), np.concatenate(ys), brush=brushes, symbol="o")
        self.spread_outliers.setData(np.concatenate(edge_x), np.concatenate(edge_y), brush=edge_brushes,
                                     symbol=edge_symbols or "o")  # fmt: skip
        self.spread_boxes.setData(boxes_x, boxes_y)
        vb = self.spread_plot.getPlotItem().getViewBox()
        vb.setRange(xRange=(lo, hi), yRange=(-0.6, len(rows) - 0.4), padding=0)
        settle_range(self.spread_plot)

    def _draw_history(self) -> None:
        plot = self.history_plot
        axis: UnitAxis = plot.getPlotItem().getAxis("left")
        values = [t for points in self.history.values() for _, t in points]
        to_y = self._time_axis(axis, values, "median", plot)
        order = self._series_order(self.history)
        for z, name in enumerate(order):
            points = self.history[name]
            color = self.colors(name)
            curve = self.history_curves.get(name)
            if curve is None:
                curve = self.history_curves[name] = plot.plot(
                    pen=pg.mkPen(color, width=2), symbol="o", symbolSize=6, symbolBrush=color, symbolPen=color
                )
            curve.setZValue(len(order) - z)  # the first series on top
            runs, times = zip(*points, strict=True)
            curve.setData(np.asarray(runs, float), to_y(times))
        ring_x, ring_y = [], []
        for name, runs in self.history_failed_checks.items():
            for run, t in self.history.get(name, ()):
                if run in runs:
                    ring_x.append(float(run))
                    ring_y.append(float(to_y(t)))
        self.history_check_marks.setData(ring_x, ring_y)
        for line in self.edit_lines:
            plot.removeItem(line)
        self.edit_lines = []
        for run in self.edits:
            line = pg.InfiniteLine(
                run - 0.5, angle=90, pen=pg.mkPen("#9e9e9e", width=1, style=Qt.PenStyle.DashLine)
            )
            plot.addItem(line)
            self.edit_lines.append(line)
        bottom = plot.getPlotItem().getAxis("bottom")
        major = next(m for m in (1, 2, 5, 10, 20, 50, 100, 200) if self.runs / m <= 8)
        bottom.setTickSpacing(major, major)
        if self.runs:
            plot.getPlotItem().getViewBox().setXRange(0.5, self.runs + 0.5, padding=0.02)
        failures: dict[str, list[tuple[float, str]]] = {}
        for (backend, device), points in self.history_failures.items():
            failures.setdefault(self._name_of(backend, device), []).extend((float(r), w) for r, w in points)
        failures = {n: sorted(failures[n]) for n in self._series_order(failures)}
        self.history_lane.set_failures(failures)
        extras = []
        if ring_x:
            extras.append(f"<span style='color:{FAILED_COLOR}'>○</span>&nbsp;check failed")
        if self.edits:
            extras.append("<span style='color:#9e9e9e'>┆</span>&nbsp;edit")
        lane = lane_legend(sum(len(f) for f in failures.values()))
        self.history_legend.setText(
            self.colors.legend_html(order, "&nbsp;&nbsp; ".join(extras + ([lane] if lane else [])))
        )
        settle_range(plot)
        self.model["history"] = {
            "runs": self.runs,
            "edits": list(self.edits),
            "series": {
                n: [
                    {"run": r, "median_s": t, "check_failed": r in self.history_failed_checks.get(n, ())}
                    for r, t in self.history[n]
                ]
                for n in order
            },
            "failed": {n: [{"run": int(x), "why": why} for x, why in f] for n, f in failures.items()},
            "y_unit": self._time_unit[0],
            "scale": self._time_unit[1],
        }
