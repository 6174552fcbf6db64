"""The timing protocol: warm up until times settle, batch short launches, repeat, summarize.

`measure(launch, resolution_s, method)` drives any `launch(count) -> total seconds` (a worker
request, a runtime's `Prepared.launch`, a bare loop):

1. warm-up: single launches until two consecutive times agree within `settle_rtol` (twice in a
   row), bounded by `warmup_max_n` launches and `warmup_max_s` seconds;
2. batching: when one launch is shorter than `min_ticks` × the timer's resolution or than
   `min_sample_s`, each sample times `count` back-to-back launches and divides by `count`;
3. samples until both `min_n` samples and `min_time_s` seconds are reached (stopping anyway at
   `max_n` samples or after `max_time_s` with at least 3 samples).

With `l2="cold"` there is no batching (step 2): the caller flushes caches before every launch
call, untimed (the worker does, through `Prepared.flush_caches`).

The result is a `TimingStats` (median, quartiles and IQR, min, max, n, raw per-launch samples,
method, resolution, batch, warm-up count).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from workbench.records import TimingStats, quartiles


@dataclass(frozen=True)
class TimingOptions:
    min_n: int = 10
    min_time_s: float = 0.2
    max_n: int = 10_000
    max_time_s: float = 10.0
    warmup_max_n: int = 20
    warmup_max_s: float = 1.0
    settle_rtol: float = 0.10
    #: A sample must span at least this many timer ticks, else launches are batched.
    min_ticks: float = 100.0
    #: ... and last at least this long whatever the timer. A sample's fixed cost (the timer pair,
    #: the first launch's latency: about 8 µs with CUDA events on the H200) adds F / batch to each
    #: launch; with 100 ticks alone an 18 µs kernel was batched 2-4 times on CUDA (0.5 µs ticks)
    #: and never on wgpu (1 ns), so scan's backends were compared under 0-22 % of different
    #: overheads. A 200 µs floor batches every backend's short kernel alike and bounds the share
    #: at F / 200 µs; the examples at their large sizes (218 µs and up) are not batched.
    min_sample_s: float = 200e-6
    max_batch: int = 1 << 20
    #: "warm" (default): launches follow each other, caches keep what the last one left.
    #: "cold": the worker flushes the device's caches before every sample, outside the timed region
    #: (CUDA: a write of twice the L2 size; see `Prepared.flush_caches`), and samples hold one
    #: launch each (a batch would warm the cache for all but its first launch).
    #: "both": warm, then cold; the result's stats are the warm ones, its conditions hold the cold.
    l2: str = "warm"
    #: Energy per launch from NVML's total energy counter, over a batch of at least this long
    #: (where NVML reaches the device); 0 turns it off.
    energy_batch_s: float = 0.25


L2_POLICIES = ("warm", "cold", "both")


#: The window's hot-reload loop: enough samples for a median and a spread, sooner (7 timed runs, as
#: Kernel Tuner takes). The command line and benchmarks keep the defaults; every result records the
#: options it was measured with.
INTERACTIVE = TimingOptions(min_n=7, min_time_s=0.05, warmup_max_n=10, warmup_max_s=0.15, energy_batch_s=0.0)


def options_to_dict(options: TimingOptions) -> dict[str, Any]:
    return asdict(options)


def options_from_dict(data: dict[str, Any]) -> TimingOptions:
    known = set(TimingOptions.__dataclass_fields__)
    options = TimingOptions(**{k: v for k, v in data.items() if k in known})
    check_l2(options.l2)
    return options


def check_l2(policy: str) -> str:
    """`policy` when it is a valid cache policy, else ValueError naming the valid ones."""
    if policy not in L2_POLICIES:
        raise ValueError(f"unknown L2 policy {policy!r}; valid: {', '.join(L2_POLICIES)}")
    return policy


class Cancelled(Exception):
    """The caller asked to stop measuring."""


def settled(times: list[float], rtol: float, resolution_s: float) -> bool:
    """True when the last three times agree pairwise within `rtol` (or a few timer ticks)."""
    if len(times) < 3:
        return False
    a, b, c = times[-3:]
    slack = 2 * resolution_s

    def close(x: float, y: float) -> bool:
        return abs(x - y) <= rtol * max(x, y) + slack

    return close(a, b) and close(b, c)


def choose_batch(
    single_s: float, resolution_s: float, min_ticks: float, max_batch: int, min_sample_s: float = 0.0
) -> int:
    """How many launches one sample must hold to span `min_ticks` timer ticks and `min_sample_s`."""
    target = max(min_ticks * resolution_s, min_sample_s)
    if single_s >= target:
        return 1
    if single_s <= 0:
        return max_batch if resolution_s > 0 else 1
    return int(min(max_batch, math.ceil(target / single_s)))


def measure(
    launch: Callable[[int], float],
    resolution_s: float,
    method: str,
    options: TimingOptions | None = None,
    cancelled: Callable[[], bool] | None = None,
    on_launch: Callable[[str, int], None] | None = None,
) -> TimingStats:
    """Time `launch` (which runs `count` launches and returns their total seconds).

    `on_launch(phase, samples_so_far)` is called after every launch (phase "warmup", "batch" or
    "samples"): a worker uses it to send heartbeats while it measures."""
    opts = options or TimingOptions()
    resolution_s = max(float(resolution_s), 0.0)

    def check(phase: str = "", done: int = 0) -> None:
        if on_launch is not None and phase:
            on_launch(phase, done)
        if cancelled is not None and cancelled():
            raise Cancelled()

    # 1. warm-up
    warm: list[float] = []
    started = time.perf_counter()
    while True:
        check()
        warm.append(float(launch(1)))
        check("warmup", len(warm))
        if settled(warm, opts.settle_rtol, resolution_s):
            break
        if len(warm) >= opts.warmup_max_n or time.perf_counter() - started >= opts.warmup_max_s:
            break

    # 2. batching: grow the batch until a sample spans enough ticks (a timer may read 0 for
    # sub-tick launches, so the estimate is refined from batched samples, not trusted once).
    single = float(np.median(warm[-3:]))
    target = max(opts.min_ticks * resolution_s, opts.min_sample_s)
    batch = (
        1
        if opts.l2 != "warm"
        else choose_batch(single, resolution_s, opts.min_ticks, opts.max_batch, opts.min_sample_s)
    )
    while batch > 1:
        check()
        total = float(launch(batch))
        check("batch", batch)
        if total >= target or batch >= opts.max_batch:
            break
        per = total / batch
        grown = choose_batch(per, resolution_s, opts.min_ticks, opts.max_batch, opts.min_sample_s)
        batch = min(opts.max_batch, max(batch * 2, grown))

    # 3. samples
    samples: list[float] = []
    started = time.perf_counter()
    while True:
        check()
        samples.append(float(launch(batch)) / batch)
        check("samples", len(samples))
        elapsed = time.perf_counter() - started
        if len(samples) >= opts.min_n and elapsed >= opts.min_time_s:
            break
        if len(samples) >= opts.max_n or (elapsed >= opts.max_time_s and len(samples) >= 3):
            break
    return summarize(samples, method, resolution_s, batch=batch, warmup=len(warm))


def summarize(
    samples: list[float], method: str, resolution_s: float, batch: int = 1, warmup: int = 0
) -> TimingStats:
    """TimingStats of per-launch samples."""
    values = np.asarray(samples, dtype=np.float64)
    q1, median, q3 = quartiles(values)
    return TimingStats(
        median_s=median,
        iqr_s=q3 - q1,
        q1_s=q1,
        q3_s=q3,
        min_s=float(values.min()),
        max_s=float(values.max()),
        n=int(values.size),
        samples_s=[float(v) for v in values],
        method=method,
        resolution_s=float(resolution_s),
        batch=int(batch),
        warmup=int(warmup),
    )


def throughput(
    median_s: float, bytes_moved: float | None, flops: float | None, device: dict[str, Any]
) -> dict[str, float | None]:
    """Achieved GB/s and GFLOP/s, and the fraction of the device's peak bandwidth when known."""
    gbps = gflops = fraction = None
    if median_s > 0:
        if bytes_moved is not None:
            gbps = bytes_moved / median_s / 1e9
        if flops is not None:
            gflops = flops / median_s / 1e9
    peak = device.get("peak_gbps") if device else None
    if gbps is not None and peak:
        fraction = gbps / float(peak)
    return {"gbps": gbps, "gflops": gflops, "fraction_of_peak": fraction}
