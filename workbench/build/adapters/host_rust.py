"""Which `cargo` and `rustc` a build runs: one rule for every backend (cpu, nvptx, rust-gpu).

The rule, in order: `$WB_CARGO` / `$WB_RUSTC` when set; else the distribution's
`/usr/bin/cargo` and `/usr/bin/rustc`; else the first on PATH; else `~/.cargo/bin`.

Why the distribution's before PATH's: with rustup installed, PATH's first `cargo` is rustup's
proxy, which fails when no default toolchain is set and may download toolchains; Debian's
cargo and rustc (1.96 here, `-Z` flags through RUSTC_BOOTSTRAP) build offline. A backend that
runs every tool from one pair (cargo and the rustc it names in RUSTC) must not mix the two.

A build that names a rustup toolchain (nvptx's rustup route: a nightly with rust-src) asks for
that toolchain's own binaries with `cargo(toolchain)` / `rustc(toolchain)` (`rustup which`).

Rust's own tools follow the same rule: `rustdoc()` (what `cargo test` runs for doc tests: it must be
rustc's own, or the crate's libraries are "compiled by an incompatible version") and `rustfmt()`
(a formatter reads any edition; `$WB_RUSTFMT` first). Clippy is a compiler driver built against
one rustc, so `clippy()` picks a pair, not a binary: the `cargo-clippy` beside `cargo()` when that
toolchain has one, else the first `cargo-clippy` on PATH (rustup's stable here; Debian's rustc-web
1.96 has none, and Debian's `rust-clippy` belongs to its older rustc) with the `cargo` of its own
folder. Lints run in a target dir of their own (`build/clippy.py`), so the other toolchain's
artifacts never meet the build's.

`rust_lld()` finds a linker faster than the system's `ld` for the cpu build's cdylib: the `gcc-ld`
folder that rustup's toolchains ship (`ld.lld`, a wrapper of their `rust-lld`), looked for in
`rustc()`'s own sysroot first, then in rustup's toolchains. Debian's rustc ships none, so this is
only found where rustup is installed too; nothing is installed for it. Any LLD links the objects
of any rustc (plain ELF, no bitcode), so rustup's may link Debian's rustc's output.
"""

from __future__ import annotations

import glob
import hashlib
import os
import sys

from workbench import childproc
from workbench.build.adapters.base import which

#: Where the distribution installs them (Debian / Ubuntu `apt-get install cargo rustc`).
SYSTEM_BIN = "/usr/bin"


def cargo(toolchain: str | None = None) -> str | None:
    """The cargo every backend runs (see the module docstring), or None when there is none."""
    return _tool("cargo", toolchain)


def rustc(toolchain: str | None = None) -> str | None:
    """The rustc paired with `cargo()`, or None when there is none."""
    return _tool("rustc", toolchain)


def rustdoc() -> str | None:
    """The rustdoc paired with `rustc()` (doc tests of `cargo test`), or None."""
    return _tool("rustdoc", None)


def rustfmt() -> str | None:
    """The rustfmt the Format action and `workbench fmt` run, or None when there is none."""
    return _tool("rustfmt", None)


def clippy() -> tuple[str, str] | None:
    """(cargo, cargo-clippy) of one toolchain, or None when no cargo-clippy is found (see the
    module docstring): `$WB_CARGO_CLIPPY`, else the one beside `cargo()`, else PATH's, else
    `~/.cargo/bin`'s; the cargo is the one in the same folder (else `cargo()`)."""
    base = cargo()
    beside = os.path.join(os.path.dirname(base), "cargo-clippy") if base else None
    driver = which(
        "WB_CARGO_CLIPPY",
        *([beside] if beside else []),
        "cargo-clippy",
        os.path.expanduser("~/.cargo/bin/cargo-clippy"),
    )
    if not driver:
        return None
    own = os.path.join(os.path.dirname(driver), "cargo")
    paired = own if os.access(own, os.X_OK) else base
    return (paired, driver) if paired else None


