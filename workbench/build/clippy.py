"""clippy on a kernel crate: its lints as `Diagnostic`s with the lint's name and documentation link
(Qt-free; `workbench lint` and the window's lint after a successful build call `lint_crate`).

The crate is checked for the host, with the features each host backend builds with: plain (the
`cpu` library) and `--features gpu_kernel/sim` (`cpu-sim`, and the crate's tests, whose
dev-dependency turns `sim` on). A lint both passes report is one diagnostic.

Which clippy: `host_rust.clippy()` gives a `cargo-clippy` and the `cargo` of its own toolchain
(rustup's stable here: Debian's cargo has no clippy). clippy-driver is a compiler of its own
version, so it runs in a target dir of its own (`<cache>/targets/clippy`): never the build's,
whose artifacts another rustc made; the build's cargo lock is never waited for either.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from workbench import childproc
from workbench.build import cache
from workbench.build.adapters.host_rust import clippy
from workbench.build.diagnostics import from_cargo_message, parse_cargo_json_line
from workbench.build.install_hints import TOOL_HINTS
from workbench.kernel_api import dependency_path, ensure_crate
from workbench.records import Diagnostic

#: The source the window files lints under (a diagnostic's backend column).
SOURCE = "clippy"
#: The features of each pass: the `cpu` backend's (none) and `cpu-sim`'s.
PASSES: tuple[tuple[str, ...], ...] = ((), ("gpu_kernel/sim",))
TIMEOUT_S = 300.0
LINT_DOCS = "https://rust-lang.github.io/rust-clippy/stable/index.html#{name}"
_ERROR_CODE = re.compile(r"E\d{4}")
_URL = re.compile(r"https://rust-lang\.github\.io/rust-clippy/\S+#[a-z0-9_]+")


class ClippyMissing(RuntimeError):
    """No cargo-clippy: the message is one line with the install hint."""

    def __init__(self) -> None:
        super().__init__(f"clippy is not installed: {TOOL_HINTS['clippy']}")


@dataclass
class LintOutcome:
    ok: bool  # the crate compiled in every pass (lints or not)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    seconds: float = 0.0
    command: list[str] = field(default_factory=list)
    log: list[str] = field(default_factory=list)  # what cargo printed besides its JSON

    def to_dict(self) -> dict:
        return {
            "ok": self.ok,
            "seconds": round(self.seconds, 3),
            "diagnostics": [dict(d.to_dict(), url=lint_url(d)) for d in self.diagnostics],
        }


def is_lint(diag: Diagnostic) -> bool:
    """A lint (clippy's or rustc's, a warning or denied to an error) has the lint's name as its
    code; a compile error has an error code (E0425) or none (a syntax error): the crate did not
    compile, and clippy's lints were never checked."""
    code = diag.code or ""
    return bool(code) and _ERROR_CODE.fullmatch(code) is None


def lint_url(diag: Diagnostic) -> str | None:
    """The lint's documentation page: clippy's own link when it gave one, else the lint index's."""
    found = _URL.search(diag.rendered or "")
    if found:
        return found[0]
    code = diag.code or ""
    return LINT_DOCS.format(name=code.removeprefix("clippy::")) if code.startswith("clippy::") else None


def lint_command(
    crate_dir: Path, features: tuple[str, ...], target_dir: Path
) -> tuple[list[str], dict[str, str]]:
    """The command of one pass and its environment. Raises ClippyMissing."""
    pair = clippy()
    if pair is None:
        raise ClippyMissing()
    cargo, driver = pair
    cmd = [driver, "clippy", "--offline", "--message-format=json", "--target-dir", str(target_dir)]
    cmd += ["--all-targets", "--features", ",".join(features)] if features else ["--lib"]
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("RUSTC", "RUSTDOC", "RUSTC_WORKSPACE_WRAPPER", "RUSTC_WRAPPER")
    }
    # cargo-clippy runs $CARGO check with itself as the workspace's compiler wrapper.
    env.update({"CARGO": cargo, "CARGO_TERM_COLOR": "never", "CARGO_TERM_PROGRESS_WHEN": "never"})
    return cmd, env


def lint_crate(crate_dir: Path, root: Path, cache_dir: str | Path | None = None,
               check=lambda: None) -> LintOutcome:  # fmt: skip
    """Both passes over the crate; `check()` is polled (it raises to stop). Raises ClippyMissing."""
    crate_dir, root = Path(crate_dir), Path(root).resolve()
    # The kernel API crate first, as every build does: placed where a copy (`cp -r`) lost it, else
    # one diagnostic naming the cause and the fix, never cargo's "failed to read …/Cargo.toml".
    problem = ensure_crate(crate_dir)
    if problem is not None:
        return LintOutcome(ok=False, diagnostics=[problem.diagnostic(SOURCE, root)])
    api = _folder_in(dependency_path(crate_dir), root)
    target_dir = cache.target_dir(cache.cache_root(cache_dir), SOURCE)
    target_dir.mkdir(parents=True, exist_ok=True)
    outcome = LintOutcome(ok=True)
    seen: set[tuple] = set()
    start = time.monotonic()
    deadline = start + TIMEOUT_S

    def limited() -> None:
        check()
        if time.monotonic() > deadline:
            raise TimeoutError(f"clippy did not finish within {TIMEOUT_S:g} s")

    for features in PASSES:
        cmd, env = lint_command(crate_dir, features, target_dir)
        outcome.command = cmd

        def on_line(stream: str, line: str) -> None:
            record = parse_cargo_json_line(line) if stream == "stdout" else None
            if record is None:
                outcome.log.append(line)
                return
            if record["reason"] == "build-finished" and not record.get("success"):
                outcome.ok = False
            if record["reason"] != "compiler-message":
                return
            diag = from_cargo_message(record, root, SOURCE)
            if diag is None or diag.file is None or Path(diag.file).is_absolute():
                return  # a summary, or a file outside the project
            if api is not None and Path(diag.file).is_relative_to(api):
                return  # the kernel API crate's own code (the project's copy of it) is not the user's
            key = (diag.severity, diag.message, diag.file, diag.line, diag.column)
            if key in seen:
                return
            seen.add(key)
            url = lint_url(diag)
            if diag.code:
                diag.message = f"{diag.message} [{diag.code}]" + (f"\n{url}" if url else "")
            outcome.diagnostics.append(diag)

        done = childproc.stream(cmd, cwd=crate_dir, env=env, check=limited, on_line=on_line)
        if done.returncode != 0:
            outcome.ok = False
    outcome.seconds = time.monotonic() - start
    return outcome


def _folder_in(path: Path | None, root: Path) -> Path | None:
    """`path` relative to the project's `root` (as diagnostics name files), None when outside it."""
    if path is None:
        return None
    for candidate in (Path(os.path.normpath(path.absolute())), path.parent.resolve() / path.name):
        try:
            return candidate.relative_to(root)
        except ValueError:
            continue
    return None
