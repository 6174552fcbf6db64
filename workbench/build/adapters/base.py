"""The interface every toolchain adapter implements, and the request it builds from."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench import childproc
from workbench.backends import backend_row
from workbench.build.process import Budget, ProcessResult, run_command
from workbench.kernel_api import ensure_crate
from workbench.project import Project
from workbench.records import Diagnostic, ToolchainInfo


@dataclass
class BuildRequest:
    """Everything one backend build needs.

    `out_dir` is this build's own staging artifact folder (renamed into the cache when the build
    succeeds) and `work_dir` its own scratch folder (removed afterwards): nothing a build writes
    is shared with another build, except cargo's `target_dir`, which the builder holds locked
    (`cache.target_lock`) for adapters with `shares_target_dir`."""

    project: Project
    backend: str
    toolchain: ToolchainInfo
    target: str
    flags: list[str]
    tunables: dict[str, Any]
    out_dir: Path
    target_dir: Path  # cargo target dir for this backend, shared across projects (in the cache)
    work_dir: Path | None = None  # private scratch folder of this build
    budget: Budget = field(default_factory=Budget)
    on_output: Callable[[str], None] = lambda line: None
    on_diagnostic: Callable[[Diagnostic], None] = lambda diag: None
    log: list[str] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def output(self, line: str) -> None:
        self.log.append(line)
        self.on_output(line)

    def diagnostic(self, diag: Diagnostic) -> None:
        diag.backend = diag.backend or self.backend
        self.diagnostics.append(diag)
        self.on_diagnostic(diag)

    def run(
        self,
        cmd: list[str],
        *,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        on_stdout: Callable[[str], bool] | None = None,
    ) -> ProcessResult:
        """Run a toolchain command; `on_stdout(line)` returns True when it consumed the line."""
        self.output("$ " + " ".join(cmd))

        def on_line(stream: str, line: str) -> None:
            if stream == "stdout" and on_stdout is not None and on_stdout(line):
                return
            self.output(line)

        return run_command(cmd, cwd=cwd, env=env, budget=self.budget, on_line=on_line)

    def tunable_env(self) -> dict[str, str]:
        """Tunables reach Rust code as env vars `WB_TUNABLE_<NAME>` (docs/manifest.md, "Tunables":
        read with `option_env!` and parsed in a `const`, so a plain `cargo build` gets the default)."""
        return {rust_tunable_var(k): str(v) for k, v in self.tunables.items()}

    def report_unread(self, read: set[str], how: str, geometry: bool = True) -> list[str]:
        """Warn about each tunable that is not in `read` (the names the compiled source read;
        `how` says how a read is spelled) and, with `geometry`, that no launch dimension of this
        backend names: its values would all build and run the same code. Returns those names."""
        launched = launch_names(self.project, self.backend)
        unread = [
            name for name in sorted(self.tunables) if name not in read and not (geometry and name in launched)
        ]
        for name in unread:
            spelled = how.format(name=name, NAME=name.upper())
            if not geometry and name in launched:
                # A launch-geometry tunable on a backend without launch geometry (cpu): expected,
                # not a mistake to warn about on every pristine build (tuning reports it as "no
                # effect" and never ranks its values).
                severity = "note"
                message = (
                    f"tunable {name!r} sets the launch geometry, which the {self.backend} build does not "
                    f"have (and no {spelled}): every value of {name} builds the same {self.backend} code"
                )
            else:
                severity = "warning"
                message = (
                    f"tunable {name!r} is never read by the {self.backend} build (no {spelled}"
                    + (")" if not geometry else " and no launch dimension names it)")
                    + f": every value of {name} builds the same {self.backend} code"
                )
            self.diagnostic(
                Diagnostic(severity, message, rendered=f"{severity}: {message}", backend=self.backend)
            )
        return unread


def names_in_text(files: list[Path], names: list[str], spelled: Callable[[str], str]) -> set[str]:
    """The `names` whose spelling (`spelled(name)`, a regular expression) occurs in `files`."""
    texts = []
    for path in dict.fromkeys(files):
        try:
            texts.append(Path(path).read_text(errors="replace"))
        except OSError:
            continue
    return {name for name in names if any(re.search(spelled(name), text) for text in texts)}


def rust_tunable_var(name: str) -> str:
    """The environment variable a Rust crate reads a tunable from: `WB_TUNABLE_<NAME>`."""
    return f"WB_TUNABLE_{name.upper()}"


def launch_names(project: Project, backend: str) -> set[str]:
    """The names the launch geometry (threads and grid) of this backend uses, over all kernels."""
    from workbench import expr

    names: set[str] = set()
    for kernel in project.manifest.kernels:
        launch = kernel.launch.backends.get(backend, kernel.launch)
        for text in (*launch.threads, *launch.grid):
            names |= expr.names(text)
    return names


@dataclass
class AdapterOutput:
    ok: bool
    kernels: dict[str, dict[str, Any]] = field(default_factory=dict)  # kernel -> artifact record
    resources: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)  # more build.json fields
    #: The files the compiler read, from its own dep-info (cargo/rustc `.d`, `nvcc -MD`), or the
    #: files copied; the next build's cache key covers their contents (`cache.full_key`).
    inputs: list[Path] = field(default_factory=list)


class Adapter:
    """One backend's toolchain: detect it, build with it, list what it produced."""

    name = ""
    shares_target_dir = False  # builds in `BuildRequest.target_dir` (then held locked by the builder)
    #: Builds the project's Rust crate with cargo: `prepare` first makes sure the kernel API crate
    #: its Cargo.toml names is there (placed where missing) and sound.
    builds_crate = False

    @property
    def kind(self) -> str:
        """The artifact kind it builds: its backend's row says (`workbench.backends`)."""
        return backend_row(self.name).artifact_kind

    def detect(self) -> ToolchainInfo:
        raise NotImplementedError

    def skip_reason(self, project: Project) -> str | None:
        """Why this project has nothing to build for this backend (None: it has)."""
        return None

    def usable(self, project: Project, toolchain: ToolchainInfo) -> bool:
        """Whether a build can run (a prebuilt folder needs no toolchain)."""
        return toolchain.found

    def resolve_target(self, target: str | None) -> str:
        return target or ""

    def flags(
        self, project: Project, target: str, tunables: dict[str, Any], toolchain: ToolchainInfo
    ) -> list[str]:
        """The build's flags (they are part of its cache key and provenance)."""
        return []

    def prepare(self, project: Project, say: Callable[[str], None]) -> Diagnostic | None:
        """Before the cache lookup and the build: the error that stops this build, or None. For a
        cargo build, the kernel API crate (`kernel_api.ensure_crate`: one diagnostic naming the
        cause and the fix instead of cargo's `failed to read .../gpu_kernel/Cargo.toml`)."""
        if not self.builds_crate:
            return None
        problem = ensure_crate(project.manifest.crate_dir, say)
        return None if problem is None else problem.diagnostic(self.name, project.root)

    def key_inputs(self, project: Project) -> list[Path]:
        """Files outside `Project.source_files()` that the build reads (prebuilt artifacts)."""
        return []

    def build(self, req: BuildRequest) -> AdapterOutput:
        raise NotImplementedError


