"""Rust's own tools the edit loop uses, found or missing (Qt-free): rustfmt (`workbench fmt`, the
window's Format) and clippy (`workbench lint`, the lints after a build), as `workbench doctor`
lists them. Found by `host_rust`'s rule; a missing one carries its install hint (`TOOL_HINTS`)."""

from __future__ import annotations

import os

from workbench.build.adapters.base import version_of
from workbench.build.adapters.host_rust import clippy, rustfmt
from workbench.build.install_hints import TOOL_HINTS


def detect_tools() -> list[dict]:
    """[{"tool", "found", "version", "path", "hint", "used_by"}] for rustfmt and clippy."""
    tools = []
    path = rustfmt()
    tools.append(_entry("rustfmt", path, version_of([path, "--version"]) if path else "", "fmt, Format"))
    pair = clippy()
    version = ""
    if pair:
        cargo, driver = pair
        version = version_of([driver, "--version"], env=dict(os.environ, CARGO=cargo))
    tools.append(_entry("clippy", pair[1] if pair else None, version, "lint, lints after a build"))
    return tools


def _entry(tool: str, path: str | None, version: str, used_by: str) -> dict:
    found = bool(path and version)
    return {
        "tool": tool, "found": found, "version": version, "path": path or "",
        "hint": "" if found else TOOL_HINTS[tool], "used_by": used_by,
    }  # fmt: skip
