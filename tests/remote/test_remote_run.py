"""Runs on the "remote" host (this machine over real ssh): saxpy on lo/cpu and lo/wgpu:0,
verified; the artifact cache on the host; a connection killed mid-run; a run after it."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

import pytest

from tests.waits import FIRING_LIMIT_S
from workbench.run.events import RunPhase
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


def _kill_sessions(sshd, sig=signal.SIGKILL) -> list:
    """Drop every connection to the server (its per-connection processes), the listener stays."""
    sessions = sshd.sessions()
    for proc in sessions:
        os.kill(proc.pid, sig)
    return sessions


def test_connection_killed_mid_run_is_an_error_naming_the_host_and_the_next_run_reconnects(
    service, lo_host, shared_cache_dir, sshd
):
    killed = []

    def on_event(event):
        # The wgsl backend has verified and is about to be timed: drop the connection now.
        if isinstance(event, RunPhase) and event.backend == "wgsl" and event.phase == "timing":
            killed.extend(_kill_sessions(sshd))

    report = service.run(
        SAXPY, backends=["cpu", "wgsl"], devices=["lo/cpu", "lo/wgpu:0"], sizes={"n": 4096},
        cache_dir=shared_cache_dir, on_event=on_event,
    )  # fmt: skip
    assert killed, "no ssh connection to drop"
    wgsl = next(r for r in report.results if r.backend == "wgsl")
    assert wgsl.status == "error"
    assert "host lo" in wgsl.error and "connection" in wgsl.error, wgsl.error
    assert wgsl.verified is True  # what the check found before the drop is kept
    cpu = next(r for r in report.results if r.backend == "cpu")
    assert cpu.status == "ok"

    again = service.run(
        SAXPY, backends=["cpu", "wgsl"], devices=["lo/cpu", "lo/wgpu:0"], sizes={"n": 4096},
        cache_dir=shared_cache_dir,
    )  # fmt: skip
    assert [r.status for r in again.results] == ["ok", "ok"], again.to_json()
    assert again.ok


def test_a_host_that_stops_answering_times_out_naming_the_host(service, lo_host, shared_cache_dir, sshd):
    stopped = []

    def on_event(event):
        if isinstance(event, RunPhase) and event.backend == "cpu" and event.phase == "timing":
            stopped.extend(_kill_sessions(sshd, signal.SIGSTOP))

    try:
        report = service.run(
            SAXPY, backends=["cpu"], devices=["lo/cpu"], sizes={"n": 4096}, timeout_s=FIRING_LIMIT_S,
            cache_dir=shared_cache_dir, on_event=on_event,
        )  # fmt: skip
    finally:
        for proc in stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
    assert stopped
    (cpu,) = report.results
    assert cpu.status == "error"
    assert "timed out" in cpu.error and "on host lo" in cpu.error, cpu.error


def test_local_reference_with_remote_backend(service, lo_host, shared_cache_dir):
    """The reference (cpu) runs here, wgsl on the host; the host's result is verified against it."""
    report = service.run(
        SAXPY, backends=["cpu", "wgsl"], devices=["cpu", "lo/wgpu:0"], sizes={"n": 2048},
        cache_dir=shared_cache_dir,
    )  # fmt: skip
    cpu, wgsl = (next(r for r in report.results if r.backend == b) for b in ("cpu", "wgsl"))
    assert cpu.status == "ok" and "host" not in cpu.device and "host" not in cpu.provenance
    assert wgsl.status == "ok" and wgsl.device["host"] == "lo" and wgsl.verified is True
    assert wgsl.check["reference"] == "cpu"


def test_a_worker_that_dies_on_the_host_is_an_error_naming_the_host(service, lo_host, shared_cache_dir):
    def on_event(event):
        if isinstance(event, RunPhase) and event.backend == "wgsl" and event.phase == "timing":
            worker = service.catalog.pool_for("lo").get("wgpu")
            os.kill(int(worker.info["pid"]), signal.SIGKILL)  # the worker's pid on the host (here)

    report = service.run(
        SAXPY, backends=["cpu", "wgsl"], devices=["cpu", "lo/wgpu:0"], sizes={"n": 2048},
        cache_dir=shared_cache_dir, on_event=on_event,
    )  # fmt: skip
    wgsl = next(r for r in report.results if r.backend == "wgsl")
    assert wgsl.status == "error", wgsl.error
    assert wgsl.error.startswith("the wgpu worker on host lo died with SIGKILL"), wgsl.error
    assert "XDG_RUNTIME_DIR" not in wgsl.error  # the remote worker gets a private one
