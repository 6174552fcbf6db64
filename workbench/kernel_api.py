"""The kernel API crate shipped with the workbench (`resources/crates/gpu_kernel`) and the projects
that use it (Qt-free).

Examples and templates name it as a path dependency in their own folder,
`gpu_kernel = { path = "gpu_kernel" }`; in a source checkout `gpu_kernel` there is a symbolic link
to `../../crates/gpu_kernel` (one crate to edit), in the installed app a real copy. A project may
arrive without it: copied with `cp -r` (the link kept, now dangling), zipped, cloned without the
crate. So every build with cargo and `workbench check` first look at the crate the project's
Cargo.toml names (`check_crate`), and a build places this workbench's own copy where nothing is
(`ensure_crate`): a missing folder, or a link that leads nowhere. It never writes over anything
else. A crate that is there but broken, or declares another kernel API version
(`[package.metadata.workbench] kernel-api` in its Cargo.toml, against `KERNEL_API_VERSION`), is one
`CrateProblem` naming the cause and the fix (docs/cpu-sim.md, "Where the crate comes from").

A cdylib built on the kernel API exports `HOST_ABI_SYMBOL`; the cpu runtime then passes a `Launch`
record (grid, threads, buffer lengths, checks, report) before the manifest's arguments
(`run/runtimes/cpu_launch.py`), whatever wrote the build record.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import threading
import tomllib
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

CRATE_NAME = "gpu_kernel"
#: The symbol (a u32: the launch record's version) every cdylib built on the kernel API exports.
HOST_ABI_SYMBOL = "gpu_kernel_host_abi"
#: The launch record's version this workbench passes.
HOST_ABI_VERSION = 2
#: The cargo feature that turns on the simulator's checks (the `cpu-sim` backend builds with it).
SIM_FEATURE = f"{CRATE_NAME}/sim"
#: The kernel API version this workbench's crate has, and the one a project's crate must declare in
#: its Cargo.toml: `[package.metadata.workbench] kernel-api = 1`. Raise it (here and in the crate)
#: when a kernel written for the old crate no longer builds or runs the same with the new one.
KERNEL_API_VERSION = 1
#: Where the crate declares it: `[package.metadata.<METADATA_TABLE>] <VERSION_KEY> = N`.
METADATA_TABLE, VERSION_KEY = "workbench", "kernel-api"

#: Each manifest element type as ctypes passes it (the cpu runtime's scalars, the debug launcher's
#: buffers).
ELEMENT_CTYPES = {
    "f32": ctypes.c_float,
    "f64": ctypes.c_double,
    "i32": ctypes.c_int32,
    "u32": ctypes.c_uint32,
    "i64": ctypes.c_int64,
    "u64": ctypes.c_uint64,
}


class Launch(ctypes.Structure):
    """`gpu_kernel::host::Launch` (the same `#[repr(C)]` layout): what an entry on the kernel API
    takes first. Here, not in `run/runtimes/cpu_launch.py`, so the debug launcher reads it without
    numpy."""

    _fields_ = [
        ("grid", ctypes.c_uint32 * 3),
        ("threads", ctypes.c_uint32 * 3),
        ("lens", ctypes.POINTER(ctypes.c_uint64)),
        ("nbufs", ctypes.c_uint32),
        ("checks", ctypes.c_uint32),
        ("workers", ctypes.c_uint32),
        ("report", ctypes.c_void_p),
        ("report_cap", ctypes.c_uint64),
        ("report_len", ctypes.c_uint64),
        # cpu-sim's trace of one invocation (`workbench.run.sim_trace`): on, workgroup, local id.
        ("trace", ctypes.c_uint32),
        ("trace_group", ctypes.c_uint32 * 3),
        ("trace_local", ctypes.c_uint32 * 3),
        # cpu-sim's last writer of every output element (`workbench.run.sim_writers`): on, and per
        # buffer (manifest order) the arrays it goes to (null for inputs).
        ("writers", ctypes.c_uint32),
        ("writer_last", ctypes.POINTER(ctypes.c_void_p)),
        ("writer_count", ctypes.POINTER(ctypes.c_void_p)),
    ]


def crate_dir() -> Path:
    """The crate as the install ships it."""
    from workbench.project import examples_dir

    return examples_dir().parent / "crates" / CRATE_NAME


def _dependency_tables(data: dict) -> list[dict]:
    tables = [data.get("dependencies") or {}]
    for target in (data.get("target") or {}).values():
        if isinstance(target, dict):
            tables.append(target.get("dependencies") or {})
    return [t for t in tables if isinstance(t, dict)]


def _read_toml(path: Path) -> dict | None:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError, ValueError):
        return None


def uses_kernel_api(crate: Path) -> bool:
    """Whether the crate at `crate` (its folder) depends on `gpu_kernel` (any table of dependencies)."""
    data = _read_toml(Path(crate) / "Cargo.toml")
    if data is None:
        return False
    return any(CRATE_NAME in t for t in _dependency_tables(data))


def dependency_path(crate: Path) -> Path | None:
    """Where the kernel crate at `crate` (its folder) has cargo look for `gpu_kernel`: its path
    dependency (`gpu_kernel = { path = "..." }`, or renamed with `package = "gpu_kernel"`), as
    written, relative paths joined to `crate` without following links. None when it names no such
    path (no dependency on the API, or one from a registry or git: cargo's own business)."""
    data = _read_toml(Path(crate) / "Cargo.toml")
    if data is None:
        return None
    for table in _dependency_tables(data):
        for name, spec in table.items():
            if not isinstance(spec, dict) or not isinstance(spec.get("path"), str):
                continue
            if name == CRATE_NAME or spec.get("package") == CRATE_NAME:
                return Path(os.path.normpath(Path(crate) / spec["path"]))
    return None


def _dependency_line(crate: Path) -> int | None:
    """The line of the kernel crate's Cargo.toml that names `gpu_kernel` (for the diagnostic)."""
    try:
        lines = (Path(crate) / "Cargo.toml").read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    for number, line in enumerate(lines, 1):
        if line.lstrip().startswith((CRATE_NAME, f'"{CRATE_NAME}"')) and "=" in line:
            return number
    return None


@dataclass(frozen=True)
class CrateProblem:
    """Why the project's `gpu_kernel` cannot be built with, and how to fix it: one sentence each.

    `placeable`: nothing is there yet (a missing folder or a link that leads nowhere), so a build
    places the workbench's copy (`ensure_crate`); `workbench check` only says so."""

    path: Path  # where the project's Cargo.toml has cargo look for the crate
    cause: str
    fix: str
    manifest: Path  # the kernel crate's Cargo.toml, which names the dependency
    line: int | None = None
    placeable: bool = False

    @property
    def message(self) -> str:
        return f"the kernel API crate {self.path}: {self.cause}; {self.fix}"

    def diagnostic(self, backend: str, root: Path):
        """As a build's error diagnostic, located at the dependency's line of Cargo.toml."""
        from workbench.records import Diagnostic

        try:
            where = self.manifest.resolve().relative_to(Path(root).resolve()).as_posix()
        except (ValueError, OSError):
            where = str(self.manifest)
        return Diagnostic("error", self.message, file=where, line=self.line,
                          rendered=f"error: {self.message}", backend=backend)  # fmt: skip


def declared_version(data: dict) -> int | None:
    """The kernel API version a crate's parsed Cargo.toml declares (None: it declares none)."""
    table: object = data
    for key in ("package", "metadata", METADATA_TABLE):
        table = table.get(key) if isinstance(table, dict) else None
    value = table.get(VERSION_KEY) if isinstance(table, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def check_crate(crate: Path) -> CrateProblem | None:
    """What is wrong with the `gpu_kernel` the kernel crate at `crate` names, without writing
    anything (None: nothing, or no path dependency on it)."""
    crate = Path(crate)
    path = dependency_path(crate)
    if path is None:
        return None
    manifest = crate / "Cargo.toml"

    def problem(cause: str, fix: str, placeable: bool = False) -> CrateProblem:
        return CrateProblem(path, cause, fix, manifest, _dependency_line(crate), placeable)

    aside = (
        f"move it aside (e.g. `mv {path} {path}.old`) and build again: the workbench then places its own copy"
    )
    if path.is_symlink() and not path.exists():
        return problem(
            f"it is a link to {os.readlink(path)}, which does not exist here (a copy made with `cp -r`, "
            "a zip or a clone without the crate)",
            "a build replaces the link with a copy of the workbench's crate",
            placeable=True,
        )
    if not path.exists():
        try:
            reachable = path.parent.is_dir()
        except OSError:
            reachable = False
        return problem(
            "it does not exist",
            "a build places a copy of the workbench's crate there"
            if reachable
            else f"its folder {path.parent} does not exist either: correct `path` in {manifest}",
            placeable=reachable,
        )
    if not path.is_dir():
        return problem("it is a file, not the crate's folder", aside)
    cargo_toml = path / "Cargo.toml"
    try:
        text = cargo_toml.read_text(encoding="utf-8")
    except FileNotFoundError:
        return problem("it has no Cargo.toml", aside)
    except (OSError, UnicodeDecodeError) as exc:
        return problem(f"its Cargo.toml cannot be read ({exc.__class__.__name__}: {exc})",
                       f"make {cargo_toml} readable, or {aside}")  # fmt: skip
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return problem(f"its Cargo.toml is not valid TOML ({exc})", f"correct {cargo_toml}, or {aside}")
    package = data.get("package")
    name = package.get("name") if isinstance(package, dict) else None
    if name != CRATE_NAME:
        return problem(
            f"its Cargo.toml is the package {name!r}, not {CRATE_NAME!r}" if name else
            f"its Cargo.toml has no [package] name {CRATE_NAME!r}", aside,
        )  # fmt: skip
    if not (path / "src" / "lib.rs").is_file():
        return problem("it has no src/lib.rs", aside)
    declared = declared_version(data)
    # A crate that declares no version was copied before versions were declared: version 1.
    version = declared if declared is not None else 1
    if version != KERNEL_API_VERSION:
        newer = version > KERNEL_API_VERSION
        said = f"version {declared}" if declared is not None else "version 1 (it declares none)"
        return problem(
            f"it is kernel API {said}, and this workbench builds version {KERNEL_API_VERSION}",
            (
                "update the workbench, or "
                if newer
                else "port the kernel to the new API (docs/cpu-sim.md), or "
            )
            + aside,
        )
    return None


#: One placement at a time in this process (two backends of one build start together).
_PLACING = threading.Lock()


def ensure_crate(crate: Path, say: Callable[[str], None] = lambda line: None) -> CrateProblem | None:
    """Make sure the kernel crate at `crate` has the `gpu_kernel` it names; None when it has.

    Where nothing is (`CrateProblem.placeable`: no folder, or a link that leads nowhere), a copy of
    this workbench's crate is placed (made beside it and renamed into place, so a concurrent build
    sees no half copy) and `say` tells so; nothing that exists is ever written over. Otherwise the
    problem is returned for the build to report."""
    found = check_crate(crate)
    if found is None or not found.placeable:
        return found
    with _PLACING:
        found = check_crate(crate)  # another backend of this build may have placed it meanwhile
        if found is None or not found.placeable:
            return found
        return _place(found, say)


def _place(found: CrateProblem, say: Callable[[str], None]) -> CrateProblem | None:
    from workbench.user_folders import make_writable  # as `examples_dir` above: imported where used

    source = crate_dir()
    if not (source / "Cargo.toml").is_file():
        return CrateProblem(found.path, f"{found.cause}, and the workbench's own crate is missing ({source})",
                            "the installation is incomplete: reinstall the workbench", found.manifest,
                            found.line)  # fmt: skip
    dest = found.path
    staging = dest.with_name(f".{dest.name}.tmp-{uuid.uuid4().hex[:8]}")
    was_link = os.readlink(dest) if dest.is_symlink() else None
    try:
        shutil.copytree(source, staging, ignore=shutil.ignore_patterns("target", ".*"))
        make_writable(staging)
        if was_link is not None:
            try:
                dest.unlink()  # leads nowhere: nothing of the user's is lost
            except FileNotFoundError:
                pass
        os.rename(staging, dest)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        if dest.is_dir() and check_crate(found.manifest.parent) is None:
            return None  # a concurrent process placed it first
        return CrateProblem(dest, f"{found.cause}, and a copy cannot be placed there ({exc})",
                            f"copy {source} to {dest} yourself, or build a copy of the project in a "
                            "folder you can write", found.manifest, found.line)  # fmt: skip
    how = (
        f"replaced the link {dest.name} -> {was_link} (it leads nowhere here)"
        if was_link
        else "it was missing"
    )
    say(f"placed a copy of the workbench's kernel API crate (version {KERNEL_API_VERSION}) in {dest}: {how}")
    return None
