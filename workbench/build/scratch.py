"""Folders the workbench makes outside a user's project, safe beside other processes.

Two windows, two `workbench ceilings` or a window and a CLI may share one cache; a build may be
killed (-9, a crash, a power cut) half-way. So:

- `locked(path)`: an exclusive `fcntl.flock` on a lock file, waited for with `check()` polled
  (a cancel or a time limit raises) — work done once for everyone (the cpu ceiling kernels) is
  done under it and the waiter then finds it done;
- `OwnedDir(parent, prefix)`: a fresh private folder `<parent>/<prefix><pid>-<random>` holding
  its `OWNER` file flocked while this process owns it; what the folder ends as is renamed into
  place (`disown` first) or removed. The kernel drops the lock when the process dies, however it
  dies, so a folder is known abandoned by its lock, not by guessing from a pid;
- `sweep(root)`: removes the work folders of `WORK_GLOBS` that are older than `STALE_S` and whose
  `OWNER` no live process holds (a folder with no `OWNER`, from a process killed before it made
  one, goes on its age alone). `BuildService` sweeps its cache when it starts, `cpu_library`
  its folder before building;
- `runtime_dir()`: the XDG_RUNTIME_DIR children get when the session has none (Mesa wants one):
  one 0700 folder per user, `<tmp>/wb-xdg-<uid>`, reused by every run, so none is left per run.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import shutil
import stat
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

#: The lock file inside an owned folder.
OWNER = ".wb-owner"
#: Name prefixes of owned folders: a build's staging artifact folder, a line-table build's
#: folder, a ceiling kernel build's folder.
STAGING_PREFIX = ".tmp-"
LINES_PREFIX = ".lines-"
#: Where owned folders live under a cache root (cache.py's layout): swept when stale.
WORK_GLOBS = (
    f"artifacts/*/{STAGING_PREFIX}*",
    f"artifacts/*/{LINES_PREFIX}*",
    "work/*",
    f"ceilings/*/{STAGING_PREFIX}*",
)
#: An unlocked work folder this old (by its modification time) was left by a dead process.
STALE_S = 600.0


@contextlib.contextmanager
def locked(path: str | Path, check: Callable[[], None] = lambda: None, poll_s: float = 0.1) -> Iterator[None]:
    """Hold an exclusive flock on `path` (created if missing); `check()` is called while waiting."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                check()
                time.sleep(poll_s)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


class OwnedDir:
    """A private folder this process owns (see the module docstring); a context manager that
    removes it on exit unless it was `disown`ed (renamed into place by the caller)."""

    def __init__(self, parent: str | Path, prefix: str):
        self.path = Path(parent) / f"{prefix}{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.path.mkdir(parents=True)
        self._owner = open(self.path / OWNER, "w")  # noqa: SIM115  held open while owned
        fcntl.flock(self._owner, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a fresh file: never refused

    def disown(self) -> Path:
        """Drop the lock file (the folder is about to be renamed into place); returns the path."""
        if not self._owner.closed:
            with contextlib.suppress(OSError):
                (self.path / OWNER).unlink()
            self._owner.close()
        return self.path

    def remove(self) -> None:
        self.disown()
        shutil.rmtree(self.path, ignore_errors=True)

    def __enter__(self) -> OwnedDir:
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


def _abandoned(folder: Path, now: float, older_than_s: float) -> bool:
    """Older than the bound and no live process holds its OWNER."""
    try:
        if now - folder.lstat().st_mtime < older_than_s or not folder.is_dir() or folder.is_symlink():
            return False
    except OSError:
        return False
    try:
        owner = open(folder / OWNER, "r+")  # noqa: SIM115
    except FileNotFoundError:
        return True  # killed before it made one (or renamed away meanwhile: is_dir() said no)
    except OSError:
        return False
    with owner:
        try:
            fcntl.flock(owner, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # a live process owns it
        return True


def sweep(root: str | Path, older_than_s: float = STALE_S) -> list[Path]:
    """Remove the abandoned work folders under the cache `root`; returns those removed."""
    root = Path(root)
    now = time.time()
    removed = []
    for pattern in WORK_GLOBS:
        for folder in root.glob(pattern):
            if _abandoned(folder, now, older_than_s):
                shutil.rmtree(folder, ignore_errors=True)
                if not folder.exists():
                    removed.append(folder)
    return removed


def sweep_quietly(root: str | Path, older_than_s: float = STALE_S) -> None:
    """`sweep`, where a failure (a read-only cache, a folder vanishing) must not stop the caller."""
    with contextlib.suppress(OSError):
        sweep(root, older_than_s)


_fallback: list[str] = []


def runtime_dir() -> str:
    """`<tmp>/wb-xdg-<uid>` (made 0700 if missing), reused by every run of this user. Should it
    be someone else's, a link or open to others, a private folder removed at exit instead."""
    path = Path(tempfile.gettempdir()) / f"wb-xdg-{os.getuid()}"
    with contextlib.suppress(OSError):
        path.mkdir(mode=0o700)
    try:
        info = os.lstat(path)
        if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077:
            return str(path)
    except OSError:
        pass
    if not _fallback:
        _fallback.append(tempfile.mkdtemp(prefix=f"wb-xdg-{os.getuid()}-"))
        atexit.register(shutil.rmtree, _fallback[0], True)
    return _fallback[0]
