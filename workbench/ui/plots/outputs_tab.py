"""The outputs tab: one output buffer of every backend over the index, its error against the
reference (absolute or in ULPs, the check's mismatches marked) and backend against reference.

A buffer the manifest makes 2-D (`length = "m * n"`, `plot_model.image.buffer_shape`) is drawn as
images instead (values and error, colour bars, hover for (row, col) and value: `OutputImages`),
with the scatter beside them.

Million-element arrays are decimated over the visible index range (min/max per bucket, so peaks
stay) and compared with the reference on a one-thread executor; the GUI thread only calls
`setData` with a few thousand points. Unchanged arrays reuse their points."""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QPushButton, QSplitter, QVBoxLayout

from workbench.errors import WorkbenchError
from workbench.ui.plot_model.image import buffer_shape, run_symbols
from workbench.ui.plot_model.marks import Marks, order_key
from workbench.ui.plot_model.outputs import (
    OutputsCache,
    OutputsDrawing,
    check_tolerance,
    compute_outputs,
    marks_by_output,
    outputs_note,
)
from workbench.ui.plots.axes import AXIS, TEXT
from workbench.ui.plots.base import PlotTab, legend_label, make_plot, settle_range, view_range
from workbench.ui.plots.output_image import OutputImages

#: After the outputs view stops moving, decimate again for the new range.
RANGE_SETTLE_MS = 120
MISMATCH, UNWRITTEN, EXACT = "#ff5252", "#ffd54f", "#8bc34a"


class _Relay(QObject):
    """Carries a finished outputs computation from the worker thread to the GUI thread."""

    ready = Signal(object)


