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


def _cargo_test_in_a_copy(
    tmp_path: Path, args: list[str], env: dict[str, str]
) -> subprocess.CompletedProcess:
    """`cargo test ARGS` in a copy of `resources/crates/gpu_kernel` (its own target folder), passed."""
    crate = tmp_path / "gpu_kernel"
    shutil.copytree(
        REPO / "resources" / "crates" / "gpu_kernel", crate, ignore=shutil.ignore_patterns("target")
    )
    env = {**env, "RUSTC_BOOTSTRAP": "1", "CARGO_TARGET_DIR": str(tmp_path / "target")}
    done = subprocess.run(
        [host_rust.cargo(), "test", "--offline", *args],
        cwd=crate, capture_output=True, text=True, timeout=WORK_GUARD_S, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def run_crate_tests(tmp_path: Path, module: str, names: tuple[str, ...]) -> None:
    """`module`'s tests (`host::sim`, `testing`) in a copy of the crate: each of `names` passed."""
    args = ["--lib", "--features", "sim", f"{module}::tests::"]
    done = _cargo_test_in_a_copy(tmp_path, args, {**os.environ, "RUSTC": host_rust.rustc()})
    for name in names:
        assert f"{module}::tests::{name} ... ok" in done.stdout, name
    assert f"test result: ok. {len(names)} passed" in done.stdout


def run_crate_test_files(tmp_path: Path, files: tuple[str, ...], features: str = "sim") -> dict[str, int]:
    """The crate's integration tests (`tests/NAME.rs`) on a copy of it: every test of each file
    passed; each file's count of passed tests."""
    # No RUSTC: lanes_builds runs `cargo clippy` on crates of its own, whose clippy-driver is
    # rustup's; their dependencies must come from that toolchain's rustc too (E0514 otherwise).
    env = {
        k: v for k, v in os.environ.items() if k not in ("RUSTC", "RUSTC_WRAPPER", "RUSTC_WORKSPACE_WRAPPER")
    }
    args = ["--features", features, *(a for f in files for a in ("--test", f))]
    done = _cargo_test_in_a_copy(tmp_path, args, env)
    # cargo runs the files in its order (by name) and says which before each one's results.
    ran = [
        line.split("tests/")[1].split(".rs")[0]
        for line in done.stderr.splitlines()
        if "Running tests/" in line
    ]
    results = [line for line in done.stdout.splitlines() if line.startswith("test result: ")]
    assert sorted(ran) == sorted(files) and len(results) == len(files), (ran, results)
    assert all(" 0 failed" in r for r in results), results
    return {
        name: int(line.split("ok. ")[1].split(" passed")[0]) for name, line in zip(ran, results, strict=True)
    }
