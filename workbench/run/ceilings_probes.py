"""The ceiling kernels of each runtime as launch specs (`probes`): every variant of the memory
streams (copy, read, write, update: `ceilings_kernels.STREAMS`) and the FMA loops, sized for the
device, with the work one launch does; the cpu kernels' library built once per rustc (under a lock,
in a private folder, then renamed). What they measure and how the best variant becomes a ceiling is
`ceilings.py`.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench import childproc
from workbench.build.cache import cache_root
from workbench.build.scratch import STAGING_PREFIX, OwnedDir, locked, sweep_quietly
from workbench.errors import WorkbenchError
from workbench.run import ceilings_kernels as kernels

#: The cpu ceiling kernels' build (and the wait for another process building them).
BUILD_TIMEOUT_S = 300.0


class CeilingsError(WorkbenchError):
    """A ceiling could not be measured (no compiler for the cpu kernel, a runtime failure ...)."""


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

    what: str  # a memory stream (`kernels.STREAMS`), "f32" or "f64"
    spec: dict[str, Any]
    work: float  # bytes moved (a stream) or FLOP (fma) per launch
    variant: str = ""  # which variant of `what` (a stream's access width, unroll, grid)


def _grid(groups: int) -> tuple[int, int, int]:
    """Workgroups as x × y with x ≤ 65535 (the WGSL kernels fold y back into their index)."""
    x = min(groups, 32768)
    return x, -(-groups // x), 1


#: Bytes per element of each stream: copy and update read and write one (update the same one, in
#: place), read and write one each.
_STREAM_BYTES = {"copy": 8.0, "read": 4.0, "write": 4.0, "update": 8.0}

#: Elements of the update stream's one buffer per element of a copy buffer: the update touches as
#: many bytes as the copy's source and destination together, so it is as far past the caches (on
#: an EPYC with a 32 MiB L3, passes over a copy-sized 32 MiB buffer measured 35-58 GB/s, over
#: 64 MiB 17-34 GB/s, alternated on the same host).
UPDATE_SPAN = 2


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
            "update": [_buffer("dst", n * UPDATE_SPAN, 0), _scalar("n", n * UPDATE_SPAN), count[1]],
        }
        for what, args in streams.items():
            elements = n * UPDATE_SPAN if what == "update" else n
            spec = _spec("cpu", 0, "cdylib", library, f"wb_{what}", args)
            out.append(_Probe(what, spec, _STREAM_BYTES[what] * elements, variant))
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
    # f32 elements per buffer. A GPU's as the CUDA probe's (256 MiB): at 64 MiB a read took ~22 µs on
    # an H100 and the dispatch's fixed ramp cost 8 % of it (the WGSL reduction over 1 GiB read
    # 3,087 GB/s against that probe's 2,856; the CUDA probe's 256 MiB read 3,096).
    n = min(1 << (26 if gpu_like else 22), limit // 4)
    n -= n % 1024
    out: list[_Probe] = []
    for stream in kernels.wgpu_streams(gpu_like):
        text = kernels.wgsl_stream(stream)
        path = _write_kernel(cache_dir, "wgpu", f"{stream.what}.wgsl", text)
        per = stream.width // 4  # f32 per access
        elements = n
        if stream.what == "update":  # `dst` alone, the copy's footprint where the limit allows
            elements = min(n * UPDATE_SPAN, limit // 4 // 1024 * 1024)
            args = [_buffer("dst", elements, 0)]
        elif stream.what == "write":  # `dst` alone (`kernels.wgsl_stream`)
            args = [_buffer("dst", n, 0)]
        else:
            dst = 4 if stream.what == "read" else n
            args = [_buffer("src", n, 0, "in"), _buffer("dst", dst, 1)]
        grid = _grid(-(-elements // per // 256)) if stream.per_access else (stream.groups_per_unit, 1, 1)
        spec = _spec("wgpu", index, "wgsl", path, "wb_stream", args, grid, (256, 1, 1))
        out.append(_Probe(stream.what, spec, _STREAM_BYTES[stream.what] * elements, stream.label))
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
        elements = n * UPDATE_SPAN if stream.what == "update" else n
        count = elements // (stream.width // 4)  # accesses of the stream's width
        # Every entry takes (src, dst, n); the write and update streams never touch `src` (a few
        # bytes, not 256 MiB more to upload), the read stream's `dst` is one sum.
        src = 4 if stream.what in ("write", "update") else n
        dst = 4 if stream.what == "read" else elements
        args = [_buffer("src", src, 0, "in"), _buffer("dst", dst, 1), _scalar("n", count)]
        grid = -(-count // 256) if stream.per_access else sms * stream.groups_per_unit
        spec = _spec("cuda", index, "ptx", path, kernels.cuda_entry(stream), args, (grid, 1, 1), (256, 1, 1))
        label = stream.label.replace("groups", "blocks per SM") if not stream.per_access else stream.label
        out.append(_Probe(stream.what, spec, _STREAM_BYTES[stream.what] * elements, label))
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
