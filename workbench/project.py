"""A kernel project on disk: its folder, its manifest, its sources and their hash."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from workbench.backends import REFERENCE_ONLY_SUFFIXES, backend_row
from workbench.errors import ProjectNotFound
from workbench.manifest import MANIFEST_NAME, Manifest, load_manifest

#: Folders never treated as project sources (build outputs, VCS, editor state).
IGNORED_DIRS = {"target", ".git", ".hg", ".svn", "__pycache__", ".idea", ".vscode", "node_modules"}
SOURCE_SUFFIXES = {".rs", ".toml", ".cu", ".cuh", ".wgsl", ".h", ".npy", ".lock", ".comp", ".glsl"}


def examples_dir() -> Path:
    """The bundled example projects (resources/examples)."""
    return Path(__file__).resolve().parent.parent / "resources" / "examples"


def is_ignored(path: Path, root: Path) -> bool:
    """Build outputs, hidden folders and editor temp files are not sources."""
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        return True
    for part in parts[:-1]:
        if part in IGNORED_DIRS or part.startswith("."):
            return True
    name = parts[-1] if parts else ""
    return (
        name.startswith(".")
        or name.endswith("~")
        or name.endswith((".swp", ".swx", ".tmp", ".bak"))
        or name.startswith("#")
        or name in IGNORED_DIRS
    )


@dataclass(frozen=True)
class Project:
    root: Path
    manifest: Manifest

    @classmethod
    def open(cls, path: str | Path) -> Project:
        """Open a project folder (or its workbench.toml); errors name what is missing."""
        path = Path(path).expanduser()
        if not path.exists():
            raise ProjectNotFound(f"project path does not exist: {path}")
        if path.is_file():
            if path.name != MANIFEST_NAME:
                raise ProjectNotFound(f"{path} is not a {MANIFEST_NAME}")
            path = path.parent
        manifest = path / MANIFEST_NAME
        if not manifest.is_file():
            if manifest.exists():  # a folder, a device, a FIFO (never opened: reading one waits)
                what = "a folder" if manifest.is_dir() else "not a regular file"
                raise ProjectNotFound(
                    f"{manifest} is {what}; a kernel project's {MANIFEST_NAME} is a text file"
                )
            raise ProjectNotFound(
                f"{path} is not a kernel project: it has no {MANIFEST_NAME} "
                f"(see docs/manifest.md, or start from resources/examples/saxpy)"
            )
        path = path.resolve()
        return cls(path, load_manifest(path / MANIFEST_NAME))

    def reread(self) -> Project:
        """This project as its folder holds it now: itself while workbench.toml reads the same
        (keys and their lines), else a new Project; the loader's error when it no longer loads."""
        fresh = Project.open(self.root)
        same = fresh.manifest == self.manifest and [k.where for k in fresh.manifest.kernels] == [
            k.where for k in self.manifest.kernels
        ]
        return self if same else fresh

    @property
    def name(self) -> str:
        return self.manifest.name

    def source_files(self) -> list[Path]:
        """Every source file of the project (sorted), build outputs and temp files excluded."""
        files = []
        for path in self.root.rglob("*"):
            if path.is_file() and path.suffix in SOURCE_SUFFIXES and not is_ignored(path, self.root):
                files.append(path)
        crate = self.manifest.crate_dir
        if crate != self.root and crate.is_dir():
            for path in crate.rglob("*"):
                if path.is_file() and path.suffix in SOURCE_SUFFIXES and not is_ignored(path, crate):
                    files.append(path)
        return sorted(set(files))

    def backend_sources(self, backend: str) -> list[Path]:
        """The sources that shape one backend's build, so an edit rebuilds only what it touches.

        Rust backends read the crate, never the hand-written references; `cuda-c` reads the CUDA
        sources and `wgsl` the WGSL ones. Every backend reads the manifest.
        """
        row = backend_row(backend)
        files = self.source_files()
        if row.source == "reference":
            chosen = [p for p in files if p.suffix in row.source_suffixes]
        else:
            chosen = [p for p in files if p.suffix not in REFERENCE_ONLY_SUFFIXES]
        manifest = self.manifest.path
        return sorted(set(chosen) | {manifest})

    def rust_sources(self) -> list[Path]:
        crate = self.manifest.crate_dir
        return [p for p in self.source_files() if p.suffix == ".rs" and crate in p.parents]

    def main_source(self) -> Path | None:
        """The file an editor opens first: the crate's lib.rs."""
        lib = self.manifest.crate_dir / "src" / "lib.rs"
        if lib.is_file():
            return lib
        sources = self.rust_sources()
        return sources[0] if sources else None

    def source_hash(self, files: list[Path] | None = None) -> str:
        """SHA-256 over the relative paths and contents of the given (default: all) sources."""
        digest = hashlib.sha256()
        for path in files if files is not None else self.source_files():
            try:
                rel = path.relative_to(self.root).as_posix()
            except ValueError:
                rel = path.as_posix()
            digest.update(rel.encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
        return digest.hexdigest()

    def relative(self, path: str | Path) -> str:
        """A path relative to the project root when inside it, else as given."""
        path = Path(path)
        try:
            return path.resolve().relative_to(self.root).as_posix()
        except (ValueError, OSError):
            return str(path)
