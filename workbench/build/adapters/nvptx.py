"""`nvptx`: rustc's built-in NVPTX backend -> PTX, by one of two routes.

- `rustup`: a nightly with `rust-src` and `llvm-bitcode-linker` (the official recipe, cdylib -> .ptx).
- `debian`: a rustc that ships the nvptx64 target and its std sources (Debian rustc-web +
  rust-web-src): `RUSTC_BOOTSTRAP=1`, `-Zbuild-std=core` from the vendored sources, offline,
  rlib + `--emit asm` (a cdylib link needs the bitcode linker this route lacks).
"""

from __future__ import annotations

import glob
import os
from pathlib import Path

from workbench import childproc
from workbench.backends import backend_row
from workbench.build.adapters import host_rust
from workbench.build.adapters.base import (
    Adapter,
    AdapterOutput,
    BuildRequest,
    copy_into,
    cuda_bin,
    entry_check,
    sm_arch,
    version_of,
    which,
)  # fmt: skip
from workbench.build.adapters.cargo import (
    CHECKSUM_FRESHNESS,
    RUST_READ,
    CargoOutcome,
    cargo_env,
    run_cargo,
    rust_reads,
)
from workbench.build.diagnostics import error
from workbench.build.install_hints import TOOLCHAIN_HINTS
from workbench.build.resources import ptx_entries, ptxas_report
from workbench.records import ToolchainInfo

TARGET = "nvptx64-nvidia-cuda"
HINT = TOOLCHAIN_HINTS["nvptx"]  # README.md's words (install_hints)


PANIC_FLAGS = ("-Zunstable-options", "-Cpanic=immediate-abort")
#: Line tables for the Rust <-> PTX view. They change the code (`.target sm_XX, debug` makes ptxas
#: compile for debugging), so they go into a second PTX, never the one that runs and is timed.
LINE_INFO_FLAGS = ("-C", "debuginfo=line-tables-only")
LINES_SUFFIX = ".lines.ptx"


def _run(cmd: list[str]) -> str:
    try:
        proc = childproc.capture(cmd, timeout_s=60)
    except (OSError, TimeoutError):
        return ""
    return "".join(line + "\n" for line in proc.stdout) if proc.returncode == 0 else ""


def vendor_dir(rustc: str) -> Path | None:
    """The std sources' vendored crates: from the sysroot, else /usr/src/rustc-*/library/vendor."""
    sysroot = _run([rustc, "--print", "sysroot"]).strip()
    candidates = [Path(sysroot) / "lib/rustlib/src/rust/library/vendor"] if sysroot else []
    version = version_of([rustc, "--version"]).split()
    if len(version) > 1:
        candidates.append(Path(f"/usr/src/rustc-{version[1]}/library/vendor"))
    candidates += [Path(p) for p in sorted(glob.glob("/usr/src/rustc-*/library/vendor"), reverse=True)]
    for cand in candidates:
        if (cand.parent / "core").is_dir() and cand.is_dir():
            return cand
    return None


def _detect_debian() -> ToolchainInfo | None:
    rustc, cargo = host_rust.rustc(), host_rust.cargo()
    if not rustc or not cargo or TARGET not in _run([rustc, "--print", "target-list"]):
        return None
    vendor = vendor_dir(rustc)
    if vendor is None:
        return None
    details = {"route": "debian", "cargo": cargo, "vendor": str(vendor)}
    return ToolchainInfo("nvptx", True, version_of([rustc, "--version"]), rustc, details=details)


def _detect_rustup() -> ToolchainInfo | None:
    rustup = which(None, "rustup")
    if not rustup:
        return None
    toolchain = os.environ.get("WB_NVPTX_TOOLCHAIN", "nightly")
    installed = _run([rustup, "+" + toolchain, "component", "list", "--installed"])
    if "rust-src" not in installed or "llvm-bitcode-linker" not in installed:
        return None
    rustc, cargo = host_rust.rustc(toolchain), host_rust.cargo(toolchain)
    if not rustc or not cargo:
        return None
    details = {"route": "rustup", "cargo": cargo, "toolchain": toolchain}
    return ToolchainInfo("nvptx", True, version_of([rustc, "--version"]), rustc, details=details)


