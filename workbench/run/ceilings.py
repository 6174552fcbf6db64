"""Measured device ceilings: copy, read and write bandwidth and FMA throughput, by the
workbench's own kernels.

A roofline needs a device's memory and compute roofs. Datasheet figures are often missing
(a CPU, llvmpipe) or out of reach of real code (`datasheets.py` keeps the known ones beside), so
the workbench measures them: a copy stream (bytes read + written per second), a read stream
(bytes read per second: the roof of a kernel that reads far more than it writes, such as a
reduction), a write stream (bytes written; `memory_roof` says which one bounds a kernel) and an
FMA loop (2 FLOP per fused multiply-add; f64 where the device has it), written in
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

import hashlib
import json
import os
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from workbench import childproc
from workbench.build.cache import cache_root
from workbench.build.scratch import STAGING_PREFIX, OwnedDir, locked, sweep_quietly
from workbench.errors import WorkbenchError
from workbench.records import Record
from workbench.run import ceilings_kernels as kernels
from workbench.runtimes_table import RUNTIME_TABLE, RUNTIMES

CEILINGS_FILE = "ceilings.json"
FORMAT = 3  # 2: read_gbps; 3: write_gbps and the winning variants (older entries are measured again)
#: A short timing run per kernel: the ceilings of one device take a few seconds at most.
TIMING = {"min_n": 5, "min_time_s": 0.05, "max_time_s": 0.5, "warmup_max_n": 3, "warmup_max_s": 0.2}
TIMEOUT_S = 60.0
#: The cpu ceiling kernels' build (and the wait for another process building them).
BUILD_TIMEOUT_S = 300.0


class CeilingsError(WorkbenchError):
    """A ceiling could not be measured (no compiler for the cpu kernel, a runtime failure ...)."""


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
    #: Which variant won each figure ("copy" -> "16-byte accesses, 4 in flight, grid-stride, ...").
    variants: dict[str, str] = field(default_factory=dict)
    #: The vendor's figures for the device where known (`datasheets.py`): shown beside the measured.
    datasheet: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """The shape `workbench ceilings --json` prints for one device."""
        return {
            "spec": self.spec,
            "name": self.name,
            "copy_gbps": self.copy_gbps,
            "read_gbps": self.read_gbps,
            "write_gbps": self.write_gbps,
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


# ---------------------------------------------------------------------------------------- measuring


def _kernel_dir(cache_dir: str | Path | None, runtime: str, text: str) -> Path:
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    folder = cache_root(cache_dir) / "ceilings" / f"{runtime}-{digest}"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _write_kernel(cache_dir, runtime: str, name: str, text: str) -> str:
    """The kernel's text in the shared cache, written whole (private file, then renamed): a
    process reading it while another writes it sees the old text or the new, never a part."""
    path = _kernel_dir(cache_dir, runtime, text) / name
    if not path.is_file() or path.read_text() != text:
        tmp = path.with_name(f"{STAGING_PREFIX}{name}.{os.getpid()}-{threading.get_ident()}")
        tmp.write_text(text)
        os.replace(tmp, path)
    return str(path)


def cpu_library(cache_dir: str | Path | None = None) -> str:
    """The cpu kernels' cdylib, built with the host rustc on first use (cached).

    Processes sharing the cache build it once: under the folder's lock, in a private folder (rustc
    writes its object files beside its output, named after the crate: two builds in one folder
    removed each other's, "linking with cc failed"), then renamed into place."""
    from workbench.build.adapters.host_rust import rustc as host_rustc

    rustc = host_rustc()
    if not rustc:
        raise CeilingsError("measuring the cpu needs rustc (apt-get install rustc cargo)")
    try:
        version = subprocess.run([rustc, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CeilingsError(f"{rustc} --version failed: {exc}") from None
    folder = _kernel_dir(cache_dir, "cpu", kernels.CPU_RUST + version)
    library = folder / "libwb_ceilings.so"
    if library.is_file():
        return str(library)
    deadline = time.monotonic() + BUILD_TIMEOUT_S

    def check() -> None:
        if time.monotonic() > deadline:
            raise CeilingsError(
                f"another process held the cpu ceiling kernels' build past {BUILD_TIMEOUT_S:g} s"
            )

    sweep_quietly(cache_root(cache_dir))  # what killed builds left
    with locked(folder / ".wb-lock", check):
        if library.is_file():  # built by the process that held the lock before us
            return str(library)
        with OwnedDir(folder, STAGING_PREFIX) as work:
            source = work.path / "ceilings.rs"
            source.write_text(kernels.CPU_RUST)
            built = work.path / "libwb_ceilings.so"
            command = [rustc, "--edition", "2021", "--crate-type", "cdylib", "-C", "opt-level=3",
                       "-C", "target-cpu=native", "-o", str(built), str(source)]  # fmt: skip
            try:
                done = childproc.capture(command, timeout_s=max(1.0, deadline - time.monotonic()))
            except (OSError, TimeoutError) as exc:
                raise CeilingsError(f"building the cpu ceiling kernels failed: {exc}") from None
            if done.returncode != 0:
                stderr = "\n".join(done.stderr).strip()
                raise CeilingsError(f"building the cpu ceiling kernels failed:\n{stderr[-2000:]}")
            os.replace(built, library)
    return str(library)


def _buffer(name: str, length: int, binding: int, direction: str = "inout", type_: str = "f32") -> dict:
    return {"name": name, "kind": "buffer", "type": type_, "length": int(length),
            "direction": direction, "binding": binding}  # fmt: skip


def _scalar(name: str, value: int) -> dict:
    return {"name": name, "kind": "scalar", "type": "u32", "value": int(value)}


def _spec(runtime, index, kind, path, entry, args, grid=(1, 1, 1), threads=(1, 1, 1)) -> dict[str, Any]:
    return {
        "runtime": runtime,
        "backend": f"ceilings-{runtime}",
        "device_index": int(index),
        "kernel": entry,
        "artifact": {"kind": kind, "path": path, "entry": entry},
        "args": args,
        "threads": list(threads),
        "grid": list(grid),
        "wgpu": {"mode": "uniform", "params_binding": None, "override_ids": {}},
        "constants": {},
    }


@dataclass
class _Probe:
    """One built-in kernel: its launch spec and the work one launch does."""

    what: str  # "copy", "read", "write", "f32", "f64"
    spec: dict[str, Any]
    work: float  # bytes moved (copy, read, write) or FLOP (fma) per launch
    variant: str = ""  # which variant of `what` (a stream's access width, unroll, grid)


def _grid(groups: int) -> tuple[int, int, int]:
    """Workgroups as x × y with x ≤ 65535 (the WGSL kernels fold y back into their index)."""
    x = min(groups, 32768)
    return x, -(-groups // x), 1


#: Bytes per element of each stream: copy reads and writes one, read and write one each.
_STREAM_BYTES = {"copy": 8.0, "read": 4.0, "write": 4.0}


def _cpu_probes(device: dict[str, Any], cache_dir) -> list[_Probe]:
    library = cpu_library(cache_dir)
    cores = int(device.get("cores") or os.cpu_count() or 1)
    n = 1 << 23  # 32 MiB per buffer: past the caches of most CPUs
    iters = 1 << 16
    out: list[_Probe] = []
    # Every core, and half of them (a memory stream may saturate before every core is busy).
    for threads in dict.fromkeys((cores, max(1, cores // 2))):
        variant = f"{threads} thread{'s' if threads != 1 else ''}"
        src, count = _buffer("src", n, 0, "in"), [_scalar("n", n), _scalar("threads", threads)]
        streams = {
            "copy": [src, _buffer("dst", n, 1), *count],
            "read": [src, _buffer("sums", threads, 1), *count],
            "write": [_buffer("dst", n, 0), *count],
        }
        out += [
            _Probe(
                what, _spec("cpu", 0, "cdylib", library, f"wb_{what}", args), _STREAM_BYTES[what] * n, variant
            )
            for what, args in streams.items()
        ]
        for kind in ("f32", "f64"):
            args = [
                _buffer("out", threads, 0, "out", kind),
                _scalar("iters", iters),
                _scalar("threads", threads),
            ]
            flops = 2.0 * iters * kernels.CPU_LANES * threads
            spec = _spec("cpu", 0, "cdylib", library, f"wb_fma_{kind}", args)
            out.append(_Probe(kind, spec, flops, f"{kernels.CPU_LANES} chains × {variant}"))
    return out


def _wgpu_probes(device: dict[str, Any], cache_dir) -> list[_Probe]:
    index = int(device.get("index", 0))
    gpu_like = str(device.get("adapter_type", "")).upper() not in ("CPU", "")
    limit = int((device.get("limits") or {}).get("max-storage-buffer-binding-size") or 1 << 27)
    n = min(1 << (24 if gpu_like else 22), limit // 4)  # f32 elements per buffer
    n -= n % 1024
    out: list[_Probe] = []
    for stream in kernels.wgpu_streams(gpu_like):
        text = kernels.wgsl_stream(stream)
        path = _write_kernel(cache_dir, "wgpu", f"{stream.what}.wgsl", text)
        per = stream.width // 4  # f32 per access
        if stream.what == "write":
            args = [_buffer("dst", n, 0)]
        else:
            dst = 4 if stream.what == "read" else n
            args = [_buffer("src", n, 0, "in"), _buffer("dst", dst, 1)]
        grid = _grid(-(-n // per // 256)) if stream.per_access else (stream.groups_per_unit, 1, 1)
        spec = _spec("wgpu", index, "wgsl", path, "wb_stream", args, grid, (256, 1, 1))
        out.append(_Probe(stream.what, spec, _STREAM_BYTES[stream.what] * n, stream.label))
    iters = 1024 if gpu_like else 256
    kinds = ["f32"] + (["f64"] if "shader-f64" in (device.get("features") or []) else [])
    for kind in kinds:
        path = _write_kernel(cache_dir, "wgpu", f"fma_{kind}.wgsl", kernels.wgsl_fma(kind, iters))
        # Occupancy: a CPU adapter (llvmpipe) at two workgroup counts, a GPU at one that fills it.
        for groups in (4096,) if gpu_like else (64, 256):
            args = [_buffer("result", groups * 256, 0, "out", kind)]
            flops = 2.0 * iters * kernels.GPU_LANES * groups * 256
            spec = _spec("wgpu", index, "wgsl", path, "wb_fma", args, (groups, 1, 1), (256, 1, 1))
            out.append(_Probe(kind, spec, flops, f"{kernels.GPU_LANES} chains × {groups} groups of 256"))
    return out


def _cuda_probes(device: dict[str, Any], cache_dir) -> list[_Probe]:
    index = int(device.get("index", 0))
    sms = int(device.get("sm_count") or 132)
    n = 1 << 26  # f32 elements per buffer (256 MiB: far past any L2)
    path = _write_kernel(cache_dir, "cuda", "streams.ptx", kernels.cuda_ptx())
    out: list[_Probe] = []
    for stream in kernels.cuda_streams():
        count = n // (stream.width // 4)  # accesses of the stream's width
        dst = 4 if stream.what == "read" else n
        args = [_buffer("src", n, 0, "in"), _buffer("dst", dst, 1), _scalar("n", count)]
        grid = -(-count // 256) if stream.per_access else sms * stream.groups_per_unit
        spec = _spec("cuda", index, "ptx", path, kernels.cuda_entry(stream), args, (grid, 1, 1), (256, 1, 1))
        label = stream.label.replace("groups", "blocks per SM") if not stream.per_access else stream.label
        out.append(_Probe(stream.what, spec, _STREAM_BYTES[stream.what] * n, label))
    groups, iters = 8192, 4096
    for kind in ("f32", "f64"):
        fma = _write_kernel(cache_dir, "cuda", f"fma_{kind}.ptx", kernels.ptx_fma(kind))
        args = [_buffer("out", groups * 256, 0, "out", kind), _scalar("iters", iters)]
        flops = 2.0 * iters * kernels.GPU_LANES * groups * 256
        spec = _spec("cuda", index, "ptx", fma, "wb_fma", args, (groups, 1, 1), (256, 1, 1))
        out.append(_Probe(kind, spec, flops, f"{kernels.GPU_LANES} chains × {groups} blocks of 256"))
    return out


#: Runtime -> its ceiling kernels (a runtime without a row here has no ceilings: a table test).
PROBES = {"cpu": _cpu_probes, "wgpu": _wgpu_probes, "cuda": _cuda_probes}


def probes(device: dict[str, Any], cache_dir: str | Path | None = None) -> list[_Probe]:
    """The built-in kernels for one device, sized for its kind: every variant of each stream."""
    runtime = device.get("runtime")
    if runtime not in PROBES:
        raise CeilingsError(f"no ceiling kernels for runtime {runtime!r}")
    return PROBES[runtime](device, cache_dir)


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
    figures: dict[str, float | None] = {"copy": None, "read": None, "write": None, "f32": None, "f64": None}
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
        f"{kernel_text}: copy (bytes read + written), read and write streams (bytes read or written), each "
        f"the best of its variants (access width, accesses in flight, grid), and FMA loops (2 FLOP each); "
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
        copy_gbps=figures["copy"],
        read_gbps=figures["read"],
        write_gbps=figures["write"],
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
#: kernel reading at most this fraction of what it writes is held against the write ceiling.
READ_STREAM_WRITES = 1 / 16


def memory_roof(kernel: Any, values: Any) -> str:
    """Which measured memory ceiling bounds `kernel` at `values` (its evaluated lengths): "read"
    when its buffers written (out, inout) hold at most `READ_STREAM_WRITES` of the bytes of those
    read (in, inout), "write" the other way round, else "copy"."""
    from workbench.run.spec import dtype_of

    read = written = 0
    for arg in kernel.buffers:
        size = int(values.lengths.get(arg.name, 0)) * dtype_of(arg.type).itemsize
        if arg.direction in ("in", "inout"):
            read += size
        if arg.direction in ("out", "inout"):
            written += size
    if read and written <= READ_STREAM_WRITES * read:
        return "read"
    if written and read <= READ_STREAM_WRITES * written:
        return "write"
    return "copy"


def roof_gbps(ceilings: Ceilings | None, roof: str) -> float | None:
    """The measured ceiling of a memory roof ("copy", "read", "write"), or the copy ceiling when
    that one was not measured (an entry from before the read or write stream)."""
    if ceilings is None:
        return None
    return getattr(ceilings, f"{roof}_gbps", None) or ceilings.copy_gbps
