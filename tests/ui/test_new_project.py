"""File > New kernel project: the dialog asks for a name, and the window opens the renamed project."""

from __future__ import annotations

import tomllib

from PySide6.QtWidgets import QDialogButtonBox

from workbench.trust_store import is_trusted
from workbench.ui.project.new_project import NewProjectDialog


def ok_enabled(dialog: NewProjectDialog) -> bool:
    return dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).isEnabled()


def test_dialog_offers_the_templates_and_refuses_bad_names_and_used_folders(qtbot, tmp_path):
    dialog = NewProjectDialog(start_dir=tmp_path)
    qtbot.addWidget(dialog)
    names = [dialog.template_box.itemText(i) for i in range(dialog.template_box.count())]
    assert names[0] == "blank" and {"saxpy", "reduction", "matmul", "bitonic"} <= set(names)
    assert dialog.project_name() == "my_blank" and ok_enabled(dialog)

    dialog.template_box.setCurrentText("saxpy")  # a suggested name follows the template
    assert dialog.project_name() == "my_saxpy"
    dialog.name_edit.setText("my-kernel")
    assert not ok_enabled(dialog) and "e.g. 'my_kernel'" in dialog.preview.text()
    dialog.template_box.setCurrentText("matmul")  # a name the user typed is kept
    assert dialog.project_name() == "my-kernel"

    (tmp_path / "vadd").mkdir()
    (tmp_path / "vadd" / "notes.txt").write_text("mine")
    dialog.name_edit.setText("vadd")
    assert not ok_enabled(dialog) and "already exists and is not empty" in dialog.preview.text()
    dialog.name_edit.setText("vadd2")
    assert ok_enabled(dialog) and dialog.destination() == tmp_path / "vadd2"
    assert dialog.preview.text() == f"creates {tmp_path / 'vadd2'} (project vadd2)"


def test_window_makes_and_opens_the_renamed_project(make_window, tmp_path):
    window = make_window(None, panels=())
    dest = tmp_path / "vadd"
    assert window.create_project("vadd", "saxpy", dest)
    assert window.project.root == dest.resolve() and window.project.name == "vadd"
    assert window.trusted and is_trusted(dest) and not window.trust_bar.isVisible()
    assert window.project.manifest.kernel().entry_for("cpu") == "vadd_cpu"
    assert tomllib.loads((dest / "Cargo.toml").read_text())["package"]["name"] == "vadd"
    assert (dest / "reference" / "vadd.cu").is_file() and not (dest / "target").exists()
    assert "vadd" in window.windowTitle()

    assert not window.create_project("vadd", "saxpy", dest)  # not empty now: refused with a message
    assert "already exists and is not empty" in window.statusBar().currentMessage()
    assert not window.create_project("Bad-Name", "blank", tmp_path / "other")
    assert not (tmp_path / "other").exists() and window.project.root == dest.resolve()
