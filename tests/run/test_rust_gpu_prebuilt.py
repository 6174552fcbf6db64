"""Real rust-gpu output, end to end: a project whose `rust-gpu` backend points at prebuilt cargo-gpu
output (the SPIR-V in ../shared/data/rust-gpu-spirv, written by rust-gpu for a public project, not by
us) runs on llvmpipe through `workbench run` and is verified against a CPU definition of the same
computation, written here in Rust. A module naga refuses ends as an error carrying naga's reason."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.build.toolchains import detect

REPO = Path(__file__).resolve().parents[2]
SPIRV = REPO.parent / "shared" / "data" / "rust-gpu-spirv"


def _projects_script():
    """The CPU definitions (Rust) of the GPU-host run's rust-gpu projects: one copy, tested here."""
    path = REPO / "benchmarks" / "gpu_host" / "rust_gpu_projects.py"
    spec = importlib.util.spec_from_file_location("rust_gpu_projects", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_SCRIPT = _projects_script()
CARGO, HEADLESS_RS, PARTICLES_RS = _SCRIPT.CARGO, _SCRIPT.HEADLESS_RS, _SCRIPT.PARTICLES_RS


def _small(manifest: str, sizes: str, small: str) -> str:
    """The GPU host's manifest at a size llvmpipe runs in seconds."""
    assert sizes in manifest, sizes
    return manifest.replace(sizes, small)


HEADLESS_TOML = _small(_SCRIPT.HEADLESS_TOML, "sizes = { n = 65535 }", "sizes = { n = 1000 }")
PARTICLES_TOML = _small(_SCRIPT.PARTICLES_TOML, "sizes = { count = 4194304 }", "sizes = { count = 1000 }")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not SPIRV.is_dir(), reason=f"{SPIRV} is absent"),
]


def _project(root: Path, name: str, rust: str, manifest: str, modules: list[str]) -> Path:
    """A kernel project: a CPU crate, and cargo-gpu output (manifest.json + the given .spv) as prebuilt."""
    (root / "src").mkdir(parents=True)
    (root / "Cargo.toml").write_text(CARGO.format(name=name))
    (root / "src" / "lib.rs").write_text(rust)
    prebuilt = root / "spirv"
    prebuilt.mkdir()
    shutil.copy(SPIRV / "cargo-gpu-manifest.json", prebuilt / "manifest.json")
    for module in modules:
        shutil.copy(module, prebuilt)
    (root / "workbench.toml").write_text(manifest)  # prebuilt = "spirv": the folder above
    return root


def _run(root: Path, cache: Path, *extra: str) -> tuple[int, dict, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "workbench", "run", str(root), "--backend", "cpu,rust-gpu",
         "--device", "cpu", "--device", "wgpu:llvmpipe", "--cache-dir", str(cache), "--json", *extra],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.stdout, proc.stderr
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def _needs_cpu():
    if not detect("cpu").found:
        pytest.skip("no host cargo: run packaging/bootstrap.sh setup")


def test_headless_module_verifies_against_the_cpu(tmp_path, shared_cache_dir):
    _needs_cpu()
    root = _project(
        tmp_path / "headless", "headless", HEADLESS_RS, HEADLESS_TOML, [SPIRV / "headless.comp.spv"]
    )
    code, report, stderr = _run(root, shared_cache_dir)
    results = {r["backend"]: r for r in report["results"]}
    gpu = results["rust-gpu"]
    assert gpu["status"] == "ok", gpu["error"]
    assert "llvmpipe" in gpu["device"]["name"]
    assert gpu["verified"] is True, gpu["check"]
    assert gpu["check"]["bad"] == 0 and gpu["check"]["unwritten"] == 0
    assert gpu["timing"]["method"] == "wgpu-timestamps"
    assert code == 0, stderr


def test_particle_module_verifies_against_the_cpu(tmp_path, shared_cache_dir):
    _needs_cpu()
    root = _project(
        tmp_path / "particles",
        "particles",
        PARTICLES_RS,
        PARTICLES_TOML,
        [SPIRV / "particle_integrate.comp.spv"],
    )
    code, report, stderr = _run(root, shared_cache_dir)
    gpu = next(r for r in report["results"] if r["backend"] == "rust-gpu")
    assert gpu["status"] == "ok" and gpu["verified"] is True, (gpu["error"], gpu["check"])
    assert code == 0, stderr


def test_a_module_naga_refuses_is_an_error_with_nagas_reason(tmp_path, shared_cache_dir):
    """glslang output (not rust-gpu's) with a capability naga does not support, as a prebuilt module."""
    _needs_cpu()
    glslang = shutil.which("glslangValidator")
    if glslang is None:
        pytest.skip("glslangValidator (glslang-tools) is not installed")
    refused = tmp_path / "refused.spv"
    source = REPO / "tests" / "run_runtimes" / "shaders" / "refused_device_scope.comp"
    subprocess.run([glslang, "-V", "--target-env", "vulkan1.2", str(source), "-o", str(refused)], check=True)
    manifest = HEADLESS_TOML.replace('rust-gpu = "main_cs"', 'rust-gpu = "main"')
    root = _project(tmp_path / "refused", "headless", HEADLESS_RS, manifest, [refused])
    code, report, _ = _run(root, shared_cache_dir, "--size", "n=4")
    results = {r["backend"]: r for r in report["results"]}
    assert results["cpu"]["status"] == "ok"
    assert results["rust-gpu"]["status"] == "error"
    assert "VulkanMemoryModelDeviceScope" in results["rust-gpu"]["error"]
    assert code == 1
