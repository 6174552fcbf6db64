"""rust-gpu: cargo-gpu output handling, on real rust-gpu SPIR-V (shared/data) and a stand-in cargo-gpu.

cargo-gpu cannot be installed here (it needs a pinned nightly with rustc-dev). The stand-in
(`cargo_gpu_stand_in.py`, put on PATH by the `cargo_gpu` fixture and reached through the real
`cargo gpu ...` dispatch) follows the contract of cargo-gpu's source: its flags are checked, and it
writes OUT/<crate>.spv and OUT/manifest.json with `source_path` relative to the shader crate. The
module it writes is real rust-gpu output.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from workbench.build import build_project, read_build
from workbench.build.adapters import host_rust
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


@needs_data
def test_cargo_gpu_build_through_stand_in(example_copy, cache, cargo_gpu):
    root = example_copy("saxpy", unique=True)
    with_entry(root, "main_cs")
    (result,) = build_project(Project.open(root), ["rust-gpu"], cache)
    assert result.status == "ok", result.log
    # The command line is cargo-gpu's own (the stand-in rejects any flag cargo-gpu would).
    (argv,) = [json.loads(line) for line in cargo_gpu.read_text().splitlines()]
    assert argv[0] == "build" and argv[argv.index("--shader-crate") + 1] == str(root)
    assert argv[argv.index("--target") + 1] == "spirv-unknown-vulkan1.2"
    assert "--auto-install-rust-toolchain" in argv
    data = read_build(result.artifact_dir)
    assert data["kernels"]["saxpy"]["artifact"] == "saxpy.spv"
    assert data["entry_rule"] == {"saxpy": "manifest.json"}  # found through source_path, not a fallback
    (record,) = json.loads((Path(result.artifact_dir) / "manifest.json").read_text())
    # cargo-gpu writes the path relative to the shader crate: the build's own output folder is
    # outside the crate, so it climbs out with `..`.
    assert record["source_path"].startswith("../") and record["source_path"].endswith("/saxpy.spv")
    assert record["entry_point"] == "main_cs"
    assert (Path(result.artifact_dir) / "saxpy.spv").read_bytes() == (
        SHARED_SPIRV / "headless.comp.spv"
    ).read_bytes()
    # The dep-info spirv-builder's cargo leaves behind keys the next build.
    assert "src/lib.rs" in data["key_inputs"]["files"]
    # A compile error arrives as rendered text: parsed into a located diagnostic.
    lib = root / "src" / "lib.rs"
    lib.write_text(lib.read_text() + "// undefined_name\n")
    (failed,) = build_project(Project.open(root), ["rust-gpu"], cache)
    assert failed.status == "error"
    assert (failed.diagnostics[0]["file"], failed.diagnostics[0]["line"]) == ("src/lib.rs", 11)


def test_stand_in_rejects_flags_cargo_gpu_does_not_have(cargo_gpu, tmp_path):
    import subprocess

    crate = tmp_path / "crate"
    (crate / "src").mkdir(parents=True)
    (crate / "Cargo.toml").write_text('[package]\nname = "k"\n')
    (crate / "src" / "lib.rs").write_text("")
    cargo = host_rust.cargo()  # the cargo the rust-gpu adapter runs `cargo gpu` with
    bad = subprocess.run([cargo, "gpu", "build", "--shader-crate", str(crate), "--out", "x"],
                         capture_output=True, text=True)  # fmt: skip
    assert bad.returncode == 2 and "unexpected argument '--out'" in bad.stderr
    ok = subprocess.run([cargo, "gpu", "build", "--shader-crate", str(crate), "-o", str(crate)],
                        capture_output=True, text=True)  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    # Output folder = the shader crate: the layout of the recorded real manifest.
    assert json.loads((crate / "manifest.json").read_text()) == [
        {"source_path": "k.spv", "entry_point": "main_cs", "wgsl_entry_point": "main_cs"}
    ]


@needs_data
def test_adapter_on_the_recorded_real_manifest_layout(example_copy, cache):
    """The recorded cargo-gpu output (shared/data) was written with the shader crate as output
    folder: `"source_path": "main_cs.spv"`, relative to the crate. The adapter resolves it there."""
    root = example_copy("saxpy", unique=True)
    with_entry(root, "main_cs")
    shutil.copy(SHARED_SPIRV / "cargo-gpu-manifest.json", root / "manifest.json")
    shutil.copy(SHARED_SPIRV / "headless.comp.spv", root / "main_cs.spv")
    # A second module declaring the same entry: only source_path can pick the right one.
    shutil.copy(SHARED_SPIRV / "particle_integrate.comp.spv", root / "another.spv")
    manifest = root / "workbench.toml"
    manifest.write_text(manifest.read_text() + '\n[backends.rust-gpu]\nprebuilt = "."\n')
    (result,) = build_project(Project.open(root), ["rust-gpu"], cache)
    assert result.status == "ok", result.log
    data = read_build(result.artifact_dir)
    assert data["kernels"]["saxpy"]["artifact"] == "main_cs.spv"
    assert data["entry_rule"] == {"saxpy": "manifest.json"}
    assert (Path(result.artifact_dir) / "main_cs.spv").read_bytes() == (
        SHARED_SPIRV / "headless.comp.spv"
    ).read_bytes()


def test_rust_cuda_missing_is_skipped_with_requirements(example_copy, cache):
    from workbench.build.toolchains import detect

    info = detect("rust-cuda")
    if info.found:
        pytest.skip("Rust-CUDA is installed here")
    (result,) = build_project(Project.open(example_copy("saxpy")), ["rust-cuda"], cache)
    assert result.status == "skipped"
    assert "LLVM 7" in result.hint and "libNVVM" in result.hint and "nightly" in result.hint
    # what is missing here by name, then the README's words (doctor's hint)
    assert result.hint == f"missing {', '.join(info.details['missing'])}. {info.hint}"
    assert info.details["toolchain"] in result.hint


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
