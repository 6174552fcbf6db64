"""Issue 27 in the window: the Counters view (one column per backend × device, differences
highlighted, absence said per column) and the build table's occupancy column, on the real bridge."""

from __future__ import annotations

from pathlib import Path

from tests.waits import WORK_GUARD_MS
from workbench.build.occupancy import result_occupancy
from workbench.run.counters import absence
from workbench.run.counters.ncu_csv import parse
from workbench.ui.build.panel import COL_ARTIFACTS, BuildPanel
from workbench.ui.counters.view import HIGHLIGHT, CountersView

CAPTURE = Path(__file__).resolve().parents[1] / "run" / "data" / "ncu-h200.csv"
TIMEOUT_MS = WORK_GUARD_MS


def _records_from_the_h200_capture() -> dict:
    """Two launches of the real capture as two columns, and a wgpu column that has none."""
    saxpy, reduce = parse(CAPTURE.read_text())
    out = {}
    for key, launch, median in ((("nvptx", "cuda:0"), saxpy, 45e-6), (("cuda-c", "cuda:0"), reduce, 40e-6)):
        out[key] = {"status": "ok", "message": f"{launch.kernel} profiled", "metrics": launch.values,
                    "stalls": [list(s) for s in launch.stalls], "event_median_s": median}  # fmt: skip
    out[("wgsl", "wgpu:0")] = {"status": "absent", "message": absence.not_cuda("wgsl", "wgpu"), "metrics": {},
                               "stalls": []}  # fmt: skip
    return out


def test_one_column_per_backend_and_device_with_differences_highlighted(make_widget, bridge, test_output_dir):
    view = make_widget(CountersView, bridge, show=True)
    view.show_records(_records_from_the_h200_capture())
    data = view.table_data()
    assert data["columns"] == [["nvptx", "cuda:0"], ["cuda-c", "cuda:0"], ["wgsl", "wgpu:0"]]
    rows = {row["label"]: row for row in data["rows"]}
    assert rows["status"]["cells"] == ["ok", "ok", absence.not_cuda("wgsl", "wgpu")]
    assert view.table.item(0, 0).toolTip() == "saxpy profiled"  # ncu's summary line
    assert view.table.columnWidth(2) <= 260  # a long reason is elided, not a 1000-pixel column
    assert rows["DRAM throughput % of peak"]["cells"] == ["61.4 %", "27.2 %", "–"]
    assert rows["DRAM throughput % of peak"]["differs"] is True
    assert rows["theoretical occupancy"]["cells"][:2] == ["100.0 %", "100.0 %"]
    assert rows["theoretical occupancy"]["differs"] is False  # equal: not highlighted
    assert rows["duration (ncu)"]["cells"][0] == "61.952 µs"
    assert rows["duration (ncu)"]["differs"] is True  # 61.952 vs 53.088 µs: beyond 10%
    assert rows["event median (workbench)"]["differs"] is True  # 45 vs 40 µs
    assert rows["SM clock (ncu)"]["differs"] is False  # 1.47 vs 1.49 GHz
    assert rows["SM clock (ncu)"]["cells"][:2] == ["1.47 GHz", "1.49 GHz"]
    assert rows["stall #1 (cycles per issue)"]["cells"][:2] == ["long_scoreboard 44.0", "long_scoreboard 4.8"]
    assert rows["stall #4 (cycles per issue)"]["differs"] is True  # drain vs barrier
    # What the user sees: the highlighted cells are the rows that differ.
    labels = [row["label"] for row in data["rows"]]
    dram = view.table.item(labels.index("DRAM throughput % of peak"), 0)
    theoretical = view.table.item(labels.index("theoretical occupancy"), 0)
    assert dram.background().color() == HIGHLIGHT and theoretical.background().color() != HIGHLIGHT
    assert "locked to base" in view.relation.text()
    view.resize(900, 600)
    assert view.grab().save(str(test_output_dir / "counters_view.png"))


def test_without_cuda_or_ncu_the_view_says_what_would_make_it_work(
    qtbot, make_widget, bridge, example_copy, monkeypatch, test_output_dir
):
    """One line instead of a table, Take counters disabled with that line as its tooltip, and
    nothing of an earlier run (its counters, its run numbers) once a new run is in."""
    from workbench.run.counters.nsight import collect

    monkeypatch.setenv("WB_NCU", "/nonexistent/ncu")  # no ncu here, whatever this machine has
    root = example_copy("saxpy")
    bridge.set_project(root)
    bridge.set_backends(["cpu"])
    bridge.set_devices(["cpu"])
    view = make_widget(CountersView, bridge, show=True)
    view.show_records(_records_from_the_h200_capture())  # an earlier run's counters ...
    view._on_recorded({"ids": {("nvptx", "cuda:0"): 7}})
    assert "run #7" in view.status.text() and view.table.isVisible()
    with qtbot.waitSignal(bridge.devicesListed, timeout=TIMEOUT_MS):
        bridge.refresh_devices()
    with qtbot.waitSignal(bridge.runFinished, timeout=TIMEOUT_MS) as finished:
        bridge.run()
    qtbot.waitUntil(lambda: not bridge.busy, timeout=TIMEOUT_MS)
    why = view.unavailable
    assert why == absence.unavailable(bridge.devices_info.get("cuda"), False, "/nonexistent/ncu")
    assert (
        why.startswith("No counters on this machine: they need ") and "$WB_NCU names /nonexistent/ncu" in why
    )
    if not bridge.devices_info["cuda"]["available"]:
        assert "a CUDA device, and there is none here (" in why
    assert view.status.text() == why and "#7" not in view.status.text()  # ... are gone with the new run
    assert not view.take_button.isEnabled() and view.take_button.toolTip() == why
    assert view.table.isHidden() and not view.relation.isVisible()
    assert view.table_data() == {"columns": [], "rows": []}
    view.resize(900, 300)
    assert view.grab().save(str(test_output_dir / "counters_view_unavailable.png"))

    # Counters taken of a run where no result can have any: each reason a line, no grid of dashes.
    records = collect(finished.args[0], bridge.project)
    view.show_records(records)
    assert view.table.isHidden()
    assert view.status.text() == f"cpu on cpu: {absence.not_cuda('cpu', 'cpu')}"
    view.shutdown()


