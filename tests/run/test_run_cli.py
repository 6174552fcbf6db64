"""`workbench run` as a user runs it: a child process, JSON or the table, exit codes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from workbench.run.devices import list_devices

SAXPY = "resources/examples/saxpy"


def test_saxpy_on_cpu_and_wgsl_verifies_with_wgpu_timestamps(workbench_cli, shared_cache_dir):
    done = workbench_cli(
        "run",
        SAXPY,
        "--backend",
        "cpu,wgsl",
        "--size",
        "n=65536",
        "--cache-dir",
        str(shared_cache_dir),
        "--json",
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["project"] == "saxpy" and report["kernel"] == "saxpy"
    cpu, wgsl = report["results"]
    # The shape it always had, plus (added) the reading of the check and the stale note.
    assert set(wgsl) == {"backend", "device", "status", "verified", "check", "timing", "throughput", "error",
                         "provenance", "verdict", "reference_failed", "stale"}  # fmt: skip
    assert (wgsl["verdict"], wgsl["reference_failed"], wgsl["stale"]) == ("verified", False, None)
    assert cpu["verdict"] == "reference" and report["reference_failed"] is False
    assert (cpu["backend"], cpu["status"], cpu["verified"]) == ("cpu", "ok", None)
    assert (wgsl["backend"], wgsl["status"], wgsl["verified"]) == ("wgsl", "ok", True)
    assert wgsl["check"]["reference"] == "cpu" and wgsl["check"]["first_bad_index"] is None
    assert "llvmpipe" in wgsl["device"]["name"]
    timing = wgsl["timing"]
    assert set(timing) == {"median_s", "iqr_s", "q1_s", "q3_s", "min_s", "max_s", "n", "samples_s", "method",
                           "resolution_s", "conditions"}  # fmt: skip
    q1, median, q3 = np.percentile(timing["samples_s"], [25, 50, 75])
    assert (timing["q1_s"], timing["median_s"], timing["q3_s"]) == pytest.approx((q1, median, q3), rel=1e-12)
    assert timing["iqr_s"] == pytest.approx(timing["q3_s"] - timing["q1_s"], rel=1e-12)
    assert timing["method"] == "wgpu-timestamps" and timing["n"] == len(timing["samples_s"]) >= 10
    assert cpu["timing"]["method"] == "wall-clock"
    assert set(wgsl["throughput"]) == {"gbps", "gflops", "fraction_of_peak", "memory_roof", "roof"}
    assert wgsl["throughput"]["memory_roof"] == "copy"  # saxpy writes as much as it reads
    for key in ("source_hash", "build_key", "toolchain", "flags", "kernel", "sizes", "tunables", "seed",
                "timing_method", "device", "time"):  # fmt: skip
        assert key in wgsl["provenance"], key
    assert wgsl["provenance"]["sizes"] == {"n": 65536}


def test_wrong_kernel_fails_with_its_first_bad_index_in_the_table(
    workbench_cli, example_copy, shared_cache_dir
):
    root = example_copy("saxpy")
    wgsl = root / "reference" / "saxpy.wgsl"
    wgsl.write_text(
        wgsl.read_text().replace(
            "y[i] = params.a * x[i] + y[i];", "y[i] = params.a * x[i] + y[i] + f32(i == 4242u);"
        )
    )
    done = workbench_cli(
        "run", str(root), "--backend", "cpu,wgsl", "--size", "n=65536", "--cache-dir", str(shared_cache_dir)
    )
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1].split()[:4] == ["backend", "device", "status", "verified"]
    wgsl_row = next(line for line in lines if line.startswith("wgsl"))
    assert " ✗ no " in wgsl_row and "first bad y[4242]: got " in wgsl_row and "; 1 bad element" in wgsl_row


def test_cuda_is_listed_as_unavailable_and_skipped(workbench_cli, shared_cache_dir):
    if list_devices()["cuda"]["available"]:
        pytest.skip("asserts that CUDA is unavailable, and this machine has it (tests/gpu covers CUDA)")
    done = workbench_cli(
        "run",
        SAXPY,
        "--backend",
        "cpu,cuda-c",
        "--size",
        "n=1024",
        "--cache-dir",
        str(shared_cache_dir),
        "--json",
    )
    assert done.returncode == 0, done.stderr
    cuda = json.loads(done.stdout)["results"][1]
    assert cuda["backend"] == "cuda-c" and cuda["status"] == "skipped"
    assert "cuda runtime is unavailable" in cuda["error"]


def test_bad_size_names_the_kernels_sizes(workbench_cli):
    done = workbench_cli("run", SAXPY, "--size", "m=3")
    assert done.returncode == 2
    assert "no size m; its sizes: n" in done.stderr and "Traceback" not in done.stderr
    done = workbench_cli("run", SAXPY, "--size", "n")
    assert done.returncode == 2 and "expected NAME=VALUE" in done.stderr


def test_a_loose_atol_makes_the_check_weak_in_the_table(workbench_cli, example_copy, shared_cache_dir):
    """saxpy's outputs lie in [-3.5, 3.5]: with atol 10 an all-zero output would pass too."""
    root = example_copy("saxpy")
    manifest = root / "workbench.toml"
    manifest.write_text(manifest.read_text().replace("atol = 1e-6", "atol = 10.0"))
    done = workbench_cli(
        "run", str(root), "--backend", "cpu,wgsl", "--size", "n=4096", "--cache-dir", str(shared_cache_dir)
    )
    assert done.returncode == 0, done.stderr
    wgsl_row = next(line for line in done.stdout.splitlines() if line.startswith("wgsl"))
    assert " weak " in wgsl_row and "100% of the reference's elements are below atol 10" in wgsl_row


