"""One cargo for every backend (`workbench.build.adapters.host_rust`): cpu, nvptx and rust-gpu
detect the same cargo even when PATH's first `cargo` is another one (rustup's proxy without a
default toolchain, here a fake that fails like it), and real builds go through that cargo."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from workbench.build import build_project
from workbench.build.adapters import host_rust
from workbench.project import Project

# What rustup's proxy says when no default toolchain is configured.
RUSTUP_NO_DEFAULT = (
    "error: rustup could not choose a version of cargo to run, because one wasn't specified "
    "explicitly, and no default is configured."
)


@pytest.fixture
def fake_first_cargo(tmp_path, monkeypatch):
    """PATH whose first `cargo` and `rustc` fail like rustup's proxy with no default toolchain;
    returns the folder. Every call it gets is counted in calls.log."""
    if not host_rust.cargo() or not host_rust.rustc():
        pytest.skip("no cargo and rustc installed")
    bin_dir = tmp_path / "fake-rustup-bin"
    bin_dir.mkdir()
    for name in ("cargo", "rustc"):
        script = bin_dir / name
        script.write_text(
            f'#!/bin/sh\necho "$0 $*" >> {bin_dir}/calls.log\necho "{RUSTUP_NO_DEFAULT}" >&2\nexit 1\n'
        )
        script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("WB_CARGO", raising=False)
    monkeypatch.delenv("WB_RUSTC", raising=False)
    return bin_dir


def test_every_backend_resolves_the_same_cargo_past_a_different_first_on_path(
    fake_first_cargo, cargo_gpu, redetect
):
    # `cargo_gpu` puts the stand-in's folder first on PATH too: both are ahead of the real cargo.
    assert Path(os.environ["PATH"].split(os.pathsep)[1]) == fake_first_cargo
    infos = {t.backend: t for t in redetect()}
    chosen = host_rust.cargo()
    assert chosen and Path(chosen).parent != fake_first_cargo
    assert infos["cpu"].found and infos["rust-gpu"].found, (infos["cpu"], infos["rust-gpu"])
    cargos = {b: infos[b].details.get("cargo") for b in ("cpu", "rust-gpu")}
    if infos["nvptx"].found and infos["nvptx"].details.get("route") == "debian":
        cargos["nvptx"] = infos["nvptx"].details["cargo"]
    assert set(cargos.values()) == {chosen}, cargos
    assert infos["cpu"].path == host_rust.rustc()


def test_builds_run_the_chosen_cargo_not_paths_first(
    fake_first_cargo, cargo_gpu, redetect, example_copy, cache
):
    redetect()
    root = example_copy("saxpy", unique=True)
    manifest = root / "workbench.toml"
    # The stand-in's module (shared/data) has the entry point main_cs.
    text, count = re.subn(r'(?m)^rust-gpu = "[^"]*"$', 'rust-gpu = "main_cs"', manifest.read_text())
    assert count == 1
    manifest.write_text(text)
    results = {r.backend: r for r in build_project(Project.open(root), ["cpu", "rust-gpu"], cache)}
    assert results["cpu"].status == "ok" and not results["cpu"].cached, results["cpu"].log
    assert results["rust-gpu"].status == "ok", results["rust-gpu"].log
    assert not (fake_first_cargo / "calls.log").exists()  # neither build ran PATH's first cargo
    assert cargo_gpu.read_text().strip()  # `cargo gpu build` reached the stand-in
