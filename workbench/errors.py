"""Errors the user can act on: each names the file, the line and the key where possible."""

from __future__ import annotations


class WorkbenchError(Exception):
    """An error with a message meant for the user (printed without a traceback)."""


class ManifestError(WorkbenchError):
    """A problem in a project's `workbench.toml`."""

    def __init__(self, path: str, line: int | None, key: str | None, message: str):
        self.path = str(path)
        self.line = line
        self.key = key
        self.message = message
        super().__init__(self.format())

    def format(self) -> str:
        where = self.path
        if self.line is not None:
            where += f":{self.line}"
        if self.key:
            where += f": {self.key}"
        return f"{where}: {self.message}"


class ProjectNotFound(WorkbenchError):
    """The path given as a project does not exist or has no manifest."""


class UnknownBackend(WorkbenchError):
    """A backend name that is not one of `workbench.backends.BACKENDS`."""
