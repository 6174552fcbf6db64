"""RunService end to end: real cargo builds, cpu and wgpu (llvmpipe) workers, planted faults."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest

from tests.waits import FIRING_LIMIT_S
from workbench.build import build_project, export
from workbench.project import Project
from workbench.records import RunResult
from workbench.run.devices import list_devices
from workbench.run.events import RunDone, RunFinished, RunPhase, RunStarted

SAXPY_WGSL_LINE = "        y[i] = params.a * x[i] + y[i];"

N = {"n": 65536}
BACKENDS = ["cpu", "wgsl"]


def json_shape(value):
    """The shape of a JSON document: every leaf replaced by its type name. Lists of records keep
    every item (a run's results differ by backend), lists of plain values their first (samples)."""
    if isinstance(value, dict):
        return {key: json_shape(item) for key, item in value.items()}
    if isinstance(value, list):
        if value and isinstance(value[0], dict):
            return [json_shape(item) for item in value]
        return [json_shape(value[0])] if value else []
    if isinstance(value, bool) or value is None:
        return type(value).__name__
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__


def _without_foreign_parts(shape):
    """The shape less what other layers own and may extend: a runtime's device description, the
    toolchain record of build.json (the run service passes them through), and the timing
    protocol's options and measurement conditions (extended later: L2 policy, clocks, energy), and
    the kernel's tunables (their names are the manifest's: saxpy has `threads` since issue 11)."""
    for result in shape["results"]:
        result["device"] = "dict"
        result["provenance"]["toolchain"] = "dict"
        result["provenance"]["tunables"] = "dict"
        result["provenance"]["timing_options"] = "dict"
        if isinstance(result.get("timing"), dict):
            result["timing"].pop("conditions", None)
    return shape


def _by_backend(report):
    return {r.backend: r for r in report.results}


def test_saxpy_verifies_and_keeps_outputs(run_service, example_copy, shared_cache_dir):
    root = example_copy("saxpy")
    events = []
    report = run_service.run(
        root, backends=BACKENDS, sizes=N, cache_dir=shared_cache_dir, on_event=events.append
    )
    results = _by_backend(report)
    assert report.ok and report.reference == "cpu"
    assert results["cpu"].status == "ok" and results["cpu"].verified is None
    assert results["cpu"].check["is_reference"] is True
    wgsl = results["wgsl"]
    assert wgsl.status == "ok" and wgsl.verified is True, wgsl.check
    assert wgsl.check["bad"] == 0 and wgsl.check["unwritten"] == 0
    assert wgsl.timing["method"] == "wgpu-timestamps"
    assert wgsl.throughput["gbps"] > 0 and wgsl.throughput["gflops"] > 0
    provenance = wgsl.provenance
    assert provenance["seed"] == 0 and provenance["sizes"] == N and provenance["device"].startswith("wgpu:")
    assert (
        provenance["build_key"]
        and provenance["source_hash"]
        and provenance["timing_method"] == "wgpu-timestamps"
    )
    # The outputs stay with the report, not in its JSON.
    x = report.outputs["cpu"]["y"]
    assert x.dtype == np.float32 and x.shape == (65536,)
    np.testing.assert_array_equal(report.outputs["wgsl"]["y"], x)
    assert "outputs" not in report.to_json()
    kinds = [type(e) for e in events]
    assert kinds.count(RunStarted) == 2 and kinds.count(RunFinished) == 2 and kinds[-1] is RunDone
    finished = [e for e in events if isinstance(e, RunFinished)]
    assert finished[1].result is wgsl


def test_wrong_wgsl_fails_verification_at_its_first_bad_index(run_service, saxpy_variant, shared_cache_dir):
    root = saxpy_variant(
        wgsl_line="        if (i >= 1000u && i < 1016u) { y[i] = 0.0; } else { y[i] = params.a * x[i] + y[i]; }"
    )
    report = run_service.run(root, backends=BACKENDS, sizes=N, cache_dir=shared_cache_dir)
    wgsl = _by_backend(report)["wgsl"]
    assert not report.ok
    assert wgsl.status == "ok" and wgsl.verified is False
    assert wgsl.check["first_bad_index"] == 1000 and wgsl.check["bad"] == 16
    assert wgsl.check["first_bad"]["got"] == 0.0
    assert wgsl.check["first_bad"]["expected"] == pytest.approx(float(report.outputs["cpu"]["y"][1000]))


@pytest.mark.parametrize("fault", ["crash", "hang"])
def test_a_fault_in_the_reference_leaves_the_others_unverified(
    fault, run_service, saxpy_variant, shared_cache_dir
):
    root = saxpy_variant(fault=fault, on_call=1)
    report = run_service.run(
        root, backends=BACKENDS, sizes=N, cache_dir=shared_cache_dir, timeout_s=FIRING_LIMIT_S
    )
    cpu, wgsl = _by_backend(report)["cpu"], _by_backend(report)["wgsl"]
    assert cpu.status == "error" and cpu.timing is None
    if fault == "crash":
        assert "died with SIGSEGV" in cpu.error and "verification launch" in cpu.error
    else:
        assert f"timed out after {FIRING_LIMIT_S:g} s during the verification launch" in cpu.error
    # wgsl still ran; with the reference gone it cannot be verified, and says why.
    assert wgsl.status == "ok" and wgsl.verified is None and wgsl.timing["n"] >= 5
    assert "reference cpu failed" in wgsl.check["note"]
    assert not report.ok


@pytest.mark.parametrize("fault", ["crash", "hang"])
def test_a_fault_while_timing_ends_that_backend_only(fault, run_service, saxpy_variant, shared_cache_dir):
    root = saxpy_variant(fault=fault, on_call=2)  # the verification launch succeeds
    report = run_service.run(
        root, backends=BACKENDS, sizes=N, cache_dir=shared_cache_dir, timeout_s=FIRING_LIMIT_S
    )
    cpu, wgsl = _by_backend(report)["cpu"], _by_backend(report)["wgsl"]
    assert cpu.status == "error"
    assert ("SIGSEGV" if fault == "crash" else f"timed out after {FIRING_LIMIT_S:g} s") in cpu.error
    assert wgsl.status == "ok" and wgsl.verified is True
    # The worker is restarted for the next request: the same crate loads and verifies again.
    starts = run_service.pool.get("cpu").starts
    again = run_service.run(
        root, backends=["cpu"], sizes={"n": 1024}, cache_dir=shared_cache_dir, timeout_s=FIRING_LIMIT_S
    )
    assert again.results[0].check.get("is_reference") and again.results[0].status == "error"
    assert run_service.pool.get("cpu").starts > starts


SCALE_TOML = """
[project]
name = "scale"
[[kernel]]
name = "scale"
[kernel.entry]
cpu = "scale_cpu"
wgsl = "main"
[kernel.sizes]
n = 4096
[[kernel.arg]]
name = "n"
kind = "scalar"
type = "u32"
value = "n"
[[kernel.arg]]
name = "x"
kind = "buffer"
type = "f32"
length = "n"
binding = 1
init = { kind = "linspace", start = 1.0, stop = 2.0 }
[[kernel.arg]]
name = "z"
kind = "buffer"
type = "f32"
length = "n"
direction = "out"
binding = 2
[kernel.launch]
threads = [64]
grid = ["ceil_div(n, 64)"]
[kernel.reference]
wgsl = "scale.wgsl"
[kernel.wgpu]
params_binding = 0
"""
SCALE_RS = """
#[unsafe(no_mangle)]
pub unsafe extern "C" fn scale_cpu(n: u32, x: *const f32, z: *mut f32) {
    for i in 0..n as usize {
        unsafe { *z.add(i) = 3.0 * *x.add(i) };
    }
}
"""
SCALE_WGSL = """
struct Params { n: u32 }
@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> z: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < params.n && (i < 100u || i >= 110u)) {  // leaves z[100..110] unwritten
        z[i] = 3.0 * x[i];
    }
}
"""


def test_unwritten_out_elements_are_caught_by_the_poison(run_service, tmp_path, shared_cache_dir):
    root = tmp_path / "scale"
    (root / "src").mkdir(parents=True)
    (root / "Cargo.toml").write_text(
        '[package]\nname = "scale"\nversion = "0.1.0"\nedition = "2021"\n[lib]\ncrate-type = ["cdylib"]\n'
    )
    (root / "src" / "lib.rs").write_text(SCALE_RS)
    (root / "scale.wgsl").write_text(SCALE_WGSL)
    (root / "workbench.toml").write_text(SCALE_TOML)
    report = run_service.run(root, backends=BACKENDS, cache_dir=shared_cache_dir)
    cpu, wgsl = _by_backend(report)["cpu"], _by_backend(report)["wgsl"]
    assert cpu.status == "ok" and cpu.check["unwritten"] == 0, cpu.error
    assert wgsl.verified is False
    assert wgsl.check["unwritten"] == 10 and wgsl.check["bad"] == 10
    assert wgsl.check["first_bad_index"] == 100 and wgsl.check["first_bad"]["unwritten"] is True
    assert wgsl.check["first_bad"]["got"] == "nan"


def test_reference_runs_untimed_when_not_requested(run_service, example_copy, shared_cache_dir):
    report = run_service.run(example_copy("saxpy"), backends=["wgsl"], sizes=N, cache_dir=shared_cache_dir)
    assert [r.backend for r in report.results] == ["wgsl"]
    assert report.results[0].verified is True and report.results[0].check["reference"] == "cpu"
    assert "cpu" in report.outputs


def test_a_run_evaluates_the_kernel_once_and_every_room_reads_that(
    run_service, example_copy, shared_cache_dir, monkeypatch
):
    """The sizes are evaluated once per run (`Kernel.evaluate`): the memory plan, the inputs, each
    backend's launch spec, its device-memory check and its throughput read those `Values`; none
    evaluates the kernel's expressions again."""
    from workbench.manifest.evaluation import KernelEvaluation

    evaluated = []
    original = KernelEvaluation.evaluate

    def counted(self, symbols, memory_bytes=None):
        values = original(self, symbols, memory_bytes)
        evaluated.append(values)
        return values

    def forbidden(self, *args, **kwargs):
        raise AssertionError("the run evaluated the kernel again")

    monkeypatch.setattr(KernelEvaluation, "evaluate", counted)
    for name in ("lengths", "scalar_values", "geometry", "metric"):
        monkeypatch.setattr(KernelEvaluation, name, forbidden)
    report = run_service.run(example_copy("saxpy"), backends=BACKENDS, sizes=N, cache_dir=shared_cache_dir)
    assert report.ok and [r.status for r in report.results] == ["ok", "ok"]
    assert len(evaluated) == 1 and evaluated[0].lengths == {"x": N["n"], "y": N["n"]}
    # The throughput comes from the carried metrics: saxpy's bytes at n, over the median.
    wgsl = _by_backend(report)["wgsl"]
    assert wgsl.throughput["gbps"] == pytest.approx(
        evaluated[0].metrics["bytes"] / wgsl.timing["median_s"] / 1e9
    )


def test_without_keep_outputs_only_the_reference_outputs_stay(run_service, example_copy, shared_cache_dir):
    """The command line's runs: a backend's arrays are let go once verified (memory at 2^28)."""
    report = run_service.run(
        example_copy("saxpy"), backends=BACKENDS, sizes=N, cache_dir=shared_cache_dir, keep_outputs=False
    )
    assert report.ok and _by_backend(report)["wgsl"].verified is True
    assert list(report.outputs) == ["cpu"]


def test_outputs_checked_while_the_gpu_is_timed(run_service, example_copy, shared_cache_dir, monkeypatch):
    """On a discrete GPU a large output is compared on the host while the kernel is timed; the
    result carries the same check as a sequential run. (llvmpipe is a CPU adapter and never
    overlaps: the switch is forced here to run the path.)"""
    from workbench.run import backend_run

    def decide(device, outputs):
        calls.append((device["runtime"], device.get("adapter_type")))
        return device["runtime"] == "wgpu"

    calls: list = []
    assert not backend_run.verify_while_timing(
        {"runtime": "wgpu", "adapter_type": "CPU"}, {"y": np.zeros(1 << 22)}
    )
    assert backend_run.verify_while_timing({"runtime": "cuda"}, {"y": np.zeros(1 << 22, np.float32)})
    assert not backend_run.verify_while_timing({"runtime": "cuda"}, {"y": np.zeros(1000, np.float32)})
    assert not backend_run.verify_while_timing({"runtime": "cpu"}, {"y": np.zeros(1 << 22, np.float32)})
    root = example_copy("saxpy")
    sequential = run_service.run(root, backends=BACKENDS, sizes=N, cache_dir=shared_cache_dir)
    monkeypatch.setattr(backend_run, "verify_while_timing", decide)
    for keep in (True, False):
        report = run_service.run(
            root, backends=BACKENDS, sizes=N, cache_dir=shared_cache_dir, keep_outputs=keep
        )
        wgsl, before = _by_backend(report)["wgsl"], _by_backend(sequential)["wgsl"]
        assert wgsl.verified is True and wgsl.timing["n"] > 0
        assert wgsl.check == before.check
    assert ("wgpu", "CPU") in calls


def test_an_unavailable_reference_is_never_replaced_silently(run_service, example_copy, shared_cache_dir):
    root = example_copy("saxpy")
    manifest = root / "workbench.toml"
    manifest.write_text(manifest.read_text().replace('reference = "cpu"', 'reference = "cuda-c"'))
    report = run_service.run(root, backends=BACKENDS, sizes=N, cache_dir=shared_cache_dir)
    cpu, wgsl = _by_backend(report)["cpu"], _by_backend(report)["wgsl"]
    assert report.reference == "cuda-c"
    for result in (cpu, wgsl):
        assert result.status == "ok" and result.verified is None
        assert result.verdict == "not verified (reference failed)"
        assert result.check["unverified"] == "reference failed" and result.check["reference"] == "cuda-c"
        assert "reference cuda-c failed" in result.check["note"]
        assert not result.check.is_reference
    assert not report.ok
    assert report.to_json()["results"][1]["check"]["unverified"] == "reference failed"
    # An explicit choice of reference for this run still works.
    chosen = run_service.run(root, backends=BACKENDS, sizes=N, cache_dir=shared_cache_dir, reference="cpu")
    cpu, wgsl = _by_backend(chosen)["cpu"], _by_backend(chosen)["wgsl"]
    assert chosen.reference == "cpu" and cpu.check["is_reference"] and wgsl.verified is True
    assert wgsl.verdict == "verified" and chosen.ok


def test_run_json_keeps_its_shape(run_service, example_copy, shared_cache_dir):
    """The typed check and timing records serialize to the JSON `workbench run --json` always had
    (tests/run/data/run_json_shape.json was captured before they were introduced)."""
    golden = json.loads((Path(__file__).parent / "data" / "run_json_shape.json").read_text())
    root = example_copy("saxpy")
    for name in ("verified", "failed"):
        if name == "failed":
            wgsl = root / "reference" / "saxpy.wgsl"
            wrong = "        if (i == 7u) { y[i] = 0.0; } else { y[i] = params.a * x[i] + y[i]; }"
            wgsl.write_text(wgsl.read_text().replace(SAXPY_WGSL_LINE, wrong))
        report = run_service.run(root, backends=BACKENDS, sizes={"n": 4096}, cache_dir=shared_cache_dir)
        document = json.loads(json.dumps(report.to_json()))
        # The keys added since (the reading of the check and the stale note) are there; the rest
        # has the golden shape.
        shape = json.loads(json.dumps(document))
        assert shape.pop("reference_failed") is False
        for item in shape["results"]:
            added = {key: item.pop(key) for key in ("verdict", "reference_failed", "stale")}
            assert added["verdict"] == RunResult.from_dict(item).verdict and added["stale"] is None
            # The memory ceiling the roofline holds it against (saxpy: copy; none where not timed).
            assert item["throughput"].pop("memory_roof") in ("copy", None)
            # The roof it is read against (issue 36): known once the device's ceilings are measured
            # (cached per user, so present or not by what ran before); its fraction with it.
            roof = item["throughput"].pop("roof", None)
            fraction = item["throughput"].pop("fraction_of_peak", None)
            assert (roof is None and fraction is None) or fraction == roof["fraction"], (roof, fraction)
        expected = _without_foreign_parts(golden[name])
        for result in expected["results"]:
            result["throughput"].pop("fraction_of_peak", None)
        assert _without_foreign_parts(json_shape(shape)) == expected, name
        # The records read like the JSON they write.
        for result, shown in zip(report.results, document["results"], strict=True):
            assert dict(result.check) == shown["check"]
            assert {k: result.timing[k] for k in shown["timing"]} == shown["timing"]
            assert RunResult.from_dict(result.to_dict()).to_json() == result.to_json()


def test_missing_toolchain_and_runtime_are_skipped_with_the_reason(
    run_service, example_copy, shared_cache_dir
):
    if list_devices()["cuda"]["available"]:
        pytest.skip("asserts that CUDA is unavailable, and this machine has it (tests/gpu covers CUDA)")
    report = run_service.run(
        example_copy("saxpy"),
        backends=["cpu", "rust-gpu", "cuda-c"],
        sizes={"n": 1024},
        cache_dir=shared_cache_dir,
    )
    results = _by_backend(report)
    assert results["rust-gpu"].status == "skipped" and "cargo" in results["rust-gpu"].error
    assert results["cuda-c"].status == "skipped"
    assert "cuda runtime is unavailable" in results["cuda-c"].error
    assert report.ok, [
        (r.backend, r.status, r.verified, r.error, r.check.get("note")) for r in report.results
    ]


def test_prebuilt_artifacts_run_without_building(run_service, example_copy, shared_cache_dir, tmp_path):
    project = Project.open(example_copy("saxpy"))
    results = build_project(project, BACKENDS, cache_dir=shared_cache_dir)
    export(results, tmp_path / "export")
    report = run_service.run(
        project, backends=["cpu", "wgsl", "nvptx"], sizes=N, artifacts_dir=tmp_path / "export"
    )
    results = _by_backend(report)
    assert results["wgsl"].verified is True
    assert results["wgsl"].provenance["artifact"]["path"].startswith(str(tmp_path / "export"))
    assert results["nvptx"].status == "skipped"


def test_cancel_stops_a_hung_launch(run_service, saxpy_variant, shared_cache_dir):
    root = saxpy_variant(fault="hang", on_call=1)

    def on_event(event):
        if isinstance(event, RunPhase) and event.backend == "cpu":
            threading.Timer(0.3, run_service.cancel).start()

    report = run_service.run(
        root, backends=BACKENDS, sizes=N, cache_dir=shared_cache_dir, timeout_s=120, on_event=on_event
    )
    assert report.cancelled
    assert [(r.backend, r.status, r.error) for r in report.results] == [
        ("cpu", "skipped", "cancelled"),
        ("wgsl", "skipped", "cancelled"),
    ]


def test_a_wgpu_validation_error_ends_only_that_backend(run_service, example_copy, shared_cache_dir):
    root = example_copy("saxpy")
    wgsl = root / "reference" / "saxpy.wgsl"
    wgsl.write_text(wgsl.read_text().replace("@workgroup_size(threads)", "@workgroup_size(2048)"))
    report = run_service.run(root, backends=BACKENDS, sizes={"n": 4096}, cache_dir=shared_cache_dir)
    cpu, bad = _by_backend(report)["cpu"], _by_backend(report)["wgsl"]
    assert cpu.status == "ok"
    assert bad.status == "error" and "Validation Error" in bad.error and "2048" in bad.error
    assert not report.ok


def test_a_missing_symbol_says_the_name_fell_back_to_the_kernels(run_service, example_copy, shared_cache_dir):
    root = example_copy("saxpy")
    manifest = root / "workbench.toml"
    manifest.write_text(manifest.read_text().replace('cpu = "saxpy_cpu"\n', ""))
    report = run_service.run(root, backends=["cpu"], sizes={"n": 1024}, cache_dir=shared_cache_dir)
    cpu = report.results[0]
    assert cpu.status == "error"
    assert "has no symbol 'saxpy'" in cpu.error
    assert "the kernel's name, as workbench.toml sets no [kernel.entry] cpu" in cpu.error
