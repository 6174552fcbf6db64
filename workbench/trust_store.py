"""Which projects may be built: the trust list shared by `workbench trust` and the window (Qt-free).

Building a project runs its own code (build.rs, proc macros), so a project is built only once the
user trusts it. Bundled examples are always trusted. The list is `trusted-projects.json` in the
user config folder (`user_folders.user_config_dir()`): resolved project roots, each either
"trusted" or "read-only" (the window's "Stay read-only": do not ask again). Every change is a
read-modify-write under a lock, so the command line and an open window never undo each other.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from workbench.errors import WorkbenchError
from workbench.project import examples_dir
from workbench.user_folders import user_config_dir

log = logging.getLogger(__name__)

TRUST_FILE = "trusted-projects.json"
TRUSTED, READ_ONLY = "trusted", "read-only"


class TrustListError(WorkbenchError):
    """The trust list file cannot be read or written."""


def trust_file() -> Path:
    return user_config_dir() / TRUST_FILE


def project_key(path: str | Path) -> str:
    """How a project is remembered: its resolved root (a workbench.toml path means its folder)."""
    root = Path(path).expanduser()
    if root.name == "workbench.toml" and not root.is_dir():
        root = root.parent
    return str(root.resolve())


def is_bundled(path: str | Path) -> bool:
    """A project shipped with the workbench (under resources/examples)."""
    root = Path(project_key(path))
    examples = examples_dir().resolve()
    return root == examples or examples in root.parents


def read_list(path: Path | None = None) -> dict[str, str]:
    """{project root: "trusted" | "read-only"}; an absent file is an empty list."""
    path = path or trust_file()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise TrustListError(f"cannot read the trust list {path}: {exc}") from exc
    projects = data.get("projects") if isinstance(data, dict) else None
    if not isinstance(projects, dict) or not all(v in (TRUSTED, READ_ONLY) for v in projects.values()):
        raise TrustListError(
            f'{path} is not a trust list (expected {{"projects": {{PATH: "trusted" | "read-only"}}}}); '
            "fix it or remove it (projects are then asked about again)"
        )
    return {str(k): v for k, v in projects.items()}


def decision(path: str | Path) -> str | None:
    """ "trusted", "read-only" or None (not asked yet) for the project at `path`; bundled: trusted.

    A broken list is logged and read as empty: nothing is trusted that the user did not trust.
    """
    if is_bundled(path):
        return TRUSTED
    try:
        return read_list().get(project_key(path))
    except TrustListError as exc:
        log.warning("%s", exc)
        return None


def is_trusted(path: str | Path) -> bool:
    return decision(path) == TRUSTED


def is_declined(path: str | Path) -> bool:
    """The user chose "Stay read-only" for this project (do not ask again)."""
    return decision(path) == READ_ONLY


def set_decision(path: str | Path, value: str | None) -> str | None:
    """Remember "trusted" / "read-only" for the project at `path`, or forget it (None).

    Returns the decision it had before.
    """
    if value not in (TRUSTED, READ_ONLY, None):
        raise ValueError(f"a trust decision is {TRUSTED!r}, {READ_ONLY!r} or None, not {value!r}")
    key = project_key(path)
    with _locked() as file:
        projects = read_list(file)
        before = projects.pop(key, None)
        if value is not None:
            projects[key] = value
        if value != before:
            _write(file, projects)
    return before


def set_trusted(path: str | Path, trusted: bool = True) -> None:
    """Trust the project at `path`, or keep it read-only without asking again."""
    set_decision(path, TRUSTED if trusted else READ_ONLY)


def adopt(trusted: list[str], read_only: list[str]) -> bool:
    """Take over the lists an older window kept in its settings, once: only while no trust list
    exists yet (afterwards the list is the truth). Returns whether they were written."""
    with _locked() as file:
        if file.exists():
            return False
        projects = {project_key(p): READ_ONLY for p in read_only}
        projects.update({project_key(p): TRUSTED for p in trusted})
        if projects:
            _write(file, projects)
        return bool(projects)


@contextmanager
def _locked() -> Iterator[Path]:
    """The trust file, with an exclusive lock on its `.lock` sibling for a read-modify-write."""
    file = trust_file()
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        handle = open(file.with_name(file.name + ".lock"), "a")
    except OSError as exc:
        raise TrustListError(f"cannot write the trust list {file}: {exc}") from exc
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield file


def _write(file: Path, projects: dict[str, str]) -> None:
    tmp = file.with_name(f".{file.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(
            json.dumps({"projects": dict(sorted(projects.items()))}, indent=2) + "\n", encoding="utf-8"
        )
        os.replace(tmp, file)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise TrustListError(f"cannot write the trust list {file}: {exc}") from exc
