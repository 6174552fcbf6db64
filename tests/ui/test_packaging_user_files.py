"""Installed workbench: the user's files never go inside the install folder.

Opening a bundled example of an install (here: the checkout, standing in for
/opt/rust-gpu-workbench) opens the user's copy; edits land there and survive a restart or an
upgrade (a new window, same user folders); the installed files are never written.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from workbench import user_folders
from workbench.project import examples_dir
from workbench.trust_store import is_trusted
from workbench.ui.settings import save_settings

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def installed(monkeypatch, tmp_path):
    """Pretend this checkout is the install folder; user copies go to a private folder."""
    monkeypatch.setattr(user_folders, "install_dir", lambda: REPO)
    projects = tmp_path / "my-projects"
    monkeypatch.setenv("WB_PROJECTS_DIR", str(projects))
    return projects


def test_bundled_example_opens_as_an_editable_user_copy_that_survives_a_restart(make_window, installed):
    bundled = examples_dir() / "saxpy"
    source = bundled / "src" / "lib.rs"
    original = source.read_bytes()

    window = make_window(None, panels=())
    assert window.open_project(bundled)
    copy = installed / "saxpy"
    assert window.project.root == copy.resolve()
    assert window.trusted and not window.trust_bar.isVisible()  # our own example
    assert f"opened your copy of the saxpy example: {copy.resolve()}" in window.statusBar().currentMessage()
    editor = window.editor_tabs.open_file(copy / "src" / "lib.rs")
    assert not editor.isReadOnly()
    editor.setPlainText(editor.toPlainText() + "\n// my change\n")
    assert window.editor_tabs.save(editor)
    assert (copy / "src" / "lib.rs").read_text().endswith("// my change\n")
    assert source.read_bytes() == original  # the install is untouched
    save_settings(window.settings)
    window.close()

    # Next start (or after installing a newer version over this one): the same copy, edits kept.
    again = make_window(None, panels=())
    assert again.open_project(bundled)
    assert again.project.root == copy.resolve()
    assert (copy / "src" / "lib.rs").read_text().endswith("// my change\n")
    assert is_trusted(copy)


def test_other_projects_inside_the_install_are_copied_but_not_trusted(make_window, installed):
    # Not a bundled example (the git-ignored test-output/ of the "install"): copied, trust asked.
    foreign = REPO / "test-output" / "ui" / "installed-foreign" / "notmine"
    shutil.rmtree(foreign, ignore_errors=True)
    shutil.copytree(examples_dir() / "saxpy", foreign, ignore=shutil.ignore_patterns("target"))
    window = make_window(None, panels=())
    assert window.open_project(foreign)
    assert window.project.root == (installed / "notmine").resolve()
    assert not window.trusted and window.trust_bar.isVisible()


def test_user_copy_keeps_foreign_folders_and_makes_read_only_files_writable(tmp_path, monkeypatch):
    monkeypatch.setenv("WB_PROJECTS_DIR", str(tmp_path / "mine"))
    source = tmp_path / "install" / "saxpy"
    source.mkdir(parents=True)
    (source / "workbench.toml").write_text("[project]\nname = 'saxpy'\n")
    (source / "target").mkdir()  # build outputs are not copied
    (source / "workbench.toml").chmod(0o444)
    (tmp_path / "mine" / "saxpy").mkdir(parents=True)  # the user's own, unrelated folder
    copy = user_folders.user_copy(source)
    assert copy == (tmp_path / "mine" / "saxpy-2").resolve()
    assert not (copy / "target").exists()
    assert (copy / "workbench.toml").stat().st_mode & 0o200
    assert list((tmp_path / "mine" / "saxpy").iterdir()) == []
    assert user_folders.user_copy(source) == copy  # reused, not copied again
    assert not user_folders.needs_user_copy(tmp_path)  # an ordinary writable folder (not frozen)