class OutputsTab(PlotTab):
    """Outputs, error against the reference and scatter against it, for the chosen buffer."""

    name = "outputs"
    title = "Outputs"
    parts = ("outputs",)

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._report: Any = None
        # The computation: one job in flight at most, the latest request waiting behind it.
        self._executor: ThreadPoolExecutor | None = None
        self._outputs_cache = OutputsCache()
        self._outputs_job: Future | None = None
        self._outputs_pending: tuple | None = None
        self._outputs_generation = 0
        self._outputs_range: tuple[float, float] | None = None
        self._shape: tuple[int, int] | None = None
        self._drawing: OutputsDrawing | None = None
        self._drawn: dict[tuple[str, str], Any] = {}
        self._relay = _Relay(self)
        self._relay.ready.connect(self._outputs_ready, Qt.ConnectionType.QueuedConnection)
        self.range_timer = QTimer(self)
        self.range_timer.setObjectName("plotsOutputsRange")
        self.range_timer.setSingleShot(True)
        self.range_timer.setInterval(RANGE_SETTLE_MS)
        self.range_timer.timeout.connect(self._range_settled)

        self.output_plot = make_plot("output_plot", "Outputs", "value", "index")
        self.error_plot = make_plot("error_plot", "Error vs reference", "|error|", "index")
        self.scatter_plot = make_plot("scatter_plot", "Backend vs reference", "backend", "reference")
        self.error_plot.setXLink(self.output_plot)
        self.output_curves: dict[str, pg.PlotDataItem] = {}
        self.error_curves: dict[str, pg.PlotDataItem] = {}
        self.scatter_items: dict[str, pg.ScatterPlotItem] = {}
        self.mismatch_marks = pg.ScatterPlotItem(
            symbol="x", size=9, pen=pg.mkPen(MISMATCH, width=2), brush=None
        )
        self.mismatch_marks.setZValue(10)
        self.error_plot.addItem(self.mismatch_marks)
        self.unwritten_marks = pg.ScatterPlotItem(symbol="s", size=7, pen=pg.mkPen(UNWRITTEN), brush=None)
        self.unwritten_marks.setZValue(10)
        self.output_plot.addItem(self.unwritten_marks)
        # "exact match" sits in the middle of the error plot's view box (pixels, not data: it stays
        # centred whatever the range).
        error_vb = self.error_plot.getPlotItem().getViewBox()
        self.exact_text = pg.TextItem("", color=EXACT, anchor=(0.5, 0.5))
        self.exact_text.setZValue(20)
        self.exact_text.setParentItem(error_vb)
        error_vb.sigResized.connect(self._center_exact_text)
        self.identity_line = pg.PlotDataItem(pen=pg.mkPen(AXIS, width=1, style=Qt.PenStyle.DashLine))
        self.scatter_plot.addItem(self.identity_line)
        self.output_plot.getPlotItem().getViewBox().sigXRangeChanged.connect(self._outputs_range_changed)

        self.arg_box = QComboBox()
        self.arg_box.setToolTip("Output buffer to compare")
        self.arg_box.currentTextChanged.connect(lambda _: self.mark_dirty())
        self.error_mode = QComboBox()
        self.error_mode.addItems(["absolute", "ULP"])
        self.error_mode.setToolTip("Error in absolute terms, or in units of the last place")
        self.error_mode.currentTextChanged.connect(lambda _: self._redraw_outputs())
        self.first_bad_button = QPushButton("First bad")
        self.first_bad_button.setEnabled(False)
        self.first_bad_button.setToolTip("Zoom to the first mismatching or never-written element")
        self.first_bad_button.clicked.connect(self.show_first_bad)
        self.output_note = QLabel("")
        self.output_note.setWordWrap(True)
        self.output_legend = legend_label()

        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        bar = QHBoxLayout()
        bar.addWidget(QLabel("Buffer:"))
        bar.addWidget(self.arg_box, 1)
        bar.addWidget(QLabel("Error:"))
        bar.addWidget(self.error_mode)
        bar.addWidget(self.first_bad_button)
        layout.addLayout(bar)
        layout.addWidget(self.output_note)
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.setChildrenCollapsible(False)
        self.images = OutputImages()
        self.images.hide()
        self.images.on_redraw = self._image_redrawn
        splitter.addWidget(self.images)
        splitter.addWidget(self.output_plot)
        lower = self.outputs_lower = QSplitter(Qt.Orientation.Horizontal)
        lower.setChildrenCollapsible(False)
        lower.addWidget(self.error_plot)
        lower.addWidget(self.scatter_plot)
        lower.setSizes([300, 200])
        splitter.addWidget(lower)
        splitter.setSizes([320, 280])
        layout.addWidget(splitter, 1)
        layout.addWidget(self.output_legend)

    # ---------------------------------------------------------------- the panel's calls
    def add_report(self, report: Any) -> None:
        self._report = report
        self._outputs_range = None  # a new run starts from the whole buffer

    def draw(self, part: str, report: Any, wait: bool = False) -> None:
        self._refresh_args(report)
        self._request_outputs(report, wait=wait)

    def clear(self) -> None:
        super().clear()
        self._report = None
        self._outputs_generation += 1  # a computation in flight is for the old project
        self._outputs_pending = None
        self._outputs_cache = OutputsCache()  # the worker may still hold the old one
        self._outputs_range = None
        self._drawing = None
        self._drawn.clear()
        self._shape = None
        self.images.clear()
        self.images.hide()
        self.output_plot.show()
        self.error_plot.show()
        for store, plot in (
            (self.output_curves, self.output_plot),
            (self.error_curves, self.error_plot),
            (self.scatter_items, self.scatter_plot),
        ):
            for item in store.values():
                plot.removeItem(item)
            store.clear()
        for item in (self.identity_line, self.mismatch_marks, self.unwritten_marks):
            item.setData([], [])
        self.exact_text.setText("")
        self.arg_box.clear()
        self.first_bad_button.setEnabled(False)
        self.output_legend.setText("")
        self.output_note.setText("")

    def curve_data(self) -> dict[str, Any]:
        return {
            "outputs": {name: curve.getData() for name, curve in self.output_curves.items()},
            "errors": {name: curve.getData() for name, curve in self.error_curves.items()},
            "scatter": {name: item.getData() for name, item in self.scatter_items.items()},
        }

    def panel_resized(self, width: int) -> None:
        # Error and scatter side by side when there is room, else one above the other.
        wide = width >= 700  # well above both plots' minimum widths side by side
        wanted = Qt.Orientation.Horizontal if wide else Qt.Orientation.Vertical
        if self.outputs_lower.orientation() != wanted:
            self.outputs_lower.setOrientation(wanted)
        self.images.fit_width(width)

    def shutdown(self) -> None:
        self.range_timer.stop()
        self._outputs_generation += 1
        self._outputs_pending = None
        self._outputs_job = None
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True, cancel_futures=True)

    # ---------------------------------------------------------------- computing
    def _refresh_args(self, report: Any) -> None:
        names = []
        for arrays in (getattr(report, "outputs", None) or {}).values():
            for name in arrays:
                if name not in names:
                    names.append(name)
        current = [self.arg_box.itemText(i) for i in range(self.arg_box.count())]
        if names != current:
            keep = self.arg_box.currentText()
            self.arg_box.blockSignals(True)
            self.arg_box.clear()
            self.arg_box.addItems(names)
            if keep in names:
                self.arg_box.setCurrentText(keep)
            self.arg_box.blockSignals(False)

    def _outputs_range_changed(self, *_: Any) -> None:
        if self._drawing is not None and self.is_current():
            self.range_timer.start()

    def _range_settled(self) -> None:
        """The view stopped moving: decimate again over what is visible (zooming reveals detail)."""
        if self._drawing is None or self._report is None:
            return
        (x0, x1), _ = self.output_plot.getPlotItem().getViewBox().viewRange()
        size = self._drawing.size
        lo, hi = max(0.0, x0), min(float(size), x1)
        full = lo <= 0 and hi >= size - 1
        wanted = None if full else (lo, hi)
        if wanted == self._outputs_range:
            return
        self._outputs_range = wanted
        self._request_outputs(self._report)

    def _request_outputs(self, report: Any, wait: bool = False) -> None:
        """Compute the curves on the worker; a request made while one is in flight waits and
        replaces any older waiting one. `wait`: compute here and draw now."""
        if report is None:
            return
        request = (
            dict(report.outputs or {}),
            self.arg_box.currentText(),
            getattr(report, "reference", "") or "",
            check_tolerance(report),
        )
        self._shape = self._buffer_shape(report, request[1])
        if wait:
            self._draw_outputs(
                compute_outputs(*request, self._outputs_cache, self._outputs_range, shape=self._shape)
            )
            return
        self._outputs_generation += 1
        if self._outputs_job is not None:
            self._outputs_pending = request
            return
        self._submit_outputs(request)

    def _submit_outputs(self, request: tuple) -> None:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="plots-outputs")
        generation = self._outputs_generation
        relay = self._relay
        job = self._executor.submit(
            compute_outputs, *request, self._outputs_cache, self._outputs_range, shape=self._shape
        )
        self._outputs_job = job
        job.add_done_callback(lambda done: relay.ready.emit((generation, done)))

    def _outputs_ready(self, item: tuple[int, Future]) -> None:
        """GUI thread: a computation finished; draw it unless a newer one was asked for."""
        generation, job = item
        if job is not self._outputs_job:
            return  # dropped by clear() or shutdown()
        self._outputs_job = None
        if self._outputs_pending is not None:
            request, self._outputs_pending = self._outputs_pending, None
            self._submit_outputs(request)
            return
        if generation != self._outputs_generation or job.cancelled():
            return
        try:
            drawing = job.result()
        except Exception as exc:  # bad arrays must not break the window: say so on the tab
            self.output_note.setText(f"cannot draw the outputs: {type(exc).__name__}: {exc}")
            return
        self._draw_outputs(drawing)

    def _buffer_shape(self, report: Any, arg: str) -> tuple[int, int] | None:
        """(rows, cols) when the manifest makes `arg` 2-D at the run's sizes, else None."""
        project = self.context.project()
        arrays = [a[arg] for a in (getattr(report, "outputs", None) or {}).values() if a.get(arg) is not None]
        if project is None or not arrays:
            return None
        try:
            kernel = project.manifest.kernel(getattr(report, "kernel", None))
        except (WorkbenchError, LookupError, ValueError, AttributeError):
            return None
        return buffer_shape(kernel, arg, run_symbols(report), int(np.asarray(arrays[0]).size))

    # ---------------------------------------------------------------- drawing
    def _set_points(self, store_name: str, store: dict, plot: pg.PlotWidget, name: str, points, width=1):
        """setData unless these very points are already drawn (an unchanged output: no repaint)."""
        curve = store.get(name)
        if curve is None:
            # Width 1: thousands of min/max points form a band; wide lines take twice as long to paint.
            curve = store[name] = plot.plot(pen=pg.mkPen(self.colors(name), width=width), connect="finite")
        if self._drawn.get((store_name, name)) is points:
            return
        self._drawn[(store_name, name)] = points
        curve.setData(*points)

    def _draw_outputs(self, drawing: OutputsDrawing) -> None:
        if drawing.arg != self.arg_box.currentText():
            self.mark_dirty()  # the buffer was switched meanwhile
            return
        self._drawing = drawing
        reference = drawing.reference
        # The reference first and wider, underneath: a backend that matches it stays visible on top;
        # the others in series order, whatever order they finished in.
        order = sorted(drawing.curves, key=lambda key: order_key(*key.partition("@")[::2], reference))
        marks = marks_by_output(self._report)
        for z, backend in enumerate(order):
            self._set_points("outputs", self.output_curves, self.output_plot, backend, drawing.curves[backend],
                             width=3 if backend == reference else 1)  # fmt: skip
            self.output_curves[backend].setZValue(z)
        for name, curve in self.output_curves.items():
            if name not in drawing.curves and self._drawn.get(("outputs", name)) is not None:
                self._drawn[("outputs", name)] = None
                curve.setData([], [])
        if drawing.unwritten is not None:
            self.unwritten_marks.setData(*drawing.unwritten)
        else:
            self.unwritten_marks.setData([], [])
        two_d = drawing.shape is not None
        self.images.setVisible(two_d)
        self.output_plot.setVisible(not two_d)
        self.error_plot.setVisible(not two_d)
        self._redraw_outputs()
        settle_range(self.output_plot)
        self.first_bad_button.setEnabled(drawing.first_bad is not None)
        self.first_bad_button.setText(
            f"First bad: [{drawing.first_bad:,}]" if drawing.first_bad is not None else "First bad"
        )
        self.output_note.setText(outputs_note(drawing))
        self.output_legend.setText(
            self.colors.legend_html(
                order,
                f"(reference: {reference}, wide)" if reference else "",
                suffixes={k: marks[k].suffix() for k in order if k in marks},
            )
        )
        self.model = self._outputs_model(drawing, marks)

    def _redraw_outputs(self) -> None:
        """The error and scatter plots of the current drawing, in the chosen error mode."""
        drawing = self._drawing
        if drawing is None:
            return
        ulp = self.error_mode.currentText() == "ULP"
        if drawing.shape is not None:
            self.images.show_drawing(drawing, ulp)
        self.error_plot.getPlotItem().setLabel("left", "error (ULP)" if ulp else "|error|", color=TEXT)
        errors = drawing.ulps if ulp else drawing.errors
        for backend, points in errors.items():
            self._set_points("errors", self.error_curves, self.error_plot, backend, points)
        for name, curve in self.error_curves.items():
            if name not in errors:
                self._drawn[("errors", name)] = None
                curve.setData([], [])
        marks = drawing.ulp_marks if ulp else drawing.marks
        if marks is not None:
            self.mismatch_marks.setData(*marks)
        else:
            self.mismatch_marks.setData([], [])
        exact = bool(drawing.exact) and all(drawing.exact.values())
        vb = self.error_plot.getPlotItem().getViewBox()
        if exact:
            others = ", ".join(drawing.exact)
            self.exact_text.setText(f"exact match\n{others} = {drawing.reference}")
            vb.enableAutoRange(y=False)
            vb.setYRange(0, 1, padding=0.05)
        elif not errors:
            self.exact_text.setText("no reference to compare with")
            vb.setYRange(0, 1, padding=0.05)
        else:
            self.exact_text.setText("")
            vb.enableAutoRange(y=True)
        for backend, (ref_values, values) in drawing.scatter.items():
            item = self.scatter_items.get(backend)
            if item is None:
                item = self.scatter_items[backend] = pg.ScatterPlotItem(
                    size=4, pen=None, brush=pg.mkBrush(self.colors(backend))
                )
                self.scatter_plot.addItem(item)
            if self._drawn.get(("scatter", backend)) is not drawing.scatter[backend]:
                self._drawn[("scatter", backend)] = drawing.scatter[backend]
                item.setData(ref_values, values)
        for name, item in self.scatter_items.items():
            if name not in drawing.scatter:
                self._drawn[("scatter", name)] = None
                item.setData([], [])
        finite = [v[np.isfinite(v)] for pair in drawing.scatter.values() for v in pair]
        finite = [f for f in finite if f.size]
        if finite:
            lo = min(float(f.min()) for f in finite)
            hi = max(float(f.max()) for f in finite)
            self.identity_line.setData([lo, hi], [lo, hi])
        else:
            self.identity_line.setData([], [])
        self.scatter_plot.getPlotItem().setTitle(
            f"Backend vs {drawing.reference}" if drawing.scatter else "Backend vs reference",
            color=TEXT,
            size="9pt",
        )
        settle_range(self.error_plot)
        settle_range(self.scatter_plot)

    def _center_exact_text(self, *_: Any) -> None:
        vb = self.error_plot.getPlotItem().getViewBox()
        self.exact_text.setPos(vb.width() / 2, vb.height() / 2)

    def show_first_bad(self) -> None:
        """Zoom the outputs and error plots to the first bad (or never-written) element."""
        drawing = self._drawing
        if drawing is None or drawing.first_bad is None:
            return
        index = drawing.first_bad
        vb = self.output_plot.getPlotItem().getViewBox()
        vb.setXRange(max(0, index - 32), min(drawing.size, index + 32), padding=0)
        self.error_plot.getPlotItem().getViewBox().enableAutoRange(y=True)

    def _image_redrawn(self) -> None:
        if self.model.get("image") is not None:
            self.model["image"] = self.images.model()

    def _outputs_model(self, drawing: OutputsDrawing, marks: dict[str, Marks]) -> dict[str, Any]:
        (x0, x1), (y0, y1) = view_range(self.output_plot)
        return {
            "buffer": drawing.arg,
            "reference": drawing.reference,
            "size": drawing.size,
            "x_label": "index",
            "y_label": "value",
            "x_range": [x0, x1],
            "y_range": [y0, y1],
            "decimated": drawing.decimated,
            "series": {
                backend: {
                    "points": int(len(points[0])),
                    "max_abs_err": drawing.max_abs.get(backend),
                    "max_ulp_err": drawing.max_ulp.get(backend),
                    "exact": drawing.exact.get(backend),
                    "stale": marks.get(backend, Marks()).stale,
                    "check_failed": marks.get(backend, Marks()).check_failed,
                }
                for backend, points in drawing.curves.items()
            },
            "mismatches": drawing.mark_count,
            "unwritten": drawing.unwritten_count,
            "first_bad_index": drawing.first_bad,
            "error_label": self.exact_text.toPlainText() or None,
            "image": self.images.model() if drawing.shape is not None else None,
        }
