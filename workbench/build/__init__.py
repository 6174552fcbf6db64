"""The build service: toolchain adapters, content-addressed cache, concurrent builds, watcher.

Public API (docs/contracts.md, "Build service API"): `detect_toolchains`, `BuildService`,
`BuildJob`, `BuildEvent`, `build_project`, `ProjectWatcher`; `workbench.build.artifacts.read_build`.
"""

from __future__ import annotations

from workbench.build.artifacts import export, read_build
from workbench.build.service import BuildEvent, BuildJob, BuildService, build_project
from workbench.build.toolchains import detect_toolchains

__all__ = [
    "BuildEvent", "BuildJob", "BuildService", "ProjectWatcher", "build_project",
    "detect_toolchains", "export", "read_build",
]  # fmt: skip


def __getattr__(name: str):
    # watchdog is imported only by those who watch (the CLI's --watch, the window).
    if name == "ProjectWatcher":
        from workbench.build.watch import ProjectWatcher

        return ProjectWatcher
    raise AttributeError(name)
