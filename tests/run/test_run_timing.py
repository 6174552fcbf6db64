"""The timing protocol: settling, batching of short launches, statistics, on real launches."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from tests.waits import HANG_GUARD_S
from workbench.build import build_project, read_build
from workbench.project import Project
from workbench.records import TimingStats, timing_quartiles
from workbench.run.buffers import BackendBuffers
from workbench.run.inputs import InputCache
from workbench.run.pool import WorkerProcess
from workbench.run.spec import make_launch_spec
from workbench.run.timing import TimingOptions, choose_batch, measure, settled, summarize, throughput

SAXPY = Project.open(Path(__file__).resolve().parents[2] / "resources" / "examples" / "saxpy")


@pytest.fixture(scope="module")
def cpu_saxpy_worker(shared_cache_dir, long_lived):
    """A cpu worker holding the saxpy example prepared for n elements (real cargo build)."""
    (result,) = build_project(SAXPY, ["cpu"], cache_dir=shared_cache_dir)
    assert result.status == "ok", result.log
    build = read_build(result.artifact_dir)
    worker = WorkerProcess("cpu")
    long_lived.add(lambda: ([worker.pid] if worker.alive else []) + worker.threads)
    kernel = SAXPY.manifest.kernel()

    def prepare(n: int):
        spec = make_launch_spec(
            kernel, "cpu", build["kernels"]["saxpy"], kernel.symbols({"n": n}), 0, result.artifact_dir
        )
        reply, _ = worker.request({"op": "prepare", "spec": spec, "device_index": 0}, timeout_s=HANG_GUARD_S)
        return reply

    yield worker, prepare
    worker.shutdown()


def _launcher(worker):
    def launch(count: int) -> float:
        return worker.request({"op": "launch", "count": count}, timeout_s=HANG_GUARD_S)[0]["seconds"]

    return launch


def test_settle_logic():
    assert not settled([1.0, 1.0], 0.05, 0.0)  # needs three
    assert settled([5.0, 1.0, 1.01, 0.99], 0.05, 0.0)
    assert not settled([1.0, 1.5, 1.0], 0.05, 0.0)
    assert settled([0.0, 1e-9, 0.0], 0.05, 1e-9)  # within a couple of timer ticks


def test_choose_batch():
    assert choose_batch(1e-3, 1e-9, 100, 1 << 20) == 1
    assert choose_batch(1e-6, 1e-6, 100, 1 << 20) == 100
    assert choose_batch(0.0, 1e-6, 100, 4096) == 4096  # a launch below one tick
    assert choose_batch(1e-9, 1.0, 100, 4096) == 4096  # capped
    # A fine timer (wgpu's 1 ns) no longer exempts a short kernel: it is batched to span the floor,
    # as a CUDA event (0.5 µs ticks) batches it.
    assert choose_batch(18e-6, 1e-9, 100, 1 << 20) == 1
    assert choose_batch(18e-6, 1e-9, 100, 1 << 20, 200e-6) == 12
    assert choose_batch(18e-6, 0.5e-6, 100, 1 << 20, 200e-6) == 12
    assert choose_batch(250e-6, 1e-9, 100, 1 << 20, 200e-6) == 1  # long enough: one launch a sample


def test_real_launches_warm_up_and_sample_until_count_and_time(cpu_saxpy_worker):
    worker, prepare = cpu_saxpy_worker
    reply = prepare(65536)
    # No floor on a sample's duration: one launch per sample (the floor has its own test).
    # The warm-up ends when settled (3 launches at least) or at 8: its clock bound is out of reach here,
    # so a loaded machine cannot cut it short.
    options = TimingOptions(
        min_n=12, min_time_s=0.05, warmup_max_n=8, warmup_max_s=HANG_GUARD_S, min_sample_s=0.0
    )
    started = time.perf_counter()
    stats = measure(_launcher(worker), reply["timer_resolution_s"], reply["timer_method"], options)
    elapsed = time.perf_counter() - started
    assert stats.method == "wall-clock" and stats.batch == 1
    assert 3 <= stats.warmup <= 8
    assert stats.n >= 12 and len(stats.samples_s) == stats.n
    assert sum(stats.samples_s) <= elapsed
    assert stats.min_s <= stats.median_s <= stats.max_s
    assert stats.iqr_s >= 0


def test_a_launch_short_against_the_timer_is_timed_in_batches(cpu_saxpy_worker):
    worker, prepare = cpu_saxpy_worker
    prepare(16)  # a few nanoseconds of work
    # Pretend the timer ticks every 100 µs: one launch is far below 100 ticks, so samples must
    # hold many launches each, and each sample is divided by the batch.
    options = TimingOptions(min_n=5, min_time_s=0.0, warmup_max_n=5, warmup_max_s=0.2)
    stats = measure(_launcher(worker), 1e-4, "wall-clock", options)
    assert stats.batch > 1
    assert stats.n >= 5
    assert len(stats.samples_s) == stats.n  # per-launch times: each sample divided by the batch


def test_a_short_launch_is_batched_to_the_sample_floor_even_on_a_fine_timer():
    """The same rule on every runtime: a launch shorter than `min_sample_s` is batched until a
    sample lasts that long, whatever the timer's resolution (here 1 ns, as wgpu's timestamps).
    The launch is 20 µs of real busy time each (the cpu runtime's launches last milliseconds)."""

    def launch(count: int) -> float:
        start = time.perf_counter()
        while time.perf_counter() - start < 20e-6 * count:
            pass
        return time.perf_counter() - start

    options = TimingOptions(min_n=5, min_time_s=0.0, warmup_max_n=5, warmup_max_s=0.2)
    stats = measure(launch, 1e-9, "wall-clock", options)
    # 200 µs of 20 µs launches: about 10 per sample (a preempted warm-up launch can make it fewer)
    assert 2 <= stats.batch <= 11
    assert stats.median_s >= 20e-6 and len(stats.samples_s) == stats.n >= 5
    no_floor = measure(launch, 1e-9, "wall-clock", TimingOptions(min_n=5, min_time_s=0.0, min_sample_s=0.0))
    assert no_floor.batch == 1


def test_summary_and_throughput():
    stats = summarize([3.0, 1.0, 2.0, 4.0], "wgpu-timestamps", 1e-9, batch=4, warmup=2)
    assert (stats.median_s, stats.min_s, stats.max_s, stats.n) == (2.5, 1.0, 4.0, 4)
    assert (stats.q1_s, stats.q3_s) == (1.75, 3.25) and stats.iqr_s == 1.5  # linear interpolation
    assert stats.samples_s == [3.0, 1.0, 2.0, 4.0]
    # The quartiles travel with the record (its JSON and its dict); a record from before they were
    # kept gets those of its samples from the same rule.
    assert (stats.to_json()["q1_s"], stats.to_json()["q3_s"]) == (1.75, 3.25)
    assert timing_quartiles(TimingStats.from_dict(stats.to_dict())) == (1.75, 3.25)
    older = {k: v for k, v in stats.to_json().items() if k not in ("q1_s", "q3_s")}
    assert timing_quartiles(older) == (1.75, 3.25) and timing_quartiles({"median_s": 1.0}) == (None, None)
    t = throughput(1e-3, 12e6, 2e6, {"peak_gbps": 24.0})
    assert t == pytest.approx({"gbps": 12.0, "gflops": 2.0, "fraction_of_peak": 0.5})
    assert throughput(1e-3, None, None, {})["gbps"] is None


def test_the_worker_measures_back_to_back_with_heartbeats(cpu_saxpy_worker):
    worker, prepare = cpu_saxpy_worker
    prepare(65536)
    beats = []
    options = {"min_n": 5, "min_time_s": 0.35, "warmup_max_n": 5, "warmup_max_s": 0.2}
    started = time.perf_counter()
    reply, _ = worker.request(
        {"op": "measure", "options": options}, timeout_s=HANG_GUARD_S, on_progress=beats.append
    )
    elapsed = time.perf_counter() - started
    stats = reply["stats"]
    assert stats["method"] == "wall-clock" and stats["n"] == len(stats["samples_s"]) >= 5
    assert sum(stats["samples_s"]) <= elapsed  # the samples are of this measurement, however slow
    assert beats and {b["phase"] for b in beats} <= {"warmup", "batch", "samples"}


@pytest.mark.parametrize("restore", [True, False])
def test_fresh_inputs_put_an_in_place_buffer_back_before_every_timed_sample(cpu_saxpy_worker, restore):
    """`[kernel.timing] fresh_inputs`: every timed sample runs on the uploaded input, not on the
    previous sample's output (an idempotent in-place step such as bitonic's would otherwise be
    timed writing nothing). saxpy's y = a x + y is in place: restored before every launch, y ends
    as one launch leaves it; not restored, it has been added to at every launch."""
    worker, prepare = cpu_saxpy_worker
    n = 4099
    prepare(n)
    kernel = SAXPY.manifest.kernel()
    cache = InputCache()
    inputs = cache.make(kernel, kernel.evaluate(kernel.symbols({"n": n}, None)), 0, ".")
    buffers = BackendBuffers(kernel, inputs, cache, shared=worker.shared, spare={})
    header, arrays, fds = buffers.upload_request(restore=restore, binds=True)
    worker.request(header, arrays, timeout_s=HANG_GUARD_S, fds=fds)
    worker.request({"op": "launch", "count": 1}, timeout_s=HANG_GUARD_S)
    reply, received = worker.request(
        {"op": "download", "names": ["y"], "into_shared": buffers.shared}, timeout_s=HANG_GUARD_S
    )
    once = np.array(buffers.outputs(["y"], reply, received)["y"], copy=True)
    assert not np.array_equal(once, inputs["y"])
    options = {"min_n": 4, "min_time_s": 0.0, "warmup_max_n": 3, "warmup_max_s": 0.2, "min_sample_s": 0.0}
    measured, _ = worker.request(
        {"op": "measure", "options": options, "restore": restore}, timeout_s=HANG_GUARD_S
    )
    assert measured["stats"]["n"] >= 4
    # The verified output stays the caller's (shared); the timing ran on the worker's own copy.
    after = worker.request({"op": "download", "names": ["y"]}, timeout_s=HANG_GUARD_S)[1]["y"]
    assert np.array_equal(after, once) is restore
    assert np.array_equal(buffers.outputs(["y"], reply, received)["y"], once)
