"""Which `cargo` and `rustc` a build runs: one rule for every backend (cpu, nvptx, rust-gpu).

The rule, in order: `$WB_CARGO` / `$WB_RUSTC` when set; else the distribution's
`/usr/bin/cargo` and `/usr/bin/rustc`; else the first on PATH; else `~/.cargo/bin`.

Why the distribution's before PATH's: with rustup installed, PATH's first `cargo` is rustup's
proxy, which fails when no default toolchain is set and may download toolchains; Debian's
cargo and rustc (1.96 here, `-Z` flags through RUSTC_BOOTSTRAP) build offline. A backend that
runs every tool from one pair (cargo and the rustc it names in RUSTC) must not mix the two.

A build that names a rustup toolchain (nvptx's rustup route: a nightly with rust-src) asks for
that toolchain's own binaries with `cargo(toolchain)` / `rustc(toolchain)` (`rustup which`).
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
