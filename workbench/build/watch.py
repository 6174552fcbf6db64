"""`ProjectWatcher`: one debounced callback for a burst of source changes (watchdog);
`ContentDigests`: which of them changed what the files hold."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from workbench.project import SOURCE_SUFFIXES, is_ignored


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:  # gone (deleted, or mid rename-save) or unreadable: not what it was
        return None


class ContentDigests:
    """The digest of each source file as last seen, so a burst of events reports only the files
    whose bytes changed: a touch, a rewrite of the same bytes or a metadata change is no change.
    A file that appears or vanishes is one. Thread-safe (the watcher's timer thread asks)."""

    def __init__(self, paths: Iterable[Path] = (), placed: tuple[Path, Path] | None = None):
        """`placed`: (the project's `gpu_kernel` folder, the workbench's crate). A build places a
        copy of the crate where a project has none (a `cp -r` copy's link leads nowhere;
        `kernel_api.ensure_crate`): its files appear, unseen, with the bytes of the workbench's
        own. That is the build's doing, already in the build that did it, not an edit: counted as
        seen, not changed (else the window rebuilt and re-ran, cancelling the run that placed it)."""
        self._lock = threading.Lock()
        self._seen: dict[Path, str | None] = {Path(p): _digest(Path(p)) for p in paths}
        self._placed = placed

    def changed(self, paths: Iterable[Path]) -> list[Path]:
        """Those of `paths` (sources only, by suffix) whose content differs from when last seen."""
        out = []
        for path in map(Path, paths):
            if path.suffix not in SOURCE_SUFFIXES:
                continue
            now = _digest(path)
            with self._lock:
                unseen = path not in self._seen
                before = self._seen.get(path)
                self._seen[path] = now
            if now != before and not (unseen and now is not None and self._is_placed(path, now)):
                out.append(path)
        return out

    def _is_placed(self, path: Path, digest: str) -> bool:
        """Whether `path` is a file of the placed crate copy, as the workbench ships it."""
        if self._placed is None:
            return False
        dest, source = self._placed
        if not path.is_relative_to(dest):
            return False
        return _digest(source / path.relative_to(dest)) == digest


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: ProjectWatcher):
        self.watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write") or event.is_directory:
            return
        # Both ends of a move count: `sed -i` and editors' atomic saves write a new file (`sedX1b2c3`,
        # `workbench.toml.new`) and rename it over the source, whose name is only the destination.
        paths = [event.src_path, getattr(event, "dest_path", "") or ""]
        for raw in filter(None, paths):
            path = Path(raw if isinstance(raw, str) else raw.decode())
            if not is_ignored(path, self.watcher.root):
                self.watcher._touch(path)


class ProjectWatcher:
    """Calls `on_change(paths)` once per burst of changes to project sources.

    Build outputs (target/), hidden folders and editor temp files are ignored. The callback runs
    on a timer thread `debounce_s` after the last change of a burst.
    """

    def __init__(self, root: str | Path, on_change: Callable[[list[Path]], None], debounce_s: float = 0.15):
        self.root = Path(root).resolve()
        self.on_change = on_change
        self.debounce_s = debounce_s
        self._pending: set[Path] = set()
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()
        self._observer: Observer | None = None

    def _touch(self, path: Path) -> None:
        with self._lock:
            self._pending.add(path)
            if self._timer is not None:
                self._timer.cancel()
            self._timer = threading.Timer(self.debounce_s, self._fire)
            self._timer.daemon = True
            self._timer.start()

    def _fire(self) -> None:
        with self._lock:
            paths, self._pending, self._timer = sorted(self._pending), set(), None
        if paths:
            self.on_change(paths)

    def start(self) -> ProjectWatcher:
        if self._observer is None:
            self._observer = Observer()
            self._observer.schedule(_Handler(self), str(self.root), recursive=True)
            self._observer.daemon = True
            self._observer.start()
        return self

    def stop(self) -> None:
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
            self._observer = None
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._pending.clear()

    def __enter__(self) -> ProjectWatcher:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
