"""`cpu`: host cargo builds the kernel crate as a cdylib; the artifact is the shared library.

The build is on the edit -> result path, so it does only what the run needs (`benchmarks/
kernel_crate_ab.py` times it): `cargo rustc --crate-type cdylib` (no rlib: nothing reads one from
this target dir; `cargo test` builds its own), the crate itself in one codegen unit (one kernel
file: sixteen units only add a ThinLTO pass across them, and the code is as fast), and linked by
rust-lld where a rustup toolchain ships one (`host_rust.rust_lld`: the system's ld.bfd spends
about twice as long reading the standard library's objects). The dependencies keep the profile's
flags, so the cached `gpu_kernel` is not rebuilt for them. After an edit of the crate's own sources
the build runs cargo's rustc call of it again without cargo (`workbench.build.rustc_replay`: the
call captured by cargo's last build, replayed while nothing else it depends on changed)."""

from __future__ import annotations

from pathlib import Path

from workbench.build import rustc_replay
from workbench.build.adapters.base import (
    Adapter,
    AdapterOutput,
    BuildRequest,
    copy_into,
    version_of,
)
from workbench.build.adapters.cargo import CHECKSUM_FRESHNESS, RUST_READ, cargo_env, run_cargo, rust_reads
from workbench.build.adapters.host_rust import cargo, rust_lld, rustc
from workbench.build.diagnostics import error
from workbench.build.install_hints import TOOLCHAIN_HINTS
from workbench.records import ToolchainInfo

HINT = TOOLCHAIN_HINTS["cpu"]  # README.md's words (install_hints)
#: The assembly listing for the Rust <-> assembly view: rustc's `.s` with `.file` / `.loc` line tables.
#: Built on demand in a target dir of its own (`workbench.build.line_info`), never run or timed.
ASM_FLAGS = ("--emit", "asm", "-C", "debuginfo=line-tables-only")
ASM_SUFFIX = ".lines.asm"
#: rustc flags of the kernel crate's own compilation (its dependencies keep the profile's): the
#: listing's too, so that it shows the code that runs. They are in no build cache key (the
#: adapter's `flags()` are): a change here must bump `workbench.build.cache.KEY_FORMAT`.
CODE_FLAGS = ("-C", "codegen-units=1")


def cargo_rustc(cargo_path: str, flags: list[str], target_dir: Path, rustc_flags: list[str]) -> list[str]:
    """`cargo rustc` of the kernel crate (`flags`: the adapter's `flags()`), CODE_FLAGS and
    `rustc_flags` after `--`: the build's command and the listing's."""
    return [cargo_path, "rustc", CHECKSUM_FRESHNESS, *flags, "--offline", "--message-format=json",
            "--target-dir", str(target_dir), "--", *CODE_FLAGS, *rustc_flags]  # fmt: skip


def build_command(cargo_path: str, flags: list[str], target: str, target_dir: Path) -> list[str]:
    """The cpu build's cargo command line, linked by rust-lld where one is found for a host build
    (`target`: "host" or a triple); also what `benchmarks/kernel_crate_ab.py` times."""
    lld = rust_lld() if target == "host" else None
    linker = ["-C", "link-arg=-fuse-ld=lld", "-C", f"link-arg=-B{lld}"] if lld else []
    return cargo_rustc(cargo_path, flags, target_dir, linker)


#: LLVM's inductive range check elimination (irce) after rustc's own pipeline, then the loop
#: vectoriser again: the executor's loop over a barrier-free workgroup's invocations splits where
#: the kernel's `if i < n` and the accessors' bounds checks are known to hold, and that part
#: vectorises (saxpy's loop was scalar: a guarded store). The checks stay in the iterations
#: around it, so an out-of-bounds index still stops at its line. `-disable-lftr`: irce reads a
#: latch `i < end`, which indvars otherwise rewrites as `i != end`. `min-eliminated-checks=100`:
#: only loops LLVM expects to run 100 times or more, which its estimate for a loop without a
#: profile never is (under 40) and the executor's is (it marks the loop's exit cold, `exec.rs`):
#: split everywhere, reduction's grid-stride loop (4 iterations an invocation) lost 7-12 %. The
#: user's RUSTFLAGS, CARGO_ENCODED_RUSTFLAGS or a cargo config's `target.<triple>.rustflags`
#: replace these (cargo's rule): slower, still right. The `cpu` build's
#: only: cpu-sim's checked loop measured no faster with them, and `workbench debug` builds from
#: cpu-sim's flags at opt-level 0, its code kept as written (docs/cpu-sim.md, "Sixth pass").
#: `target-applies-to-host=false`: not for the crates cargo builds for the host, a proc-macro
#: (gpu_kernel's `#[lanes]`) or a build script: without `--target` they took build.rustflags too,
#: and these passes stopped LLVM on the macro crate's own code ("Instruction Combining ... did not
#: reach a fixpoint"); they are for the kernel's loops.
LOOP_FLAGS = (
    "-Ztarget-applies-to-host",
    "--config",
    "target-applies-to-host=false",
    "--config",
    "build.rustflags = ['-Cllvm-args=-disable-lftr', "
    "'-Cllvm-args=-irce-min-eliminated-checks=100', "
    "'-Cpasses=function(irce,simplifycfg,instcombine,loop-vectorize,instcombine,simplifycfg)']",
)


