"""The device picker: every device by runtime (CPU, CUDA, wgpu), check to run there; the selected
device's properties below, its measured ceilings (`workbench ceilings`) beside the datasheet peaks.

wgpu adapters are named with their graphics API ("llvmpipe · Vulkan", "… · OpenGL"): one driver
often appears once per API. A row shows the short name (without the parenthesised details, as the
results table does); too long for its column, the name is elided and its " · API" (or " · GPU
semantics") kept whole (`elide_name`: elided in the middle, "AMD EPY…mantics" named neither the CPU
nor what the row is); the full name is its tooltip. An unavailable runtime's row says what is missing
in the reason's first clause ("pycuda is not installed", `short_reason`), the reason whole (what to
install: the runtime's own words, README's) in its tooltip and the status line's.

Under the CPU, the CPU "with GPU semantics" (`workbench.run.sim_device`): not a device of its own
but the cpu-sim backend on the CPU; its box adds the backend to the runs (as the toolbar's
cpu-sim button does) and its properties say what it models and what it does not."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from PySide6.QtCore import Qt, SignalInstance
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QStyle,
    QTableWidget,
    QTableWidgetItem,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from workbench.build.occupancy import device_rows
from workbench.records import BuildResult
from workbench.run.sim_device import SIM_BACKEND, sim_devices
from workbench.runtimes_table import RUNTIMES, runtime_title
from workbench.ui.ceilings_store import store_for
from workbench.ui.devices.rows import (
    BACKEND_ROLE,
    DEVICE_ROLE,
    MUTED,
    SPEC_ROLE,
    NameDelegate,
    add_reason_row,
    device_label,
    device_properties,
)
from workbench.ui.layout_fit import OnResize

#: The most rows the device list makes room for before it scrolls.
TREE_ROWS = 10


@runtime_checkable
class DevicePickerBridge(Protocol):
    """The bridge members the device picker (and its ceilings store: `CeilingsOwner`) uses
    (`ServiceBridge` has them: tests/ui/test_typed_events.py)."""

    devicesListed: SignalInstance
    backendsChanged: SignalInstance
    devices_info: dict[str, Any] | None
    cache_dir: Any

    def devices(self) -> list[str]: ...
    def set_devices(self, specs: list[str]) -> None: ...
    def backends(self) -> list[str]: ...
    def set_backends(self, backends: list[str] | None) -> None: ...
    def refresh_devices(self, refresh: bool = False) -> None: ...


class DevicePicker(QWidget):
    """Devices grouped by runtime; checked devices become the bridge's run targets."""

    def __init__(self, bridge: DevicePickerBridge, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("DevicePicker")
        self.bridge = bridge
        self.ceilings = store_for(bridge)
        self._updating = False
        self._builds: dict[str, Any] = {}  # the last BuildResult per backend: occupancy on a CUDA device
        self._backends: list[str] = bridge.backends()  # the runs' backends as last shown (defaults too)

        self.tree = QTreeWidget()
        self.tree.setObjectName("devices")
        self.tree.setHeaderLabels(["Device", "Spec"])
        self.tree.setUniformRowHeights(True)
        self.tree.setIndentation(14)
        self.tree.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.names = NameDelegate(self.tree)
        self.tree.setItemDelegateForColumn(0, self.names)
        header = self.tree.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setMinimumSectionSize(48)
        # The check boxes sit in the first column: never narrower than a box and a few letters.
        self.tree.setMinimumWidth(self.fontMetrics().horizontalAdvance("wgpu:00") + 150)
        self.properties = QTableWidget(0, 2)
        self.properties.setObjectName("deviceProperties")
        self.properties.setHorizontalHeaderLabels(["Property", "Value"])
        self.properties.verticalHeader().setVisible(False)
        self.properties.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)
        self.properties.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.properties.horizontalHeader().setStretchLastSection(True)
        self.properties.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.properties.setAlternatingRowColors(True)
        self.properties.setWordWrap(False)
        self.properties.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        self.properties.horizontalHeader().setDefaultAlignment(Qt.AlignmentFlag.AlignLeft)
        # At the least its header and one property (it scrolls): the device list above keeps every
        # device in view, and the window still fits 1100×700 with a row more (the CPU with GPU
        # semantics) than the scroll area's default minimum allowed.
        self.properties.setMinimumHeight(
            self.properties.horizontalHeader().sizeHint().height()
            + self.properties.verticalHeader().defaultSectionSize()
            + 2 * self.properties.frameWidth()
        )
        # Fitted again whenever the panel is resized: fitted once, while the dock was still being
        # laid out, the names were cut ("Datash…FLOP/s").
        self._property_fitter = OnResize(self._fit_property_column, self.properties.viewport())
        self.status = QLabel("Looking for devices…")
        self.status.setWordWrap(True)
        self.status.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.setIcon(self.style().standardIcon(QStyle.StandardPixmap.SP_BrowserReload))
        self.refresh_button.setToolTip("Probe the runtimes again (in a child process)")
        self.measure_button = QPushButton("Measure")
        self.measure_button.setToolTip(
            "Measure the selected device's copy bandwidth and FMA throughput again (workbench ceilings "
            "--refresh); the roofline draws its roofs from them"
        )
        self.measure_button.setEnabled(False)

        top = QHBoxLayout()
        top.addWidget(self.status, 1)
        top.addWidget(self.measure_button)
        top.addWidget(self.refresh_button)
        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.setChildrenCollapsible(False)
        splitter.addWidget(self.tree)
        splitter.addWidget(self.properties)
        splitter.setStretchFactor(0, 1)
        splitter.setStretchFactor(1, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(top)
        layout.addWidget(splitter, 1)

        self.tree.currentItemChanged.connect(self._show_properties)
        self.tree.itemChanged.connect(self._on_item_changed)
        self.refresh_button.clicked.connect(lambda: self.refresh(True))
        self.measure_button.clicked.connect(self.measure_selected)
        self.ceilings.changed.connect(self._ceilings_changed)
        bridge.devicesListed.connect(self.populate)
        bridge.backendsChanged.connect(self._on_backends)
        bridge.buildFinished.connect(self._on_builds)
        bridge.projectChanged.connect(lambda *_: self._builds.clear())
        if bridge.devices_info is not None:
            self.populate(bridge.devices_info)
        else:
            bridge.refresh_devices()

    def refresh(self, force: bool = False) -> None:
        """Ask the bridge to list devices again (off the GUI thread)."""
        self.status.setText("Looking for devices…")
        self.refresh_button.setEnabled(False)
        self.bridge.refresh_devices(refresh=force)

    def measure_selected(self) -> None:
        """Measure the selected device's ceilings again (in the background)."""
        item = self.tree.currentItem()
        device = item.data(0, DEVICE_ROLE) if item is not None and item.data(0, SPEC_ROLE) else None
        if device:
            self.ceilings.remeasure([device])

    def shutdown(self) -> None:
        self.ceilings.shutdown()

    # ------------------------------------------------------------------ filling the tree
    def populate(self, info: dict[str, Any]) -> None:
        """Show a `list_devices()` answer; check the bridge's devices (or a sensible default)."""
        self.refresh_button.setEnabled(True)
        self._updating = True  # checking items while filling the tree is not a user's choice
        try:
            self.tree.clear()
            if "error" in info and len(info) == 1:
                self.status.setText(info["error"])
                return
            count = self._fill(info)
            self.tree.expandAll()
        finally:
            self._updating = False
            self._fit_tree()
        missing = [
            f"{runtime_title(r)} unavailable ({e.get('reason') or 'not available'})"
            for r, e in info.items()
            if isinstance(e, dict) and not e.get("available")
        ]
        unavailable = [
            runtime_title(r)
            for r, e in info.items()
            if isinstance(e, dict) and not e.get("available") and r != "hosts"
        ]
        self.status.setText(
            f"{count} device{'s' if count != 1 else ''}"
            + (f" · {', '.join(unavailable)} unavailable" if unavailable else "")
        )
        self.status.setToolTip("\n".join(missing))
        self._sync_bridge()
        first = self._device_items()
        if first:
            self.tree.setCurrentItem(first[0])

    def _fit_tree(self) -> None:
        """The device list at least as tall as its rows (up to TREE_ROWS): every device is in view
        without scrolling; the properties below take the rest."""
        tree = self.tree
        rows = sum(1 + tree.topLevelItem(i).childCount() for i in range(tree.topLevelItemCount()))
        row_height = max(tree.sizeHintForRow(0) if rows else 0, tree.fontMetrics().height() + 4)
        need = tree.header().sizeHint().height() + min(max(rows, 1), TREE_ROWS) * row_height
        tree.setMinimumHeight(need + 2 * tree.frameWidth())

    def _fill(self, info: dict[str, Any]) -> int:
        """One group per runtime; returns the device count."""
        chosen = self._chosen_specs(info)
        bold = QFont(self.font())
        bold.setBold(True)
        count = 0
        for runtime in (*RUNTIMES, *sorted(set(info) - {*RUNTIMES, "hosts"})):
            entry = info.get(runtime)
            if entry is None:
                continue
            group = QTreeWidgetItem([runtime_title(runtime), ""])
            group.setFont(0, bold)
            group.setData(
                0, DEVICE_ROLE, {"runtime": runtime, **{k: v for k, v in entry.items() if k != "devices"}}
            )
            self.tree.addTopLevelItem(group)
            if not entry.get("available"):
                reason = entry.get("reason") or "not available"
                group.setText(1, "unavailable")
                group.setToolTip(0, reason)
                group.setToolTip(1, reason)
                group.setForeground(0, MUTED)
                group.setForeground(1, MUTED)
                group.setDisabled(True)
                add_reason_row(group, reason).setDisabled(True)
                continue
            for position, device in enumerate(entry.get("devices") or []):
                item = self._device_item(device)
                group.addChild(item)
                # Nothing chosen yet: the first device of every runtime.
                checked = item.data(0, SPEC_ROLE) in chosen if chosen else position == 0
                item.setCheckState(0, Qt.CheckState.Checked if checked else Qt.CheckState.Unchecked)
                count += 1
            if runtime == "cpu":
                for device in sim_devices(info):
                    group.addChild(self._sim_item(device))
        count += self._fill_hosts(info.get("hosts") or {}, chosen, bold)  # GPU hosts, after this machine
        return count

    def _chosen_specs(self, info: dict[str, Any]) -> set[str]:
        """The bridge's devices as this list's specs: "wgpu:llvmpipe" (a name) is "wgpu:0" here."""
        from workbench.run.devices import resolve_device_spec

        chosen = set()
        for spec in self.bridge.devices():
            try:
                runtime, index = resolve_device_spec(spec, info)
                chosen.add(str(info[runtime]["devices"][index].get("spec") or spec))
            except Exception:  # a device that is not here (any more): nothing to check
                chosen.add(spec)
        return chosen

    def _device_item(self, device: dict[str, Any]) -> QTreeWidgetItem:
        spec = str(device.get("spec") or f"{device.get('runtime')}:{device.get('index', 0)}")
        label = device_label(device)
        item = QTreeWidgetItem([label, spec])
        item.setFlags(
            Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsUserCheckable
        )
        item.setData(0, SPEC_ROLE, spec)
        item.setData(0, DEVICE_ROLE, dict(device))
        item.setToolTip(0, f"{device_label(device, full=True)}\nrun on {spec} (check to include it in runs)")
        item.setToolTip(1, f"device spec for --device: {spec}")
        return item

    def _sim_item(self, device: dict[str, Any]) -> QTreeWidgetItem:
        """The CPU with GPU semantics: checked when the runs include the cpu-sim backend."""
        item = QTreeWidgetItem([device_label(device), SIM_BACKEND])
        item.setFlags(
            Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsUserCheckable
        )
        item.setData(0, BACKEND_ROLE, SIM_BACKEND)
        item.setData(0, DEVICE_ROLE, dict(device))
        checked = SIM_BACKEND in self._backends
        item.setCheckState(0, Qt.CheckState.Checked if checked else Qt.CheckState.Unchecked)
        item.setToolTip(
            0,
            f"{device_label(device, full=True)}\nthe kernel body with workgroups, barriers and shared "
            f"memory on the CPU, every access checked (the {SIM_BACKEND} backend; check to include it in runs)",
        )
        item.setToolTip(1, f"backend for --backend: {SIM_BACKEND} (on the cpu device)")
        return item

    def sim_item(self) -> QTreeWidgetItem | None:
        """The row of the CPU with GPU semantics (None before the devices are listed)."""
        cpu = self.group_item(runtime_title("cpu"))
        children = [cpu.child(i) for i in range(cpu.childCount())] if cpu is not None else []
        return next((c for c in children if c.data(0, BACKEND_ROLE)), None)

    def _on_backends(self, backends: list[str]) -> None:
        """The runs' backends changed (the toolbar, settings, the defaults found): the row follows."""
        self._backends = list(backends)
        item = self.sim_item()
        if item is not None:
            self._updating = True
            try:
                checked = SIM_BACKEND in self._backends
                item.setCheckState(0, Qt.CheckState.Checked if checked else Qt.CheckState.Unchecked)
            finally:
                self._updating = False

    def _toggle_sim(self, item: QTreeWidgetItem) -> None:
        """The user checked or unchecked the CPU with GPU semantics: cpu-sim joins or leaves the
        runs' backends (the others stay; none known yet: cpu beside it)."""
        current = [b for b in (self._backends or self.bridge.backends() or ["cpu"]) if b != SIM_BACKEND]
        if item.checkState(0) == Qt.CheckState.Checked:
            current.append(SIM_BACKEND)
        self._backends = current
        self.bridge.set_backends(current)

    def _device_items(self) -> list[QTreeWidgetItem]:
        items = []
        stack = [self.tree.topLevelItem(i) for i in range(self.tree.topLevelItemCount())]
        while stack:
            item = stack.pop(0)
            if item.data(0, SPEC_ROLE):
                items.append(item)
            stack[0:0] = [item.child(i) for i in range(item.childCount())]
        return items

    # ------------------------------------------------------------------ selection
    def checked_specs(self) -> list[str]:
        return [
            item.data(0, SPEC_ROLE)
            for item in self._device_items()
            if item.checkState(0) == Qt.CheckState.Checked
        ]

    def group_item(self, runtime_title: str) -> QTreeWidgetItem | None:
        """The top-level item of a runtime by its title ("CPU", "CUDA", "wgpu")."""
        for i in range(self.tree.topLevelItemCount()):
            if self.tree.topLevelItem(i).text(0) == runtime_title:
                return self.tree.topLevelItem(i)
        return None

    def _on_item_changed(self, item: QTreeWidgetItem, column: int) -> None:
        if not self._updating and column == 0 and item.data(0, SPEC_ROLE):
            self._sync_bridge()
        elif not self._updating and column == 0 and item.data(0, BACKEND_ROLE):
            self._toggle_sim(item)

    def _sync_bridge(self) -> None:
        self.bridge.set_devices(self.checked_specs())

    def _ceilings_changed(self) -> None:
        self._show_properties(self.tree.currentItem())

    def _show_properties(self, item: QTreeWidgetItem | None, *_: Any) -> None:
        data = item.data(0, DEVICE_ROLE) if item is not None else None
        is_device = item is not None and bool(item.data(0, SPEC_ROLE))
        self.measure_button.setEnabled(is_device and not (data or {}).get("host"))  # not over ssh (yet)
        ceilings = measuring = error = None
        if is_device:
            from workbench.run.ceilings import device_key

            ceilings = self.ceilings.get(data)
            measuring = self.ceilings.is_measuring(data)
            error = self.ceilings.errors.get(device_key(data), "")
        rows = device_properties(data or {}, ceilings, bool(measuring), error or "")
        if is_device:  # a CUDA device: its SM limits and the last builds' occupancy on it
            rows += device_rows(data or {}, self.bridge.project, list(self._builds.values()))
        self.properties.setRowCount(len(rows))
        for row, (label, text) in enumerate(rows):
            name = QTableWidgetItem(label)
            name.setToolTip(label)
            self.properties.setItem(row, 0, name)
            value = QTableWidgetItem(text)
            value.setToolTip(text)
            self.properties.setItem(row, 1, value)
        self._fit_property_column()

    def _on_builds(self, results: dict[str, Any]) -> None:
        self._builds.update({b: r for b, r in results.items() if isinstance(r, BuildResult)})
        self._show_properties(self.tree.currentItem())

    def _fit_property_column(self) -> None:
        """The property names as wide as they are, up to 55 % of the table (the values need room)."""
        need = self.properties.sizeHintForColumn(0) if self.properties.rowCount() else 0
        need = max(need, self.properties.horizontalHeader().sectionSizeHint(0))
        width = min(need, max(90, int(self.properties.viewport().width() * 0.55)))
        if self.properties.columnWidth(0) != width:
            self.properties.setColumnWidth(0, width)

    def _fill_hosts(self, hosts: dict[str, Any], chosen: set[str], bold: QFont) -> int:
        """One group per GPU host (`workbench hosts`), its devices as `NAME/cpu`, `NAME/wgpu:0` …;
        unchecked unless chosen before (a remote run is the user's choice)."""
        count = 0
        for name, devices in hosts.items():
            group = QTreeWidgetItem([f"Host {name}", ""])
            group.setFont(0, bold)
            group.setData(0, DEVICE_ROLE, {"host": name})
            self.tree.addTopLevelItem(group)
            reasons = []
            for runtime in RUNTIMES:
                entry = devices.get(runtime) or {}
                if not entry.get("available"):
                    reasons.append(entry.get("reason") or f"{runtime} unavailable")
                    continue
                for device in entry.get("devices") or []:
                    item = self._device_item(device)
                    group.addChild(item)
                    checked = item.data(0, SPEC_ROLE) in chosen
                    item.setCheckState(0, Qt.CheckState.Checked if checked else Qt.CheckState.Unchecked)
                    count += 1
            if not group.childCount():
                reason = reasons[0] if reasons else "no devices"
                group.setText(1, "unreachable")
                group.setToolTip(0, reason)
                group.setForeground(0, MUTED)
                add_reason_row(group, reason)
        return count
