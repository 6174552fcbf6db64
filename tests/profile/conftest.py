"""Fixtures for the profile tests: a private sessions database and synthetic run reports."""

from __future__ import annotations

import numpy as np
import pytest


def synthetic_report(
    kernel: str = "saxpy",
    medians: dict[tuple[str, str], float] | None = None,
    n: int = 200,
    seed: int = 0,
    time: str = "2026-12-01T00:00:00Z",
    spread: float = 0.02,
) -> dict:
    """A `workbench run --json`-shaped report whose samples are drawn around the given medians
    ({(backend, device spec): median seconds}); used where the timing must be controlled."""
    rng = np.random.default_rng(seed)
    medians = medians or {("cpu", "cpu"): 1e-3, ("wgsl", "wgpu:0"): 2e-3}
    results = []
    for (backend, device), median in medians.items():
        samples = median * (1.0 + spread * rng.standard_normal(n))
        results.append({
            "backend": backend,
            "device": {"spec": device, "name": f"{device} device", "runtime": device.split(":")[0]},
            "status": "ok",
            "verified": None if backend == "cpu" else True,
            "check": {"is_reference": backend == "cpu"},
            "timing": {
                "median_s": float(np.median(samples)),
                "iqr_s": float(np.subtract(*np.percentile(samples, [75, 25]))),
                "min_s": float(samples.min()), "max_s": float(samples.max()), "n": n,
                "samples_s": samples.tolist(), "method": "wall-clock", "resolution_s": 1e-9,
            },
            "throughput": {"gbps": 1.0, "gflops": None, "fraction_of_peak": None},
            "error": None,
            "provenance": {
                "project": "demo", "kernel": kernel, "source_hash": "s" * 64, "build_key": "k" * 64,
                "toolchain": {"version": "rustc 1.96.0"}, "flags": ["--release"], "sizes": {"n": 1024},
                "tunables": {"block": 256}, "seed": 0, "time": time, "device": device,
            },
        })  # fmt: skip
    return {"project": "demo", "kernel": kernel, "results": results}


@pytest.fixture
def make_report():
    return synthetic_report
