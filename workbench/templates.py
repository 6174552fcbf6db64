"""New kernel projects from templates: `create_project(name, template, destination)` (Qt-free).

A template is a complete kernel project named after itself: `blank` (resources/templates) or one of
the bundled examples. The copy is renamed throughout, so it is a project of its own: the manifest's
project and kernel, the crate (package and lib), the entry points, the reference files and every
name inside them that contains the template's name (`saxpy_cpu` -> `vadd_cpu`, `SAXPY` -> `VADD`).
Otherwise its runs would be recorded as the template's and compared with them. `workbench new` and
the window's File > New kernel project both call this.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from workbench import kernel_api
from workbench.errors import WorkbenchError
from workbench.manifest import MANIFEST_NAME, load_manifest
from workbench.project import examples_dir
from workbench.trust_store import set_trusted
from workbench.user_folders import make_writable

DEFAULT_TEMPLATE = "blank"
#: Folders and files a template's copy leaves out (build outputs, the user-copy marker, dot files).
IGNORED = shutil.ignore_patterns("target", ".*")

# The name becomes a Rust crate, lib and function name and a CUDA C function name.
NAME_PATTERN = re.compile(r"[a-z][a-z0-9_]*")
MAX_NAME = 64
RUST_KEYWORDS = frozenset(
    "as async await break const continue crate dyn else enum extern false fn for gen if impl in "
    "let loop match mod move mut pub ref return self static struct super trait true try type unsafe "
    "use where while abstract become box do final macro override priv typeof unsized virtual yield "
    "union".split()
)
#: Crates every Rust program can already name, which Cargo refuses as package names.
RESERVED_CRATES = frozenset("std core alloc proc_macro test build deps examples".split())
#: Beside the kernel crate in every project: a project of this name would depend on itself.
KERNEL_API_NAME = kernel_api.CRATE_NAME
#: Room the hidden staging folder's name takes beyond the destination's (`.NAME.` + 8 characters).
STAGING_EXTRA = 10
C_KEYWORDS = frozenset(
    "auto bool case char class default delete double export float friend goto inline int long "
    "main namespace new operator private protected public register restrict short signed sizeof "
    "switch template this typedef typename unsigned using void volatile".split()
)
#: Device names Windows will not give a folder.
WINDOWS_DEVICES = frozenset(
    ["con", "prn", "aux", "nul", *(f"com{i}" for i in range(1, 10)), *(f"lpt{i}" for i in range(1, 10))]
)


def templates_dir() -> Path:
    """The templates that are not examples (resources/templates)."""
    return examples_dir().parent / "templates"


def template_names() -> list[str]:
    """`blank` first, then the bundled examples by name."""
    found = {}
    for root in (templates_dir(), examples_dir()):
        if root.is_dir():
            for path in sorted(root.iterdir()):
                if (path / MANIFEST_NAME).is_file():
                    found.setdefault(path.name, path)
    return sorted(found, key=lambda name: (name != DEFAULT_TEMPLATE, name))


def template_dir(template: str) -> Path:
    """The folder of the template called `template`; an unknown name lists the known ones."""
    for root in (templates_dir(), examples_dir()):
        path = root / template
        if (path / MANIFEST_NAME).is_file():
            return path
    raise WorkbenchError(f"unknown template {template!r}; choose one of: {', '.join(template_names())}")


def name_problem(name: str) -> str | None:
    """Why `name` cannot name a kernel project (a crate, a Rust and a CUDA C function), or None."""
    if not name:
        return "the project name is empty"
    suggestion = re.sub(r"[^a-z0-9_]", "_", name.lower())
    if not suggestion[:1].isalpha():
        suggestion = f"k_{suggestion}"
    if not NAME_PATTERN.fullmatch(name):
        return (
            f"project name {name!r} is not a Rust identifier in snake case (lower-case letters, digits "
            f"and '_', starting with a letter); e.g. {suggestion!r}"
        )
    if len(name) > MAX_NAME:
        return f"project name {name!r} is longer than {MAX_NAME} characters"
    if name == KERNEL_API_NAME:
        return (
            f"project name {name!r} is the kernel API crate's name: the project's crate depends on "
            f"{KERNEL_API_NAME}, and cargo cannot build a package that depends on its own name; "
            f"choose another, e.g. 'my_kernel'"
        )
    for words, what in (
        (RUST_KEYWORDS, "a Rust keyword"),
        (RESERVED_CRATES, "a name Cargo reserves"),
        (C_KEYWORDS, "a C/CUDA keyword (the cuda-c kernel is a C function of that name)"),
        (WINDOWS_DEVICES, "a device name on Windows"),
    ):
        if name in words:
            return f"project name {name!r} is {what}; choose another, e.g. {name + '_kernel'!r}"
    return None


def _limit(path: Path, name: str, default: int) -> int:
    """`os.pathconf` of the nearest existing folder above `path` (the file system's own limit)."""
    for folder in [path, *path.parents]:
        try:
            if folder.is_dir():
                return os.pathconf(folder, name)
        except (OSError, ValueError):
            continue
    return default


def length_problem(destination: Path, deepest: str = "") -> str | None:
    """Why the system cannot hold a project at `destination` (absolute): a folder name longer than
    NAME_MAX, or the path of its deepest file (`deepest`, relative) longer than PATH_MAX; None if
    it can. Checked before anything is made, so the error names the limit, not an OSError."""
    name_max = _limit(destination.parent, "PC_NAME_MAX", 255)
    for part in destination.parts[1:]:
        size = len(os.fsencode(part))
        if size > name_max:
            return (f"the folder name {part[:40]}… is {size} bytes, over this file system's NAME_MAX "
                    f"of {name_max}; choose a shorter name")  # fmt: skip
    if len(os.fsencode(destination.name)) + STAGING_EXTRA > name_max:
        return (f"the folder name {destination.name[:40]}… is too long: the project is made in a hidden "
                f"folder named after it with {STAGING_EXTRA} more characters, over NAME_MAX {name_max}")  # fmt: skip
    path_max = _limit(destination.parent, "PC_PATH_MAX", 4096)
    total = len(os.fsencode(str(destination / deepest))) + STAGING_EXTRA + 1
    if total >= path_max:
        return (f"the path {str(destination)[:60]}… is {len(os.fsencode(str(destination)))} bytes; with "
                f"the project's deepest file ({deepest or 'none'}) it would be {total}, over this system's "
                f"PATH_MAX of {path_max}; choose a shorter location")  # fmt: skip
    return None


def check_destination(destination: Path) -> None:
    """Refuse a destination that is a file or a folder with something in it."""
    try:
        if destination.is_dir():
            if any(destination.iterdir()):
                raise WorkbenchError(f"{destination} already exists and is not empty; choose a new folder")
        elif destination.exists() or destination.is_symlink():
            raise WorkbenchError(f"{destination} already exists and is not a folder; choose a new folder")
    except OSError as exc:  # ENAMETOOLONG, EACCES, ELOOP ...: said, with what to do
        raise WorkbenchError(f"cannot use {destination} for a new project: {exc.strerror or exc}") from exc


def rename(text: str, old: str, new: str) -> str:
    """Every occurrence of `old` in `text`, in any case, becomes `new` in the same case."""

    def same_case(match: re.Match) -> str:
        found = match.group(0)
        if found.isupper():
            return new.upper()
        if found[:1].isupper():
            return new[:1].upper() + new[1:]
        return new

    return re.sub(re.escape(old), same_case, text, flags=re.IGNORECASE)


def create_project(
    name: str, template: str = DEFAULT_TEMPLATE, destination: str | Path | None = None, *, trust: bool = True
) -> Path:
    """Copy `template` to `destination` (default ./NAME) as the project `name`; returns its root.

    The copy is made and renamed in a hidden folder beside `destination` and moved into place
    last, so a failure leaves nothing half made. It is trusted (`trust_store`) unless `trust` is
    False: it holds nothing but our own template.
    """
    problem = name_problem(name)
    if problem:
        raise WorkbenchError(problem)
    source = template_dir(template)
    destination = Path(destination if destination is not None else name).expanduser().absolute()
    crate = kernel_api.dependency_path(load_manifest(source / MANIFEST_NAME).crate_dir)
    deepest = _deepest_file(source, crate)
    problem = length_problem(destination, deepest)
    if problem:
        raise WorkbenchError(problem)
    check_destination(destination)
    old = _project_name(source)
    try:
        destination.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{destination.name}.", dir=destination.parent))
    except OSError as exc:
        raise WorkbenchError(f"cannot create {destination}: {exc}") from exc
    try:
        work = staging / "project"
        # The kernel API crate is left out of the copy and the rename (its sources name examples),
        # then placed afresh: a real copy of the workbench's own, so `cargo build` works in the
        # project as it is and wherever it is copied (docs/cpu-sim.md).
        shutil.copytree(source, work, ignore=_ignore_crate(crate))
        make_writable(work)  # the rename below writes these files
        _rename_tree(work, old, name)
        _sort_lock_packages(work / "Cargo.lock")
        problem = kernel_api.ensure_crate(load_manifest(work / MANIFEST_NAME).crate_dir)
        if problem is not None:
            raise WorkbenchError(f"cannot make {destination}: {problem.message}")
        if destination.is_dir():  # empty (checked above): kept, so a shell inside it stays there
            for entry in work.iterdir():
                os.rename(entry, destination / entry.name)
        else:
            os.rename(work, destination)
    except OSError as exc:
        raise WorkbenchError(f"cannot create {destination}: {exc}") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if trust:
        set_trusted(destination)
    return destination.resolve()


def _ignore_crate(crate: Path | None):
    """`IGNORED`, and the kernel API crate's folder (`crate`, as the template names it)."""

    def ignore(folder: str, names: list[str]) -> set[str]:
        left_out = set(IGNORED(folder, names))
        if crate is not None and Path(os.path.normpath(folder)) == crate.parent and crate.name in names:
            left_out.add(crate.name)
        return left_out

    return ignore


def _deepest_file(source: Path, crate: Path | None) -> str:
    """The longest relative path the new project will hold (its files and the placed crate's)."""
    paths = [p.relative_to(source) for p in source.rglob("*") if p.is_file() and "target" not in p.parts]
    shipped = kernel_api.crate_dir()
    if crate is not None and shipped.is_dir():
        base = crate.relative_to(source) if crate.is_relative_to(source) else Path(crate.name)
        paths += [base / p.relative_to(shipped) for p in shipped.rglob("*") if p.is_file()]
    return max((p.as_posix() for p in paths), key=len, default="")


def _project_name(root: Path) -> str:
    return load_manifest(root / MANIFEST_NAME).name


def _sort_lock_packages(lock: Path) -> None:
    """Put Cargo.lock's `[[package]]` entries back in cargo's order (by name, then version) after
    the rename: left where the template's name sorted, cargo rewrites the file at the first build,
    and the window's folder watch takes that for an edit and restarts the first Run."""
    if not lock.is_file():
        return
    head, found, rest = lock.read_text(encoding="utf-8").partition("\n[[package]]\n")
    if not found:
        return
    entries = ("[[package]]\n" + rest).rstrip("\n").split("\n\n")
    if not all(entry.startswith("[[package]]\n") for entry in entries):
        return  # not the shape cargo writes (e.g. a [metadata] table): left as it is

    def key(entry: str) -> tuple[str, str]:
        fields = dict(re.findall(r'(?m)^(name|version) = "([^"]*)"$', entry))
        return fields.get("name", ""), fields.get("version", "")

    lock.write_text(head + "\n" + "\n\n".join(sorted(entries, key=key)) + "\n", encoding="utf-8")


def _rename_tree(root: Path, old: str, new: str) -> None:
    """Rename `old` to `new` inside every text file under `root` and in every file or folder name."""
    for path in sorted(root.rglob("*"), key=lambda p: len(p.parts), reverse=True):  # deepest first
        if path.is_file() and not path.is_symlink():
            try:
                text = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                text = None  # a binary file is copied as it is
            if text is not None and old.lower() in text.lower():
                path.write_text(rename(text, old, new), encoding="utf-8")
        if old.lower() in path.name.lower():
            path.rename(path.with_name(rename(path.name, old, new)))
