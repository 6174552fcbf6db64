"""Project trust: building runs the project's own code (build.rs, proc macros), so ask first.

Bundled examples are trusted; any other project opens read-only until the user trusts it. The
choice is remembered in the settings by resolved path.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton

from workbench.project import examples_dir
from workbench.ui.settings import Settings


def _resolved(path: str | Path) -> Path:
    return Path(path).expanduser().resolve()


def is_bundled(path: str | Path) -> bool:
    """A project shipped with the workbench (under resources/examples)."""
    root = _resolved(path)
    return root == examples_dir().resolve() or examples_dir().resolve() in root.parents


def is_trusted(settings: Settings, path: str | Path) -> bool:
    return is_bundled(path) or str(_resolved(path)) in settings.trusted_projects


def is_declined(settings: Settings, path: str | Path) -> bool:
    """The user already chose "Stay read-only" for this project (do not ask again)."""
    return str(_resolved(path)) in settings.declined_projects


def set_trusted(settings: Settings, path: str | Path, trusted: bool = True) -> None:
    """Remember the user's choice for this project (by resolved path)."""
    key = str(_resolved(path))
    settings.trusted_projects = [p for p in settings.trusted_projects if p != key]
    settings.declined_projects = [p for p in settings.declined_projects if p != key]
    if trusted:
        settings.trusted_projects.append(key)
    else:
        settings.declined_projects.append(key)


class TrustBar(QFrame):
    """A non-modal bar above the editor: "This project can run code when built. Trust it?"."""

    trustRequested = Signal()
    declined = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("TrustBar")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setStyleSheet("#TrustBar { background: #5c4a14; } #TrustBar QLabel { color: #f3e6b3; }")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        self.label = QLabel("This project can run code when built. Trust it?")
        self.trust_button = QPushButton("Trust")
        self.read_only_button = QPushButton("Stay read-only")
        layout.addWidget(self.label, 1)
        layout.addWidget(self.trust_button)
        layout.addWidget(self.read_only_button)
        self.trust_button.clicked.connect(self.trustRequested)
        self.read_only_button.clicked.connect(self.declined)
        self.hide()

    def ask(self, project_root: Path) -> None:
        self.label.setText(
            f"<b>{project_root.name}</b> is read-only: building it runs code from the project "
            "(build.rs, proc macros). This project can run code when built. Trust it?"
        )
        self.show()
