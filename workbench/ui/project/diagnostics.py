"""The open project's diagnostics, by source: each backend's build, cpu-sim's findings of the last
run that checked (`workbench.run.sim_findings`), workbench.toml's errors (`manifest_check`),
rustfmt / clippy / the tests (`tests_dock/dev_loop.py`). A source's new list replaces its last;
all of them, merged, are underlined in the editor at their lines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject

from workbench.build.manifest_check import MANIFEST_SOURCE
from workbench.run.sim_findings import RUN_SOURCE, run_diagnostics


class ProjectDiagnostics(QObject):
    """Shown in `editor_tabs` for the project at `root` (None before one is open: nothing shown).
    A QObject of the window's: the bridge's signals stop reaching it when the window goes."""

    def __init__(self, editor_tabs: Any, parent: QObject):
        super().__init__(parent)
        self.editor_tabs = editor_tabs
        self.root: Path | None = None
        self.by_source: dict[str, list[dict]] = {}  # source (a backend, RUN_SOURCE …) -> its last

    def open(self, root: Path) -> None:
        """Another project: nothing of the last one's is kept."""
        self.root = root
        self.by_source.clear()

    def set(self, source: str, diagnostics: list[dict]) -> None:
        self.by_source[source] = list(diagnostics)
        self.show()

    def build_finished(self, results: dict) -> None:
        """Each backend's build diagnostics, marked with the backend they came from."""
        for backend, result in results.items():
            diags = []
            for diag in getattr(result, "diagnostics", None) or []:
                diags.append({**diag, "backend": diag.get("backend") or backend})
            self.by_source[backend] = diags
        self.show()

    def run_finished(self, report: Any) -> None:
        """cpu-sim's findings underlined at their Rust lines like a compiler's, until a run that
        checks again (workbench.run.sim_findings)."""
        found = run_diagnostics(report)
        if found is not None:
            self.set(RUN_SOURCE, found)

    def manifest_checked(self, diagnostics: list[dict]) -> None:
        """workbench.toml's errors at their lines, as a build's are (cleared when it reads well)."""
        self.set(MANIFEST_SOURCE, diagnostics)

    def show(self) -> None:
        if self.root is not None:
            merged = [d for diags in self.by_source.values() for d in diags]
            self.editor_tabs.set_diagnostics(self.root, merged)
