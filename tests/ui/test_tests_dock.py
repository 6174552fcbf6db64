"""The window's side of issue 39 with real tools: the Tests dock's model after real `cargo test`
runs (a seeded race failing at its line, in the model, the build panel and the editor's gutter),
a hanging test that never blocks the window, the Format action through the undo stack, and
format on save (off by default)."""

from __future__ import annotations

import shutil

import pytest
from PySide6.QtCore import Qt, QTimer

from tests.conftest import EXAMPLES, REPO
from tests.waits import FIRING_LIMIT_S, WORK_GUARD_MS, settle_qt
from workbench.build.adapters import host_rust
from workbench.trust_store import set_trusted
from workbench.ui.tests_dock import panel as tests_dock

pytestmark = pytest.mark.skipif(not host_rust.cargo(), reason="no cargo installed")

SEEDED = "        scratch.set(tid, sum);\n    }\n    ctx.barrier();\n"


def line_of(path, text: str) -> int:
    return next(k for k, line in enumerate(path.read_text().splitlines(), 1) if text in line)


@pytest.fixture
def raced_reduction(tmp_path):
    """A copy of the reduction example whose first barrier is gone: its tests find the race."""
    project = tmp_path / "reduction"
    shutil.copytree(EXAMPLES / "reduction", project, ignore=shutil.ignore_patterns("target"))
    lib = project / "src" / "lib.rs"
    assert SEEDED in lib.read_text()
    lib.write_text(lib.read_text().replace(SEEDED, "        scratch.set(tid, sum);\n    }\n"))
    return project


def test_dock_shows_a_failing_test_at_the_race_line(make_window, raced_reduction, qtbot, test_output_dir):
    window = make_window(raced_reduction, panels=("build",))
    lib = raced_reduction / "src" / "lib.rs"
    race_line = line_of(lib, "scratch.set(tid, sum);")
    panel = window.dev_loop.tests
    window.docks["tests"].raise_()
    window.editor_tabs.open_file(lib, line=race_line)

    assert panel.run_tests()
    qtbot.waitUntil(lambda: not panel.job.running() and panel.model.rowCount() == 3, timeout=WORK_GUARD_MS)
    rows = {row["Test"]: row for row in panel.model.rows()}
    assert set(rows) == {
        "kernel::the_partials_add_up_to_the_sum",
        "kernel::grid_stride_loop_when_groups_are_capped",
        "kernel::n_not_a_multiple_of_the_workgroup_size",
    }
    for row in rows.values():
        assert row["State"] == "failed"
        assert row["Location"] == f"src/lib.rs:{race_line}"  # the race's write, not the test's line
        assert row["Message"].startswith(
            "cpu-sim found 2 problems in the kernel launched at tests/kernel.rs:"
        )

    # The failure is a diagnostic at its line: the build panel's list and the editor's gutter.
    listed = [r for r in window.panels["build"].diagnostic_rows() if r["backend"] == "tests"]
    assert any(
        r["location"].startswith(f"src/lib.rs:{race_line}:") and "data race" in r["message"] for r in listed
    )
    editor = window.editor_tabs.editor_for(lib)
    assert any(d["code"] == "shared-race" for d in editor.diagnostics_at_line(race_line))

    # The selected test's captured output, with cpu-sim's finding.
    panel.view.setCurrentIndex(panel.model.index(0, 0))
    assert "error[shared-race]" in panel.output.toPlainText()

    # The picture: the default window size, the panels this test did not build put away, the
    # failing test selected beside its line in the editor.
    for key in ("plots", "artifacts", "sessions", "tuning", "counters", "results", "devices"):
        window.docks[key].hide()
    window.resize(1600, 1000)
    window.resizeDocks([window.docks["tests"]], [380], Qt.Orientation.Vertical)
    window.editor_tabs.open_file(lib, line=race_line)
    settle_qt()  # laid out before the grab
    # test-output/ui/kernel-tests-dock.png; docs/kernel-tests-dock.png is a copy of one, looked at.
    assert window.grab().save(str(test_output_dir / "kernel-tests-dock.png"))


def test_a_hanging_test_never_blocks_the_window(make_widget, tmp_path, qtbot, monkeypatch):
    project = tmp_path / "saxpy"
    shutil.copytree(EXAMPLES / "saxpy", project, ignore=shutil.ignore_patterns("target"))
    (project / "tests" / "hang.rs").write_text(
        "#[test]\nfn hangs() {\n    loop {\n        std::hint::spin_loop();\n    }\n}\n"
    )
    # The limit stops the hanging test; the kernel binary's tests must finish under it, loaded or not.
    monkeypatch.setattr(tests_dock, "TEST_TIMEOUT_S", FIRING_LIMIT_S)
    panel = make_widget(tests_dock.TestsPanel, project_root=lambda: project)
    ticks = []
    ticker = QTimer()
    ticker.timeout.connect(lambda: ticks.append(1))
    ticker.start(100)
    try:
        assert panel.run_tests()
        qtbot.waitUntil(lambda: not panel.job.running(), timeout=WORK_GUARD_MS)
    finally:
        ticker.stop()
    assert len(ticks) > 20  # the event loop ran all along
    rows = {row["Test"]: row for row in panel.model.rows()}
    assert rows["hang::hangs"]["State"] == "timed out"
    assert rows["kernel::every_element_once"]["State"] == "passed"
    assert rows["hang::hangs"]["Location"] == "tests/hang.rs:2"


