"""Runs on the "remote" host (this machine over real ssh): saxpy on lo/cpu and lo/wgpu:0,
verified; the artifact cache on the host; a connection killed mid-run; a run after it."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.run.service import RunService
from workbench.run.timing import TimingOptions

FAST_TIMING = TimingOptions(min_n=5, min_time_s=0.02, warmup_max_n=6, warmup_max_s=0.3, max_time_s=2.0)
SAXPY = Path(__file__).resolve().parents[2] / "resources" / "examples" / "saxpy"


@pytest.fixture
def service(lo_host):
    svc = RunService(timing=FAST_TIMING)
    yield svc
    svc.close()


def test_saxpy_cpu_and_wgsl_on_the_host_verify(service, lo_host, shared_cache_dir, sshd):
    report = service.run(
        SAXPY, backends=["cpu", "wgsl"], devices=["lo/cpu", "lo/wgpu:0"], sizes={"n": 4096},
        cache_dir=shared_cache_dir,
    )  # fmt: skip
    by_backend = {r.backend: r for r in report.results}
    assert set(by_backend) == {"cpu", "wgsl"}, report.to_json()
    for result in by_backend.values():
        assert result.status == "ok", result.error
        assert result.device["host"] == "lo"
        assert result.provenance["device"].startswith("lo/")
        assert result.provenance["host"]["url"] == lo_host.url
        # the artifact the host ran is in its content-addressed cache, not in the local build cache
        assert "/remote-artifacts/" in result.provenance["artifact"]["path"]
    assert by_backend["wgsl"].verified is True
    assert report.ok
    cache = sshd.folder / "remote-home" / "remote-artifacts"
    assert len(list(cache.glob("*/build.json"))) >= 2
