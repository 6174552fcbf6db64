"""What `workbench.toml` promises that its sources must keep: checks beyond the loader, each at its line.

The loader (`workbench.manifest`) reads the manifest alone; these read the sources it names too:

- a buffer with no `binding` while a wgpu backend is listed (a `[kernel.reference] wgsl` file, a
  `[kernel.entry] rust-gpu` entry or `[backends.rust-gpu] prebuilt`): wgpu places every buffer at
  its binding in bind group 0, so the run could only fail;
- `[kernel.launch] threads` (or `[kernel.launch.wgsl] threads`) that differ from the WGSL
  reference entry's `@workgroup_size(...)`, at the default sizes and tunables: the grid is counted
  in workgroups of the manifest's size, so the shader would run the wrong number of invocations.

`problems(project)` lists them as `ManifestError`s (file, line, key); `on_disk(project)` re-reads
the manifest as the folder holds it now and turns whatever is wrong into `Diagnostic`s at their
lines (`workbench check`, the live loop and the window's Diagnostics list all use these).
"""

from __future__ import annotations

import re
from pathlib import Path

from workbench.backends import BACKEND_ROWS
from workbench.errors import ManifestError, WorkbenchError
from workbench.manifest import MANIFEST_NAME, Kernel, Manifest
from workbench.project import Project
from workbench.records import Diagnostic
from workbench.runtimes_table import RUNTIME_TABLE

#: The `backend` of manifest diagnostics: the Diagnostics list groups rows by it.
MANIFEST_SOURCE = "manifest"


_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_WORKGROUP = re.compile(r"@\s*workgroup_size\s*\(([^)]*)\)((?:\s*@\s*\w+(?:\s*\([^)]*\))?)*)\s*fn\s+(\w+)")
_CONSTANT = re.compile(r"\b(?:override|const)\s+(\w+)\s*(?::\s*\w+\s*)?=\s*([0-9][0-9a-fA-Fx]*[ui]?)\s*;")


def _blank_comments(text: str) -> str:
    """`text` with its comments turned into spaces (newlines kept, so lines still count)."""
    return _COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def _integer(literal: str) -> int | None:
    try:
        return int(literal.rstrip("ui"), 0)
    except ValueError:
        return None


def workgroup_size(
    text: str, entry: str, symbols: dict[str, int | float]
) -> tuple[tuple[int, int, int], int] | None:
    """(`@workgroup_size` of compute entry `entry` as three integers, its 1-based line), or None
    when the entry is not there or a dimension is not known here (an override no tunable sets
    and no literal defaults). A name among `symbols` (a tunable) takes its value, as the wgsl
    build and the runtime give it to the override."""
    code = _blank_comments(text)
    constants = {name: _integer(value) for name, value in _CONSTANT.findall(code)}
    for match in _WORKGROUP.finditer(code):
        if match.group(3) != entry:
            continue
        dims: list[int] = []
        for part in (p.strip() for p in match.group(1).split(",") if p.strip()):
            if part in symbols and float(symbols[part]).is_integer():
                value: int | None = int(symbols[part])
            elif part in constants:
                value = constants[part]
            else:
                value = _integer(part)
            if value is None:
                return None
            dims.append(value)
        if not 1 <= len(dims) <= 3:
            return None
        line = code.count("\n", 0, match.start()) + 1
        return (*dims, *[1] * (3 - len(dims))), line  # type: ignore[return-value]
    return None


def wgpu_backends(manifest: Manifest, kernel: Kernel) -> list[str]:
    """The backends `kernel` lists whose runtime places buffers at bindings (the runtime table's
    `buffer_bindings`: wgpu): a reference it names (WGSL), a crate entry (rust-gpu) or prebuilt
    artifacts; references first, as the message names them."""
    listed = []
    for row in sorted(BACKEND_ROWS, key=lambda r: r.source != "reference"):
        if not RUNTIME_TABLE[row.runtime].buffer_bindings:
            continue
        if row.source == "reference":
            named = row.name in kernel.reference
        else:
            named = row.name in kernel.entry or bool(manifest.backend_settings(row.name).get("prebuilt"))
        if named:
            listed.append(row.name)
    return listed


