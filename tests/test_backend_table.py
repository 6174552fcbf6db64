"""The backend and runtime tables agree with the parts that read them (issue 22, item 3).

Adding a backend is a row in `workbench.backends`, an adapter and, for a new runtime, a row in
`workbench.runtimes_table` and its module: these tests fail when one of those is missing or when
a row's build-environment keys do not reach the build key of a real build.
"""

from __future__ import annotations

import pytest

from tests.conftest import EXAMPLES
from workbench.backends import (
    BACKEND_ROWS,
    BACKENDS,
    REFERENCE_BACKENDS,
    REFERENCE_ONLY_SUFFIXES,
    RUST_BACKENDS,
    Backend,
    backend_row,
)
from workbench.build import build_project, read_build
from workbench.build.adapters import ADAPTERS
from workbench.build.cache import build_environment
from workbench.build.toolchains import detect
from workbench.errors import UnknownBackend
from workbench.project import SOURCE_SUFFIXES, Project
from workbench.run.devices import list_devices
from workbench.run.runtimes.base import RuntimeFailure, get_runtime
from workbench.runtimes_table import ARTIFACT_KINDS, RUNTIME_ROWS, RUNTIME_TABLE, RUNTIMES


def test_every_backend_has_its_adapter_registered_under_its_name():
    assert list(ADAPTERS) == list(BACKENDS)
    for name, adapter in ADAPTERS.items():
        assert adapter.name == name
        assert adapter.kind == backend_row(name).artifact_kind


@pytest.mark.parametrize("row", BACKEND_ROWS, ids=lambda row: row.name)
def test_every_backend_runs_on_a_runtime_of_the_table_that_loads_its_artifact_kind(row):
    assert row.runtime in RUNTIME_TABLE, f"{row.name}: runtime {row.runtime!r} has no row"
    assert row.artifact_kind in RUNTIME_TABLE[row.runtime].artifact_kinds
    assert row.artifact_kind in ARTIFACT_KINDS


@pytest.mark.parametrize("row", RUNTIME_ROWS, ids=lambda row: row.name)
def test_every_runtime_row_names_a_module_that_defines_that_runtime(row):
    runtime = get_runtime(row.name)  # imports workbench.run.runtimes.<module>
    assert runtime.name == row.name
    assert row.title and row.ceilings_kernels


def test_the_device_probe_answers_every_runtime_of_the_table_in_its_order():
    devices = list_devices(refresh=True)  # probed in a child process
    assert tuple(devices) == RUNTIMES
    assert devices["cpu"]["available"] and devices["wgpu"]["available"], devices  # llvmpipe here


def test_a_row_cannot_leave_out_its_build_environment():
    with pytest.raises(TypeError, match="env_names"):
        Backend("metal", "wgpu", "reference", (".metal",), (".metal",), "spirv")


def test_unknown_names_are_refused_with_the_valid_ones():
    with pytest.raises(
        UnknownBackend, match="valid backends: cpu, cpu-sim, nvptx, rust-gpu, rust-cuda, cuda-c, wgsl"
    ):
        backend_row("metal")
    with pytest.raises(RuntimeFailure, match=f"runtimes: {', '.join(RUNTIMES)}"):
        get_runtime("metal")


@pytest.mark.parametrize("row", BACKEND_ROWS, ids=lambda row: row.name)
def test_every_listed_environment_key_feeds_the_build_environment(row):
    for name in row.env_names:
        assert build_environment(row.name, {name: "1", "WB_UNLISTED": "1"}) == {name: "1"}
    for prefix in row.env_prefixes:
        assert build_environment(row.name, {f"{prefix}X": "1"}) == {f"{prefix}X": "1"}


