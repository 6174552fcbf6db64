"""Real builds of the saxpy example: cpu (host cargo), nvptx (rustc -> PTX), cuda-c (nvcc), wgsl;
and of every bundled example on those four backends."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from workbench.build import build_project, detect_toolchains, export, read_build
from workbench.build.toolchains import detect
from workbench.project import Project, examples_dir

pytestmark = pytest.mark.slow


def need(backend: str) -> None:
    info = detect(backend)
    if not info.found:
        if os.environ.get("CI") and backend in ("cpu", "nvptx", "cuda-c", "wgsl"):
            pytest.fail(f"{backend} toolchain missing on CI, where set-up installs it: {info.hint}")
        pytest.skip(f"{backend} toolchain missing: {info.hint}")


def test_detect_toolchains_one_per_backend_with_hints():
    infos = {t.backend: t for t in detect_toolchains()}
    assert set(infos) == {"cpu", "cpu-sim", "nvptx", "rust-gpu", "rust-cuda", "cuda-c", "wgsl"}
    for info in infos.values():
        assert info.found or info.hint, info


def test_saxpy_cpu_and_nvptx_build_and_ptx_passes_ptxas(example_copy, cache, tmp_path):
    need("cpu")
    need("nvptx")
    project = Project.open(example_copy("saxpy"))
    results = {r.backend: r for r in build_project(project, ["cpu", "nvptx", "rust-gpu", "rust-cuda"], cache)}
    assert results["cpu"].status == "ok", results["cpu"].log
    assert results["cpu"].artifacts[0].endswith(".so")
    nvptx = results["nvptx"]
    assert nvptx.status == "ok", nvptx.log
    ptx = nvptx.artifacts[0]
    assert ptx.endswith(".ptx") and ".entry saxpy" in open(ptx).read()
    data = read_build(nvptx.artifact_dir)
    assert data["kernels"]["saxpy"] == {"artifact": "saxpy.ptx", "entry": "saxpy", "kind": "ptx"}
    assert data["target"] == "sm_90" and data["flags"][:2] == ["-C", "target-cpu=sm_90"]
    ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    if shutil.which(ptxas):
        assert subprocess.run([ptxas, "-arch=sm_90", ptx, "-o", "/dev/null"]).returncode == 0
        assert nvptx.resources["saxpy"]["registers"] > 0
    for backend in ("rust-gpu", "rust-cuda"):
        if not detect(backend).found:
            assert results[backend].status == "skipped" and results[backend].hint
    exported = export(list(results.values()), tmp_path / "export")
    assert {p.name for p in exported} == {"cpu", "nvptx"}
    assert read_build(tmp_path / "export" / "nvptx")["backend"] == "nvptx"


def test_reference_backends_build(example_copy, cache):
    project = Project.open(example_copy("saxpy"))
    results = {r.backend: r for r in build_project(project, ["cuda-c", "wgsl"], cache)}
    assert results["wgsl"].status == "ok" and results["wgsl"].artifacts[0].endswith("saxpy.wgsl")
    if detect("cuda-c").found:
        assert results["cuda-c"].status == "ok", results["cuda-c"].log
        assert ".entry saxpy" in open(results["cuda-c"].artifacts[0]).read()


@pytest.mark.parametrize(
    "example", sorted(p.name for p in examples_dir().iterdir() if (p / "workbench.toml").is_file())
)
def test_every_example_builds_on_cpu_nvptx_cuda_c_and_wgsl(example, example_copy, cache):
    """Each kernel entry is in its artifact; ptxas accepted both PTX files (the build runs it)."""
    for backend in ("cpu", "nvptx", "cuda-c", "wgsl"):
        need(backend)
    project = Project.open(example_copy(example))
    results = {r.backend: r for r in build_project(project, ["cpu", "nvptx", "cuda-c", "wgsl"], cache)}
    for backend, result in results.items():
        assert result.status == "ok", (backend, result.log[-3000:])
        assert not [d for d in result.diagnostics if d["severity"] == "error"], (backend, result.diagnostics)
    for backend in ("nvptx", "cuda-c"):
        ptx = "".join(open(path).read() for path in results[backend].artifacts)
        for kernel in project.manifest.kernels:  # scan has two
            assert f".entry {kernel.name}(" in ptx, (backend, kernel.name)
            assert results[backend].resources[kernel.name]["registers"] > 0  # ptxas -v read it
    assert "@compute" in open(results["wgsl"].artifacts[0]).read()


@pytest.mark.parametrize("backend", ["cpu", "nvptx"])
def test_rust_error_reported_at_its_file_and_line(example_copy, cache, backend):
    need(backend)
    root = example_copy("saxpy")
    lib = root / "src" / "lib.rs"
    lines = lib.read_text().splitlines()
    index = next(i for i, line in enumerate(lines) if "y[i] = a * x[i] + y[i];" in line)
    lines[index] = lines[index].replace("+ y[i]", "+ undefined_name")
    lib.write_text("\n".join(lines) + "\n")
    (result,) = build_project(Project.open(root), [backend], cache)
    assert result.status == "error"
    errors = [d for d in result.diagnostics if d["severity"] == "error"]
    assert errors[0]["file"] == "src/lib.rs"
    assert errors[0]["line"] == index + 1
    assert errors[0]["column"] == lines[index].index("undefined_name") + 1
    assert errors[0]["code"] == "E0425"
    assert "undefined_name" in result.log


def test_cuda_c_error_reported_at_its_line(example_copy, cache):
    need("cuda-c")
    root = example_copy("saxpy")
    cu = root / "reference" / "saxpy.cu"
    cu.write_text(cu.read_text().replace("y[i] = a * x[i] + y[i];", "y[i] = a * x[i] + nope;"))
    (result,) = build_project(Project.open(root), ["cuda-c"], cache)
    assert result.status == "error"
    line = next(i for i, text in enumerate(cu.read_text().splitlines(), 1) if "nope" in text)
    diag = next(d for d in result.diagnostics if d["severity"] == "error")
    assert (diag["file"], diag["line"]) == ("reference/saxpy.cu", line)
    assert "nope" in diag["message"]


def test_missing_entry_point_is_a_clear_error(example_copy, cache):
    need("cuda-c")
    root = example_copy("saxpy")
    manifest = root / "workbench.toml"
    manifest.write_text(
        manifest.read_text().replace('cpu = "saxpy_cpu"', 'cpu = "saxpy_cpu"\ncuda-c = "saxpy2"')
    )
    (result,) = build_project(Project.open(root), ["cuda-c"], cache)
    assert result.status == "error"
    assert any("'saxpy2' is not in saxpy.ptx" in d["message"] for d in result.diagnostics)


def test_unchanged_is_a_cache_hit_and_one_line_edit_rebuilds(example_copy, cache):
    need("cpu")
    root = example_copy("saxpy", unique=True)
    project = Project.open(root)
    (first,) = build_project(project, ["cpu"], cache)
    (second,) = build_project(project, ["cpu"], cache)
    assert first.status == second.status == "ok"
    assert second.cached and second.key == first.key and second.artifact_dir == first.artifact_dir
    with open(root / "src" / "lib.rs", "a") as f:
        f.write("// one more line\n")
    (third,) = build_project(project, ["cpu"], cache)
    assert third.status == "ok" and not third.cached and third.key != first.key
    (other_target,) = build_project(project, ["cpu"], cache, tunables={"unused": 1})
    assert other_target.key != third.key


def test_nvptx_bounds_checks_become_traps(example_copy, cache):
    """An index rustc cannot prove in range must not leave core's panic machinery unresolved in the PTX.

    Without `-Cpanic=immediate-abort` for core and the crate, ptxas refuses the module with
    "Unresolved extern function ...panic_bounds_check".
    """
    need("nvptx")
    root = example_copy("saxpy")
    lib = root / "src" / "lib.rs"
    text = lib.read_text()
    # A slice indexed by a value read from memory, so the bounds check stays (the kernel API's
    # handles index unchecked on nvptx, as CUDA C does; a kernel's own slices are still checked).
    old = "        y[i] = a * x[i] + y[i];\n"
    assert old in text
    new = "        let keys: [usize; 4] = [0, 1, 2, 3];\n        y[keys[x[i] as usize]] = a;\n"
    lib.write_text(text.replace(old, new, 1))
    (result,) = build_project(Project.open(root), ["nvptx"], cache)
    assert result.status == "ok", result.log
    ptx = open(result.artifacts[0]).read()
    assert "panic_bounds_check" not in ptx and "trap" in ptx
    ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    if shutil.which(ptxas):
        assert subprocess.run([ptxas, "-arch=sm_90", result.artifacts[0], "-o", "/dev/null"]).returncode == 0


@pytest.mark.parametrize("backend", ["cpu", "nvptx"])
def test_copies_of_one_crate_never_share_a_stale_artifact(tmp_path, cache, backend):
    """Two copies of saxpy share the cache's target dir; the copy with OLDER sources must still get its own code.

    Cargo's default freshness check compares modification times, which a copied project keeps.
    """
    need(backend)
    from workbench.project import examples_dir

    first = tmp_path / "first"
    second = tmp_path / "second"
    for dest in (first, second):
        shutil.copytree(examples_dir() / "saxpy", dest, ignore=shutil.ignore_patterns("target"))
    marker = '#[unsafe(no_mangle)]\npub extern "C" fn only_in_the_second_copy() {}\n'
    if backend == "nvptx":
        marker = (
            '#[cfg(target_arch = "nvptx64")]\n#[unsafe(no_mangle)]\n'
            'pub unsafe extern "ptx-kernel" fn only_in_the_second_copy() {}\n'
        )
    lib = second / "src" / "lib.rs"
    lib.write_text(lib.read_text() + marker)
    os.utime(lib, (946684800, 946684800))  # the year 2000: older than any build output
    (a,) = build_project(Project.open(first), [backend], cache)
    (b,) = build_project(Project.open(second), [backend], cache)
    assert a.status == b.status == "ok", (a.log, b.log)
    assert b"only_in_the_second_copy" not in open(a.artifacts[0], "rb").read()
    assert b"only_in_the_second_copy" in open(b.artifacts[0], "rb").read()


def test_an_edit_rebuilds_only_the_backends_it_touches(example_copy, cache):
    """Editing the WGSL reference rebuilds wgsl only; editing the Rust crate leaves cuda-c and wgsl cached."""
    need("cpu")
    root = example_copy("saxpy", unique=True)
    project = Project.open(root)
    backends = ["cpu", "cuda-c", "wgsl"] if detect("cuda-c").found else ["cpu", "wgsl"]
    first = {r.backend: r for r in build_project(project, backends, cache)}
    assert all(r.status == "ok" for r in first.values()), {b: r.log for b, r in first.items()}

    wgsl = root / "reference" / "saxpy.wgsl"
    wgsl.write_text(wgsl.read_text() + "\n// tuned\n")
    second = {r.backend: r for r in build_project(Project.open(root), backends, cache)}
    assert not second["wgsl"].cached
    assert all(second[b].cached for b in backends if b != "wgsl")

    lib = root / "src" / "lib.rs"
    lib.write_text(lib.read_text() + "\n// tuned\n")
    third = {r.backend: r for r in build_project(Project.open(root), backends, cache)}
    assert not third["cpu"].cached and third["cpu"].status == "ok"
    assert all(third[b].cached for b in backends if b != "cpu")


def test_a_cache_hit_carries_the_log_kept_when_it_was_built(example_copy, cache):
    need("cpu")
    project = Project.open(example_copy("saxpy", unique=True))
    (first,) = build_project(project, ["cpu"], cache)
    (second,) = build_project(project, ["cpu"], cache)
    assert first.status == second.status == "ok" and not first.cached and second.cached
    assert first.log.strip()
    created = read_build(first.artifact_dir)["created"]
    head = f"served from the build cache: key {first.key}, built {created}\nin {first.artifact_dir}\n"
    assert second.log == head + "\n" + first.log