def _binding_problems(manifest: Manifest, kernel: Kernel) -> list[ManifestError]:
    backends = wgpu_backends(manifest, kernel)
    if not backends:
        return []
    names = " and ".join(backends)
    return [
        kernel.where.error(
            ("arg", buffer.name, "binding"),
            f"buffer {buffer.name!r} has no binding, which {names} need{'s' if len(backends) == 1 else ''} "
            f"(wgpu places each buffer at its binding in bind group 0: set binding = N as the "
            f"shader's @binding(N))",
        )
        for buffer in kernel.buffers
        if buffer.binding is None
    ]


def _workgroup_problems(manifest: Manifest, kernel: Kernel) -> list[ManifestError]:
    rel = kernel.reference.get("wgsl")
    if rel is None:
        return []
    try:
        text = (manifest.root / rel).read_text(encoding="utf-8")
        symbols = kernel.symbols()
        threads, _grid = kernel.geometry(symbols, "wgsl")
    except (OSError, UnicodeDecodeError, ValueError, ArithmeticError):
        return []  # unreadable shader or sizes: the build and the loader say so in their words
    found = workgroup_size(text, kernel.entry_for("wgsl"), symbols)
    if found is None or found[0] == threads:
        return []
    size, line = found
    key = ("launch", "wgsl", "threads") if "wgsl" in kernel.launch.backends else ("launch", "threads")

    def spell(dims: tuple[int, ...]) -> str:  # as written: trailing 1s left out
        shown = list(dims)
        while len(shown) > 1 and shown[-1] == 1:
            shown.pop()
        return "[" + ", ".join(map(str, shown)) + "]"

    return [
        kernel.where.error(
            key,
            f"threads {spell(threads)} differ from {rel}:{line} @workgroup_size{spell(size).replace('[', '(').replace(']', ')')} "
            f"of entry {kernel.entry_for('wgsl')!r}: the grid counts workgroups of the manifest's threads "
            f"(make them equal, or give wgsl its own [kernel.launch.wgsl] threads)",
        )
    ]


def problems(project: Project) -> list[ManifestError]:
    """Every way the loaded manifest contradicts its sources, in manifest order (empty: none)."""
    manifest = project.manifest
    found: list[ManifestError] = []
    for kernel in manifest.kernels:
        found += _binding_problems(manifest, kernel)
        found += _workgroup_problems(manifest, kernel)
    return sorted(found, key=lambda e: e.line or 0)


def diagnostic(error: WorkbenchError, root: Path) -> Diagnostic:
    """A manifest error as a Diagnostic at its line of workbench.toml (path relative to `root`)."""
    if isinstance(error, ManifestError):
        path = Path(error.path)
        try:
            file = path.resolve().relative_to(root.resolve()).as_posix()
        except (ValueError, OSError):
            file = str(path)
        message = f"{error.key}: {error.message}" if error.key else error.message
        return Diagnostic(
            "error", message, file=file, line=error.line, rendered=str(error), backend=MANIFEST_SOURCE
        )
    return Diagnostic("error", str(error), file=MANIFEST_NAME, rendered=str(error), backend=MANIFEST_SOURCE)


def on_disk(project: Project) -> tuple[Project | None, list[Diagnostic]]:
    """`project` as its folder holds it now, and what is wrong with its manifest as diagnostics.

    The same `project` comes back when workbench.toml still reads the same; a new one when it
    changed; None when it no longer loads (one diagnostic: the loader's error at its line)."""
    try:
        fresh = project.reread()
    except WorkbenchError as exc:
        return None, [diagnostic(exc, project.root)]
    return fresh, [diagnostic(e, project.root) for e in problems(fresh)]
