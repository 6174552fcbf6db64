"""Tunables reach every backend as real builds see them: Rust through `WB_TUNABLE_<NAME>`
(cpu cdylib, nvptx PTX), WGSL `override` defaults, CUDA C++ `-D<name>=<value>`; each configuration
is its own cache key and artifact; a tunable a backend never reads is reported."""

from __future__ import annotations

import ctypes
import json
import re
from pathlib import Path

import pytest

from workbench.build import build_project
from workbench.build.toolchains import detect
from workbench.errors import ManifestError
from workbench.manifest import load_manifest
from workbench.profile.tuning.sweep_space import space
from workbench.project import Project


def artifact(result) -> Path:
    return Path(result.artifacts[0])


def warnings(result) -> list[str]:
    return [d["message"] for d in result.diagnostics if d["severity"] == "warning"]


def needs(backend: str) -> None:
    if not detect(backend).found:
        pytest.skip(f"{backend} toolchain not installed")


def test_cpu_crate_reads_the_tunable_and_each_value_is_its_own_build(example_copy, shared_cache_dir):
    root = example_copy("saxpy", unique=True)
    lib = root / "src" / "lib.rs"
    # The documented form (docs/manifest.md): option_env! parsed in a const, exported to check it.
    lib.write_text(
        lib.read_text() + '\n#[cfg(not(any(target_arch = "nvptx64", target_arch = "spirv")))]\n'
        'const BUILT: &str = match option_env!("WB_TUNABLE_THREADS") { Some(v) => v, None => "none" };\n'
        '#[cfg(not(any(target_arch = "nvptx64", target_arch = "spirv")))]\n'
        '#[unsafe(no_mangle)]\npub extern "C" fn built_threads() -> u32 {\n'
        "    let b = BUILT.as_bytes(); let mut v = 0u32; let mut i = 0;\n"
        "    while i < b.len() { v = v * 10 + (b[i] - b'0') as u32; i += 1; } v\n}\n"
    )
    project = Project.open(root)
    (a,) = build_project(project, ["cpu"], shared_cache_dir, tunables={"threads": 96})
    (b,) = build_project(project, ["cpu"], shared_cache_dir, tunables={"threads": 128})
    assert a.status == b.status == "ok"
    assert a.key != b.key and artifact(a).parent != artifact(b).parent
    assert artifact(a).read_bytes() != artifact(b).read_bytes()
    for result, expected in ((a, 96), (b, 128)):
        library = ctypes.CDLL(str(artifact(result)))
        library.built_threads.restype = ctypes.c_uint32
        assert library.built_threads() == expected
    # The crate read threads: no "never read" warning for it.
    assert not any("'threads'" in w for w in warnings(a))
    (again,) = build_project(project, ["cpu"], shared_cache_dir, tunables={"threads": 96})
    assert again.cached and again.key == a.key


def test_nvptx_ptx_carries_the_constant(example_copy, shared_cache_dir):
    needs("nvptx")
    project = Project.open(example_copy("saxpy"))
    (a,) = build_project(project, ["nvptx"], shared_cache_dir, tunables={"threads": 96})
    (b,) = build_project(project, ["nvptx"], shared_cache_dir, tunables={"threads": 160})
    assert a.status == b.status == "ok" and a.key != b.key
    ptx_a, ptx_b = artifact(a).read_text(), artifact(b).read_text()
    # The index group * THREADS + local: a multiply (or multiply-add) by the constant.
    assert re.search(r"(mul|mad)\.\S+\s+%\w+, %\w+, 96[;,]", ptx_a), ptx_a
    assert re.search(r"(mul|mad)\.\S+\s+%\w+, %\w+, 160[;,]", ptx_b)
    assert not re.search(r", 160[;,]", ptx_a)
    assert not warnings(a)  # nvptx reads threads


def test_matmul_tile_reaches_nvptx_shared_memory(example_copy, shared_cache_dir):
    needs("nvptx")
    project = Project.open(example_copy("matmul"))
    (a,) = build_project(project, ["nvptx"], shared_cache_dir, tunables={"tile": 8})
    assert a.status == "ok", a.diagnostics
    # Two 8x8 f32 tiles: 256 bytes of shared memory each, declared from the const.
    ptx = artifact(a).read_text()
    assert ".b8 MATMUL_A_TILE[256]" in ptx and ".b8 MATMUL_B_TILE[256]" in ptx


