"""`rust-cuda`: Rust-CUDA's rustc_codegen_nvvm -> PTX, driven through `cuda_builder`.

Rust-CUDA cannot be installed on the project's CI machines (pinned nightly, LLVM 7, libNVVM). The
adapter follows its documented use: a build script calling
`CudaBuilder::new(crate).copy_to(out.ptx).build()`. The workbench writes that tiny builder crate
into its cache and runs `cargo +<nightly> build` on it; the kernel crate's Rust-CUDA entry points
are selected by its `rust-cuda` cargo feature (see resources/examples/saxpy).
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path

from workbench import childproc
from workbench.build.adapters.base import Adapter, AdapterOutput, BuildRequest, sm_arch, version_of, which
from workbench.build.adapters.nvptx import finish_ptx
from workbench.build.diagnostics import error, parse_rustc_text
from workbench.build.install_hints import TOOLCHAIN_HINTS
from workbench.records import ToolchainInfo

TOOLCHAIN = "nightly-2025-06-23"  # the nightly Rust-CUDA (and rust-gpu) are pinned to
HINT = TOOLCHAIN_HINTS["rust-cuda"]  # README.md's words (install_hints)
BUILD_RS = """use cuda_builder::{{CudaBuilder, NvvmArch}};
fn main() {{
    let krate = std::env::var("WB_KERNEL_CRATE").unwrap();
    let out = std::env::var("WB_PTX_OUT").unwrap();
    println!("cargo:rerun-if-env-changed=WB_KERNEL_CRATE");
    println!("cargo:rerun-if-env-changed=WB_PTX_OUT");
    let mut builder = CudaBuilder::new(krate);
    builder.arch = NvvmArch::Compute{arch};
    builder.copy_to(out){build_args}.build().unwrap();
}}
"""
#: The cargo feature that selects a kernel crate's Rust-CUDA entry points: rustc's NVPTX backend
#: reports the same `target_os = "cuda"`, so the bundled examples gate their `#[kernel]`s on it.
FEATURE = "rust-cuda"


def declares_feature(crate_dir: Path, feature: str = FEATURE) -> bool:
    """Whether the crate's Cargo.toml declares `feature` (then the build turns it on)."""
    try:
        manifest = tomllib.loads((crate_dir / "Cargo.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    return feature in manifest.get("features", {})


def build_script(arch: str, crate_dir: Path) -> str:
    """The builder crate's build.rs: cuda_builder on the kernel crate, its feature turned on if declared."""
    build_args = f'.build_args(&["--features", "{FEATURE}"])' if declares_feature(crate_dir) else ""
    return BUILD_RS.format(arch=arch, build_args=build_args)


CARGO_TOML = """[package]
name = "wb-rust-cuda-builder"
version = "0.0.0"
edition = "2021"

[build-dependencies]
cuda_builder = "{version}"
"""


def libnvvm() -> Path | None:
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    for root in filter(None, roots):
        hits = sorted(Path(root, "nvvm", "lib64").glob("libnvvm.so*"))
        if hits:
            return hits[0]
    return None


class RustCudaAdapter(Adapter):
    name = "rust-cuda"
    shares_target_dir = True  # the generated builder crate and its target dir live there
    builds_crate = True

    def detect(self) -> ToolchainInfo:
        toolchain = os.environ.get("WB_RUST_CUDA_TOOLCHAIN", TOOLCHAIN)
        details: dict = {"toolchain": toolchain}
        rustup = which(None, "rustup")
        listed = ""
        if rustup:
            try:
                listed = "\n".join(childproc.capture([rustup, "toolchain", "list"], timeout_s=30).stdout)
            except (OSError, TimeoutError):
                listed = ""
        details["nightly"] = toolchain in listed
        llvm_config = which("WB_LLVM_CONFIG", "llvm-config-7", "llvm-config")
        llvm_version = version_of([llvm_config, "--version"]) if llvm_config else ""
        details["llvm_config"] = f"{llvm_config} ({llvm_version})" if llvm_config else "not found"
        details["llvm7"] = llvm_version.startswith("7.")
        nvvm = libnvvm()
        details["libnvvm"] = str(nvvm) if nvvm else "not found"
        missing = [what for what, ok in (
            (f"rustup toolchain {toolchain}", details["nightly"]),
            (f"LLVM 7 (llvm-config: {details['llvm_config']})", details["llvm7"]),
            ("libNVVM", nvvm is not None),
        ) if not ok]  # fmt: skip
        if missing:
            details["missing"] = missing
            return ToolchainInfo("rust-cuda", False, hint=HINT, details=details)
        cargo = which("WB_RUST_CUDA_CARGO", "cargo")
        details["cargo"] = cargo or "cargo"
        return ToolchainInfo(
            "rust-cuda", True, f"{toolchain} + LLVM {llvm_version}", rustup or "", details=details
        )

    def resolve_target(self, target: str | None) -> str:
        return sm_arch(target)

    def flags(self, project, target, tunables, toolchain) -> list[str]:
        return [f"--arch=compute_{target.removeprefix('sm_')}"]

    def build(self, req: BuildRequest) -> AdapterOutput:
        tc = req.toolchain
        builder = req.target_dir / "builder"
        arch = req.target.removeprefix("sm_")
        (builder / "src").mkdir(parents=True, exist_ok=True)
        version = os.environ.get("WB_CUDA_BUILDER_VERSION", "0.3")
        _write_if_changed(builder / "Cargo.toml", CARGO_TOML.format(version=version))
        _write_if_changed(builder / "build.rs", build_script(arch, req.project.manifest.crate_dir))
        _write_if_changed(builder / "src" / "main.rs", "fn main() {}\n")
        ptx = req.out_dir / f"{req.project.manifest.crate_dir.name}.ptx"
        env = dict(os.environ)
        env.update(req.tunable_env())
        env.update({"WB_KERNEL_CRATE": str(req.project.manifest.crate_dir), "WB_PTX_OUT": str(ptx)})
        nvvm = libnvvm()
        if nvvm:
            env["LD_LIBRARY_PATH"] = f"{nvvm.parent}{os.pathsep}{env.get('LD_LIBRARY_PATH', '')}"
        cargo = tc.details.get("cargo", "cargo")
        cmd = [cargo, f"+{tc.details['toolchain']}", "build", "--release",
               "--target-dir", str(req.target_dir / "target")]  # fmt: skip
        result = req.run(cmd, cwd=builder, env=env)
        text = "\n".join(result.stderr + result.stdout)
        # cuda_builder runs cargo with json-render-diagnostics: rustc's text comes through the
        # build script's output (prefixed "warning: wb-rust-cuda-builder@...: " by cargo).
        cleaned = re.sub(r"^warning: [\w-]+@[\w.+-]+: ", "", text, flags=re.M)
        for diag in parse_rustc_text(cleaned, req.project.manifest.crate_dir, req.project.root, self.name):
            req.diagnostic(diag)
        if result.returncode != 0 or not ptx.is_file():
            if result.returncode == 0:
                req.diagnostic(error(f"cuda_builder finished but wrote no {ptx.name}", self.name))
            return AdapterOutput(False)
        return finish_ptx(req, ptx, req.target, self.name)


def _write_if_changed(path: Path, text: str) -> None:
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)
