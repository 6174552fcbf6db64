"""rustfmt on a kernel crate's Rust files: the window's Format action and `workbench fmt` (Qt-free).

Every file goes through `rustfmt --emit stdout` on standard input, run in the file's folder (so the
crate's `rustfmt.toml` applies) with the crate's edition: the text comes back, and the caller
decides: the window puts it through the editor's undo stack, `fmt` writes it, `fmt --check`
compares. A syntax error is a `Diagnostic` at its line (rustfmt's `<stdin>` renamed to the file).
rustfmt is found by the rule that finds cargo (`build.adapters.host_rust.rustfmt`).
"""

from __future__ import annotations

import os
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from workbench import childproc
from workbench.build.adapters.host_rust import rustfmt
from workbench.build.diagnostics import parse_rustc_text
from workbench.build.install_hints import TOOL_HINTS
from workbench.records import Diagnostic

#: The source the window and the CLI file rustfmt's messages under (a diagnostic's backend).
SOURCE = "rustfmt"
TIMEOUT_S = 30.0
#: Folders of a crate that hold no sources of its own (build outputs, other crates' copies).
SKIPPED = {"target", ".git"}


class RustfmtMissing(RuntimeError):
    """No rustfmt: the message is one line with the install hint."""

    def __init__(self) -> None:
        super().__init__(f"rustfmt is not installed: {TOOL_HINTS['rustfmt']}")


@dataclass
class Formatted:
    """One file's outcome: the formatted text (None when rustfmt refused it) and its messages."""

    path: Path
    text: str | None
    changed: bool = False
    diagnostics: list[Diagnostic] = field(default_factory=list)


def edition_of(crate_dir: Path) -> str:
    """The crate's `package.edition` (2015 when Cargo.toml says none, as cargo reads it)."""
    try:
        data = tomllib.loads((Path(crate_dir) / "Cargo.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "2021"
    edition = (data.get("package") or {}).get("edition", "2015")
    return edition if isinstance(edition, str) else "2021"


def crate_sources(crate_dir: Path) -> list[Path]:
    """The crate's own `.rs` files: everything under its folder but build outputs, dot folders and
    folders holding another crate (a project's copy of `gpu_kernel` is not the user's code)."""
    crate_dir = Path(crate_dir)
    found: list[Path] = []

    def walk(folder: Path) -> None:
        for entry in sorted(folder.iterdir()):
            if entry.is_dir():
                if entry.name in SKIPPED or entry.name.startswith(".") or (entry / "Cargo.toml").exists():
                    continue
                walk(entry)
            elif entry.suffix == ".rs":
                found.append(entry)

    walk(crate_dir)
    return found


def format_text(text: str, path: Path, root: Path, edition: str = "2021") -> Formatted:
    """`text` (the contents of `path`, saved or not) as rustfmt formats it. Raises RustfmtMissing."""
    tool = rustfmt()
    if not tool:
        raise RustfmtMissing()
    path = Path(path)
    cmd = [tool, "--edition", edition, "--emit", "stdout", "--quiet"]
    cwd = path.parent if path.parent.is_dir() else Path(root)  # where rustfmt.toml is looked for
    # The text goes in through a file outside the project: the project's watcher never sees it.
    with tempfile.NamedTemporaryFile("w", suffix=".rs", encoding="utf-8", delete=False) as source:
        source.write(text)
    try:
        done = childproc.capture(cmd, timeout_s=TIMEOUT_S, cwd=cwd, stdin=source.name)
    except TimeoutError as exc:
        return Formatted(path, None, diagnostics=[Diagnostic("error", str(exc), backend=SOURCE)])
    finally:
        os.unlink(source.name)
    if done.returncode != 0:
        stderr = "\n".join(done.stderr).replace("<stdin>", str(path))
        diags = parse_rustc_text(stderr, path.parent, Path(root).resolve(), SOURCE)
        if not diags:
            diags = [
                Diagnostic("error", stderr.strip() or "rustfmt failed", file=_rel(path, root), backend=SOURCE)
            ]
        return Formatted(path, None, diagnostics=diags)
    out = "\n".join(done.stdout) + ("\n" if done.stdout else "")
    return Formatted(path, out, changed=out != text)


def _rel(path: Path, root: Path) -> str:
    try:
        return Path(path).resolve().relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        return str(path)


@dataclass
class ProjectFormat:
    """`format_crate`'s outcome: each file's, and whether anything differed or failed."""

    files: list[Formatted]

    @property
    def changed(self) -> list[Formatted]:
        return [f for f in self.files if f.changed]

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return [d for f in self.files for d in f.diagnostics]


def format_crate(crate_dir: Path, root: Path, write: bool) -> ProjectFormat:
    """Format every source of the crate; with `write`, files rustfmt changes are rewritten (a file
    rustfmt refuses is left as it is). Raises RustfmtMissing."""
    edition = edition_of(crate_dir)
    results = []
    for path in crate_sources(crate_dir):
        try:
            data = path.read_bytes()
            text = data.decode("utf-8")
        except OSError as exc:
            results.append(Formatted(path, None, diagnostics=[
                Diagnostic("error", f"cannot read it: {exc.strerror or exc}", file=_rel(path, root), backend=SOURCE)
            ]))  # fmt: skip
            continue
        except UnicodeDecodeError as exc:  # rustfmt reads UTF-8 only: say which file, line and column
            line = data.count(b"\n", 0, exc.start) + 1
            column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
            results.append(Formatted(path, None, diagnostics=[
                Diagnostic("error", f"not UTF-8 text: byte 0x{data[exc.start]:02x} at line {line}, column "
                           f"{column} ({exc.reason}); rustfmt reads UTF-8 only", file=_rel(path, root),
                           line=line, column=column, backend=SOURCE)
            ]))  # fmt: skip
            continue
        result = format_text(text, path, root, edition)
        if write and result.changed and result.text is not None:
            path.write_text(result.text, encoding="utf-8")
        results.append(result)
    return ProjectFormat(results)