class NvptxAdapter(Adapter):
    name = "nvptx"
    shares_target_dir = True
    builds_crate = True

    def detect(self) -> ToolchainInfo:
        route = os.environ.get("WB_NVPTX_ROUTE", "")  # force "debian" or "rustup"
        if route == "debian":
            order = [_detect_debian]
        elif route == "rustup":
            order = [_detect_rustup]
        else:
            order = [_detect_rustup, _detect_debian]
        for detect in order:
            info = detect()
            if info is not None:
                return info
        return ToolchainInfo(
            "nvptx", False, hint=HINT,
            details={"needs": f"a rustc with the {TARGET} target and its std sources"},
        )  # fmt: skip

    def resolve_target(self, target: str | None) -> str:
        return sm_arch(target)

    def flags(self, project, target, tunables, toolchain) -> list[str]:
        flags = ["-C", f"target-cpu={target}"]
        if toolchain.details.get("route") != "rustup":
            flags.extend(PANIC_FLAGS)  # recorded here so the cache key and provenance carry them
        return flags

    def command(self, req: BuildRequest) -> tuple[list[str], dict[str, str]]:
        """The cargo command and environment of a build (the line-table build reuses them)."""
        tc = req.toolchain
        common = [tc.details["cargo"], "rustc", CHECKSUM_FRESHNESS, "--release", "--lib", "--target", TARGET,
                  "-Zbuild-std=core", "--message-format=json", "--target-dir", str(req.target_dir)]  # fmt: skip
        env = cargo_env(req, {"RUSTC": tc.path})
        if tc.details.get("route") == "rustup":
            cmd = [*common, "--crate-type=cdylib", "--",
                   "-Clinker-flavor=llbc", "-Zunstable-options", *req.flags]  # fmt: skip
        else:
            vendor = tc.details["vendor"]
            env["RUSTC_BOOTSTRAP"] = "1"  # -Zbuild-std on a stable rustc
            # Without a bitcode linker, core's panic machinery (e.g. panic_bounds_check) never reaches
            # the PTX and ptxas fails on an unresolved extern; aborting in place turns every panic,
            # in core and in the kernel, into a `trap`.
            env["RUSTFLAGS"] = " ".join(filter(None, [env.get("RUSTFLAGS", ""), *PANIC_FLAGS]))
            cmd = [*common, "--crate-type", "rlib", "--offline",
                   "--config", 'source.crates-io.replace-with="vendored"',
                   "--config", f'source.vendored.directory="{vendor}"',
                   "--", *req.flags, "--emit", "asm"]  # fmt: skip
        return cmd, env

    def build(self, req: BuildRequest) -> AdapterOutput:
        cmd, env = self.command(req)
        outcome = run_cargo(req, cmd, env)
        if not outcome.ok:
            return AdapterOutput(False)
        ptx = self._current_ptx(req, outcome)
        if ptx is None:
            req.diagnostic(error("cargo finished but no PTX of this build was found", "nvptx"))
            return AdapterOutput(False)
        name = copy_into(ptx, req.out_dir, ptx.stem.split("-")[0] + ".ptx")
        out = finish_ptx(req, req.out_dir / name, req.target, self.name)
        manifest = req.project.manifest.crate_dir / "Cargo.toml"
        out.inputs = outcome.inputs_of(manifest)
        req.report_unread(rust_reads(outcome.env_reads(manifest), req), RUST_READ)
        return out

    def line_table(self, req: BuildRequest, stem: str) -> Path | None:
        """The same build with line tables, as `<out_dir>/<stem>.lines.ptx` (None when it fails).

        Only for the Rust <-> PTX view (`workbench.build.line_info` runs it on demand, in a target
        dir of its own): line tables change the code, so this PTX is never run or timed."""
        cmd, env = self.command(req)
        outcome = run_cargo(req, [*cmd, *LINE_INFO_FLAGS], env)
        ptx = self._current_ptx(req, outcome) if outcome.ok else None
        if ptx is None:
            return None
        return req.out_dir / copy_into(ptx, req.out_dir, stem + LINES_SUFFIX)

    def _current_ptx(self, req: BuildRequest, outcome: CargoOutcome) -> Path | None:
        """The PTX written by this build: named after the crate's metadata hash in its artifact record."""
        records = outcome.of_package(req.project.manifest.crate_dir / "Cargo.toml")
        for record in records:
            for f in record.get("filenames", []):
                path = Path(f)
                if path.suffix == ".ptx":  # rustup route: the cdylib is the PTX
                    return path
                if path.suffix in (".rmeta", ".rlib") and "-" in path.stem:
                    # deps/lib<crate>-<hash>.rmeta  ->  deps/<crate>-<hash>.s
                    asm = path.with_name(path.stem.removeprefix("lib") + ".s")
                    if asm.is_file():
                        return asm
        # Fallback: the newest .s of this crate in deps/ (written by this build, never a stale one).
        if records:
            crate = records[0]["target"]["name"].replace("-", "_")
            deps = req.target_dir / TARGET / "release" / "deps"
            files = sorted(deps.glob(f"{crate}-*.s"), key=lambda p: p.stat().st_mtime)
            if files:
                return files[-1]
        return None


def finish_ptx(req: BuildRequest, ptx: Path, arch: str, backend: str, kernels=None) -> AdapterOutput:
    """Entry-point check and the ptxas resource report shared by the PTX backends."""
    entries = ptx_entries(ptx.read_text(errors="replace"))
    kernels = req.project.manifest.kernels if kernels is None else kernels
    missing = entry_check(list(kernels), backend, entries, ptx.name)
    for diag in missing:
        req.diagnostic(diag)
    resources: dict = {}
    ptxas = cuda_bin("ptxas")
    ok = not missing
    if ptxas:
        report, diags, text = ptxas_report(ptxas, ptx, arch, backend)
        for line in text.splitlines():
            req.output(line)
        for diag in diags:
            req.diagnostic(diag)
        ok = ok and not any(d.severity == "error" for d in diags)
        for k in kernels:
            if k.entry_for(backend) in report:
                resources[k.name] = {"entry": k.entry_for(backend), **report[k.entry_for(backend)]}
    kind = backend_row(backend).artifact_kind
    record = {k.name: {"artifact": ptx.name, "entry": k.entry_for(backend), "kind": kind} for k in kernels}
    extra = {"ptxas": bool(ptxas), "entries": entries}
    return AdapterOutput(ok, record, resources, extra)