def test_wgsl_override_default_is_the_configuration(example_copy, shared_cache_dir):
    project = Project.open(example_copy("saxpy"))
    (a,) = build_project(project, ["wgsl"], shared_cache_dir, tunables={"threads": 64})
    (b,) = build_project(project, ["wgsl"], shared_cache_dir, tunables={"threads": 128})
    assert a.key != b.key
    assert "override threads: u32 = 64u;" in artifact(a).read_text()
    assert "override threads: u32 = 128u;" in artifact(b).read_text()
    assert "@workgroup_size(threads)" in artifact(a).read_text()


def test_wgsl_workgroup_follows_the_tunable_in_a_run(example_copy, tune_service, shared_cache_dir):
    """The run's launch spec and the module agree: the 64-thread configuration verifies on wgpu."""
    project = Project.open(example_copy("saxpy"))
    report = tune_service.run(project, backends=["wgsl"], sizes={"n": 1000}, tunables={"threads": 64},
                              cache_dir=shared_cache_dir)  # fmt: skip
    (result,) = report.results
    assert result.status == "ok" and result.verified is True
    assert result.provenance["tunables"] == {"threads": 64, "vector": 1}  # vector: its default


@pytest.mark.parametrize("tile", [8, 32, 12])
def test_matmul_wgsl_reference_verifies_at_each_tile(tile, example_copy, tune_service, shared_cache_dir):
    """The written-out reference WGSL (steps in groups of 8 guarded by the `tile` override, a loop
    for other tiles: 12) computes C for the manifest's other tiles too, partial tiles included."""
    project = Project.open(example_copy("matmul"))
    report = tune_service.run(project, backends=["cpu", "wgsl"], sizes={"m": 40, "n": 36, "k": 44},
                              tunables={"tile": tile}, reference="cpu", cache_dir=shared_cache_dir)  # fmt: skip
    wgsl = next(r for r in report.results if r.backend == "wgsl")
    assert wgsl.status == "ok", wgsl.error
    assert wgsl.verified is True, wgsl.check
    assert wgsl.provenance["tunables"] == {"tile": tile, "per_thread": 1}


KERNEL_TUNER_CU = """\
// A Kernel Tuner kernel, as written for it: block_size_x is a macro the tuner defines.
extern "C" __global__ void vector_add(float *c, const float *a, const float *b, int n) {
    int i = blockIdx.x * block_size_x + threadIdx.x;
    if (i < n) {
        c[i] = a[i] + b[i];
    }
}
"""

KERNEL_TUNER_TOML = """\
[project]
name = "vector_add"
crate = "."

[[kernel]]
name = "vector_add"

[kernel.sizes]
n = 1000

[kernel.tunables]
block_size_x = [128, 64, 256]

[[kernel.arg]]
name = "c"
kind = "buffer"
type = "f32"
length = "n"
direction = "out"

[[kernel.arg]]
name = "a"
kind = "buffer"
type = "f32"
length = "n"
direction = "in"

[[kernel.arg]]
name = "b"
kind = "buffer"
type = "f32"
length = "n"
direction = "in"

[[kernel.arg]]
name = "n"
kind = "scalar"
type = "i32"
value = "n"

[kernel.launch]            # no threads: Kernel Tuner's block_size_x/y/z are the threads
grid = ["ceil_div(n, block_size_x)"]

[kernel.reference]
cuda-c = "vector_add.cu"
"""


def test_kernel_tuner_cu_builds_unchanged(tmp_path, shared_cache_dir):
    needs("cuda-c")
    (tmp_path / "vector_add.cu").write_text(KERNEL_TUNER_CU)
    (tmp_path / "workbench.toml").write_text(KERNEL_TUNER_TOML)
    project = Project.open(tmp_path)
    kernel = project.manifest.kernel()
    assert kernel.launch.threads == ("block_size_x",)
    (result,) = build_project(project, ["cuda-c"], shared_cache_dir, tunables={"block_size_x": 64})
    assert result.status == "ok", result.diagnostics
    assert "-Dblock_size_x=64" in result.flags
    assert ".entry vector_add" in artifact(result).read_text()
    assert not warnings(result)