# ----------------------------------------------------------------------------- helpers


def which(env_var: str | None, *candidates: str) -> str | None:
    """An executable from `$env_var`, else the first candidate that exists (absolute or on PATH)."""
    if env_var and os.environ.get(env_var):
        return shutil.which(os.environ[env_var]) or None
    for cand in candidates:
        if os.path.isabs(cand):
            if os.access(cand, os.X_OK):
                return cand
        elif found := shutil.which(cand):
            return found
    return None


def version_of(cmd: list[str], timeout: float = 30.0, env: dict[str, str] | None = None) -> str:
    """First line of a `--version` style command ('' when it fails)."""
    try:
        proc = childproc.capture(cmd, timeout_s=timeout, env=env)
    except (OSError, TimeoutError):
        return ""
    lines = [ln.strip() for ln in (proc.stdout or proc.stderr) if ln.strip()]
    return lines[0] if proc.returncode == 0 and lines else ""


def cuda_bin(name: str) -> str | None:
    """A CUDA toolkit program: PATH, then $CUDA_HOME / $CUDA_PATH, then /usr/local/cuda."""
    env_var = {"nvcc": "WB_NVCC", "ptxas": "WB_PTXAS", "nvdisasm": "WB_NVDISASM"}.get(name)
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    candidates = [name] + [os.path.join(r, "bin", name) for r in roots if r]
    return which(env_var, *candidates)


def sm_arch(target: str | None, default_env: str = "WB_NVPTX_ARCH") -> str:
    """`sm_XX` from a compute capability ("9.0", "90", "sm_90", "compute_90"); default sm_90."""
    value = (target or os.environ.get(default_env) or "sm_90").strip().lower()
    for prefix in ("sm_", "compute_"):
        value = value.removeprefix(prefix)
    digits = value.replace(".", "")
    if not digits.isdigit() or not 2 <= len(digits) <= 3:
        raise ValueError(f"target {target!r} is not a CUDA compute capability (examples: 8.6, 90, sm_90)")
    return f"sm_{digits}"


def copy_into(src: Path, out_dir: Path, name: str | None = None) -> str:
    dest = out_dir / (name or src.name)
    shutil.copy2(src, dest)
    return dest.name


def entry_check(kernels: list, backend: str, entries: list[str], artifact: str) -> list[Diagnostic]:
    """An error for each kernel whose entry point is missing from the artifact."""
    diags = []
    for k in kernels:
        entry = k.entry_for(backend)
        if entry not in entries:
            present = ", ".join(entries) or "none"
            diags.append(
                Diagnostic(
                    "error",
                    f"kernel {k.name!r}: entry point {entry!r} is not in {artifact} "
                    f'(entries there: {present}); set [kernel.entry] {backend} = "..." in '
                    f"workbench.toml or export it unmangled",
                    backend=backend,
                )
            )
    return diags
