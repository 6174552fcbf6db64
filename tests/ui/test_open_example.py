"""Examples open as the user's copy, in a source checkout as in the installed app (issue 36 item 8):
the window never edits the repository's resources/examples, and says where the copy lives."""

from __future__ import annotations

import hashlib
from pathlib import Path

from PySide6.QtGui import QTextCursor

from workbench.ui.main_window import MainWindow
from workbench.ui.settings import Settings

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "resources" / "examples"


def tree_digest(root: Path) -> str:
    """The contents of every file under `root` (links followed), for "nothing changed"."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "target" not in p.parts):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def bare_window(qtbot) -> MainWindow:
    window = MainWindow(bridge=None, panels={}, settings=Settings())
    window.ask_before_discarding = False
    window.persist_settings = False
    qtbot.addWidget(window)
    window.show()
    return window


def test_an_opened_example_is_the_users_copy_and_the_repository_is_never_edited(qtbot, private_projects_dir):
    before = tree_digest(EXAMPLES / "saxpy")
    window = bare_window(qtbot)
    assert window.open_project(EXAMPLES / "saxpy")
    qtbot.wait(20)  # the editors open on the event loop's next turn
    root = window.project.root
    assert not root.is_relative_to(EXAMPLES.resolve()), root
    assert root.is_relative_to(private_projects_dir.resolve()) and root.name == "saxpy"
    assert (root / "gpu_kernel" / "Cargo.toml").is_file() and not (root / "gpu_kernel").is_symlink()
    message = window.statusBar().currentMessage()
    assert str(root) in message and "never edited" in message, message
    assert window.trusted  # our own example, as with File > New
    # An edit saved in the window lands in the copy.
    editor = window.editor_tabs.current_editor()
    assert editor.path == root / "src" / "lib.rs"
    editor.moveCursor(QTextCursor.MoveOperation.End)
    editor.insertPlainText("// my edit\n")
    window.save_current()
    assert (root / "src" / "lib.rs").read_text().endswith("// my edit\n")
    assert tree_digest(EXAMPLES / "saxpy") == before
    # Reopening the example reopens the same copy, with the edit.
    assert window.open_project(EXAMPLES / "saxpy")
    assert window.project.root == root
    assert (root / "src" / "lib.rs").read_text().endswith("// my edit\n")


def test_file_open_example_lists_every_example_and_opens_a_copy(qtbot, private_projects_dir):
    window = bare_window(qtbot)
    names = [action.text() for action in window.examples_menu.actions()]
    assert names == sorted(p.parent.name for p in EXAMPLES.glob("*/workbench.toml"))
    action = next(a for a in window.examples_menu.actions() if a.text() == "reduction")
    action.trigger()
    assert window.project is not None and window.project.name == "reduction"
    assert window.project.root == (private_projects_dir / "reduction").resolve()
    assert not window.project.root.is_relative_to(EXAMPLES.resolve())
    assert str(window.project.root) in window.statusBar().currentMessage()
