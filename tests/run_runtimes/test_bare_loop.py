"""benchmarks/bare_loop.py, the independent baseline of harness_overhead: it runs the exported
artifacts (a real cdylib, real WGSL on llvmpipe) with nothing imported from `workbench`."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BARE = REPO / "benchmarks" / "bare_loop.py"


def test_the_bare_loop_source_imports_nothing_from_workbench():
    tree = ast.parse(BARE.read_text())
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert names and not [n for n in names if n.split(".")[0] == "workbench"]


def _launch(folder: Path, n: int, device: str = "") -> dict:
    return {
        "backend": "x", "folder": str(folder), "kernel": "saxpy", "device": device, "seed": 1,
        "args": [{"name": "n", "kind": "scalar", "type": "u32", "value": n},
                 {"name": "a", "kind": "scalar", "type": "f32", "value": 2.5},
                 {"name": "x", "kind": "buffer", "type": "f32", "length": n, "binding": 1, "views": [3]},
                 {"name": "y", "kind": "buffer", "type": "f32", "length": n, "binding": 2, "views": [4]}],
        "threads": [256, 1, 1], "grid": [-(-n // 256), 1, 1], "params_binding": 0,
    }  # fmt: skip


def _run(tmp_path: Path, launch: dict) -> dict:
    path = tmp_path / "launch.json"
    path.write_text(json.dumps(launch))
    done = subprocess.run(
        [sys.executable, "-s", str(BARE), str(path), "--min-n", "5", "--min-time", "0", "--warmup", "2"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_cpu_cdylib_timed_with_perf_counter(tmp_path, saxpy_cdylib):
    folder = tmp_path / "cpu"
    folder.mkdir()
    shutil.copy(saxpy_cdylib, folder / "libsaxpy.so")
    build = {"kernels": {"saxpy": {"artifact": "libsaxpy.so", "entry": "saxpy_cpu", "kind": "cdylib"}}}
    (folder / "build.json").write_text(json.dumps(build))
    result = _run(tmp_path, _launch(folder, 100_000))
    assert result["method"] == "perf_counter" and result["n"] >= 5 and result["median_s"] > 0
    assert result["workbench_imported"] is False


def test_wgsl_on_llvmpipe_timed_with_timestamps(tmp_path, llvmpipe_index, saxpy_dir):
    folder = tmp_path / "wgsl"
    folder.mkdir()
    shutil.copy(saxpy_dir / "reference" / "saxpy.wgsl", folder / "saxpy.wgsl")
    build = {"kernels": {"saxpy": {"artifact": "saxpy.wgsl", "entry": "main", "kind": "wgsl"}}}
    (folder / "build.json").write_text(json.dumps(build))
    result = _run(tmp_path, _launch(folder, 100_000, device="llvmpipe"))
    assert result["method"] == "wgpu-timestamps" and result["median_s"] > 0
    assert result["workbench_imported"] is False


def test_ncu_csv_durations_are_parsed():
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        from harness_overhead import parse_ncu_csv, parse_nsys_csv
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    text = (
        "==PROF== Connected to process 1\n"
        '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",'
        '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"\n'
        '"0","1","python3","h","saxpy","1","7","(256, 1, 1)","(65536, 1, 1)","0","9.0","Command line profiler '
        'metrics","gpu__time_duration.sum","usecond","1,234.50"\n'
        '"1","1","python3","h","saxpy","1","7","(256, 1, 1)","(65536, 1, 1)","0","9.0","Command line profiler '
        'metrics","gpu__time_duration.sum","nsecond","65,504"\n'
    )
    assert parse_ncu_csv(text) == pytest.approx([1234.5e-6, 65504e-9])
    assert parse_ncu_csv("==ERROR== no kernels were profiled\n") == []
    nsys = (
        "Processing [report.sqlite] with [cuda_gpu_kern_sum.py]... \n\n"
        '"Time (%)","Total Time (ns)","Instances","Avg (ns)","Med (ns)","Min (ns)","Max (ns)","StdDev (ns)","Name"\n'
        '"100.0","1300000","20","65000.0","64960.0","64000","66000","500.0","saxpy"\n'
    )
    assert parse_nsys_csv(nsys) == [
        {"Time (%)": "100.0", "Total Time (ns)": "1300000", "Instances": "20", "Avg (ns)": "65000.0",
         "Med (ns)": "64960.0", "Min (ns)": "64000", "Max (ns)": "66000", "StdDev (ns)": "500.0", "Name": "saxpy"}
    ]  # fmt: skip
    assert parse_nsys_csv("no data\n") == []
