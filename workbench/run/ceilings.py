"""Measured device ceilings: copy and read bandwidth and FMA throughput, by the workbench's own
kernels.

A roofline needs a device's memory and compute roofs. Datasheet figures are often missing
(a CPU, llvmpipe) or out of reach of real code, so the workbench measures them: a copy kernel
(bytes read + written per second), a read stream (bytes read per second: the roof of a kernel that
reads far more than it writes, such as a reduction; `memory_roof` says which one bounds a kernel)
and an FMA loop (2 FLOP per fused multiply-add; f64 where the device has it), written in `ceilings_kernels.py` and run like a user's kernel — prepared, uploaded
and timed by the runtime's worker process (`pool.WorkerProcess`), so a crash cannot reach the caller:

- cpu: a std-only Rust cdylib built once with the host rustc (cached by source and rustc version),
  its threads spread over every core, through the cpu runtime (ctypes);
- wgpu: WGSL through the wgpu runtime, timed with timestamp queries where the adapter has them;
- cuda: PTX through the cuda runtime, timed with CUDA events.

The best sample of a short timing run gives each variant's figure, and the best variant the
ceiling (a ceiling is the best the device does, so no kernel should beat it): the cpu kernels on
every core and on half of them, the WGSL streams with 4-, 8- and 16-byte accesses and two
workgroup sizes, the WGSL FMA loop at two workgroup counts on a CPU adapter; `Ceilings.variants`
names the variant that won each figure. (The PTX kernels are one variant each.)
Results are cached per device + driver in `<user cache>/ceilings.json`; `refresh=True` measures
again.
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
FORMAT = 3  # 2: read_gbps; 3: the best of several variants (older entries are measured again)
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
    #: The kernel variant that gave each figure ({"copy": "16 B × 256", "f32": "2 threads"}).
    variants: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The shape `workbench ceilings --json` prints for one device."""
        return {
            "spec": self.spec,
            "name": self.name,
            "copy_gbps": self.copy_gbps,
            "read_gbps": self.read_gbps,
            "fma_gflops_f32": self.fma_gflops_f32,
            "fma_gflops_f64": self.fma_gflops_f64,
            "measured": self.measured,
            "method": self.method,
            "driver": self.driver,
            "notes": self.notes,
            "variants": dict(self.variants),
        }


# ---------------------------------------------------------------------------------------- caching


def driver_of(device: dict[str, Any]) -> str:
    """The driver part of a device's identity: a new driver may move the ceilings."""
    runtime = device.get("runtime")
    if runtime == "wgpu":
        return f"{device.get('backend_api', '')} {device.get('description', '')}".strip()
    if runtime == "cuda":
        return str(device.get("driver_version") or device.get("driver") or "")
    return f"{device.get('cores') or os.cpu_count()} threads"


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
    return ceilings


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

    what: str  # "copy", "read", "f32", "f64"
    spec: dict[str, Any]
    work: float  # bytes moved (copy) or FLOP (fma) per launch
    variant: str = ""  # which form of the kernel: "16 B × 256", "2 threads"; the best one counts


