"""Fixtures for the build service tests: the shared cache and project copies that hang or fail."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from workbench.build import toolchains
from workbench.build.adapters import host_rust


@pytest.fixture
def cache(shared_cache_dir) -> Path:
    """The session's build cache, so nvptx's `core` is built once for all tests."""
    return shared_cache_dir


def processes_with(marker: str) -> list[int]:
    """Pids whose command line contains `marker` (for 'no child left' checks)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            pids.append(int(entry.name))
    return pids


@pytest.fixture
def hanging_project(example_copy):
    """saxpy with a build.rs that starts a `sleep` child and then sleeps itself (a hung compile)."""
    root = example_copy("saxpy")
    marker = f"{random.randint(100000, 999999)}.5"  # a unique `sleep` argument to find the child by
    (root / "build.rs").write_text(
        "fn main() {\n"
        f'    let _child = std::process::Command::new("sleep").arg("{marker}").spawn().unwrap();\n'
        "    std::thread::sleep(std::time::Duration::from_secs(600));\n"
        "}\n"
    )
    return root, marker


@pytest.fixture
def redetect(monkeypatch):
    """Re-run toolchain detection after a test changed PATH or env (and again afterwards).

    The environment is restored before detecting again: otherwise a stand-in toolchain put on
    PATH by the test would stay cached as found for the rest of the session."""
    yield lambda: toolchains.detect_toolchains(refresh=True)
    monkeypatch.undo()
    toolchains.detect_toolchains(refresh=True)


SHARED_SPIRV = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "rust-gpu-spirv"


@pytest.fixture
def cargo_gpu(tmp_path, monkeypatch, redetect):
    """Put the `cargo-gpu` stand-in (tests/build/cargo_gpu_stand_in.py) on PATH, reached through the
    real `cargo gpu ...` dispatch of the cargo every backend runs (`host_rust.cargo()`); returns
    the file each of its command lines is logged to."""
    import sys

    if not host_rust.cargo():
        pytest.skip("no cargo to dispatch `cargo gpu`")
    if not SHARED_SPIRV.is_dir():
        pytest.skip(f"{SHARED_SPIRV} is absent")
    bin_dir = tmp_path / "stand-in-bin"
    bin_dir.mkdir()
    script = bin_dir / "cargo-gpu"
    source = (Path(__file__).with_name("cargo_gpu_stand_in.py")).read_text()
    script.write_text(f"#!{sys.executable}\n{source}")
    script.chmod(0o755)
    log = tmp_path / "cargo-gpu-calls.jsonl"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("WB_STAND_IN_SPV", str(SHARED_SPIRV / "headless.comp.spv"))
    monkeypatch.setenv("WB_STAND_IN_LOG", str(log))
    infos = {t.backend: t for t in redetect()}
    assert infos["rust-gpu"].found and "stand-in" in infos["rust-gpu"].version
    return log
