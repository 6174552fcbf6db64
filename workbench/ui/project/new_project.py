"""File > New kernel project: a template, a project name and a folder; `workbench.templates` makes it."""

from __future__ import annotations

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
from workbench.templates import check_destination, name_problem, template_names


class NewProjectDialog(QDialog):
    """Choose a template, a name and a location; the project is made in `destination()` (the
    location / the name) and renamed to `project_name()` throughout."""

    def __init__(self, parent: QWidget | None = None, start_dir: Path | None = None):
        super().__init__(parent)
        self.setWindowTitle("New kernel project")
        self.template_box = QComboBox()
        self.template_box.addItems(template_names())
        self.parent_edit = QLineEdit(str(start_dir or Path.home()))
        browse = QPushButton("Browse…")
        self.name_edit = QLineEdit()
        self.name_edit.setPlaceholderText("e.g. vadd (a Rust identifier: the crate, kernel and entry names)")
        self.preview = QLabel()
        self.preview.setWordWrap(True)
        row = QHBoxLayout()
        row.addWidget(self.parent_edit, 1)
        row.addWidget(browse)
        form = QFormLayout(self)
        form.addRow("Template", self.template_box)
        form.addRow("Project name", self.name_edit)
        form.addRow("Location", row)
        form.addRow("", self.preview)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        form.addRow(self.buttons)
        browse.clicked.connect(self._browse)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        self.template_box.currentIndexChanged.connect(self._suggest_name)
        self.name_edit.textChanged.connect(self._update_preview)
        self.parent_edit.textChanged.connect(self._update_preview)
        self._suggested = ""
        self._suggest_name()

    def template(self) -> str:
        return self.template_box.currentText()

    def project_name(self) -> str:
        return self.name_edit.text().strip()

    def destination(self) -> Path:
        return Path(self.parent_edit.text()).expanduser() / self.project_name()

    def problem(self) -> str | None:
        """Why OK is disabled: the name or the folder, as `create_project` would refuse it."""
        problem = name_problem(self.project_name())
        if problem is None:
            try:
                check_destination(self.destination())
            except WorkbenchError as exc:
                problem = str(exc)
        return problem

    def _suggest_name(self, *_):
        """A free name after the template, unless the user typed one of their own."""
        if self.project_name() not in ("", self._suggested):
            return
        base = f"my_{self.template() or 'kernel'}"
        name, n = base, 2
        while (Path(self.parent_edit.text()).expanduser() / name).exists():
            name, n = f"{base}_{n}", n + 1
        self._suggested = name
        self.name_edit.setText(name)

    def _update_preview(self, *_):
        problem = self.problem()
        self.preview.setText(problem or f"creates {self.destination()} (project {self.project_name()})")
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(problem is None)

    def _browse(self):
        folder = QFileDialog.getExistingDirectory(self, "Create the project in", self.parent_edit.text())
        if folder:
            self.parent_edit.setText(folder)
