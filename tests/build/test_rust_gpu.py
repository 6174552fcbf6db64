"""rust-gpu: cargo-gpu output handling, on real rust-gpu SPIR-V (shared/data) and a stand-in cargo-gpu.

cargo-gpu cannot be installed here (it needs a pinned nightly with rustc-dev). The stand-in below is a
`cargo-gpu` script on PATH, reached through the real `cargo gpu ...` dispatch; it writes exactly what
cargo-gpu documents: OUT/<module>.spv and OUT/manifest.json (an array of {source_path, entry_point,
wgsl_entry_point}) and prints "Build successful!". The module it writes is real rust-gpu output.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
from pathlib import Path

import pytest

from workbench.build import build_project, read_build
from workbench.project import Project
from workbench.spirv import entry_points as spirv_entry_points

SHARED_SPIRV = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "rust-gpu-spirv"
needs_data = pytest.mark.skipif(not SHARED_SPIRV.is_dir(), reason=f"{SHARED_SPIRV} is absent")


def with_entry(root: Path, entry: str) -> None:
    manifest = root / "workbench.toml"
    text, count = re.subn(r'(?m)^rust-gpu = "[^"]*"$', f'rust-gpu = "{entry}"', manifest.read_text())
    assert count == 1, "the saxpy example no longer has a [kernel.entry] rust-gpu line"
    manifest.write_text(text)


@needs_data
def test_entry_points_of_real_rust_gpu_modules():
    headless = spirv_entry_points((SHARED_SPIRV / "headless.comp.spv").read_bytes())
    particles = spirv_entry_points((SHARED_SPIRV / "particle_integrate.comp.spv").read_bytes())
    assert headless == [{"name": "main_cs", "model": "compute", "workgroup_size": [1, 1, 1]}]
    assert particles[0]["workgroup_size"] == [256, 1, 1]


@needs_data
def test_prebuilt_folder_with_recorded_manifest_falls_back_to_op_entry_point(example_copy, cache):
    root = example_copy("saxpy")
    with_entry(root, "main_cs")
    prebuilt = root / "spirv"
    prebuilt.mkdir()
    shutil.copy(SHARED_SPIRV / "particle_integrate.comp.spv", prebuilt)
    # The recorded manifest names main_cs.spv, which is not in the folder.
    shutil.copy(SHARED_SPIRV / "cargo-gpu-manifest.json", prebuilt / "manifest.json")
    manifest = root / "workbench.toml"
    manifest.write_text(manifest.read_text() + '\n[backends.rust-gpu]\nprebuilt = "spirv"\n')
    (result,) = build_project(Project.open(root), ["rust-gpu"], cache)
    assert result.status == "ok", result.log
    data = read_build(result.artifact_dir)
    assert data["kernels"]["saxpy"] == {"artifact": "particle_integrate.comp.spv", "entry": "main_cs",
                                        "kind": "spirv"}  # fmt: skip
    assert data["entry_rule"] == {"saxpy": "OpEntryPoint"}
    assert (Path(result.artifact_dir) / "manifest.json").is_file()
    report = result.resources["saxpy"]
    if shutil.which("spirv-val"):
        assert report["valid"] is True
    if shutil.which("spirv-dis"):
        assert "OpEntryPoint GLCompute" in (Path(result.artifact_dir) / report["spvasm"]).read_text()


@needs_data
def test_prebuilt_entry_missing_is_a_clear_error(example_copy, cache):
    root = example_copy("saxpy")
    manifest = root / "workbench.toml"
    manifest.write_text(manifest.read_text() + f'\n[backends.rust-gpu]\nprebuilt = "{SHARED_SPIRV}"\n')
    (result,) = build_project(Project.open(root), ["rust-gpu"], cache)
    assert result.status == "error"
    entry = Project.open(root).manifest.kernels[0].entry_for("rust-gpu")
    assert f"{entry!r} is in no SPIR-V module" in result.diagnostics[0]["message"]
    assert "main_cs" in result.diagnostics[0]["message"]


FAKE_CARGO_GPU = """#!/bin/sh
# Stand-in for cargo-gpu (see the module docstring). cargo runs it as: cargo-gpu gpu <args>
[ "$1" = gpu ] && shift
if [ "$1" = "--version" ]; then echo "cargo-gpu 0.1.0 (stand-in)"; exit 0; fi
OUT=""
while [ $# -gt 0 ]; do
  case "$1" in -o|--output-dir) OUT="$2"; shift;; esac
  shift
