"""`OutputImages`: a 2-D output buffer (matmul's `c`) as two images, one backend's values and its
error against the reference, each with a colour bar; hovering an element shows its (row, col)
and its value or error. The outputs tab shows it in place of the 1-D envelope when the manifest
makes the buffer 2-D (`plot_model.image.buffer_shape`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QSplitter, QVBoxLayout, QWidget

from workbench.ui.plot_model.image import element_at, finite_range, hover_text
from workbench.ui.plot_model.outputs import OutputsDrawing
from workbench.ui.plots.axes import AXIS, TEXT
from workbench.ui.plots.base import make_plot

VALUE_MAP, ERROR_MAP = "viridis", "inferno"


class _ImagePlot:
    """One plot holding one image and its colour bar."""

    def __init__(self, name: str, color_map: str, label: str):
        self.plot = make_plot(name, "", "row", "column")
        item = self.plot.getPlotItem()
        item.showGrid(x=False, y=False)
        vb = item.getViewBox()
        vb.invertY(True)  # row 0 at the top, as a matrix is written
        self.image = pg.ImageItem(axisOrder="row-major")
        self.plot.addItem(self.image)
        self.bar = pg.ColorBarItem(
            values=(0.0, 1.0),
            colorMap=color_map,
            interactive=False,
            colorMapMenu=False,
            width=14,
        )
        self.bar.setImageItem(self.image, insert_in=item)
        self.bar.axis.setTextPen(TEXT)
        self.bar.axis.setPen(AXIS)
        self.bar.axis.setLabel(label, color=TEXT)
        self.array: np.ndarray | None = None

    def show(self, array: np.ndarray | None, title: str, label: str) -> tuple[float, float] | None:
        item = self.plot.getPlotItem()
        item.setTitle(title, color=TEXT, size="9pt")
        self.bar.axis.setLabel(label, color=TEXT)
        self.array = None if array is None else np.asarray(array, dtype=np.float64)
        if self.array is None:
            self.image.clear()
            return None
        levels = finite_range(self.array)
        self.image.setImage(self.array, autoLevels=False, levels=levels)
        self.bar.setLevels(levels)
        rows, cols = self.array.shape
        item.getViewBox().setRange(xRange=(0, cols), yRange=(0, rows), padding=0.02)
        return levels


class OutputImages(QWidget):
    """Values and error images of one backend's 2-D buffer; `show_drawing(drawing, ulp)` draws."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("output_images")
        self.backend_box = QComboBox()
        self.backend_box.setToolTip("Backend whose values and error are shown")
        self.backend_box.currentTextChanged.connect(lambda _t: self._redraw())
        self.values = _ImagePlot("value_image", VALUE_MAP, "value")
        self.errors = _ImagePlot("error_image", ERROR_MAP, "|error|")
        self.hover_label = QLabel("Hover an element for its index and value.")
        self.hover_text = ""
        bar = QHBoxLayout()
        bar.addWidget(QLabel("Image of:"))
        bar.addWidget(self.backend_box, 1)
        bar.addWidget(self.hover_label, 3)
        images = self.splitter = QSplitter(Qt.Orientation.Horizontal)
        images.setChildrenCollapsible(False)
        images.addWidget(self.values.plot)
        images.addWidget(self.errors.plot)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(images, 1)
        self._drawing: OutputsDrawing | None = None
        self._ulp = False
        self._ranges: dict[str, Any] = {}
        #: Called after each redraw (the tab keeps its plots_data() in step).
        self.on_redraw: Any = None
        for image_plot in (self.values, self.errors):
            image_plot.plot.scene().sigMouseMoved.connect(
                lambda pos, p=image_plot: self.hover(p, pos)  # noqa: B008
            )

    def fit_width(self, width: int) -> None:
        """Values and error side by side when both fit with room to spare, else one above the other
        (a narrow dock would otherwise cut the colour bars off)."""
        need = sum(p.plot.minimumSizeHint().width() for p in (self.values, self.errors)) + 16
        wanted = Qt.Orientation.Horizontal if width >= max(700, need) else Qt.Orientation.Vertical
        if self.splitter.orientation() != wanted:
            self.splitter.setOrientation(wanted)

    def show_drawing(self, drawing: OutputsDrawing, ulp: bool) -> None:
        self._drawing, self._ulp = drawing, ulp
        names = list(drawing.images)
        if [self.backend_box.itemText(i) for i in range(self.backend_box.count())] != names:
            keep = self.backend_box.currentText()
            self.backend_box.blockSignals(True)
            self.backend_box.clear()
            self.backend_box.addItems(names)
            # A backend compared with the reference first: its error image says something.
            compared = [n for n in names if n in drawing.abs_images]
            self.backend_box.setCurrentText(keep if keep in names else (compared or names or [""])[0])
            self.backend_box.blockSignals(False)
        self._redraw()

    def _redraw(self) -> None:
        drawing = self._drawing
        if drawing is None or drawing.shape is None:
            return
        backend = self.backend_box.currentText()
        arg, reference = drawing.arg, drawing.reference
        rows, cols = drawing.shape
        value_range = self.values.show(
            drawing.images.get(backend), f"{arg} of {backend} ({rows} × {cols})", f"{arg} value"
        )
        errors = (drawing.ulp_images if self._ulp else drawing.abs_images).get(backend)
        what = "error (ULP)" if self._ulp else "|error|"
        if errors is None:
            title = f"{backend} is the reference" if backend == reference else "no reference to compare with"
        else:
            title = f"{what} of {backend} vs {reference}"
        error_range = self.errors.show(errors, title, what)
        self._ranges = {"values_range": value_range, "error_range": error_range, "error_label": what}
        if self.on_redraw is not None:
            self.on_redraw()

    def hover(self, image_plot: _ImagePlot, scene_pos: QPointF) -> str:
        """The text for the element under `scene_pos` in `image_plot` (shown above the images)."""
        drawing = self._drawing
        vb = image_plot.plot.getPlotItem().getViewBox()
        if drawing is None or drawing.shape is None or image_plot.array is None:
            return ""
        if not vb.sceneBoundingRect().contains(scene_pos):
            return self.hover_text
        point = vb.mapSceneToView(scene_pos)
        element = element_at(point.x(), point.y(), drawing.shape)
        if element is None:
            return self.hover_text
        what = "" if image_plot is self.values else ("error (ULP)" if self._ulp else "|error|")
        self.hover_text = hover_text(drawing.arg, image_plot.array, *element, what)
        self.hover_label.setText(self.hover_text)
        return self.hover_text

    def clear(self) -> None:
        self._drawing, self._ranges, self.hover_text = None, {}, ""
        self.backend_box.clear()
        for image_plot in (self.values, self.errors):
            image_plot.show(None, "", "")
        self.hover_label.setText("Hover an element for its index and value.")

    def model(self) -> dict[str, Any]:
        drawing = self._drawing
        if drawing is None or drawing.shape is None:
            return {}
        return {
            "shape": list(drawing.shape),
            "backend": self.backend_box.currentText(),
            "values_range": list(self._ranges.get("values_range") or ()) or None,
            "error_range": list(self._ranges.get("error_range") or ()) or None,
            "error_label": self._ranges.get("error_label"),
        }
