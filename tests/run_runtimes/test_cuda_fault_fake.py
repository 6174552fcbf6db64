"""CUDA fault containment without a GPU: the pycuda double (fake_pycuda.py) in fault mode serves the
real worker processes (it sits on their PYTHONPATH as `pycuda`). A kernel that faults ends as an
error for its backend, the poisoned worker is replaced, and the next cuda backend runs and verifies.
The same scenario runs against the real driver in tests/gpu/."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
PTX = """.version 8.0
.target sm_90
.address_size 64
{marker}
.visible .entry saxpy(.param .u32 n, .param .f32 a, .param .u64 x, .param .u64 y)
{{ ret; }}
"""


def _export(root: Path, backend: str, kind: str, artifact: Path, entry: str) -> None:
    folder = root / backend
    folder.mkdir(parents=True)
    shutil.copy(artifact, folder / artifact.name)
    (folder / "build.json").write_text(json.dumps({
        "format": 1, "project": "saxpy", "backend": backend, "key": backend, "source_hash": "",
        "kernels": {"saxpy": {"artifact": artifact.name, "entry": entry, "kind": kind}},
    }))  # fmt: skip


@pytest.fixture
def fake_pycuda_on_path(tmp_path, monkeypatch):
    package = tmp_path / "site" / "pycuda"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    shutil.copy(HERE / "fake_pycuda.py", package / "driver.py")
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(tmp_path / "site"), os.environ.get("PYTHONPATH", "")])
    )
    return package


def test_the_fake_fault_poisons_its_process_like_a_real_one(fake_cuda, saxpy_kernel, tmp_path):
    from workbench.run.runtimes import RuntimeFailure
    from workbench.run.spec import make_launch_spec

    ptx = tmp_path / "fault.ptx"
    ptx.write_text(PTX.format(marker="// FAKE_FAULT"))
    spec = make_launch_spec(
        saxpy_kernel, "nvptx", {"path": str(ptx), "kind": "ptx", "entry": "saxpy"},
        saxpy_kernel.symbols({"n": 64}), 0,
    )  # fmt: skip
    prepared = fake_cuda.prepare(spec, 0)
    prepared.upload({"x": np.ones(64, np.float32), "y": np.ones(64, np.float32)})
    with pytest.raises(RuntimeFailure, match="illegal memory access") as failure:
        prepared.launch(1)
    assert failure.value.fatal is True  # the worker must be restarted
    with pytest.raises(RuntimeFailure, match="illegal memory access"):
        prepared.download(["y"])  # sticky: the context stays unusable
    prepared.close()


def test_a_faulting_kernel_ends_as_an_error_and_the_next_cuda_backend_runs(
    fake_pycuda_on_path, saxpy_cdylib, saxpy_dir, tmp_path, shared_cache_dir
):
    from workbench.run import RunService

    artifacts = tmp_path / "artifacts"
    fault, clean = tmp_path / "fault" / "saxpy.ptx", tmp_path / "clean" / "saxpy.ptx"
    for path, marker in ((fault, "// FAKE_FAULT"), (clean, "")):
        path.parent.mkdir()
        path.write_text(PTX.format(marker=marker))
    _export(artifacts, "cpu", "cdylib", saxpy_cdylib, "saxpy_cpu")
    _export(artifacts, "nvptx", "ptx", fault, "saxpy")
    _export(artifacts, "cuda-c", "ptx", clean, "saxpy")
    service = RunService()
    try:
        report = service.run(
            saxpy_dir, backends=["cpu", "nvptx", "cuda-c"], sizes={"n": 4096}, artifacts_dir=artifacts,
            cache_dir=shared_cache_dir, devices=["cpu", "cuda:0"],
        )  # fmt: skip
    finally:
        service.close()
    results = {r.backend: r for r in report.results}
    assert results["nvptx"].status == "error"
    assert "illegal memory access" in results["nvptx"].error
    assert results["nvptx"].device["name"] == "NVIDIA H200"  # the double's device, in the worker
    assert results["cuda-c"].status == "ok", results["cuda-c"].error
    assert results["cuda-c"].verified is True