def test_with_a_cuda_device_and_ncu_take_counters_is_enabled_after_a_run(
    make_widget, bridge, tmp_path, monkeypatch
):
    """The other side of the rule, on the devices the bridge reports (no GPU needed to state it)."""
    ncu = tmp_path / "ncu"
    ncu.write_text("#!/bin/sh\n")
    monkeypatch.setenv("WB_NCU", str(ncu))
    view = make_widget(CountersView, bridge)
    bridge.devices_info = {"cuda": {"available": True, "reason": "", "devices": [{"spec": "cuda:0"}]}}
    bridge.devicesListed.emit(bridge.devices_info)
    assert view.unavailable is None and view.take_button.toolTip().startswith("Profile the last run")
    assert not view.take_button.isEnabled()  # nothing ran yet
    bridge.runFinished.emit(object())
    assert view.take_button.isEnabled() and view.status.text().startswith("Take counters to profile")
    bridge.devices_info = {"cuda": {"available": False, "reason": "no NVIDIA driver", "devices": []}}
    bridge.devicesListed.emit(bridge.devices_info)
    assert view.unavailable == (
        "No counters on this machine: they need a CUDA device, and there is none here (no NVIDIA driver)."
    )
    assert not view.take_button.isEnabled()


def test_the_build_table_shows_occupancy_and_follows_the_block_size(qtbot, make_widget, bridge, example_copy):
    """A real cuda-c build (nvcc + ptxas -v) at the default 256 threads, then at threads = 1024."""
    import shutil

    import pytest

    if not shutil.which("nvcc"):
        pytest.skip("nvcc is not installed here")
    root = example_copy("saxpy")
    bridge.set_project(root)
    bridge.set_backends(["cuda-c"])
    panel = make_widget(BuildPanel, bridge, show=True)
    item = panel.table.topLevelItem(0)
    seen = []
    for threads in (256, 1024):
        bridge.set_tunables({"threads": threads})
        with qtbot.waitSignal(bridge.buildFinished, timeout=TIMEOUT_MS) as finished:
            bridge.build()
        qtbot.waitUntil(lambda: not bridge.busy, timeout=TIMEOUT_MS)
        result = finished.args[0]["cuda-c"]
        expected = result_occupancy(bridge.project, result)["saxpy"]
        assert expected["threads"] == threads
        assert (
            item.text(COL_ARTIFACTS)
            == f"{expected['warps_per_sm']}/{expected['max_warps']} warps · saxpy.ptx"
        )
        tooltip = item.toolTip(COL_ARTIFACTS).splitlines()
        assert tooltip == [f"saxpy: occupancy {expected['text']}", *result.artifacts]
        seen.append(tooltip[0])
    assert seen[0].endswith("at 256 threads") and seen[1].endswith("at 1024 threads")


def test_a_cuda_devices_properties_show_the_last_builds_occupancy_on_it(
    qtbot, make_widget, bridge, example_copy
):
    """No CUDA device here: the H200's device record (recorded there by `workbench run`) is listed
    as a driver would list it, after the real probe; a real cuda-c build then shows its occupancy
    at the H200's compute capability among the device's properties."""
    import json
    import shutil

    import pytest

    from workbench.build.occupancy import occupancy
    from workbench.ui.devices.picker import SPEC_ROLE, DevicePicker

    if not shutil.which("nvcc"):
        pytest.skip("nvcc is not installed here")
    run = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "counters-h200" / "run-saxpy.json"
    h200 = json.loads(run.read_text())["results"][0]["device"]
    root = example_copy("saxpy")
    bridge.set_project(root)
    bridge.set_backends(["cuda-c"])
    picker = make_widget(DevicePicker, bridge, show=True)
    qtbot.waitUntil(
        lambda: picker.group_item("CUDA") is not None, timeout=WORK_GUARD_MS
    )  # the real listing first
    picker.populate({"cuda": {"available": True, "reason": "", "devices": [h200]}})
    item = next(i for i in picker._device_items() if i.data(0, SPEC_ROLE) == "cuda:0")
    picker.tree.setCurrentItem(item)

    def rows() -> dict[str, str]:
        table = picker.properties
        return {table.item(r, 0).text(): table.item(r, 1).text() for r in range(table.rowCount())}

    assert (
        rows()["Occupancy limits (sm_90)"] == "64 warps · 32 blocks · 65536 registers · 228 KiB shared per SM"
    )
    with qtbot.waitSignal(bridge.buildFinished, timeout=TIMEOUT_MS) as finished:
        bridge.build()
    qtbot.waitUntil(lambda: not bridge.busy, timeout=TIMEOUT_MS)
    registers = finished.args[0]["cuda-c"].resources["saxpy"]["registers"]
    assert rows()["Occupancy: cuda-c saxpy"] == occupancy("sm_90", 256, registers).text()
