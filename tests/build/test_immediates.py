"""Validate as the device runs: the build's naga validator grants the wgpu runtime's features.

The regression (issue 25): a WGSL reference with push constants (`var<immediate>`, `[kernel.wgpu]
scalars = "push"`) failed the build with "Capability IMMEDIATES is not supported" although the
wgpu runtime opens its device with the `immediates` feature. Both now open their device through
`workbench.build.wgpu_features.open_device`.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from workbench.build import build_project
from workbench.build.shader_check import naga_diagnostics
from workbench.build.toolchains import detect
from workbench.build.wgpu_features import WANTED_FEATURES, explain_missing, granted, unsupported_here
from workbench.project import Project

wgpu = pytest.importorskip("wgpu")

PUSH_PARAMS = "var<immediate> params: Params;"


def immediate_saxpy(example_copy):
    """The saxpy example with its scalars as push constants (WGSL `var<immediate>`)."""
    root = example_copy("saxpy", unique=True)
    wgsl = root / "reference" / "saxpy.wgsl"
    text, count = re.subn(r"@group\(0\) @binding\(0\) var<uniform> params: Params;", PUSH_PARAMS,
                          wgsl.read_text())  # fmt: skip
    assert count == 1, "the saxpy WGSL no longer declares its params as a uniform at binding 0"
    wgsl.write_text(text)
    manifest = root / "workbench.toml"
    text, count = re.subn(
        r'scalars = "uniform"\nparams_binding = 0\n', 'scalars = "push"\n', manifest.read_text()
    )
    assert count == 1, "the saxpy manifest no longer has its [kernel.wgpu] uniform lines"
    manifest.write_text(text)
    return root


def llvmpipe_features() -> list[str]:
    adapters = list(wgpu.gpu.enumerate_adapters_sync())
    if not adapters:
        pytest.skip("no wgpu adapter")
    return sorted(adapters[0].features)


def test_saxpy_with_immediate_scalars_builds_and_verifies_on_llvmpipe(example_copy, shared_cache_dir):
    if not detect("cpu").found:
        pytest.skip("no host cargo: run packaging/bootstrap.sh setup")
    if "immediates" not in llvmpipe_features():
        pytest.skip("this wgpu adapter has no 'immediates' feature")
    root = immediate_saxpy(example_copy)
    proc = subprocess.run(
        [sys.executable, "-m", "workbench", "run", str(root), "--backend", "cpu,wgsl",
         "--cache-dir", str(shared_cache_dir), "--json", "--size", "n=65536"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.stdout, proc.stderr
    report = json.loads(proc.stdout)
    results = {r["backend"]: r for r in report["results"]}
    wgsl = results["wgsl"]
    assert wgsl["status"] == "ok", wgsl["error"]
    assert "llvmpipe" in wgsl["device"]["name"]
    assert wgsl["verified"] is True, wgsl["check"]
    assert proc.returncode == 0, proc.stderr


def test_the_validator_grants_f16_as_the_runtime_does(example_copy, cache):
    features = llvmpipe_features()
    if "shader-f16" not in features:
        pytest.skip("this wgpu adapter has no 'shader-f16' feature")
    assert "shader-f16" in granted(features)
    root = example_copy("saxpy", unique=True)
    wgsl = root / "reference" / "saxpy.wgsl"
    # f16 arithmetic inside the kernel: valid only on a device opened with shader-f16.
    wgsl.write_text("enable f16;\n" + wgsl.read_text().replace(
        "y[i] = params.a * x[i] + y[i];", "y[i] = f32(f16(params.a) * f16(x[i])) + y[i];"))  # fmt: skip
    (result,) = build_project(Project.open(root), ["wgsl"], cache)
    assert result.status == "ok", result.diagnostics


def test_a_feature_no_adapter_has_fails_the_build_naming_it(example_copy, cache):
    features = llvmpipe_features()
    if "experimental-ray-query" in features:
        pytest.skip("this adapter has ray queries: the missing-feature case cannot be made here")
    root = example_copy("saxpy", unique=True)
    wgsl = root / "reference" / "saxpy.wgsl"
    wgsl.write_text("enable wgpu_ray_query;\n" + wgsl.read_text())
    (result,) = build_project(Project.open(root), ["wgsl"], cache)
    assert result.status == "error"
    (diag,) = [d for d in result.diagnostics if d["severity"] == "error"]
    assert (diag["file"], diag["line"]) == ("reference/saxpy.wgsl", 1)
    assert "needs the wgpu feature 'experimental-ray-query'" in diag["message"]
    assert "no wgpu adapter here has it (llvmpipe" in diag["message"]


def test_explain_missing_names_the_feature_and_who_has_it():
    message = (
        "Global variable [0] 'params' is invalid\n  = Capability Capabilities(IMMEDIATES) is not supported"
    )
    assert explain_missing(message, {"A": ["immediates"], "B": []}) == (
        "naga capability IMMEDIATES needs the wgpu feature 'immediates': adapters with it: A"
    )
    assert "immediates" in WANTED_FEATURES
    assert explain_missing("Capabilities(SHADER_I16) are not supported", {}) == ""  # not naga's form
    assert explain_missing("Capability Capabilities(SHADER_I16) is not supported", {"A": []}) == (
        "naga capability SHADER_I16 needs the wgpu feature 'shader-i16': no wgpu adapter here has it (A); "
        "the wgpu runtime does not request it"
    )
    assert explain_missing("Shader validation error: Function [0] 'main' is invalid", {"A": []}) == ""


def test_a_device_without_a_feature_says_not_supported_on_it():
    # naga's words when a device lacks what a function needs (wgpu-native on llvmpipe's GL adapter).
    message = "Shader validation error: Entry point main at Compute is invalid\n = Shader requires capability Capabilities(SUBGROUP)"
    assert unsupported_here(message, "GL llvmpipe", ["timestamp-query"]) == (
        "not supported on GL llvmpipe: naga capability SUBGROUP needs the wgpu feature 'subgroup', which this "
        "adapter does not have (run it on a wgpu adapter that has it)"
    )
    assert (
        unsupported_here(message, "Vulkan llvmpipe", ["subgroup"]) == ""
    )  # it has it: something else failed
    assert explain_missing(message, {"A": ["subgroup"]}) == (
        "naga capability SUBGROUP needs the wgpu feature 'subgroup': adapters with it: A"
    )


def test_the_runtime_opens_its_device_with_what_the_validator_grants():
    # In a child process, as the run's worker opens it (a wgpu device keeps threads of its own).
    script = (
        "import json, wgpu\n"
        "from workbench.build.wgpu_features import granted\n"
        "from workbench.run.runtimes.wgpu_runtime import WgpuRuntime\n"
        "device, _ = WgpuRuntime().device(0)\n"
        "adapter = list(wgpu.gpu.enumerate_adapters_sync())[0]\n"
        "print(json.dumps([granted(adapter.features), sorted(device.features)]))\n"
    )
    llvmpipe_features()
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    wanted, opened = json.loads(proc.stdout.splitlines()[-1])
    assert wanted and set(wanted) <= set(opened)


def test_a_missing_feature_note_follows_nagas_own_summary():
    message = (
        "Validation Error\n\nCaused by:\n  In wgpuDeviceCreateShaderModule, label = 'x.spv'\n"
        "    Global variable [0] 'pc' is invalid\n"
        "  = naga capability IMMEDIATES needs the wgpu feature 'immediates': no wgpu adapter here has it (A)\n"
    )
    (diag,) = naga_diagnostics(message, None, "rust-gpu")
    assert diag.message == (
        "naga validation error: Global variable [0] 'pc' is invalid (naga capability IMMEDIATES needs the "
        "wgpu feature 'immediates': no wgpu adapter here has it (A))"
    )
