"""Where the user's own copies of projects go, so nothing is ever written inside the install folder.

An installed workbench (e.g. the .deb under /opt/rust-gpu-workbench) ships its examples read-only.
Opening one in the window opens the user's copy instead: made on first use under
`projects_dir()` and reused afterwards, so edits survive restarts and upgrades. The same holds for
the examples of a source checkout (the window never edits the repository's `resources/examples`,
which the tests copy from) and for any project folder the user cannot write to. Settings (`workbench.ui.settings.config_dir`) and the
build cache (`workbench.build.cache.cache_root`) already live in the user's folders. Qt-free.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
from pathlib import Path

from workbench.errors import WorkbenchError
from workbench.frozen import install_dir
from workbench.project import examples_dir

#: In each copy: the folder it was copied from (so reopening the original reopens the copy).
COPY_MARKER = ".workbench-copy-of"


def make_writable(root: Path) -> None:
    """Give the user write permission on `root` and everything under it: a copy out of an install
    brings the install's read-only modes along (a tarball unpacked read-only, a packaged store),
    and the copy is the user's to edit."""
    for path in [root, *root.rglob("*")]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)


def user_config_dir() -> Path:
    """$WB_CONFIG_DIR, else the platform's user config folder for the workbench (no Qt needed)."""
    env = os.environ.get("WB_CONFIG_DIR")
    if env:
        return Path(env).expanduser()
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    elif sys.platform == "win32":
        base = Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming")
    else:
        base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "rust-gpu-workbench"


def projects_dir() -> Path:
    """$WB_PROJECTS_DIR, else ~/rust-gpu-workbench: where copies of read-only projects are made."""
    env = os.environ.get("WB_PROJECTS_DIR")
    return Path(env).expanduser() if env else Path.home() / "rust-gpu-workbench"


def needs_user_copy(root: str | Path) -> bool:
    """True for a bundled example (installed or in a source checkout), a project inside the install
    folder, or one in a folder the user cannot write."""
    root = Path(root).resolve()
    for shipped in (install_dir(), examples_dir().resolve()):
        if shipped is not None and (root == shipped or shipped in root.parents):
            return True
    return not os.access(root, os.W_OK)


def user_copy(root: str | Path) -> Path:
    """The user's copy of the project at `root`: reused when it exists, else copied (no target/).

    An existing folder of the same name that is not a copy of this project is left alone; the copy
    then gets a numbered name.
    """
    root = Path(root).resolve()
    base = projects_dir()
    for n in range(1, 100):
        dest = base / (root.name if n == 1 else f"{root.name}-{n}")
        if not dest.exists():
            break
        marker = dest / COPY_MARKER
        if marker.is_file() and marker.read_text(encoding="utf-8").strip() == str(root):
            return dest.resolve()  # the user's copy, with their edits
    else:
        raise WorkbenchError(f"cannot find a free folder name for a copy of {root} in {base}")
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(root, dest, ignore=shutil.ignore_patterns("target", ".*"))
        make_writable(dest)
        (dest / COPY_MARKER).write_text(str(root) + "\n", encoding="utf-8")
    except OSError as exc:
        raise WorkbenchError(f"cannot copy {root} to {dest}: {exc}") from exc
    return dest.resolve()