@pytest.mark.parametrize("row", BACKEND_ROWS, ids=lambda row: row.name)
def test_each_backend_reads_the_sources_its_row_says(row, example_copy):
    project = Project.open(example_copy("saxpy"))
    assert set(row.own_suffixes) <= set(row.source_suffixes) <= SOURCE_SUFFIXES
    sources = project.backend_sources(row.name)
    suffixes = {p.suffix for p in sources if p != project.manifest.path}
    assert project.manifest.path in sources
    if row.name in REFERENCE_BACKENDS:
        assert row.source == "reference" and suffixes and suffixes <= set(row.source_suffixes)
    else:
        assert row.name in RUST_BACKENDS and row.source_suffixes == ()
        assert ".rs" in suffixes and not suffixes & REFERENCE_ONLY_SUFFIXES


@pytest.mark.slow
def test_a_listed_environment_variable_changes_a_real_cpu_builds_key(
    example_copy, shared_cache_dir, monkeypatch
):
    if not detect("cpu").found:
        pytest.skip(f"cpu toolchain missing: {detect('cpu').hint}")
    root = example_copy("saxpy", unique=True)
    row = backend_row("cpu")
    for name in build_environment("cpu"):  # this process's own, so the figures below are exact
        monkeypatch.delenv(name)

    def build():
        (result,) = build_project(Project.open(root), ["cpu"], shared_cache_dir)
        assert result.status == "ok", result.log
        return result

    first = build()
    record = read_build(first.artifact_dir)
    assert {k["kind"] for k in record["kernels"].values()} == {row.artifact_kind}
    monkeypatch.setenv("WB_NOT_A_BUILD_VARIABLE", "1")  # not in the row: the same key, served cached
    assert build().key == first.key
    assert "CARGO_INCREMENTAL" in row.env_names
    monkeypatch.setenv("CARGO_INCREMENTAL", "0")
    second = build()
    assert not second.cached and second.key != first.key
    assert read_build(second.artifact_dir)["key_inputs"]["env"] == {"CARGO_INCREMENTAL": "0"}
    assert "CARGO_PROFILE_" in row.env_prefixes
    monkeypatch.setenv("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "4")
    third = build()
    assert not third.cached and third.key not in (first.key, second.key)
    assert read_build(third.artifact_dir)["key_inputs"]["env"] == {
        "CARGO_INCREMENTAL": "0",
        "CARGO_PROFILE_RELEASE_CODEGEN_UNITS": "4",
    }


def test_the_driver_fields_of_each_runtime_are_what_its_probe_reports():
    """The ceilings' cache key reads a device's driver from the fields the runtime row names
    (`driver_fields`): each available runtime's probe must report at least one of them, or a new
    driver would silently reuse the old driver's ceilings."""
    from workbench.run.ceilings import driver_of

    devices = list_devices()
    for row in RUNTIME_ROWS:
        assert row.driver_fields, f"{row.name}: no driver_fields"
        for device in devices[row.name].get("devices") or []:
            assert any(device.get(f) for f in row.driver_fields), (row.name, device)
            assert driver_of(device), (row.name, device)


@pytest.mark.parametrize("row", RUNTIME_ROWS, ids=lambda row: row.name)
def test_every_runtime_has_ceiling_kernels(row, tmp_path):
    from workbench.run.ceilings import probes

    device = {"runtime": row.name, "index": 0, "cores": 2, "adapter_type": "CPU", "features": []}
    found = {p.what for p in probes(device, cache_dir=tmp_path)}
    assert {"copy", "read", "f32"} <= found, (row.name, found)


def test_the_manifest_asks_for_bindings_of_every_backend_whose_runtime_binds_buffers(tmp_path):
    from workbench.build.manifest_check import wgpu_backends
    from workbench.manifest import load_manifest

    binding = [row for row in BACKEND_ROWS if RUNTIME_TABLE[row.runtime].buffer_bindings]
    assert {row.name for row in binding} == {"wgsl", "rust-gpu"}  # wgpu's today
    manifest = load_manifest(EXAMPLES / "saxpy")
    kernel = manifest.kernels[0]
    listed = wgpu_backends(manifest, kernel)
    assert "wgsl" in listed and all(RUNTIME_TABLE[BACKENDS[b]].buffer_bindings for b in listed)
