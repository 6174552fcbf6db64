"""`workbench --self-test`: the real check, run from the source tree as a user would run it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # builds the saxpy example for real

#: The examples phase on two examples here (the bundle's self-test in CI builds all of them):
#: one whose copy gets the kernel API crate placed, one with workgroup memory and barriers.
EXAMPLES = ("reduction", "warp_reduce")


def self_test(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "workbench", "--self-test", *args],
        capture_output=True, text=True, timeout=600, env=env,
    )  # fmt: skip


@pytest.fixture(scope="module")
def report(tmp_path_factory, request):
    cache = request.getfixturevalue("shared_cache_dir")
    done = self_test("--json", "--cache-dir", str(cache), "--examples", ",".join(EXAMPLES))
    data = json.loads(done.stdout)
    data["_returncode"] = done.returncode
    data["_stderr"] = done.stderr
    return data


def test_window_and_every_panel_load_offscreen(report):
    checks = {c["name"]: c for c in report["checks"]}
    assert checks["example"]["status"] == "pass"
    assert checks["window"]["status"] == "pass", checks["window"]["detail"]
    assert "offscreen" in checks["window"]["detail"]
    panels = {name.split(":", 1)[1] for name in checks if name.startswith("panel:")}
    assert panels == {
        "build",
        "devices",
        "results",
        "plots",
        "artifacts",
        "console",
        "sessions",
        "tuning",
        "counters",
    }
    assert all(checks[f"panel:{p}"]["status"] == "pass" for p in panels), report["checks"]


def test_present_backends_build_run_and_verify_missing_ones_are_skipped(report):
    """This machine: cargo and rustc's NVPTX target, llvmpipe; no CUDA runtime, no cargo-gpu."""
    backends = report["backends"]
    if backends["cpu"]["status"] == "skip" and not os.environ.get("CI"):
        pytest.skip("Rust is not installed (run packaging/bootstrap.sh setup)")
    assert report["_returncode"] == 0 and report["ok"], report["_stderr"][-2000:]
    assert report["example"] == "saxpy"
    for name in ("cpu", "wgsl"):
        assert backends[name]["status"] == "pass" and backends[name]["build"] == "pass"
        assert backends[name]["run"] == "pass" and backends[name]["devices"]
    assert backends["cpu"]["verified"] == "reference" and backends["wgsl"]["verified"] == "yes"
    assert any("llvmpipe" in d for d in backends["wgsl"]["devices"])
    # nvptx builds; it cannot run without a CUDA device, which is said, not failed.
    assert backends["nvptx"]["status"] == "pass" and backends["nvptx"]["build"] == "pass"
    assert backends["nvptx"]["run"] == "skip" and "cuda runtime is unavailable" in backends["nvptx"]["reason"]
    cuda = report["runtimes"]["cuda"]
    assert cuda["status"] == "skip" and "pycuda" in cuda["reason"]
    for name in ("rust-gpu", "rust-cuda"):  # pinned nightlies that cannot be installed here
        assert backends[name]["status"] == "skip" and "install" in backends[name]["reason"]
    assert report["summary"]["fail"] == 0


def test_a_broken_toolchain_fails_the_self_test(tmp_path, shared_cache_dir):
    """A `cargo` that fails (a stand-in for a broken Rust install) makes the self-test exit 1.

    Its fresh temporary cache (no --cache-dir) means nothing is served from an earlier build."""
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    cargo = fake_bin / "cargo"
    cargo.write_text("#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'cargo 1.96.0'; exit 0; fi\n"
                     "echo 'error: this cargo is broken' >&2\nexit 101\n")  # fmt: skip
    cargo.chmod(0o755)
    env = dict(os.environ, WB_CARGO=str(cargo))  # the cpu adapter's override of /usr/bin/cargo
    done = self_test("--examples", "none", env=env)
    assert done.returncode == 1, done.stdout
    lines = done.stdout.splitlines()
    cpu = next(line for line in lines if line.split()[:2] == ["FAIL", "cpu"])
    assert "build" in cpu
    assert "self-test FAILED" in lines[-1]
    assert any(line.split()[:2] == ["ok", "wgsl"] for line in lines)  # the rest still ran


def test_every_example_asked_for_is_built_and_run_on_a_cp_r_copy(report):
    """Each example, copied with its `gpu_kernel` link kept (leading nowhere in the copy), built on
    cpu, cpu-sim and nvptx and run on cpu and wgsl, wgsl verified against cpu; the check says so."""
    checks = {c["name"]: c for c in report["checks"]}
    assert sorted(n for n in checks if n.startswith("example:")) == [f"example:{n}" for n in EXAMPLES]
    for name in EXAMPLES:
        check = checks[f"example:{name}"]
        assert check["status"] == "pass", check["detail"]
        assert check["built"] == ["cpu", "cpu-sim", "nvptx"] and check["ran"] == ["cpu", "wgsl"]
        assert "built on cpu, cpu-sim, nvptx; ran on cpu, wgsl (verified against cpu)" in check["detail"]
        assert "kernel API crate placed in the copy" in check["detail"]  # the link led nowhere
