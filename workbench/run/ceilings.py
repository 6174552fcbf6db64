"""Measured device ceilings: copy, read, write and update bandwidth and FMA throughput, by the
workbench's own kernels.

A roofline needs a device's memory and compute roofs. Datasheet figures are often missing
(a CPU, llvmpipe) or out of reach of real code (`datasheets.py` keeps the known ones beside), so
the workbench measures them: a copy stream (bytes read + written per second), a read stream
(bytes read per second: the roof of a kernel that reads far more than it writes, such as a
reduction), a write stream (bytes written), an update stream (one buffer rewritten in place,
`dst[j] = f(dst[j])`, bytes read + written: the roof of an in-place kernel such as a bitonic pass;
`memory_roof` says which one bounds a kernel) and an FMA loop (2 FLOP per fused multiply-add; f64 where the device has it), written in
`ceilings_kernels.py` (CUDA's streams in `resources/ceilings/`) and run like a user's kernel —
prepared, uploaded and timed by the runtime's worker process (`pool.WorkerProcess`), so a crash
cannot reach the caller:

- cpu: a std-only Rust cdylib built once with the host rustc (cached by source and rustc version,
  under a lock in a private folder), on every core and on half of them, through ctypes;
- wgpu: WGSL through the wgpu runtime, timed with timestamp queries where the adapter has them;
- cuda: PTX through the cuda runtime, timed with CUDA events.

Each stream runs in several variants (`ceilings_kernels.cuda_streams` / `wgpu_streams`: access
width, accesses in flight per invocation, one access per invocation or grid-stride at several
occupancies) and the FMA loop at two workgroup counts on a CPU adapter. The best sample of a short
timing run gives each variant's figure, and the best variant the ceiling (a ceiling is the best the
device does, so no kernel should beat it); `Ceilings.variants` names the variant that won each.
Results are cached per device + driver in `<user cache>/ceilings.json` (written under its lock);
`refresh=True` measures again.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from workbench.build.cache import cache_root
from workbench.build.scratch import locked
from workbench.records import Record
from workbench.run.ceilings_kernels import STREAMS
from workbench.run.ceilings_probes import PROBES, CeilingsError, probes  # noqa: F401  (re-exported)
from workbench.runtimes_table import RUNTIME_TABLE, RUNTIMES

CEILINGS_FILE = "ceilings.json"
#: 2: read_gbps; 3: write_gbps and the winning variants; 4: update_gbps; 5: wgpu's 2-in-flight
#: grid-stride variant on GPUs; 6: wgpu's GPU buffers at 256 MiB (older files are measured again).
FORMAT = 6
#: A short timing run per kernel: the ceilings of one device take a few seconds at most.
TIMING = {"min_n": 5, "min_time_s": 0.05, "max_time_s": 0.5, "warmup_max_n": 3, "warmup_max_s": 0.2}
TIMEOUT_S = 60.0


@dataclass
class Ceilings(Record):
    """What one device achieved on the built-in kernels (None: not measured or not supported)."""

    spec: str
    name: str
    copy_gbps: float | None
    fma_gflops_f32: float | None
    fma_gflops_f64: float | None
    measured: str  # UTC time stamp
    method: str  # which kernels, sizes and timer
    runtime: str = ""
    driver: str = ""
    notes: str = ""  # why a figure is missing
    read_gbps: float | None = None  # the read stream: bytes read per second
    write_gbps: float | None = None  # the write stream: bytes written per second
    update_gbps: float | None = None  # the update stream: bytes read + written in place per second
    #: Which variant won each figure ("copy" -> "16-byte accesses, 4 in flight, grid-stride, ...").
    variants: dict[str, str] = field(default_factory=dict)
    #: The vendor's figures for the device where known (`datasheets.py`): shown beside the measured.
    datasheet: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """The shape `workbench ceilings --json` prints for one device."""
        return {
            "spec": self.spec,
            "name": self.name,
            **{f"{stream}_gbps": getattr(self, f"{stream}_gbps") for stream in STREAMS},
            "fma_gflops_f32": self.fma_gflops_f32,
            "fma_gflops_f64": self.fma_gflops_f64,
            "measured": self.measured,
            "method": self.method,
            "driver": self.driver,
            "notes": self.notes,
            "variants": dict(self.variants or {}),
            "datasheet": self.datasheet,
        }


# ---------------------------------------------------------------------------------------- caching


def driver_of(device: dict[str, Any]) -> str:
    """The driver part of a device's identity: a new driver may move the ceilings."""
    row = RUNTIME_TABLE.get(str(device.get("runtime")))
    if row is None:
        return ""
    # A device probed without its `cores` runs on this machine's.
    found = {f: device.get(f) or (os.cpu_count() if f == "cores" else None) for f in row.driver_fields}
    values = [str(v) for v in found.values() if v]
    if not values:
        return ""
    return row.driver_format.format(" ".join(values) if row.driver_joined else values[0])