done
echo "   Compiling saxpy v0.1.0" >&2
if grep -q undefined_name "$CRATE_SRC"; then
  printf 'error[E0425]: cannot find value `undefined_name` in this scope\\n  --> src/lib.rs:11:27\\n   |\\n\\n' >&2
  echo "Build failed!" >&2
  exit 1
fi
cp "$SPV" "$OUT/saxpy_spirv-main.spv"
printf '[{"source_path": "%s/saxpy_spirv-main.spv", "entry_point": "main_cs", "wgsl_entry_point": "main_cs"}]' "$OUT" > "$OUT/manifest.json"
echo "Build successful!" >&2
"""


@needs_data
def test_cargo_gpu_build_through_stand_in(example_copy, cache, tmp_path, monkeypatch, redetect):
    if not shutil.which("cargo"):
        pytest.skip("no cargo to dispatch `cargo gpu`")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "cargo-gpu"
    script.write_text(FAKE_CARGO_GPU)
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    root = example_copy("saxpy")
    with_entry(root, "main_cs")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("SPV", str(SHARED_SPIRV / "headless.comp.spv"))
    monkeypatch.setenv("CRATE_SRC", str(root / "src" / "lib.rs"))
    infos = {t.backend: t for t in redetect()}
    assert infos["rust-gpu"].found and "stand-in" in infos["rust-gpu"].version
    (result,) = build_project(Project.open(root), ["rust-gpu"], cache)
    assert result.status == "ok", result.log
    data = read_build(result.artifact_dir)
    assert data["kernels"]["saxpy"]["artifact"] == "saxpy_spirv-main.spv"
    assert data["entry_rule"] == {"saxpy": "manifest.json"}
    assert (
        json.loads((Path(result.artifact_dir) / "manifest.json").read_text())[0]["entry_point"] == "main_cs"
    )
    # A compile error arrives as rendered text: parsed into a located diagnostic.
    lib = root / "src" / "lib.rs"
    lib.write_text(lib.read_text() + "// undefined_name\n")
    (failed,) = build_project(Project.open(root), ["rust-gpu"], cache)
    assert failed.status == "error"
    assert (failed.diagnostics[0]["file"], failed.diagnostics[0]["line"]) == ("src/lib.rs", 11)


def test_rust_cuda_missing_is_skipped_with_requirements(example_copy, cache):
    from workbench.build.toolchains import detect

    info = detect("rust-cuda")
    if info.found:
        pytest.skip("Rust-CUDA is installed here")
    (result,) = build_project(Project.open(example_copy("saxpy")), ["rust-cuda"], cache)
    assert result.status == "skipped"
    assert "LLVM 7" in result.hint and "libNVVM" in result.hint and "nightly" in result.hint


@needs_data
def test_without_spirv_val_naga_validates_the_module(example_copy, cache, monkeypatch, tmp_path):
    """No spirv-val here: wgpu's own validation (naga) checks the module, and rejects a broken one."""
    pytest.importorskip("wgpu")
    monkeypatch.setenv("WB_SPIRV_VAL", str(tmp_path / "no-spirv-val"))  # names nothing: not found
    root = example_copy("saxpy")
    with_entry(root, "main_cs")
    prebuilt = root / "spirv"
    prebuilt.mkdir()
    shutil.copy(SHARED_SPIRV / "headless.comp.spv", prebuilt)
    manifest = root / "workbench.toml"
    manifest.write_text(manifest.read_text() + '\n[backends.rust-gpu]\nprebuilt = "spirv"\n')
    (result,) = build_project(Project.open(root), ["rust-gpu"], cache)
    assert result.status == "ok", result.log
    assert "naga: headless.comp.spv is valid" in result.log or "not validated" in result.log
    # The same module with its body cut short: naga says why, and the build fails.
    data = (SHARED_SPIRV / "headless.comp.spv").read_bytes()
    (prebuilt / "headless.comp.spv").write_bytes(data[: len(data) - 24])
    (broken,) = build_project(Project.open(root), ["rust-gpu"], cache)
    if "not validated" in result.log:
        pytest.skip("no wgpu adapter to validate with")
    assert broken.status == "error", (broken.cached, broken.log)
    assert any(d["message"].startswith("naga") for d in broken.diagnostics), broken.diagnostics
