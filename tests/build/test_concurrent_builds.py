"""Two different projects built at the same time, on every backend that builds here, each get their own
artifacts: no build writes into a folder another build reads (docs/contracts.md, "Build keys")."""

from __future__ import annotations

import re
import threading

import pytest

from workbench.build import build_project
from workbench.build.toolchains import detect
from workbench.project import Project

from .conftest import SHARED_SPIRV

pytestmark = pytest.mark.slow

RUST_MARKER = """
#[cfg(not(any(target_arch = "nvptx64", target_arch = "spirv")))]
#[unsafe(no_mangle)]
pub extern "C" fn cpu_{tag}() {{}}
#[cfg(target_arch = "nvptx64")]
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn ptx_{tag}() {{}}
"""


def make_project(example_copy, tmp_path, tag: str, module: str):
    root = example_copy("saxpy", unique=True)
    target = tmp_path / tag
    root.rename(target)
    (target / "src" / "lib.rs").write_text(
        (target / "src" / "lib.rs").read_text() + RUST_MARKER.format(tag=tag)
    )
    cu = target / "reference" / "saxpy.cu"
    cu.write_text(cu.read_text() + f'\nextern "C" __global__ void cuda_{tag}() {{}}\n')
    wgsl = target / "reference" / "saxpy.wgsl"
    wgsl.write_text(wgsl.read_text() + f"\n// wgsl_{tag}\n")
    manifest = target / "workbench.toml"
    text, count = re.subn(r'(?m)^rust-gpu = "[^"]*"$', 'rust-gpu = "main_cs"', manifest.read_text())
    assert count == 1
    manifest.write_text(text)
    if SHARED_SPIRV.is_dir():
        (target / "stand-in.spv").write_bytes((SHARED_SPIRV / module).read_bytes())
    return target


def test_two_projects_build_concurrently_on_every_backend(
    example_copy, tmp_path, cache, request, monkeypatch
):
    backends = [b for b in ("cpu", "nvptx", "cuda-c", "wgsl") if detect(b).found]
    if SHARED_SPIRV.is_dir():
        request.getfixturevalue("cargo_gpu")  # the cargo-gpu stand-in on PATH
        monkeypatch.setenv("WB_STAND_IN_SLEEP", "0.3")  # module written, manifest not yet
        backends.append("rust-gpu")
    if len(backends) < 2:
        pytest.skip("fewer than two backends can build here")
    projects = {
        "a": make_project(example_copy, tmp_path, "a", "headless.comp.spv"),
        "b": make_project(example_copy, tmp_path, "b", "particle_integrate.comp.spv"),
    }
    results: dict[str, dict] = {}
    start = threading.Barrier(2)

    def build(tag: str) -> None:
        project = Project.open(projects[tag])
        start.wait()
        results[tag] = {r.backend: r for r in build_project(project, backends, cache)}

    threads = [threading.Thread(target=build, args=(tag,)) for tag in projects]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    assert set(results) == {"a", "b"}
    for tag, other in (("a", "b"), ("b", "a")):
        for backend, result in results[tag].items():
            assert result.status == "ok" and not result.cached, (tag, backend, result.log)
        content = {b: open(r.artifacts[0], "rb").read() for b, r in results[tag].items()}
        checks = {"cpu": "cpu_", "nvptx": "ptx_", "cuda-c": "cuda_", "wgsl": "wgsl_"}
        for backend, prefix in checks.items():
            if backend in content:
                assert f"{prefix}{tag}".encode() in content[backend], (tag, backend)
                assert f"{prefix}{other}".encode() not in content[backend], (tag, backend)
        if "rust-gpu" in content:
            assert content["rust-gpu"] == (projects[tag] / "stand-in.spv").read_bytes()
        assert results[tag]["cpu"].artifact_dir != results[other]["cpu"].artifact_dir