def test_unread_tunable_is_reported_on_every_backend(example_copy, shared_cache_dir):
    root = example_copy("saxpy")
    toml = root / "workbench.toml"
    toml.write_text(toml.read_text().replace("threads = [256, 64, 128, 512, 1024]",
                                             "threads = [256, 64, 128, 512, 1024]\nunused = [1, 2]"))  # fmt: skip
    project = Project.open(root)
    backends = ["cpu", "wgsl"] + [b for b in ("nvptx", "cuda-c") if detect(b).found]
    results = {r.backend: r for r in build_project(project, backends, shared_cache_dir)}
    for backend, result in results.items():
        assert result.status == "ok"
        unread = [w for w in warnings(result) if "'unused' is never read" in w]
        assert unread, (backend, result.diagnostics)
    # threads: read by nvptx (option_env!), wgsl (override) and cuda-c (the launch); not by cpu.
    # cpu has no launch geometry: threads (a launch dimension) is a note there, not a warning.
    assert not any("'threads'" in w for w in warnings(results["cpu"]))
    notes = [d["message"] for d in results["cpu"].diagnostics if d["severity"] == "note"]
    assert any("'threads' sets the launch geometry, which the cpu build does not have" in n for n in notes)
    for backend in set(results) - {"cpu"}:
        assert not any("'threads'" in w for w in warnings(results[backend])), backend


def test_constraints_prune_configurations(example_copy):
    project = Project.open(example_copy("matmul"))
    kernel = project.manifest.kernel()
    assert kernel.constraints == ("tile * tile <= 1024", "per_thread == 1 or tile * per_thread <= 128")
    sp = space(kernel, {"tile": (8, 16, 32, 64), "per_thread": (1, 8)})
    assert [(c["tile"], c["per_thread"]) for c in sp.configs] == [(8, 1), (8, 8), (16, 1), (16, 8), (32, 1)]
    assert [(p["config"], p["constraint"]) for p in sp.pruned] == [
        ({"tile": 32, "per_thread": 8}, "per_thread == 1 or tile * per_thread <= 128"),
        ({"tile": 64, "per_thread": 1}, "tile * tile <= 1024"),
        ({"tile": 64, "per_thread": 8}, "tile * tile <= 1024"),
    ]
    assert sp.total == 8


def test_bad_constraint_names_the_line(tmp_path):
    text = KERNEL_TUNER_TOML.replace(
        "block_size_x = [128, 64, 256]", 'block_size_x = [128, 64, 256]\nconstraints = ["block_size_x * 2"]'
    )
    (tmp_path / "vector_add.cu").write_text(KERNEL_TUNER_CU)
    (tmp_path / "workbench.toml").write_text(text)
    with pytest.raises(ManifestError) as err:
        load_manifest(tmp_path / "workbench.toml")
    line = text.splitlines().index('constraints = ["block_size_x * 2"]') + 1
    assert f"workbench.toml:{line}" in str(err.value) and "not a condition" in str(err.value)
    (tmp_path / "workbench.toml").write_text(text.replace("block_size_x * 2", "block_size_y <= 4"))
    with pytest.raises(ManifestError, match="unknown name block_size_y"):
        load_manifest(tmp_path / "workbench.toml")


#: Each variant the examples' tunables select (issue 26, "at the limit"), at sizes that are no
#: multiple of 4 nor of a workgroup: the vector forms' scalar tails and partial tiles run.
VARIANTS = [
    ("saxpy", {"vector": 4}, {"n": 1}),
    ("saxpy", {"vector": 4}, {"n": 4099}),
    ("saxpy", {"vector": 4, "threads": 64}, {"n": 1027}),
    ("saxpy", {"vector": 1}, {"n": 4099}),
    ("reduction", {"vector": 4, "max_groups": 3}, {"n": 10001}),  # 3 groups, each loops over chunks
    ("reduction", {"vector": 4}, {"n": 3}),
    ("reduction", {"vector": 1, "max_groups": 1048576}, {"n": 10001}),  # one chunk per group
    ("reduction", {"vector": 1, "max_groups": 2}, {"n": 2051}),
    ("matmul", {"per_thread": 8}, {"m": 67, "n": 45, "k": 53}),  # partial blocks, scalar loads
    ("matmul", {"per_thread": 8}, {"m": 132, "n": 136, "k": 20}),  # 16-byte loads and stores
    ("matmul", {"per_thread": 4, "tile": 8}, {"m": 37, "n": 44, "k": 9}),
    ("matmul", {"per_thread": 1, "tile": 8}, {"m": 37, "n": 44, "k": 9}),
    ("matmul", {"per_thread": 4, "tile": 32}, {"m": 132, "n": 136, "k": 20}),
]