def test_a_failed_reference_leaves_the_others_not_verified(workbench_cli, example_copy, shared_cache_dir):
    done = workbench_cli(
        "run", SAXPY, "--backend", "cpu,wgsl", "--reference", "cuda-c", "--size", "n=4096",
        "--cache-dir", str(shared_cache_dir),
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    for backend in ("cpu", "wgsl"):
        row = next(line for line in done.stdout.splitlines() if line.startswith(backend))
        assert "not verified (reference failed)" in row and "reference cuda-c failed" in row


def test_a_broken_reference_build_reads_not_verified_in_the_json_and_the_recorded_runs(
    workbench_cli, example_copy, shared_cache_dir, tmp_path
):
    """cpu (the reference) does not compile: wgsl runs and is "not verified (reference failed)",
    read from the fields the run sets, in the JSON, in the table and in the sessions database."""
    root = example_copy("saxpy")
    lib = root / "src" / "lib.rs"
    lib.write_text(lib.read_text().replace("y[i] = a * x[i] + y[i];", "y[i] = a * x[i] + y[i] + zz;"))
    db = tmp_path / "s.db"
    args = ("run", str(root), "--backend", "cpu,wgsl", "--size", "n=4096", "--cache-dir", str(shared_cache_dir),
            "--db", str(db))  # fmt: skip
    done = workbench_cli(*args, "--json")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    cpu, wgsl = report["results"]
    assert report["reference_failed"] is True
    assert (cpu["status"], cpu["reference_failed"]) == ("error", False)
    assert (wgsl["status"], wgsl["verified"], wgsl["reference_failed"]) == ("ok", None, True)
    assert wgsl["verdict"] == "not verified (reference failed)"
    assert wgsl["check"]["unverified"] == "reference failed"
    text = workbench_cli(*args)
    row = next(line for line in text.stdout.splitlines() if line.startswith("wgsl"))
    assert "not verified (reference failed)" in row and "reference cpu failed" in row
    listed = workbench_cli("sessions", "list", "--db", str(db), "--json")
    runs = [r for r in json.loads(listed.stdout)["runs"] if r["backend"] == "wgsl"]
    assert [r["unverified"] for r in runs] == ["reference failed"] * 2  # the --json run and this one
    listed = workbench_cli("sessions", "list", "--db", str(db))
    rows = [line for line in listed.stdout.splitlines() if " wgsl " in line]
    assert len(rows) == 2 and all("not verified (reference failed)" in line for line in rows), rows


def test_a_size_that_is_not_an_integer_expression_says_so(workbench_cli):
    done = workbench_cli("run", SAXPY, "--size", "n=abc")
    assert done.returncode == 2
    assert "sizes are integer expressions" in done.stderr and "kernel 'saxpy' has sizes: n" in done.stderr
    assert "Traceback" not in done.stderr
