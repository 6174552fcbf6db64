"""The window's device picker lists a GPU host's devices as a group of their own."""

from __future__ import annotations

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402

from workbench.ui.bridge import ServiceBridge  # noqa: E402
from workbench.ui.devices.picker import SPEC_ROLE, DevicePicker  # noqa: E402


def test_picker_groups_the_hosts_devices(qtbot, lo_host, shared_cache_dir):
    bridge = ServiceBridge(cache_dir=shared_cache_dir)
    try:
        picker = DevicePicker(bridge)
        qtbot.addWidget(picker)
        qtbot.waitUntil(lambda: picker.group_item("Host lo") is not None, timeout=120_000)
        group = picker.group_item("Host lo")
        children = [group.child(i) for i in range(group.childCount())]
        specs = [c.data(0, SPEC_ROLE) for c in children]
        assert "lo/cpu" in specs and "lo/wgpu:0" in specs
        # this machine's groups are still there, and remote devices are not chosen by default
        assert picker.group_item("CPU") is not None
        assert not any(s.startswith("lo/") for s in bridge.devices())
        wgpu = children[specs.index("lo/wgpu:0")]
        wgpu.setCheckState(0, Qt.CheckState.Checked)
        assert "lo/wgpu:0" in bridge.devices()
        picker.tree.setCurrentItem(wgpu)
        rows = {picker.properties.item(r, 0).text(): picker.properties.item(r, 1).text()
                for r in range(picker.properties.rowCount())}  # fmt: skip
        assert rows.get("Host") == "lo"
    finally:
        bridge.shutdown()