def device_key(device: dict[str, Any]) -> str:
    """Cache key of a device: runtime, name and driver (not its index, which may change)."""
    return f"{device.get('runtime', '?')}|{device.get('name', '?')}|{driver_of(device)}"


def cache_file(cache_dir: str | Path | None = None) -> Path:
    return cache_root(cache_dir) / CEILINGS_FILE


def _read_cache(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # missing or damaged: measured again
    if (
        not isinstance(data, dict)
        or data.get("format") != FORMAT
        or not isinstance(data.get("devices"), dict)
    ):
        return {}
    return data["devices"]


def cached(device: dict[str, Any], cache_dir: str | Path | None = None) -> Ceilings | None:
    """The cached ceilings of `device`, or None (a cheap file read: fine on a GUI thread)."""
    entry = _read_cache(cache_file(cache_dir)).get(device_key(device))
    if not isinstance(entry, dict):
        return None
    ceilings = Ceilings.from_dict(entry)
    ceilings.spec = str(device.get("spec") or ceilings.spec)
    ceilings.datasheet = _datasheet(device)  # the table's figures now, not when it was measured
    return ceilings


def _datasheet(device: dict[str, Any]) -> dict[str, Any] | None:
    from workbench.run.datasheets import datasheet_of

    found = datasheet_of(device)
    return found.to_json() if found is not None else None


def _store(device: dict[str, Any], ceilings: Ceilings, cache_dir: str | Path | None) -> None:
    path = cache_file(cache_dir)
    try:
        # Read, add, write under the file's lock: two processes storing at once keep both devices.
        with locked(path.with_name(f"{path.name}.lock")):
            devices = _read_cache(path)
            devices[device_key(device)] = ceilings.to_dict()
            tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"format": FORMAT, "devices": devices}, indent=1), encoding="utf-8")
            tmp.replace(path)
    except OSError:
        pass  # a read-only cache costs a re-measurement next time, nothing else


def _zeros(spec: dict[str, Any]) -> dict[str, np.ndarray]:
    from workbench.run.spec import buffer_args, dtype_of

    return {a["name"]: np.zeros(int(a["length"]), dtype_of(a["type"])) for a in buffer_args(spec)}


def measure(
    device: dict[str, Any], pool: Any = None, cache_dir: str | Path | None = None, cancelled: Any = None
) -> Ceilings:
    """Run the built-in kernels on `device` (a `list_devices()` dict) in its runtime's worker;
    `cancelled` (a threading.Event) stops before the next kernel."""
    from workbench.run.pool import WorkerError, WorkerPool

    own_pool = pool is None
    pool = pool or WorkerPool()
    figures: dict[str, float | None] = dict.fromkeys((*STREAMS, "f32", "f64"))
    winners: dict[str, str] = {}
    failed: dict[str, list[str]] = {}
    timers = set()
    try:
        worker = pool.get(str(device.get("runtime")))
        for probe in probes(device, cache_dir):
            if cancelled is not None and cancelled.is_set():
                raise CeilingsError("cancelled")
            try:
                reply = worker.request({"op": "prepare", "spec": probe.spec}, timeout_s=TIMEOUT_S)[0]
                worker.request({"op": "upload"}, _zeros(probe.spec), timeout_s=TIMEOUT_S)
                stats = worker.request({"op": "measure", "options": TIMING}, timeout_s=TIMEOUT_S)[0]["stats"]
                worker.request({"op": "close"}, timeout_s=TIMEOUT_S)
            except WorkerError as exc:
                failed.setdefault(probe.what, []).append(f"{probe.variant}: {str(exc).splitlines()[0]}")
                continue
            best = min(stats["samples_s"]) if stats.get("samples_s") else stats["median_s"]
            figure = probe.work / best / 1e9 if best > 0 else None
            if figure is not None and figure > (figures[probe.what] or 0.0):  # the best variant wins
                figures[probe.what] = figure
                winners[probe.what] = probe.variant
            timers.add(reply.get("timer_method", stats.get("method", "?")))
    except WorkerError as exc:
        raise CeilingsError(f"measuring {device.get('spec')}: {exc}") from None
    finally:
        if own_pool:
            pool.close()
    runtime = str(device.get("runtime"))
    row = RUNTIME_TABLE.get(runtime)
    kernel_text = row.ceilings_kernels if row else runtime
    method = (
        f"{kernel_text}: copy and update (in place) streams (bytes read + written), read and write "
        "streams (bytes read or written), each the best of its variants (access width, accesses in "
        "flight, grid), and FMA loops (2 FLOP each); "
        f"best of {TIMING['min_n']}+ samples; timer {', '.join(sorted(timers)) or 'none'}"
    )
    # A figure none of whose variants ran says why (the first failure, and how many more); one
    # variant failing among others does not.
    notes = [
        f"{what}: {reasons[0]}" + (f" (and {len(reasons) - 1} more variants)" if len(reasons) > 1 else "")
        for what, reasons in failed.items()
        if figures[what] is None
    ]
    return Ceilings(
        spec=str(device.get("spec") or runtime),
        name=str(device.get("name") or ""),
        **{f"{stream}_gbps": figures[stream] for stream in STREAMS},
        variants=winners,
        fma_gflops_f32=figures["f32"],
        fma_gflops_f64=figures["f64"],
        measured=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        method=method,
        runtime=runtime,
        driver=driver_of(device),
        notes="; ".join(notes),
        datasheet=_datasheet(device),
    )