def rustup_state(env: dict[str, str] | None = None) -> str:
    """What picks and makes a rustup proxy's compiler, as one string that changes when either does:
    `settings.toml` (the default toolchain, overrides: `rustup default`) by content, and each
    toolchain's `rustc` by size, mtime and inode (an update in place). A proxy's own file stays
    the same across both, so whoever keys on the compiler (the build cache's toolchain version,
    the cpu build's rustc replay) keys on this too. Empty where rustup is not installed."""
    env = os.environ if env is None else env
    home = env.get("RUSTUP_HOME") or os.path.expanduser("~/.rustup")
    parts = []
    try:
        with open(os.path.join(home, "settings.toml"), "rb") as f:
            parts.append(f"settings {hashlib.sha256(f.read()).hexdigest()}")
    except OSError:
        pass
    for path in sorted(glob.glob(os.path.join(glob.escape(home), "toolchains", "*", "bin", "rustc"))):
        parts.append(f"{path} {file_stamp(path)}")
    return "\n".join(parts)


def file_stamp(path: str) -> str:
    """A file's size, mtime and inode ("absent" where it cannot be read): it changed if this did."""
    try:
        st = os.stat(path)
    except OSError:
        return "absent"
    return f"{st.st_size} {st.st_mtime_ns} {st.st_ino}"


def rust_lld() -> str | None:
    """The `gcc-ld` folder holding an `ld.lld` wrapper of rust-lld (cc's `-B` with `-fuse-ld=lld`),
    or None: `$WB_RUST_LLD` when set (a folder, or `off`), else `rustc()`'s sysroot's, else that
    of rustup's stable toolchain, else of another rustup toolchain (see the module docstring).
    Linux only: elsewhere the C compiler that drives the link is not GNU's (Apple's cc, MSVC).
    A `$WB_RUST_LLD` folder without an executable `ld.lld` is a ValueError naming it."""
    chosen = os.environ.get("WB_RUST_LLD")
    if chosen is not None:
        if chosen.strip().lower() in ("", "off"):
            return None
        if not os.access(os.path.join(chosen, "ld.lld"), os.X_OK):
            raise ValueError(
                f"WB_RUST_LLD={chosen!r} holds no executable ld.lld: name a rustup toolchain's "
                "lib/rustlib/<target>/bin/gcc-ld folder, or set it to 'off' for the system's linker"
            )
        return chosen
    if not sys.platform.startswith("linux"):
        return None
    sysroots = []
    if compiler := rustc():
        # rustc's default sysroot is its executable's folder's parent (no `rustc --print` per build).
        sysroots.append(os.path.dirname(os.path.dirname(os.path.realpath(compiler))))
    home = os.environ.get("RUSTUP_HOME") or os.path.expanduser("~/.rustup")
    toolchains = sorted(glob.glob(os.path.join(home, "toolchains", "*")))
    sysroots += sorted(toolchains, key=lambda t: not os.path.basename(t).startswith("stable-"))
    for root in sysroots:
        wrappers = glob.glob(os.path.join(root, "lib", "rustlib", "*", "bin", "gcc-ld", "ld.lld"))
        for wrapper in sorted(wrappers):
            folder = os.path.dirname(wrapper)  # the wrapper runs its parent folder's rust-lld
            if os.access(wrapper, os.X_OK) and os.access(os.path.join(folder, "..", "rust-lld"), os.X_OK):
                return folder
    return None


def _tool(name: str, toolchain: str | None) -> str | None:
    if toolchain is not None:
        return _rustup_which(name, toolchain)
    return which(
        f"WB_{name.upper()}",
        f"{SYSTEM_BIN}/{name}",
        name,
        os.path.expanduser(f"~/.cargo/bin/{name}"),
    )


def _rustup_which(name: str, toolchain: str) -> str | None:
    rustup = which(None, "rustup", os.path.expanduser("~/.cargo/bin/rustup"))
    if not rustup:
        return None
    try:
        proc = childproc.capture([rustup, "+" + toolchain, "which", name], timeout_s=60)
    except (OSError, TimeoutError):
        return None
    path = "".join(proc.stdout).strip()
    return path if proc.returncode == 0 and path else None