@pytest.mark.parametrize(("example", "tunables", "sizes"), VARIANTS, ids=lambda v: str(v))
def test_each_variant_verifies_on_cpu_sim_and_wgsl_at_odd_sizes(example, tunables, sizes, example_copy,
                                                                tune_service, shared_cache_dir):  # fmt: skip
    """cpu-sim (the kernel body with its checks: no findings) and the WGSL reference agree with the
    cpu build of the same configuration."""
    project = Project.open(example_copy(example))
    report = tune_service.run(project, backends=["cpu", "cpu-sim", "wgsl"], sizes=sizes, tunables=tunables,
                              reference="cpu", cache_dir=shared_cache_dir)  # fmt: skip
    results = {r.backend: r for r in report.results}
    assert results["cpu"].status == "ok", results["cpu"].error
    for backend in ("cpu-sim", "wgsl"):
        assert results[backend].status == "ok", (backend, results[backend].error)
        assert results[backend].verified is True, (backend, results[backend].check)
        assert tunables.items() <= results[backend].provenance["tunables"].items()
    assert results["cpu-sim"].findings["findings"] == [], results["cpu-sim"].findings


#: (example, tunables, the plain form's, what the PTX of nvptx and cuda-c holds): the 16-byte
#: forms' vector accesses are really in the code ptxas compiles, and not in the plain forms'.
VECTOR_PTX = [
    ("saxpy", {"vector": 4}, {"vector": 1}, ["ld.global.v4.f32", "st.global.v4.f32"]),
    ("reduction", {"vector": 4}, {"vector": 1}, ["ld.global.v4.f32"]),
    ("matmul", {"per_thread": 8}, {"per_thread": 1}, ["ld.global.v4.f32", "ld.shared.v4.f32"]),
]


@pytest.mark.parametrize("backend", ["nvptx", "cuda-c"])
@pytest.mark.parametrize(("example", "tunables", "plain", "wanted"), VECTOR_PTX, ids=lambda v: str(v))
def test_vector_forms_move_16_bytes_per_access_in_the_ptx(backend, example, tunables, plain, wanted, example_copy,
                                                         shared_cache_dir):  # fmt: skip
    needs(backend)
    project = Project.open(example_copy(example))
    (vector,) = build_project(project, [backend], shared_cache_dir, tunables=tunables)
    assert vector.status == "ok", vector.diagnostics
    assert vector.resources[example]["registers"] > 0  # ptxas compiled it
    assert vector.resources[example]["spills"] == 0
    ptx = artifact(vector).read_text()
    for instruction in wanted:
        assert instruction in ptx, instruction
    assert not warnings(vector)  # every tunable is read
    (scalar,) = build_project(project, [backend], shared_cache_dir, tunables=plain)
    assert scalar.status == "ok", scalar.diagnostics
    assert ".v4." not in artifact(scalar).read_text()  # the plain form: 4-byte accesses


def test_tune_checks_a_reduction_against_the_reference_of_each_configuration(example_copy, workbench_cli,
                                                                             tmp_path):  # fmt: skip
    """The reduction's partials differ by configuration (`outputs_follow_tunables`): every form is
    verified against its own cpu build and ranked, none "failed" against the default's partials."""
    root = example_copy("reduction")
    proc = workbench_cli("tune", str(root), "--param", "vector=4,1", "--param", "max_groups=2,1048576",
                         "--backend", "cpu,wgsl", "--size", "n=5001", "--rounds", "1", "--confirm", "0",
                         "--db", str(tmp_path / "s.db"), "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout[proc.stdout.index("{") :])
    assert report["counts"] == {"ok": 8, "failed": 0, "skipped": 0, "not verified": 0}, report["configs"]
    assert all(entry["verified"] is True for entry in report["configs"])