def ceilings_for(
    devices: list[dict[str, Any]],
    refresh: bool = False,
    cache_dir: str | Path | None = None,
    on_measure=None,
    pool: Any = None,
    cancelled: Any = None,
) -> list[Ceilings]:
    """Ceilings of every device: cached ones unless `refresh`, the rest measured (and cached).

    `on_measure(device)` is called before a device is measured (for a progress line); `pool` (a
    `WorkerPool`, closed by its owner) and `cancelled` (an Event) let the caller stop it."""
    from workbench.run.pool import WorkerPool

    out: list[Ceilings] = []
    own_pool = pool is None
    try:
        for device in devices:
            found = None if refresh else cached(device, cache_dir)
            if found is None:
                if on_measure is not None:
                    on_measure(device)
                pool = pool or WorkerPool()
                found = measure(device, pool, cache_dir, cancelled)
                if found.copy_gbps or found.fma_gflops_f32:
                    _store(device, found, cache_dir)
            out.append(found)
    finally:
        if own_pool and pool is not None:
            pool.close()
    return out


def all_devices(info: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Every device of a `list_devices()` answer, in the runtime table's order (cpu first)."""
    return [d for runtime in RUNTIMES for d in (info.get(runtime) or {}).get("devices") or []]


#: A kernel writing at most this fraction of what it reads is a read stream: its memory roof is
#: the read ceiling (a reduction's partial sums), not the copy ceiling; and the other way round, a
#: kernel reading at most this fraction of what it writes is held against the write ceiling. The
#: same fraction bounds the traffic outside its in-place buffers that an update kernel may have.
READ_STREAM_WRITES = 1 / 16


def memory_roof(kernel: Any, values: Any) -> str:
    """Which measured memory ceiling bounds `kernel` at `values` (its evaluated lengths): "read"
    when its buffers written (out, inout) hold at most `READ_STREAM_WRITES` of the bytes of those
    read (in, inout), "write" the other way round; "update" when its traffic is an in-place
    rewrite: the bytes of its `in` and `out` buffers together are at most `READ_STREAM_WRITES` of
    those of its `inout` ones (every buffer inout, as a bitonic pass; or one rewritten in place
    beside a few bytes only read, as scan's block-offset pass); else "copy".

    Why a rule on `inout` bytes and not on the read/written ratio: reading and writing the same
    lines (an update) and reading one buffer while writing another (a copy) move the same bytes
    in a different pattern, and the in-place one runs faster on some devices (an H100's bitonic
    pass reached 106-111 % of its copy ceiling), so only a kernel that is (nearly) all in-place
    traffic is held to the update ceiling. A kernel with a separate input of its own size (saxpy:
    x in, y inout) mixes a read stream with an update and stays on the copy ceiling."""
    from workbench.run.spec import dtype_of

    read = written = in_place = 0
    for arg in kernel.buffers:
        size = int(values.lengths.get(arg.name, 0)) * dtype_of(arg.type).itemsize
        if arg.direction in ("in", "inout"):
            read += size
        if arg.direction in ("out", "inout"):
            written += size
        if arg.direction == "inout":
            in_place += size
    if read and written <= READ_STREAM_WRITES * read:
        return "read"
    if written and read <= READ_STREAM_WRITES * written:
        return "write"
    apart = (read - in_place) + (written - in_place)  # the bytes of the in and out buffers
    if in_place and apart <= READ_STREAM_WRITES * in_place:
        return "update"
    return "copy"
