"""How to get each toolchain, in the words of README.md's "Optional toolchains" table: `workbench
doctor`, the build panel and the self-test show these, and tests/test_cli_doctor.py checks that the
README's table says the same (backticks aside), so the two never drift apart (Qt-free).

wgsl has no hint: naga comes with the `wgpu` Python package, a dependency, so it is never missing.
"""

from __future__ import annotations

#: backend -> what to install, as README.md's table says it (its backticks dropped).
TOOLCHAIN_HINTS = {
    "cpu": (
        "Rust: apt-get install rustc-web cargo-web rust-web-src (what set-up installs), "
        "or rustup from https://rustup.rs"
    ),
    "nvptx": (
        "apt-get install rustc-web cargo-web rust-web-src (what set-up installs; works offline), "
        "or rustup toolchain install nightly --component rust-src llvm-bitcode-linker"
    ),
    "rust-gpu": (
        "cargo install --git https://github.com/Rust-GPU/cargo-gpu cargo-gpu && cargo gpu install; "
        "the kernel crate needs spirv-std from crates.io (commented in each example's Cargo.toml). "
        'Prebuilt cargo-gpu output can be used with [backends.rust-gpu] prebuilt = "DIR"'
    ),
    "rust-cuda": (
        "its pinned nightly, LLVM 7 (llvm-config on PATH) and libNVVM "
        "(LD_LIBRARY_PATH=<cuda>/nvvm/lib64), usually its container image; the crate needs cuda_std"
    ),
    "cuda-c": (
        "the CUDA toolkit (nvcc, ptxas): https://developer.nvidia.com/cuda-downloads or apt-get install "
        "nvidia-cuda-toolkit; looked for on PATH, $CUDA_HOME and /usr/local/cuda"
    ),
}

#: What `workbench debug` needs (set-up installs it with the Debian packages).
DEBUGGER_HINT = "gdb 12 or later: apt-get install gdb (what set-up installs), and pygdbmi (a dependency)"

#: README.md's "CUDA runtime" row: what running on NVIDIA GPUs needs (the cuda runtime's reason
#: when pycuda is missing ends with it).
CUDA_RUNTIME_HINT = (
    "an NVIDIA driver, the CUDA toolkit, then CUDA_ROOT=/usr/local/cuda .venv/bin/pip install -e "
    "'.[cuda]' (pycuda builds from source)"
)

#: The same, from the desktop bundle (`workbench.frozen`): it has no .venv to pip-install into;
#: pycuda comes inside a bundle built with it (README, "Desktop package").
CUDA_BUNDLE_HINT = (
    "an NVIDIA driver, the CUDA toolkit, and a bundle built with pycuda in it (packaging/build.sh "
    "--with-cuda): this one was built without it"
)

#: Rust's own tools the edit loop uses (`workbench fmt`, `lint`, `test`; the window's Format action,
#: lints and Tests dock): what to install when one is missing. Set-up installs them where it can
#: (packaging/bootstrap.sh); each action that needs a missing one says so in one line.
TOOL_HINTS = {
    "rustfmt": "rustup component add rustfmt (rustup from https://rustup.rs), or apt-get install rustfmt",
    "clippy": (
        "rustup component add clippy (rustup from https://rustup.rs); Debian's rust-clippy belongs to "
        "its older rustc, not to rustc-web"
    ),
    "cargo": TOOLCHAIN_HINTS["cpu"],
}
