"""Diagnostic and resource parsers on real tool output, and `workbench build` end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.waits import HANG_GUARD_S, WORK_GUARD_S
from workbench.build.diagnostics import parse_nvcc, parse_ptxas, parse_rustc_text
from workbench.build.resources import parse_ptxas_verbose

REPO = Path(__file__).resolve().parents[2]
PYTHON = REPO / ".venv" / "bin" / "python"

PTXAS_V = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'saxpy' for 'sm_90'
ptxas info    : Function properties for saxpy
    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 10 registers, 1024 bytes smem, 380 bytes cmem[0]
"""


def test_ptxas_verbose_report():
    assert parse_ptxas_verbose(PTXAS_V)["saxpy"] == {
        "registers": 10, "spills": 16, "spill_stores": 4, "spill_loads": 12,
        "shared_bytes": 1024, "stack_bytes": 8, "constant_bytes": 380,
    }  # fmt: skip


def test_ptxas_and_nvcc_errors(tmp_path):
    diags = parse_ptxas("ptxas bad.ptx, line 28; error   : Unknown modifier '.zz32'\n"
                        "ptxas fatal   : Ptx assembly aborted due to errors", "saxpy.ptx")  # fmt: skip
    assert (diags[0].file, diags[0].line, diags[0].message) == ("saxpy.ptx", 28, "Unknown modifier '.zz32'")
    assert diags[1].severity == "error"
    text = 'reference/k.cu(2): error: identifier "zz" is undefined\n    y[0] = zz;\n           ^\n'
    (diag,) = parse_nvcc(text, tmp_path, tmp_path)
    assert (diag.file, diag.line, diag.severity) == ("reference/k.cu", 2, "error")
    assert "y[0] = zz;" in diag.rendered


def test_rendered_rustc_text(tmp_path):
    text = ("warning: unused variable: `x`\n --> src/lib.rs:3:9\n  |\n\n"
            "error[E0425]: cannot find value `zz` in this scope\n  --> src/lib.rs:11:27\n   |\n\n"
            "error: aborting due to 1 previous error\n")  # fmt: skip
    diags = parse_rustc_text(text, tmp_path, tmp_path)
    assert [(d.severity, d.file, d.line, d.code) for d in diags] == [
        ("warning", "src/lib.rs", 3, None), ("error", "src/lib.rs", 11, "E0425")]  # fmt: skip


@pytest.mark.slow
def test_cli_build_json(example_copy, cache, tmp_path):
    root = example_copy("saxpy")
    python = str(PYTHON) if PYTHON.exists() else sys.executable
    cmd = [python, "-m", "workbench", "build", str(root), "--backend", "cpu,wgsl,rust-cuda", "--json",
           "--cache-dir", str(cache), "--export", str(tmp_path / "out")]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["project"] == "saxpy"
    statuses = {r["backend"]: r["status"] for r in data["results"]}
    assert statuses["cpu"] == statuses["wgsl"] == "ok"
    assert (tmp_path / "out" / "cpu" / "build.json").is_file()
    bad = subprocess.run([python, "-m", "workbench", "build", str(root), "--backend", "cpu,nope"],
                         capture_output=True, text=True)  # fmt: skip
    assert bad.returncode == 2 and "unknown backend 'nope'" in bad.stderr
    (root / "src" / "lib.rs").write_text("fn broken( {}\n")
    failed = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert failed.returncode == 1
    cpu = next(r for r in json.loads(failed.stdout)["results"] if r["backend"] == "cpu")
    assert cpu["status"] == "error" and cpu["diagnostics"][0]["file"] == "src/lib.rs"


def test_watch_rebuilds_after_an_edit(example_copy, cache):
    """`workbench build --watch --json`: one JSON line for the first build, one more after a save."""
    import queue
    import signal
    import threading

    root = example_copy("saxpy", unique=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "workbench", "build", str(root), "--backend", "wgsl", "--watch", "--json",
         "--cache-dir", str(cache)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()
    try:
        first = json.loads(lines.get(timeout=WORK_GUARD_S))
        assert [r["status"] for r in first["results"]] == ["ok"]
        wgsl = root / "reference" / "saxpy.wgsl"
        wgsl.write_text(wgsl.read_text().replace("params.a * x[i]", "params.a * x[i] * 1.0"))
        second = json.loads(lines.get(timeout=WORK_GUARD_S))
        (result,) = second["results"]
        assert result["status"] == "ok" and result["cached"] is False
        assert "* 1.0" in open(result["artifacts"][0]).read()
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=HANG_GUARD_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_rust_cuda_builder_turns_on_the_crates_rust_cuda_feature(example_copy):
    """Rust-CUDA cannot be installed here: this checks the build script the adapter hands cuda_builder
    (its documented `build_args(&["--features", ...])`), with and without the feature declared."""
    from workbench.build.adapters.rust_cuda import build_script

    root = example_copy("saxpy")
    script = build_script("90", root)
    assert "NvvmArch::Compute90" in script
    assert '.copy_to(out).build_args(&["--features", "rust-cuda"]).build().unwrap();' in script
    cargo = root / "Cargo.toml"
    cargo.write_text(cargo.read_text().replace('rust-cuda = ["gpu_kernel/rust-cuda"]', ""))
    assert "build_args" not in build_script("90", root)
    assert ".copy_to(out).build().unwrap();" in build_script("90", root)
