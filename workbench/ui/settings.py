"""The window's settings: a typed schema with defaults, stored as JSON in the platform config folder.

Only values that differ from the defaults are written, so a newer version's better default reaches
users who never changed it. A broken or unreadable file is logged and ignored (defaults are used).
Tests point `WB_CONFIG_DIR` at a temporary folder.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench import trust_store
from workbench.errors import WorkbenchError

log = logging.getLogger(__name__)

SETTINGS_FILE = "settings.json"
MAX_RECENT = 10


@dataclass
class Settings:
    """Everything the window remembers between starts."""

    window_geometry: str = ""  # base64 of QMainWindow.saveGeometry()
    window_state: str = ""  # base64 of QMainWindow.saveState() (dock layout)
    last_project: str = ""
    recent_projects: list[str] = field(default_factory=list)
    #: project root -> files open in the editor (absolute paths), in tab order
    open_files: dict[str, list[str]] = field(default_factory=dict)
    #: project root -> the tab that was current
    current_file: dict[str, str] = field(default_factory=dict)
    #: the backends the user checked; empty: the command line's default (cpu plus every backend
    #: whose toolchain is installed and whose runtime is available, `RunService.default_backends`)
    backends: list[str] = field(default_factory=list)
    devices: list[str] = field(default_factory=lambda: ["cpu", "wgpu:0"])
    editor_font_size: int = 10
    hot_reload: bool = True
    format_on_save: bool = False  # rustfmt on each save of a Rust file (ui.tests_dock.dev_loop)
    #: record every run in the sessions database (the Sessions panel's toggle)
    record_runs: bool = True
    #: the sessions database file ("": sessions.db in the user data folder)
    sessions_db: str = ""

    def add_recent(self, path: str) -> None:
        self.recent_projects = [path] + [p for p in self.recent_projects if p != path]
        del self.recent_projects[MAX_RECENT:]


def config_dir() -> Path:
    """The folder holding settings.json: $WB_CONFIG_DIR, else the platform's app config folder."""
    env = os.environ.get("WB_CONFIG_DIR")
    if env:
        return Path(env)
    from PySide6.QtCore import QStandardPaths

    location = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppConfigLocation)
    if not location:  # no application name set: fall back to a folder of our own
        location = str(Path.home() / ".config" / "rust-gpu-workbench")
    return Path(location)


def settings_path() -> Path:
    return config_dir() / SETTINGS_FILE


def _coerce(value: Any, default: Any) -> Any:
    """Keep a stored value only if it has the default's type (a hand-edited file may not)."""
    if isinstance(default, bool):
        return value if isinstance(value, bool) else default
    if isinstance(default, int):
        return value if isinstance(value, int) and not isinstance(value, bool) else default
    if isinstance(default, list):
        return [str(v) for v in value] if isinstance(value, list) else default
    if isinstance(default, dict):
        return dict(value) if isinstance(value, dict) else default
    return value if isinstance(value, type(default)) else default


def load_settings(path: Path | None = None) -> Settings:
    """Read the settings file; missing, broken or mistyped entries fall back to defaults."""
    path = path or settings_path()
    settings = Settings()
    if not path.is_file():
        return settings
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError("top level is not a JSON object")
    except (OSError, ValueError) as exc:
        log.warning("ignoring settings file %s: %s", path, exc)
        return settings
    for f in dataclasses.fields(Settings):
        if f.name in data:
            setattr(settings, f.name, _coerce(data[f.name], getattr(settings, f.name)))
    _adopt_trust(data)
    return settings


def _adopt_trust(data: dict) -> None:
    """Hand the trust choices an older version kept here (`trusted_projects`, `declined_projects`)
    to the trust list (`workbench.trust_store`), which `workbench trust` shares; once, before the
    next save drops them from this file."""
    trusted, declined = (data.get(key) for key in ("trusted_projects", "declined_projects"))
    trusted = [str(p) for p in trusted] if isinstance(trusted, list) else []
    declined = [str(p) for p in declined] if isinstance(declined, list) else []
    if trusted or declined:
        try:
            trust_store.adopt(trusted, declined)
        except WorkbenchError as exc:
            log.warning("could not move the trusted projects from the settings: %s", exc)


def save_settings(settings: Settings, path: Path | None = None) -> None:
    """Write the values that differ from the defaults (atomically: write, then rename)."""
    path = path or settings_path()
    defaults = Settings()
    changed = {
        f.name: getattr(settings, f.name)
        for f in dataclasses.fields(Settings)
        if getattr(settings, f.name) != getattr(defaults, f.name)
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(changed, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        log.warning("could not save settings to %s: %s", path, exc)