def _grid(groups: int) -> tuple[int, int, int]:
    """Workgroups as x × y with x ≤ 65535 (the WGSL copy kernel folds y back into its index)."""
    x = min(groups, 32768)
    return x, -(-groups // x), 1


def probes(device: dict[str, Any], cache_dir: str | Path | None = None) -> list[_Probe]:
    """The built-in kernels for one device, sized for its kind."""
    runtime, index = device.get("runtime"), int(device.get("index", 0))
    out: list[_Probe] = []
    if runtime == "cpu":
        library = cpu_library(cache_dir)
        cores = int(device.get("cores") or os.cpu_count() or 1)
        n = 1 << 23  # 32 MiB per buffer: past the caches of most CPUs
        iters = 1 << 16
        # Every core, and half of them (a memory stream may saturate before every core is busy).
        for threads in dict.fromkeys((cores, max(1, cores // 2))):
            variant = f"{threads} thread{'s' if threads != 1 else ''}"
            copy_args = [
                _buffer("src", n, 0, "in"),
                _buffer("dst", n, 1),
                _scalar("n", n),
                _scalar("threads", threads),
            ]
            out.append(
                _Probe("copy", _spec("cpu", 0, "cdylib", library, "wb_copy", copy_args), 8.0 * n, variant)
            )
            read_args = [_buffer("src", n, 0, "in"), _buffer("sums", threads, 1), _scalar("n", n),
                         _scalar("threads", threads)]  # fmt: skip
            out.append(
                _Probe("read", _spec("cpu", 0, "cdylib", library, "wb_read", read_args), 4.0 * n, variant)
            )
            for kind in ("f32", "f64"):
                args = [
                    _buffer("out", threads, 0, "out", kind),
                    _scalar("iters", iters),
                    _scalar("threads", threads),
                ]
                flops = 2.0 * iters * kernels.CPU_LANES * threads
                spec = _spec("cpu", 0, "cdylib", library, f"wb_fma_{kind}", args)
                out.append(_Probe(kind, spec, flops, variant))
        return out
    gpu_like = str(device.get("adapter_type", "")).upper() not in ("CPU", "")
    if runtime == "wgpu":
        limit = int((device.get("limits") or {}).get("max-storage-buffer-binding-size") or 1 << 27)
        n = min(1 << (24 if gpu_like else 22), limit // 4)
        n -= n % 1024
        for width, group in kernels.WGSL_STREAM_VARIANTS:
            variant, items = f"{width} B × {group}", n * 4 // width
            grid, threads = _grid(-(-items // group)), (group, 1, 1)
            name = f"copy-{width}x{group}.wgsl"
            path = _write_kernel(cache_dir, "wgpu", name, kernels.wgsl_copy(width, group))
            args = [_buffer("src", n, 0, "in"), _buffer("dst", n, 1)]
            out.append(
                _Probe(
                    "copy",
                    _spec("wgpu", index, "wgsl", path, "wb_copy", args, grid, threads),
                    8.0 * n,
                    variant,
                )
            )
            path = _write_kernel(
                cache_dir, "wgpu", f"read-{width}x{group}.wgsl", kernels.wgsl_read(width, group)
            )
            args = [_buffer("src", n, 0, "in"), _buffer("dst", 4, 1)]
            out.append(
                _Probe(
                    "read",
                    _spec("wgpu", index, "wgsl", path, "wb_read", args, grid, threads),
                    4.0 * n,
                    variant,
                )
            )
        iters = 1024 if gpu_like else 256
        kinds = ["f32"] + (["f64"] if "shader-f64" in (device.get("features") or []) else [])
        for kind in kinds:
            text = kernels.wgsl_fma(kind, iters)
            path = _write_kernel(cache_dir, "wgpu", f"fma_{kind}.wgsl", text)
            # Occupancy: a CPU adapter (llvmpipe) at two workgroup counts, a GPU at one that fills it.
            for groups in (4096,) if gpu_like else (64, 256):
                args = [_buffer("result", groups * 256, 0, "out", kind)]
                flops = 2.0 * iters * kernels.GPU_LANES * groups * 256
                spec = _spec("wgpu", index, "wgsl", path, "wb_fma", args, (groups, 1, 1), (256, 1, 1))
                out.append(_Probe(kind, spec, flops, f"{groups} workgroups × 256"))
        return out
    if runtime == "cuda":
        n = 1 << 26
        path = _write_kernel(cache_dir, "cuda", "copy.ptx", kernels.PTX_COPY)
        args = [_buffer("src", n, 0, "in"), _buffer("dst", n, 1), _scalar("n4", n // 4)]
        out.append(
            _Probe(
                "copy",
                _spec("cuda", index, "ptx", path, "wb_copy", args, (n // 4 // 256, 1, 1), (256, 1, 1)),
                8.0 * n,
            )
        )
        path = _write_kernel(cache_dir, "cuda", "read.ptx", kernels.PTX_READ)
        args = [_buffer("src", n, 0, "in"), _buffer("dst", 4, 1), _scalar("n4", n // 4)]
        out.append(
            _Probe(
                "read",
                _spec("cuda", index, "ptx", path, "wb_read", args, (n // 4 // 256, 1, 1), (256, 1, 1)),
                4.0 * n,
            )
        )
        groups, iters = 8192, 4096
        for kind in ("f32", "f64"):
            path = _write_kernel(cache_dir, "cuda", f"fma_{kind}.ptx", kernels.ptx_fma(kind))
            args = [_buffer("out", groups * 256, 0, "out", kind), _scalar("iters", iters)]
            flops = 2.0 * iters * kernels.GPU_LANES * groups * 256
            out.append(
                _Probe(
                    kind,
                    _spec("cuda", index, "ptx", path, "wb_fma", args, (groups, 1, 1), (256, 1, 1)),
                    flops,
                )
            )
        return out
    raise CeilingsError(f"no ceiling kernels for runtime {runtime!r}")


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
    figures: dict[str, float | None] = {"copy": None, "read": None, "f32": None, "f64": None}
    won: dict[str, str] = {}  # the variant that gave each figure
    failed: dict[str, str] = {}  # the first failure of each figure's kernels
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
                failed.setdefault(probe.what, f"{probe.what}: {str(exc).splitlines()[0]}")
                continue
            best = min(stats["samples_s"]) if stats.get("samples_s") else stats["median_s"]
            figure = probe.work / best / 1e9 if best > 0 else None
            if figure and figure > (figures[probe.what] or 0.0):  # the best variant is the ceiling
                figures[probe.what], won[probe.what] = figure, probe.variant
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
        f"{kernel_text}: copy (bytes read + written), read stream (bytes read) and FMA loop (2 FLOP each); "
        f"best of {TIMING['min_n']}+ samples of each variant, the best variant kept; "
        f"timer {', '.join(sorted(timers)) or 'none'}"
    )
    # A figure none of whose variants ran says why; one variant failing among others does not.
    notes = [text for what, text in failed.items() if figures[what] is None]
    return Ceilings(
        spec=str(device.get("spec") or runtime),
        name=str(device.get("name") or ""),
        copy_gbps=figures["copy"],
        read_gbps=figures["read"],
        fma_gflops_f32=figures["f32"],
        fma_gflops_f64=figures["f64"],
        measured=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        method=method,
        runtime=runtime,
        driver=driver_of(device),
        notes="; ".join(notes),
        variants={what: variant for what, variant in won.items() if variant},
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
#: the read ceiling (a reduction's partial sums), not the copy ceiling.
READ_STREAM_WRITES = 1 / 16


def memory_roof(kernel: Any, values: Any) -> str:
    """Which measured memory ceiling bounds `kernel` at `values` (its evaluated lengths): "read"
    when its buffers written (out, inout) hold at most `READ_STREAM_WRITES` of the bytes of those
    read (in, inout), else "copy"."""
    from workbench.run.spec import dtype_of

    read = written = 0
    for arg in kernel.buffers:
        size = int(values.lengths.get(arg.name, 0)) * dtype_of(arg.type).itemsize
        if arg.direction in ("in", "inout"):
            read += size
        if arg.direction in ("out", "inout"):
            written += size
    return "read" if read and written <= READ_STREAM_WRITES * read else "copy"
