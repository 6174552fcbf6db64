"""The cpu build links the kernel crate's cdylib alone, with rust-lld where a rustup toolchain ships
one (`host_rust.rust_lld`), else with the system's linker (real cargo builds, the linker read back
from the library's `.comment` section, where each linker signs)."""

from __future__ import annotations

import glob
import os
import subprocess
from pathlib import Path

import pytest

from workbench.build import build_project
from workbench.build.adapters import host_rust
from workbench.build.cache import cache_root, target_dir
from workbench.build.toolchains import detect
from workbench.project import Project

pytestmark = pytest.mark.slow


def linker_of(library: str) -> str:
    """The `.comment` strings of an ELF file (`Linker: LLD ...` where LLD linked it)."""
    proc = subprocess.run(["readelf", "-p", ".comment", library], capture_output=True, text=True, check=True)
    return proc.stdout


@pytest.fixture
def cpu():
    if not detect("cpu").found:
        pytest.skip("no cargo and rustc installed")


def test_rust_lld_is_a_gcc_ld_folder_of_a_toolchain_and_can_be_turned_off(monkeypatch):
    monkeypatch.delenv("WB_RUST_LLD", raising=False)
    folder = host_rust.rust_lld()
    home = os.environ.get("RUSTUP_HOME") or os.path.expanduser("~/.rustup")
    shipped = glob.glob(
        os.path.join(home, "toolchains", "*", "lib", "rustlib", "*", "bin", "gcc-ld", "ld.lld")
    )
    if shipped:  # rustup's toolchains ship one: it is found, a folder whose wrapper runs
        assert folder and Path(folder, "ld.lld").is_file()
        assert "LLD" in subprocess.run([str(Path(folder).parent / "rust-lld"), "-flavor", "gnu", "--version"],
                                       capture_output=True, text=True).stdout  # fmt: skip
    monkeypatch.setenv("WB_RUST_LLD", "off")
    assert host_rust.rust_lld() is None


def test_a_wb_rust_lld_without_a_linker_fails_the_build_naming_it(cpu, example_copy, tmp_path, monkeypatch):
    monkeypatch.setenv("WB_RUST_LLD", str(tmp_path / "no-such-gcc-ld"))
    project = Project.open(example_copy("saxpy", unique=True))
    [result] = build_project(project, ["cpu"], cache_dir=tmp_path / "cache")
    assert result.status != "ok"
    messages = [d["message"] for d in result.diagnostics]
    assert any(
        "WB_RUST_LLD" in m and "no-such-gcc-ld" in m and "no executable ld.lld" in m for m in messages
    ), messages


def test_cpu_build_is_the_cdylib_alone_linked_by_rust_lld_where_found(cpu, example_copy, cache, monkeypatch):
    monkeypatch.delenv("WB_RUST_LLD", raising=False)
    if host_rust.rust_lld() is None:
        pytest.skip("no rust-lld here (no rustup toolchain ships one)")
    project = Project.open(example_copy("saxpy", unique=True))
    deps = target_dir(cache_root(cache), "cpu") / "release" / "deps"

    def rlibs() -> dict[Path, int]:
        return {p: p.stat().st_mtime_ns for p in deps.glob("libsaxpy-*.rlib")}

    before = rlibs()
    [result] = build_project(project, ["cpu"], cache_dir=cache)
    assert result.status == "ok", result.log
    assert "Linker: LLD" in linker_of(result.artifacts[0])
    # No rlib made: nothing reads one from the build's target dir (`cargo test` builds its own).
    assert rlibs() == before


def test_cpu_build_with_rust_lld_off_links_with_the_systems_linker(cpu, example_copy, tmp_path, monkeypatch):
    # A cache of its own: the linker is no part of the build's key (the code is the same).
    monkeypatch.setenv("WB_RUST_LLD", "off")
    project = Project.open(example_copy("saxpy", unique=True))
    [result] = build_project(project, ["cpu"], cache_dir=tmp_path / "cache")
    assert result.status == "ok", result.log
    assert "Linker: LLD" not in linker_of(result.artifacts[0])