def test_format_action_goes_through_undo_and_keeps_the_cursor_line(make_window, tmp_path, qtbot):
    project = tmp_path / "saxpy"
    shutil.copytree(EXAMPLES / "saxpy", project, ignore=shutil.ignore_patterns("target"))
    lib = project / "src" / "lib.rs"
    window = make_window(project, panels=("build",))
    assert not window.settings.format_on_save  # off by default
    editor = window.editor_tabs.open_file(lib)
    original = editor.text()
    bad = original.replace("let n = n as usize;", "let n=n   as usize ;")
    editor.load_text(bad)
    keep = line_of(lib, "pub const VECTOR: usize")  # a line rustfmt leaves alone
    editor.go_to(keep, 5)
    scroll = editor.verticalScrollBar().value()

    assert window.dev_loop.format_current()
    text = editor.text()
    assert "let n = n as usize;" in text and "let n=n" not in text
    assert line_of(lib, "let n = n as usize;") > keep  # the edit is below: the cursor's line stays
    assert editor.textCursor().blockNumber() + 1 == keep
    assert editor.textCursor().positionInBlock() == 4
    assert editor.verticalScrollBar().value() == scroll
    editor.undo()
    assert editor.text() == bad  # one undo step restores the buffer as typed

    # A syntax error: nothing changes, the error is a diagnostic at its line.
    broken = bad.replace("let n=n   as usize ;", "let n = ;")
    editor.load_text(broken)
    assert not window.dev_loop.format_current()
    assert editor.text() == broken
    rustfmt_rows = [r for r in window.panels["build"].diagnostic_rows() if r["backend"] == "rustfmt"]
    assert rustfmt_rows and rustfmt_rows[0]["location"].startswith(
        f"src/lib.rs:{line_of(lib, 'let n = n as usize;')}:"
    )


def test_format_on_save_when_the_setting_is_on(make_window, tmp_path):
    project = tmp_path / "saxpy"
    shutil.copytree(EXAMPLES / "saxpy", project, ignore=shutil.ignore_patterns("target"))
    lib = project / "src" / "lib.rs"
    window = make_window(project, panels=("build",))
    editor = window.editor_tabs.open_file(lib)
    editor.load_text(editor.text().replace("let n = n as usize;", "let n=n as usize;"))
    editor.document().setModified(True)
    assert window.editor_tabs.save(editor)
    assert "let n=n as usize;" in lib.read_text()  # off: saved as typed

    window.dev_loop.format_on_save_action.setChecked(True)
    assert window.settings.format_on_save
    editor.document().setModified(True)
    assert window.editor_tabs.save(editor)
    assert "let n = n as usize;" in lib.read_text()


CLIPPY_BAIT = """
/// Sums a vector by index (clippy: needless_range_loop).
pub fn by_index(v: &[f32]) -> f32 {
    let mut s = 0.0;
    for i in 0..v.len() {
        s += v[i];
    }
    s
}
"""


def test_a_save_builds_then_lints_and_reruns_the_tests_in_the_background(make_window, tmp_path, qtbot):
    project = tmp_path / "saxpy"
    shutil.copytree(EXAMPLES / "saxpy", project, ignore=shutil.ignore_patterns("target"))
    lib = project / "src" / "lib.rs"
    window = make_window(project, panels=("build",))
    window.bridge.set_sizes({"n": 4096})
    window.bridge.set_backends(["cpu"])
    assert window.hot_reload_action.isChecked()
    editor = window.editor_tabs.open_file(lib)
    editor.load_text(editor.text() + CLIPPY_BAIT)
    editor.document().setModified(True)
    with qtbot.waitSignal(window.bridge.buildFinished, timeout=WORK_GUARD_MS):
        assert window.editor_tabs.save(editor)
    bait = line_of(lib, "for i in 0..v.len()")

    def lint_rows():
        return [r for r in window.panels["build"].diagnostic_rows() if r["backend"] == "clippy"]

    # clippy after the build, and the tests after the build, both in child processes.
    qtbot.waitUntil(
        lambda: any(r["location"].startswith(f"src/lib.rs:{bait}:") for r in lint_rows()),
        timeout=WORK_GUARD_MS,
    )
    assert any("clippy::needless_range_loop" in r["message"] for r in lint_rows())
    assert any(d.get("backend") == "clippy" for d in editor.diagnostics_at_line(bait))
    panel = window.dev_loop.tests
    qtbot.waitUntil(lambda: panel.model.rowCount() == 3 and not panel.job.running(), timeout=WORK_GUARD_MS)
    assert {row["State"] for row in panel.model.rows()} == {"passed"}
    qtbot.waitUntil(
        lambda: not window.bridge.busy and not window.dev_loop.lint_job.running(), timeout=WORK_GUARD_MS
    )

    # Another project: the last one's tests and their diagnostics are gone.
    other = tmp_path / "blank"
    shutil.copytree(
        REPO / "resources" / "templates" / "blank", other, ignore=shutil.ignore_patterns("target")
    )
    set_trusted(other)
    assert window.open_project(other)
    assert panel.model.rowCount() == 0
    assert not [r for r in window.panels["build"].diagnostic_rows() if r["backend"] in ("clippy", "tests")]


def test_the_service_bridge_has_what_the_dev_loop_uses():
    import typing

    from workbench.ui.bridge import ServiceBridge
    from workbench.ui.tests_dock.dev_loop import DevLoopBridge

    assert {
        name for name in typing.get_type_hints(DevLoopBridge) if not hasattr(ServiceBridge, name)
    } == set()
