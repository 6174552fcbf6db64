"""The window's size fields: one per `[kernel.sizes]` name, read with the command line's `--size`
rule; the runs, their outputs and the recorded rows follow them; workbench.toml is never edited."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from tests.waits import WORK_GUARD_MS
from workbench.cli import main as cli_main
from workbench.profile.sessions.store import SessionStore
from workbench.ui.screenshot import save_screenshot

BUILD_TIMEOUT_MS = WORK_GUARD_MS


def type_into(qtbot, field, text: str) -> None:
    """Replace a field's text as a user does: select all, type, press Enter."""
    field.setFocus()
    field.selectAll()
    qtbot.keyClick(field, Qt.Key.Key_Delete)
    qtbot.keyClicks(field, text)
    qtbot.keyClick(field, Qt.Key.Key_Return)


def test_a_run_at_the_size_typed_has_that_size_in_its_results_outputs_and_records(
    make_window, example_copy, private_sessions_db, qtbot, test_output_dir
):
    project = example_copy("saxpy")
    manifest_text = (project / "workbench.toml").read_text()
    window = make_window(project, panels=("sessions", "results"))
    window.bridge.set_backends(["cpu"])
    window.bridge.set_devices(["cpu"])
    controls = window.size_controls
    assert list(controls.fields) == ["n"]
    field = controls.fields["n"]
    assert field.text() == "1048576"  # the manifest's value until the user types another

    type_into(qtbot, field, "3*1000")
    assert window.bridge.sizes() == {"n": 3000}
    assert field.text() == "3000"
    save_screenshot(window, test_output_dir / "window-size-control.png")

    panel = window.panels["sessions"]
    with qtbot.waitSignal(panel.recorded, timeout=BUILD_TIMEOUT_MS) as recorded:
        window.run_action.trigger()
    report = window.bridge.last_report
    assert report.sizes == {"n": 3000}
    assert [r.status for r in report.results] == ["ok"]
    assert report.outputs["cpu"]["y"].shape == (3000,)
    ids = recorded.args[0]["ids"]
    store = SessionStore(private_sessions_db)
    try:
        assert [store.get_run(i, samples=False)["sizes"] for i in ids] == [{"n": 3000}]
    finally:
        store.close()
    assert (project / "workbench.toml").read_text() == manifest_text  # never edited

    type_into(qtbot, field, "")  # empty: the manifest's value again
    assert window.bridge.sizes() == {} and field.text() == "1048576"


@pytest.mark.parametrize("text", ["abc", "-5", "2**"])
def test_a_refused_size_says_what_the_command_line_says_and_runs_nothing(
    make_window, example_copy, qtbot, capsys, text
):
    project = example_copy("saxpy")
    window = make_window(project, panels=("results",))
    window.bridge.set_sizes({"n": 4096})
    field = window.size_controls.fields["n"]
    assert field.text() == "4096"  # sizes set elsewhere show in the field
    messages = []
    window.size_controls.message.connect(messages.append)

    type_into(qtbot, field, text)
    window.run_action.trigger()
    assert not window.bridge.busy  # nothing started
    assert window.bridge.sizes() == {"n": 4096}  # the last good sizes stay
    assert field.toolTip() == window.size_controls.error == messages[-1]
    assert "border" in field.styleSheet()

    assert cli_main(["run", str(project), "--backend", "cpu", "--size", f"n={text}"]) == 2
    assert capsys.readouterr().err.strip().endswith(messages[-1])


def test_a_size_the_kernel_cannot_run_at_is_refused_at_its_field(
    make_window, example_copy, qtbot, test_output_dir
):
    project = example_copy("saxpy")
    window = make_window(project, panels=("results",))
    field = window.size_controls.fields["n"]
    type_into(qtbot, field, "0")
    error = window.size_controls.error
    assert "buffer 'y'" in error and "is 0" in error, error  # y is written: nothing to check
    assert field.toolTip() == error and window.bridge.sizes() == {}
    save_screenshot(window, test_output_dir / "window-size-refused.png")


def test_the_fields_follow_the_manifest_on_disk(make_window, example_copy, qtbot):
    project = example_copy("saxpy")
    window = make_window(project, panels=("results",))
    manifest = project / "workbench.toml"
    manifest.write_text(manifest.read_text().replace("n = 1048576", "n = 2048"))
    window.bridge.check_manifest()
    assert window.size_controls.fields["n"].text() == "2048"
    assert window.size_controls.fields["n"].placeholderText() == "2048"
