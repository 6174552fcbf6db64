"""The device picker's rows: each device's label (short name, the graphics API of a wgpu adapter),
the name elided with its " · API" suffix kept whole (`elide_name`, drawn by `NameDelegate`), an
unavailable runtime's reason row, and the property rows of the selected device with its measured
ceilings beside the datasheet peaks. The picker (`picker.py`) composes them."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFontMetrics
from PySide6.QtWidgets import QApplication, QStyle, QStyledItemDelegate, QStyleOptionViewItem, QTreeWidgetItem

from workbench.run.ceilings_kernels import STREAMS
from workbench.run.labels import short_name
from workbench.ui import theme

#: Graphics APIs of wgpu adapters, as shown beside an adapter's name.
WGPU_APIS = ("Vulkan", "Metal", "DX12", "OpenGL")
SPEC_ROLE = Qt.ItemDataRole.UserRole
DEVICE_ROLE = Qt.ItemDataRole.UserRole + 1
#: The backend a row stands for (the CPU with GPU semantics: cpu-sim); such a row has no spec.
BACKEND_ROLE = Qt.ItemDataRole.UserRole + 2
MUTED = QColor(theme.MUTED)
#: What a row's name ends with that says what it is ("llvmpipe · Vulkan", "AMD EPYC · GPU semantics").
SUFFIX_MARK = " · "


def elide_name(text: str, metrics: QFontMetrics, width: int) -> str:
    """`text` in `width` pixels: the part before its last " · " elided at its end, the suffix kept
    whole ("… · GPU semantics" where only the suffix fits: the row sits under the CPU it names);
    without a suffix (or no room for it), elided in the middle."""
    if metrics.horizontalAdvance(text) <= width:
        return text
    head, mark, tail = text.rpartition(SUFFIX_MARK)
    suffix = mark + tail
    room = width - metrics.horizontalAdvance(suffix)
    if mark and room >= metrics.horizontalAdvance("AB…"):
        return metrics.elidedText(head, Qt.TextElideMode.ElideRight, room) + suffix
    if mark and room >= metrics.horizontalAdvance("…"):
        return "…" + suffix
    return metrics.elidedText(text, Qt.TextElideMode.ElideMiddle, width)


def short_reason(reason: str) -> str:
    """What is missing, the reason's first clause ("pycuda is not installed"; the rest says what to
    install): a row's text, the whole reason its tooltip."""
    return reason.split("; ", 1)[0]


def add_reason_row(group: QTreeWidgetItem, reason: str) -> QTreeWidgetItem:
    """Under a runtime or host that lists no device: one muted row with the reason's first clause
    (`short_reason`), the whole reason in its tooltip; the row it added."""
    note = QTreeWidgetItem([short_reason(reason), ""])
    note.setToolTip(0, reason)
    note.setForeground(0, MUTED)
    note.setFlags(Qt.ItemFlag.ItemIsEnabled)
    group.addChild(note)
    note.setFirstColumnSpanned(True)
    return note


class NameDelegate(QStyledItemDelegate):
    """Draws the device names with `elide_name`; `drawn` keeps each text as last drawn (full text:
    drawn text), what a user sees."""

    def __init__(self, parent: Any = None):
        super().__init__(parent)
        self.drawn: dict[str, str] = {}

    def paint(self, painter, option, index) -> None:
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        style = opt.widget.style() if opt.widget is not None else QApplication.style()
        rect = style.subElementRect(QStyle.SubElement.SE_ItemViewItemText, opt, opt.widget)
        margin = style.pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, opt.widget) + 1
        full = opt.text
        opt.text = elide_name(full, opt.fontMetrics, rect.width() - 2 * margin)
        self.drawn[full] = opt.text
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, opt.widget)


def wgpu_api(device: dict[str, Any]) -> str:
    """The graphics API of a wgpu adapter dict ("Vulkan", "Metal", "DX12", "GL" or as reported)."""
    raw = str(
        device.get("backend_api")
        or device.get("api")
        or device.get("backend_type")
        or device.get("backend")
        or ""
    )
    lowered = raw.lower()
    for api in WGPU_APIS:
        if lowered.startswith(api.lower()) or (api == "DX12" and lowered.startswith("d3d12")):
            return api
    if lowered.startswith("gl"):
        return "OpenGL"
    return raw or "other"


def device_label(device: dict[str, Any], full: bool = False) -> str:
    """A device's row text: its short name ("llvmpipe", `full`: "llvmpipe (LLVM 15.0.7, 256 bits)"),
    with the graphics API for wgpu adapters."""
    name = str(device.get("name") or device.get("spec") or "?")
    name = name if full else short_name(name)
    if device.get("runtime") == "wgpu":
        return f"{name} · {wgpu_api(device)}"
    return name


#: Device-dict keys shown first, with their labels; the rest follow in their order.
PROPERTY_LABELS = {
    "name": "Name",
    "spec": "Spec",
    "runtime": "Runtime",
    "index": "Index",
    "backend_api": "Graphics API",
    "adapter_type": "Adapter type",
    "vendor": "Vendor",
    "description": "Driver",
    "cores": "Cores",
    "timestamp_query": "Timestamp queries",
    "peak_gbps": "Datasheet GB/s",
    "peak_gflops": "Datasheet GFLOP/s",
    "backend": "Backend",
    "semantics": "Semantics",
    "checks": "Checks",
    "not_modelled": "Does not model",
}


def ceiling_rows(ceilings: Any, measuring: bool = False, error: str = "") -> list[tuple[str, str]]:
    """(label, text) rows of a device's measured ceilings, shown beside the datasheet figures: each
    memory stream's ("Measured copy", "Measured update" ...), then the FMA ones."""
    if ceilings is None:
        state = "measuring…" if measuring else (f"failed: {error}" if error else "not measured yet (Measure)")
        return [("Measured ceilings", state)]

    def fmt(value: float | None, unit: str) -> str:
        return f"{value:,.1f} {unit}" if value else "unknown"

    return [
        *(
            (f"Measured {stream}", fmt(getattr(ceilings, f"{stream}_gbps", None), "GB/s"))
            for stream in STREAMS
        ),
        ("Measured FMA f32", fmt(ceilings.fma_gflops_f32, "GFLOP/s")),
        ("Measured FMA f64", fmt(ceilings.fma_gflops_f64, "GFLOP/s")),
        ("Measured on", f"{ceilings.measured} · {ceilings.method}"),
    ]


def device_properties(
    device: dict[str, Any], ceilings: Any = None, measuring: bool = False, error: str = ""
) -> list[tuple[str, str]]:
    """(label, text) rows for a device dict: known keys first (the measured ceilings right after
    the datasheet peaks), nested dicts (limits) flattened, the long feature list last."""
    rows = [(label, _property_text(device[key])) for key, label in PROPERTY_LABELS.items() if key in device]
    if device.get("spec") and not device.get("backend"):  # a backend's row: the device's ceilings
        after = [i + 1 for i, (label, _) in enumerate(rows) if label.startswith("Datasheet")]
        at = after[-1] if after else len(rows)
        rows[at:at] = ceiling_rows(ceilings, measuring, error)
    for key, value in device.items():
        if key in PROPERTY_LABELS or key == "features":
            continue
        if isinstance(value, dict):
            rows += [(f"{key.replace('_', ' ')}: {k}", _property_text(v)) for k, v in value.items()]
        else:
            rows.append((key.replace("_", " ").capitalize(), _property_text(value)))
    if device.get("features"):
        rows.append(("Features", _property_text(device["features"])))
    return rows


def _property_text(value: Any) -> str:
    if value is None:
        return "unknown"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items())
    return str(value)
