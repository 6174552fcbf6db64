"""cpu-sim in the device picker (issue 23): under the CPU, a row for the CPU "with GPU semantics";
its properties say what it models, checks and leaves out, and its box adds the cpu-sim backend
to the runs (the window's cpu-sim toolbar button follows, and the other way round). Real device
probe, real window offscreen."""

from __future__ import annotations

from PySide6.QtCore import Qt

from tests.waits import WORK_GUARD_MS
from workbench.run.sim_device import CHECKS, NOT_MODELLED
from workbench.ui.devices.picker import BACKEND_ROLE, SPEC_ROLE


def _properties(picker) -> dict[str, str]:
    table = picker.properties
    return {table.item(r, 0).text(): table.item(r, 1).text() for r in range(table.rowCount())}


def test_the_cpu_with_gpu_semantics_is_a_row_that_adds_cpu_sim(make_window, example_copy, qtbot):
    window = make_window(example_copy("saxpy"), panels=("devices",))
    picker = window.panels["devices"]
    qtbot.waitUntil(lambda: picker.sim_item() is not None, timeout=WORK_GUARD_MS)
    window.bridge.set_backends(["cpu"])
    sim = picker.sim_item()
    cpu_group = picker.group_item("CPU")
    cpu = next(
        cpu_group.child(i) for i in range(cpu_group.childCount()) if cpu_group.child(i).data(0, SPEC_ROLE)
    )

    # One CPU, two rows: the device itself and the same CPU running the kernel with GPU semantics.
    assert sim.parent() is cpu_group and sim.data(0, BACKEND_ROLE) == "cpu-sim"
    assert sim.text(0).endswith("· GPU semantics") and sim.text(0).startswith(cpu.text(0))
    assert sim.text(1) == "cpu-sim" and sim.data(0, SPEC_ROLE) is None
    assert sim.checkState(0) == Qt.CheckState.Unchecked  # the runs are cpu only

    picker.tree.setCurrentItem(sim)
    rows = _properties(picker)
    assert rows["Backend"] == "cpu-sim" and rows["Runtime"] == "cpu" and rows["Spec"] == "cpu"
    assert "barriers" in rows["Semantics"] and "workgroup-shared arrays" in rows["Semantics"]
    assert rows["Checks"] == ", ".join(CHECKS)
    assert "weak memory ordering" in rows["Does not model"] and "subgroups" in rows["Does not model"]
    assert rows["Does not model"] == ", ".join(NOT_MODELLED)
    assert "Measured ceilings" not in rows and not picker.measure_button.isEnabled()

    # Checking it adds the backend to the runs, the devices stay; the toolbar's button follows.
    devices = window.bridge.devices()
    sim.setCheckState(0, Qt.CheckState.Checked)
    assert window.bridge.backends() == ["cpu", "cpu-sim"] and window.bridge.devices() == devices
    assert window.backend_actions["cpu-sim"].isChecked()
    # The toolbar's button takes it out again: the row follows.
    window.backend_actions["cpu-sim"].setChecked(False)
    assert window.bridge.backends() == ["cpu"]
    assert sim.checkState(0) == Qt.CheckState.Unchecked
    assert picker.checked_specs() == window.bridge.devices()  # never a device spec of its own
