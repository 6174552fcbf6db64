"""The cpu runtime on the saxpy example's real cdylib (built by host cargo)."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.run.runtimes import RuntimeFailure, get_runtime
from workbench.run.spec import make_launch_spec


def _spec(kernel, library, n, entry=None):
    artifact = {"path": str(library), "kind": "cdylib", "entry": entry or "saxpy_cpu"}
    return make_launch_spec(kernel, "cpu", artifact, kernel.symbols({"n": n}), 0)


def test_cpu_saxpy_matches_numpy(saxpy_kernel, saxpy_cdylib, rng):
    runtime = get_runtime("cpu")
    assert runtime.available() == (True, "")
    [device] = runtime.devices()
    assert device["spec"] == "cpu" and device["name"] and device["cores"] >= 1
    n = 10_001
    x = rng.uniform(-1, 1, n).astype(np.float32)
    y = rng.uniform(-1, 1, n).astype(np.float32)
    with runtime.prepare(_spec(saxpy_kernel, saxpy_cdylib, n), 0) as prepared:
        assert prepared.timer_method == "wall-clock" and prepared.timer_resolution_s > 0
        prepared.upload({"x": x, "y": y})
        seconds = prepared.launch(1)
        out = prepared.download(["y", "x"])
    assert seconds > 0
    np.testing.assert_array_equal(out["y"], np.float32(2.5) * x + y)
    np.testing.assert_array_equal(out["x"], x)
    assert not np.array_equal(y, out["y"])  # the caller's array was not written in place


def test_cpu_launch_count_runs_every_launch(saxpy_kernel, saxpy_cdylib):
    n = 64
    x = np.ones(n, np.float32)
    y = np.zeros(n, np.float32)
    with get_runtime("cpu").prepare(_spec(saxpy_kernel, saxpy_cdylib, n), 0) as prepared:
        prepared.upload({"x": x, "y": y})
        prepared.launch(4)
        np.testing.assert_array_equal(prepared.download(["y"])["y"], np.full(n, 10.0, np.float32))


def test_cpu_missing_symbol_is_named(saxpy_kernel, saxpy_cdylib):
    with pytest.raises(RuntimeFailure, match="libsaxpy.so has no symbol 'saxpy_gpu'"):
        get_runtime("cpu").prepare(_spec(saxpy_kernel, saxpy_cdylib, 8, entry="saxpy_gpu"), 0)


def test_cpu_missing_library_and_bad_uploads(saxpy_kernel, saxpy_cdylib, tmp_path):
    with pytest.raises(RuntimeFailure, match="does not exist"):
        get_runtime("cpu").prepare(_spec(saxpy_kernel, tmp_path / "libnone.so", 8), 0)
    prepared = get_runtime("cpu").prepare(_spec(saxpy_kernel, saxpy_cdylib, 8), 0)
    with pytest.raises(RuntimeFailure, match="no data uploaded for buffer 'y'"):
        prepared.upload({"x": np.zeros(8, np.float32)})
    with pytest.raises(RuntimeFailure, match="buffer 'x' has dtype float64, expected float32"):
        prepared.upload({"x": np.zeros(8), "y": np.zeros(8, np.float32)})
    with pytest.raises(RuntimeFailure, match="buffer 'y' has 7 elements, expected 8"):
        prepared.upload({"x": np.zeros(8, np.float32), "y": np.zeros(7, np.float32)})
    prepared.close()