class CpuAdapter(Adapter):
    name = "cpu"
    #: The loop passes are the `cpu` build's alone (LOOP_FLAGS: `CpuSimAdapter` has none).
    loop_flags: tuple[str, ...] = LOOP_FLAGS
    shares_target_dir = True
    builds_crate = True

    def detect(self) -> ToolchainInfo:
        cargo_path, rustc_path = cargo(), rustc()
        if not cargo_path or not rustc_path:
            missing = "cargo" if not cargo_path else "rustc"
            return ToolchainInfo("cpu", False, hint=HINT, details={"missing": missing})
        version = version_of([rustc_path, "--version"])
        if not version:
            return ToolchainInfo(
                "cpu", False, path=rustc_path, hint=HINT, details={"error": "rustc --version failed"}
            )
        return ToolchainInfo("cpu", True, version, rustc_path, details={"cargo": cargo_path})

    def resolve_target(self, target: str | None) -> str:
        return target or "host"

    def flags(self, project, target, tunables, toolchain) -> list[str]:
        flags = ["--release", "--lib", "--crate-type", "cdylib", *self.loop_flags]
        if target != "host":
            flags += ["--target", target]
        return flags

    def kernel_record(self, kernel, artifact: str) -> dict:
        """build.json's record of one kernel."""
        return {"artifact": artifact, "entry": kernel.entry_for("cpu"), "kind": self.kind}

    def build(self, req: BuildRequest) -> AdapterOutput:
        tc = req.toolchain
        try:
            cmd = build_command(tc.details["cargo"], req.flags, req.target, req.target_dir)
        except ValueError as exc:  # $WB_RUST_LLD names no linker (host_rust.rust_lld)
            req.diagnostic(error(str(exc), "cpu"))
            return AdapterOutput(False)
        # RUSTC_BOOTSTRAP: -Z flags on a stable toolchain.
        env = cargo_env(req, {"RUSTC": tc.path, "RUSTC_BOOTSTRAP": "1"})
        crate_dir = req.project.manifest.crate_dir
        # After a kernel edit, cargo's rustc call again without cargo (`rustc_replay`).
        replay = (
            rustc_replay.Replay(req.target_dir, crate_dir, cmd, env)
            if rustc_replay.enabled(env, crate_dir)
            else None
        )
        state = replay.saved() if replay is not None else None
        done = replay.run(req, state) if replay is not None and state is not None else None
        if done is None or done.stale:  # no saved call, or one that no longer fits: cargo
            done = self._cargo_build(req, cmd, env if replay is None else replay.capture_env(env))
            if done.ok and replay is not None and not done.build_scripts:
                replay.save(done.crate, done.inputs, done.packages)
        if not done.ok:
            return AdapterOutput(False)
        name = copy_into(done.library, req.out_dir)
        kernels = {k.name: self.kernel_record(k, name) for k in req.project.manifest.kernels}
        # The cpu runtime has no launch threads: only the crate's own reads count.
        req.report_unread(rust_reads(done.env_reads, req), RUST_READ, geometry=False)
        return AdapterOutput(True, kernels, inputs=done.inputs)

    def _cargo_build(
        self, req: BuildRequest, cmd: list[str], env: dict[str, str]
    ) -> rustc_replay.ReplayOutcome:
        """The build by cargo: its shared library, inputs and environment reads."""
        outcome = run_cargo(req, cmd, env)
        if not outcome.ok:
            return rustc_replay.ReplayOutcome(False)
        manifest = req.project.manifest.crate_dir / "Cargo.toml"
        records = [
            a for a in outcome.of_package(manifest) if "cdylib" in a.get("target", {}).get("crate_types", [])
        ]
        libs = [
            Path(f) for a in records for f in a.get("filenames", []) if f.endswith((".so", ".dylib", ".dll"))
        ]
        if not libs:
            req.diagnostic(error("cargo reported no shared library (.so, .dylib, .dll) for the crate's "
                                 "[lib]", "cpu"))  # fmt: skip
            return rustc_replay.ReplayOutcome(False)
        # Every package cargo built or found fresh (a dependency's sources may lie outside its folder).
        packages = sorted(
            {Path(a["manifest_path"]).parent for a in outcome.artifacts if "manifest_path" in a}
        )
        return rustc_replay.ReplayOutcome(True, libs[0], outcome.inputs_of(manifest), outcome.env_reads(manifest),
                                          crate=records[0]["target"]["name"].replace("-", "_"),
                                          build_scripts=outcome.build_scripts > 0, packages=packages)  # fmt: skip

    def asm_listing(self, req: BuildRequest, stem: str) -> Path | None:
        """The same build's assembly with line tables, as `<out_dir>/<stem>.lines.asm` (None when it
        fails). `cargo rustc --crate-type cdylib`: the code of the library that runs (an rlib's
        assembly would leave out what only the cdylib keeps)."""
        tc = req.toolchain
        cmd = cargo_rustc(tc.details["cargo"], req.flags, req.target_dir, list(ASM_FLAGS))
        outcome = run_cargo(req, cmd, cargo_env(req, {"RUSTC": tc.path, "RUSTC_BOOTSTRAP": "1"}))
        if not outcome.ok:
            return None
        records = outcome.of_package(req.project.manifest.crate_dir / "Cargo.toml")
        crate = records[0]["target"]["name"].replace("-", "_") if records else ""
        # rustc writes deps/<crate>[-<hash>].s; the target dir is this listing's own, held locked,
        # so the newest one is this build's.
        found = sorted(req.target_dir.glob(f"**/deps/{crate}*.s"), key=lambda p: p.stat().st_mtime)
        if not crate or not found:
            return None
        return req.out_dir / copy_into(found[-1], req.out_dir, stem + ASM_SUFFIX)
