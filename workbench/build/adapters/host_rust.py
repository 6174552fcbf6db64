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
"""

from __future__ import annotations

import os

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
