"""File > New kernel project: copy a bundled example (without build outputs) as a template."""

from __future__ import annotations

import shutil
from pathlib import Path

from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QWidget,
)

from workbench.errors import WorkbenchError
from workbench.manifest import MANIFEST_NAME
from workbench.project import examples_dir


def bundled_examples() -> list[Path]:
    """The example projects that can serve as templates, sorted by name."""
    root = examples_dir()
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if (p / MANIFEST_NAME).is_file())


def create_from_example(example: Path, destination: Path) -> Path:
    """Copy `example` to `destination` (which must not exist yet), leaving out target/ and dot files."""
    destination = Path(destination).expanduser()
    if destination.exists():
        raise WorkbenchError(f"{destination} already exists; choose a new folder name")
    if not (example / MANIFEST_NAME).is_file():
        raise WorkbenchError(f"{example} is not a kernel project (no {MANIFEST_NAME})")
    try:
        shutil.copytree(example, destination, ignore=shutil.ignore_patterns("target", ".*"))
    except OSError as exc:
        raise WorkbenchError(f"cannot create {destination}: {exc}") from exc
    return destination.resolve()


class NewProjectDialog(QDialog):
    """Choose an example and a target folder; `destination()` is where the copy goes."""

    def __init__(self, parent: QWidget | None = None, start_dir: Path | None = None):
        super().__init__(parent)
        self.setWindowTitle("New kernel project")
        self.example_box = QComboBox()
        for example in bundled_examples():
            self.example_box.addItem(example.name, str(example))
        self.parent_edit = QLineEdit(str(start_dir or Path.home()))
        browse = QPushButton("Browse…")
        self.name_edit = QLineEdit()
        self.preview = QLabel()
        row = QHBoxLayout()
        row.addWidget(self.parent_edit, 1)
        row.addWidget(browse)
        form = QFormLayout(self)
        form.addRow("Template", self.example_box)
        form.addRow("Location", row)
        form.addRow("Folder name", self.name_edit)
        form.addRow("", self.preview)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        form.addRow(self.buttons)
        browse.clicked.connect(self._browse)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        self.example_box.currentIndexChanged.connect(self._suggest_name)
        self.name_edit.textChanged.connect(self._update_preview)
        self.parent_edit.textChanged.connect(self._update_preview)
        self._suggest_name()

    def example(self) -> Path:
        return Path(self.example_box.currentData())

    def destination(self) -> Path:
        return Path(self.parent_edit.text()).expanduser() / self.name_edit.text().strip()

    def _suggest_name(self, *_):
        base = f"my-{self.example_box.currentText() or 'kernel'}"
        name, n = base, 2
        while (Path(self.parent_edit.text()).expanduser() / name).exists():
            name, n = f"{base}-{n}", n + 1
        self.name_edit.setText(name)

    def _update_preview(self, *_):
        dest = self.destination()
        ok = bool(self.name_edit.text().strip()) and not dest.exists()
        self.preview.setText(f"creates {dest}" if ok else f"{dest} already exists")
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(ok)

    def _browse(self):
        folder = QFileDialog.getExistingDirectory(self, "Create the project in", self.parent_edit.text())
        if folder:
            self.parent_edit.setText(folder)
