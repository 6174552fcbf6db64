"""The kernel API crate's own unit tests, run from pytest: `cargo test --lib --features sim` of one
module's tests on a copy of `resources/crates/gpu_kernel` (its own target folder), every named test
passed and no other run (a test renamed or added in the crate must be named here too)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tests.conftest import REPO
from tests.waits import WORK_GUARD_S
from workbench.build.adapters import host_rust


def run_crate_tests(tmp_path: Path, module: str, names: tuple[str, ...]) -> None:
    """`module`'s tests (`host::sim`, `testing`) in a copy of the crate: each of `names` passed."""
    crate = tmp_path / "gpu_kernel"
    shutil.copytree(REPO / "resources" / "crates" / "gpu_kernel", crate)
    env = {"RUSTC": host_rust.rustc(), "RUSTC_BOOTSTRAP": "1", "CARGO_TARGET_DIR": str(tmp_path / "target")}
    done = subprocess.run(
        [host_rust.cargo(), "test", "--offline", "--lib", "--features", "sim", f"{module}::tests::"],
        cwd=crate, capture_output=True, text=True, timeout=WORK_GUARD_S, env={**os.environ, **env},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for name in names:
        assert f"{module}::tests::{name} ... ok" in done.stdout, name
    assert f"test result: ok. {len(names)} passed" in done.stdout
