"""Project trust in the window: the bar that asks. Building runs the project's own code (build.rs,
proc macros), so any project but a bundled example opens read-only until the user trusts it.

The choices live in the core's trust list (`workbench.trust_store`), which `workbench trust` reads
and writes too.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton

from workbench.ui import theme
from workbench.ui.layout_fit import wrap_within


class TrustBar(QFrame):
    """A non-modal bar above the editor: "This project can run code when built. Trust it?"."""

    trustRequested = Signal()
    declined = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("TrustBar")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setStyleSheet(
            f"#TrustBar {{ background: {theme.NOTICE_BAR[0]}; }} #TrustBar QLabel {{ color: {theme.NOTICE_BAR[1]}; }}"
        )
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        # Wrapped: the question names the project, and a label asks for its whole text as its
        # minimum width, which would widen the window.
        self.label = wrap_within(QLabel("This project can run code when built. Trust it?"))
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
