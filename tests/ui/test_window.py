"""The main window against the real services: open, edit, save, build, run, cancel, restore."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence, QTextCursor

from tests.waits import HANG_GUARD_MS, HANG_GUARD_S, WORK_GUARD_MS, WORK_GUARD_S, default_ctrl_c, wait_until
from workbench.cli import main as cli_main
from workbench.trust_store import is_trusted
from workbench.ui.main_window import MainWindow
from workbench.ui.screenshot import save_screenshot
from workbench.ui.settings import Settings, load_settings, save_settings, settings_path

REPO = Path(__file__).resolve().parents[2]
SAXPY = REPO / "resources" / "examples" / "saxpy"

BUILD_TIMEOUT_MS = WORK_GUARD_MS


def wavy_lines(editor) -> list[int]:
    """1-based lines carrying a wavy underline (diagnostics)."""
    return [
        s.cursor.block().blockNumber() + 1
        for s in editor.extraSelections()
        if s.format.underlineStyle() == s.format.UnderlineStyle.WaveUnderline
    ]


# ---------------------------------------------------------------- settings (no window)
def test_settings_write_only_changes_and_ignore_broken_files(wb_config_dir, caplog):
    settings = Settings()
    settings.backends = ["cpu"]
    save_settings(settings)
    assert settings_path().parent == wb_config_dir
    assert json.loads(settings_path().read_text()) == {"backends": ["cpu"]}
    assert load_settings().backends == ["cpu"]
    settings_path().write_text("{ not json")
    assert load_settings() == Settings()
    assert "ignoring settings file" in caplog.text
    settings_path().write_text(json.dumps({"editor_font_size": "big", "hot_reload": False}))
    loaded = load_settings()
    assert loaded.editor_font_size == Settings().editor_font_size  # wrong type: default kept
    assert loaded.hot_reload is False


# ---------------------------------------------------------------- the shell without services
def test_window_opens_with_placeholders_when_panels_are_missing(qtbot, test_output_dir):
    window = MainWindow(bridge=None, panels={}, settings=Settings())
    window.ask_before_discarding = False
    qtbot.addWidget(window)
    window.show()
    assert window.open_project(SAXPY)
    assert window.editor_tabs.current_editor() is None  # the editors open on the loop's next turn
    qtbot.wait(20)
    assert window.docks["plots"].widget().objectName() == "PanelPlaceholder"
    # The user's copy of the example, never the repository's (issue 36 item 8).
    assert window.project.root != SAXPY.resolve() and (window.project.root / ".workbench-copy-of").is_file()
    assert window.editor_tabs.current_editor().path == window.project.root / "src" / "lib.rs"
    assert window.trusted  # bundled example
    assert not window.build_action.isEnabled()  # nothing to build with
    save_screenshot(window, test_output_dir / "window-no-services.png")


def test_project_errors_are_reported_without_a_traceback(qtbot, tmp_path):
    window = MainWindow(bridge=None, panels={}, settings=Settings())
    window.persist_settings = False
    qtbot.addWidget(window)
    assert not window.open_project(tmp_path / "missing")
    assert "does not exist" in window.statusBar().currentMessage()
    box = window.findChild(object, "ErrorMessage")
    assert box is not None and box.isVisible()
    box.close()


def test_cli_gui_reports_project_errors_with_file_and_line(tmp_path, capsys):
    assert cli_main(["gui", str(tmp_path / "nope")]) == 2
    assert "nope" in capsys.readouterr().err
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "workbench.toml").write_text('[project]\nname = "x"\n[[kernel]\nname = 3\n')
    assert cli_main(["gui", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "workbench.toml:" in err and "Traceback" not in err


def test_untrusted_project_opens_read_only_until_trusted(make_window, example_copy, qtbot, test_output_dir):
    root = example_copy("saxpy")
    window = make_window(root, trust=False, panels=())
    editor = window.editor_tabs.current_editor()
    assert window.trust_bar.isVisible()
    assert editor.isReadOnly()
    assert not window.build_action.isEnabled() and not window.run_action.isEnabled()
    assert window.bridge.project is None  # the services never see it
    save_screenshot(window, test_output_dir / "window-untrusted.png")
    qtbot.mouseClick(window.trust_bar.trust_button, Qt.MouseButton.LeftButton)
    assert not window.trust_bar.isVisible()
    assert not editor.isReadOnly()
    assert window.build_action.isEnabled()
    assert window.bridge.project.root == root.resolve()
    assert is_trusted(root)  # remembered


def test_project_tree_hides_build_outputs_and_opens_files(make_window, example_copy, qtbot):
    root = example_copy("saxpy")
    (root / "target").mkdir()
    (root / ".hidden").write_text("x")
    window = make_window(root, panels=())
    tree = window.project_tree
    qtbot.waitUntil(lambda: "src" in tree.visible_names(), timeout=HANG_GUARD_MS)
    names = tree.visible_names()
    assert "target" not in names and ".hidden" not in names
    assert {"src", "reference", "workbench.toml"} <= set(names)
    with qtbot.waitSignal(tree.fileActivated, timeout=HANG_GUARD_MS):
        tree.activated.emit(tree.index_of(root / "workbench.toml"))
    assert window.editor_tabs.current_editor().path.name == "workbench.toml"


def test_the_view_menu_names_each_thing_once(make_window, example_copy):
    """Every dock and the toolbar have their own entry in the View menu ("Build" was listed twice:
    the dock and the toolbar)."""
    window = make_window(example_copy("saxpy"))
    names = [a.text() for a in window.view_menu.actions() if a.text() and not a.isSeparator()]
    assert len(names) == len(set(names)), names
    assert "Build" in names and "Toolbar" in names


def test_layout_open_files_and_choices_are_restored(make_window, example_copy, qtbot):
    root = example_copy("saxpy")
    window = make_window(root, panels=())
    window.editor_tabs.open_file(root / "reference" / "saxpy.wgsl")
    window.docks["console"].hide()
    window.backend_actions["nvptx"].setChecked(True)
    window.bridge.set_devices(["cpu"])
    window.close()

    again = make_window(None, panels=())
    assert again.open_project(Path(load_settings().last_project))
    qtbot.wait(20)  # the editors open on the event loop's next turn
    assert [Path(p).name for p in again.editor_tabs.open_files()] == ["lib.rs", "saxpy.wgsl"]
    assert again.editor_tabs.current_editor().path.name == "saxpy.wgsl"
    assert not again.docks["console"].isVisible()
    assert "nvptx" in again.bridge.backends() and again.backend_actions["nvptx"].isChecked()
    assert again.bridge.devices() == ["cpu"]
    assert str(root.resolve()) == load_settings().recent_projects[0]


@pytest.mark.parametrize("answer", ["Cancel", "SaveAll"])
def test_unsaved_edits_survive_opening_another_project(make_window, example_copy, monkeypatch, answer):
    from PySide6.QtWidgets import QMessageBox

    root = example_copy("saxpy")
    lib = root / "src" / "lib.rs"
    window = make_window(root, panels=())
    window.ask_before_discarding = True
    editor = window.editor_tabs.current_editor()
    editor.moveCursor(QTextCursor.MoveOperation.End)
    editor.insertPlainText("// mine\n")
    asked = []
    choice = getattr(QMessageBox.StandardButton, answer)
    monkeypatch.setattr(QMessageBox, "question", lambda *args, **kw: asked.append(args[2]) or choice)
    opened = window.open_project(SAXPY)
    assert asked and "lib.rs" in asked[0]
    if answer == "Cancel":
        assert not opened and window.project.root == root.resolve()
        assert editor.is_modified() and editor.text().endswith("// mine\n")
    else:
        assert opened and window.project.root.name == "saxpy" and window.project.root != SAXPY.resolve()
        assert lib.read_text().endswith("// mine\n")
    window.ask_before_discarding = False  # teardown closes without asking


def test_closing_keeps_the_window_when_saving_fails(make_window, example_copy, monkeypatch):
    from PySide6.QtWidgets import QMessageBox

    root = example_copy("saxpy")
    window = make_window(root, panels=())
    window.ask_before_discarding = True
    editor = window.editor_tabs.open_file(root / "workbench.toml")
    editor.insertPlainText("# mine\n")
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **kw: QMessageBox.StandardButton.SaveAll)
    (root / "workbench.toml").unlink()
    (root / "workbench.toml").mkdir()  # writing the file now fails, even as root
    assert not window.close()
    assert window.isVisible() and editor.text().startswith("# mine")
    window.ask_before_discarding = False  # teardown closes without asking


# ---------------------------------------------------------------- with the real services
def test_device_picker_lists_llvmpipe(make_window, qtbot):
    window = make_window(SAXPY, panels=("devices",))
    picker = window.panels["devices"]

    def has_llvmpipe():
        group = picker.group_item("wgpu")
        if group is None:
            return False
        texts = []
        stack = [group]
        while stack:
            item = stack.pop()
            texts.append(item.text(0) + " " + item.toolTip(0))
            stack.extend(item.child(i) for i in range(item.childCount()))
        return any("llvmpipe" in t.lower() for t in texts)

    qtbot.waitUntil(has_llvmpipe, timeout=WORK_GUARD_MS)


@pytest.mark.slow
def test_edit_save_builds_and_shows_the_error_inline(make_window, example_copy, qtbot, test_output_dir):
    root = example_copy("saxpy")
    window = make_window(root, panels=("build",))
    window.bridge.set_backends(["cpu"])
    editor = window.editor_tabs.current_editor()
    lines = editor.text().splitlines()
    target = next(i for i, line in enumerate(lines) if "y[i] = a * x[i] + y[i];" in line) + 1
    editor.go_to(target)
    cursor = editor.textCursor()
    cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock)
    cursor.insertText(' let broken: u32 = "not a number";')
    assert window.save_action.shortcut() == QKeySequence(QKeySequence.StandardKey.Save)  # Ctrl+S
    with qtbot.waitSignal(window.bridge.busyChanged, timeout=HANG_GUARD_MS) as busy:
        window.save_action.trigger()
    assert busy.args == [True]
    assert "broken" in (root / "src" / "lib.rs").read_text()
    panel = window.panels["build"]
    qtbot.waitUntil(lambda: panel.state("cpu") in ("building", "error"), timeout=HANG_GUARD_MS)
    with qtbot.waitSignal(window.bridge.buildFinished, timeout=BUILD_TIMEOUT_MS):
        pass
    qtbot.waitUntil(lambda: target in wavy_lines(editor), timeout=HANG_GUARD_MS)

    assert panel.state("cpu") == "error"
    assert "[cpu]" in editor.diagnostic_tooltip(target)
    tree = panel.diagnostics
    diag_texts = [
        " ".join(item.text(c) for c in range(item.columnCount()))
        for item in map(tree.topLevelItem, range(tree.topLevelItemCount()))
    ]
    assert any(f":{target}" in t or f"{target}:" in t for t in diag_texts), diag_texts
    save_screenshot(window, test_output_dir / "window-build-error.png")


@pytest.mark.slow
def test_run_cpu_and_wgsl_fills_the_table_and_plots(make_window, qtbot, test_output_dir):
    window = make_window(SAXPY, panels=("build", "results", "plots", "devices"))
    window.bridge.set_backends(["cpu", "wgsl"])
    window.bridge.set_devices(["cpu", "wgpu:0"])
    with qtbot.waitSignal(window.bridge.runFinished, timeout=BUILD_TIMEOUT_MS) as finished:
        window.run_action.trigger()
    report = finished.args[0]
    assert {r.backend for r in report.results} >= {"cpu", "wgsl"}
    table = window.panels["results"]
    qtbot.waitUntil(
        lambda: {"cpu", "wgsl"} <= {row["Backend"] for row in table.row_texts()}, timeout=HANG_GUARD_MS
    )
    plots = window.panels["plots"]
    qtbot.waitUntil(lambda: len(plots.curve_data()["time"]) >= 2, timeout=HANG_GUARD_MS)
    save_screenshot(window, test_output_dir / "window-results.png")


@pytest.mark.slow
def test_cancelling_a_build_stops_it(make_window, qtbot, tmp_path):
    # A fresh cache: nvptx then has to build `core` (tens of seconds), long enough to cancel.
    window = make_window(SAXPY, panels=("build",), cache_dir=tmp_path / "fresh-cache")
    window.bridge.set_backends(["nvptx"])
    panel = window.panels["build"]
    window.build_action.trigger()
    qtbot.waitUntil(lambda: panel.state("nvptx") == "building", timeout=HANG_GUARD_MS)
    assert window.cancel_action.isEnabled()
    with qtbot.waitSignal(window.bridge.busyChanged, timeout=HANG_GUARD_MS, check_params_cb=lambda b: not b):
        window.cancel_action.trigger()
    # Cancelled, and said so: not back to "idle" as if nothing had been asked (a Cancel that did
    # nothing, or a build that finished meanwhile, reads otherwise).
    assert panel.state("nvptx") == "cancelled"
    assert not window.cancel_action.isEnabled()


def runs_recorded(db: Path) -> int:
    """How many runs the sessions database at `db` holds (0 before it exists or while locked)."""
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
            return con.execute("SELECT count(*) FROM runs").fetchone()[0]
    except sqlite3.Error:
        return 0


def test_ctrl_c_in_the_terminal_closes_the_window_as_quit_does(
    tmp_path, shared_cache_dir, private_sessions_db
):
    # `workbench PATH` (bootstrap.sh open) from a terminal, then Ctrl+C there: the window closes as
    # File > Quit does (layout saved, services stopped) and the command exits 130. It used to raise
    # KeyboardInterrupt in whichever slot ran next (a traceback) and stay open.
    config = tmp_path / "cfg"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "WB_CONFIG_DIR": str(config)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "workbench", "gui", "--run", "--backend", "cpu", "--cache-dir",
         str(shared_cache_dir), str(SAXPY)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, preexec_fn=default_ctrl_c,
    )  # fmt: skip
    try:
        # The run is recorded from the event loop: the window is up and waiting for the user.
        assert wait_until(lambda: runs_recorded(private_sessions_db) > 0 or proc.poll() is not None,
                          WORK_GUARD_S), "the run was not recorded"  # fmt: skip
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=HANG_GUARD_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            pytest.fail(f"the window stayed open after Ctrl+C; stderr:\n{err}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert proc.returncode == 130, (proc.returncode, err)
    assert load_settings(config / settings_path().name).window_state, (
        "the layout was not saved as Quit saves it"
    )


def test_cli_screenshot_renders_the_window(tmp_path, qapp):
    from PySide6.QtGui import QImage

    out = tmp_path / "shot.png"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "WB_CONFIG_DIR": str(tmp_path / "cfg")}
    proc = subprocess.run(
        [sys.executable, "-m", "workbench", "gui", "--screenshot", str(out), "--window-size", "1100x700",
         str(SAXPY)],
        capture_output=True,
        text=True,
        timeout=WORK_GUARD_S,
        env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    image = QImage(str(out)).convertToFormat(QImage.Format.Format_RGB32)
    assert (image.width(), image.height()) == (1100, 700)  # the window, at the size asked for
    rows = np.frombuffer(image.constBits(), np.uint32).reshape(image.height(), image.bytesPerLine() // 4)
    pixels = rows[:, : image.width()]
    # Not a blank or single-colour grab: the window's panels, text and icons are drawn.
    colours, counts = np.unique(pixels, return_counts=True)
    assert colours.size >= 64 and counts.max() < 0.9 * pixels.size, (colours.size, counts.max() / pixels.size)
    # Drawn from top to bottom (text, tables, plots), not a strip of it: most rows differ.
    assert len({row.tobytes() for row in pixels}) > image.height() // 2
    # Every ninth of the window is drawn (the default layout has a panel or the editor in each:
    # project and devices, the editor, the plots, build and results): none is a blank area.
    h, w = pixels.shape
    drawn = [[np.unique(pixels[i * h // 3 : (i + 1) * h // 3, j * w // 3 : (j + 1) * w // 3]).size
              for j in range(3)] for i in range(3)]  # fmt: skip
    assert min(min(row) for row in drawn) >= 64, drawn  # each had 380 to 1,800 colours when drawn
