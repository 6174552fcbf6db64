"""An independent timing loop: one kernel artifact launched and timed with nothing from `workbench`.

    python benchmarks/bare_loop.py LAUNCH.json [--min-n 50] [--min-time 1.0] [--launches N]

LAUNCH.json names the build folder the workbench exported (its `build.json` is read here with
`json`), the kernel, the device, the arguments in launch order with their values or lengths, and
the launch geometry:

    {"backend": "nvptx", "folder": ".../nvptx", "kernel": "saxpy", "device": "H200",
     "args": [{"name": "n", "kind": "scalar", "type": "u32", "value": 1048576},
              {"name": "x", "kind": "buffer", "type": "f32", "length": 1048576, "binding": 1}, ...],
     "threads": [256, 1, 1], "grid": [4096, 1, 1], "params_binding": 0, "seed": 0}

Everything else is done here, with the vendor libraries directly: ctypes + `time.perf_counter`
for the cpu cdylib, pycuda with CUDA events for PTX, wgpu with timestamp queries for WGSL/SPIR-V
(scalars in a uniform buffer at `params_binding`, a 1-D grid past the device's per-dimension limit
folded into 2-D). Each sample is ONE launch, timed on its own; warm-up launches come first. The
result is one JSON object on stdout: median, sample count, timer, and `workbench_imported`
(must be false: that is the point of this file).

With `--launches N` it only launches N times, untimed (for Nsight Compute to profile).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

DTYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "u32": np.uint32, "i64": np.int64,
          "u64": np.uint64}  # fmt: skip
CTYPES = {"f32": ctypes.c_float, "f64": ctypes.c_double, "i32": ctypes.c_int32, "u32": ctypes.c_uint32,
          "i64": ctypes.c_int64, "u64": ctypes.c_uint64}  # fmt: skip
STRUCT = {"f32": "f", "f64": "d", "i32": "i", "u32": "I", "i64": "q", "u64": "Q"}


def load_build(folder: Path, kernel: str) -> tuple[Path, str, str]:
    """(artifact path, entry, kind) of `kernel` from the folder's build.json, read as plain JSON."""
    build = json.loads((folder / "build.json").read_text())
    entry = build["kernels"][kernel]
    return folder / entry["artifact"], entry["entry"], entry["kind"]


def make_inputs(launch: dict[str, Any]) -> dict[str, np.ndarray]:
    """Random buffers of the right dtypes and lengths (values do not change a timing here: the
    examples' work does not depend on their data, except bitonic's swaps, which are cheap)."""
    rng = np.random.default_rng(launch.get("seed", 0))
    out = {}
    for arg in launch["args"]:
        if arg["kind"] != "buffer":
            continue
        dtype = np.dtype(DTYPES[arg["type"]])
        if dtype.kind == "f":
            out[arg["name"]] = rng.uniform(-1, 1, int(arg["length"])).astype(dtype)
        else:
            out[arg["name"]] = rng.integers(0, 1_000_000, int(arg["length"])).astype(dtype)
    return out


# ----------------------------------------------------------------------------------- cpu


class _KernelApiLaunch(ctypes.Structure):
    """`gpu_kernel::host::Launch` (version 2): grid, threads, buffer lengths, no checks, no report,
    no trace."""

    _fields_ = [
        ("grid", ctypes.c_uint32 * 3), ("threads", ctypes.c_uint32 * 3), ("lens", ctypes.POINTER(ctypes.c_uint64)),
        ("nbufs", ctypes.c_uint32), ("checks", ctypes.c_uint32), ("workers", ctypes.c_uint32),
        ("report", ctypes.c_void_p), ("report_cap", ctypes.c_uint64), ("report_len", ctypes.c_uint64),
        ("trace", ctypes.c_uint32), ("trace_group", ctypes.c_uint32 * 3), ("trace_local", ctypes.c_uint32 * 3),
    ]  # fmt: skip

    def __init__(self, launch: dict[str, Any]):
        lengths = [int(a["length"]) for a in launch["args"] if a["kind"] == "buffer"]
        self.lens_array = (ctypes.c_uint64 * max(1, len(lengths)))(*lengths)
        dims = [[int(v) for v in launch[key]] + [1] * (3 - len(launch[key])) for key in ("grid", "threads")]
        super().__init__((ctypes.c_uint32 * 3)(*dims[0]), (ctypes.c_uint32 * 3)(*dims[1]), self.lens_array,
                         len(lengths), 0, 0, None, 0, 0)  # fmt: skip


class CpuLoop:
    method = "perf_counter"

    def __init__(self, launch: dict[str, Any], artifact: Path, entry: str):
        self.lib = ctypes.CDLL(str(artifact))
        self.fn = getattr(self.lib, entry)
        self.fn.restype = None
        self.arrays = make_inputs(launch)
        types, values = [], []
        try:
            ctypes.c_uint32.in_dll(self.lib, "gpu_kernel_host_abi")
        except ValueError:
            pass  # a plain entry: the manifest's arguments only
        else:
            # Built on the kernel API (resources/crates/gpu_kernel): its `Launch` record first. The
            # layout is written out here again on purpose: this loop imports nothing of the workbench.
            self.record = _KernelApiLaunch(launch)
            types.append(ctypes.c_void_p)
            values.append(ctypes.addressof(self.record))
        for arg in launch["args"]:
            if arg["kind"] == "buffer":
                types.append(ctypes.c_void_p)
                values.append(self.arrays[arg["name"]].ctypes.data)
            else:
                types.append(CTYPES[arg["type"]])
                values.append(arg["value"])
        self.fn.argtypes = types
        self.values = values

    def launch(self) -> float:
        started = time.perf_counter()
        self.fn(*self.values)
        return time.perf_counter() - started

    def close(self) -> None:
        pass


# ----------------------------------------------------------------------------------- cuda


class CudaLoop:
    method = "cuda-events"

    def __init__(self, launch: dict[str, Any], artifact: Path, entry: str, device_index: int = 0):
        import pycuda.driver as cuda

        cuda.init()
        self.cuda = cuda
        self.context = cuda.Device(device_index).make_context()
        ptx = artifact.read_bytes()
        self.module = cuda.module_from_buffer(ptx if ptx.endswith(b"\0") else ptx + b"\0")
        self.fn = self.module.get_function(entry)
        formats, self.values, self.allocations = [], [], []
        for name, array in make_inputs(launch).items():
            allocation = cuda.mem_alloc(max(array.nbytes, 1))
            cuda.memcpy_htod(allocation, array)
            self.allocations.append((name, allocation))
        by_name = dict(self.allocations)
        for arg in launch["args"]:
            if arg["kind"] == "buffer":
                formats.append("P")
                self.values.append(int(by_name[arg["name"]]))
            else:
                formats.append(STRUCT[arg["type"]])
                self.values.append(float(arg["value"]) if arg["type"][0] == "f" else int(arg["value"]))
        self.fn.prepare("".join(formats))
        self.block = tuple(int(t) for t in launch["threads"])
        self.grid = tuple(int(g) for g in launch["grid"])
        self.start, self.end = cuda.Event(), cuda.Event()
        cuda.Context.synchronize()

    def launch(self) -> float:
        self.start.record()
        self.fn.prepared_call(self.grid, self.block, *self.values)
        self.end.record()
        self.end.synchronize()
        return self.start.time_till(self.end) * 1e-3

    def close(self) -> None:
        for _, allocation in self.allocations:
            allocation.free()
        self.context.pop()
        self.context.detach()


# ----------------------------------------------------------------------------------- wgpu


def fold(grid: list[int], limit: int) -> tuple[int, int, int]:
    """A 1-D grid past `limit` as [x, y, 1] with x*y >= g (the kernels index through num_workgroups)."""
    g, rest = int(grid[0]), [int(v) for v in grid[1:]] + [1] * (3 - len(grid))
    if g <= limit:
        return (g, rest[0], rest[1])
    y = -(-g // limit)
    return (-(-g // y), y, 1)


class WgpuLoop:
    method = "wgpu-timestamps"

    def __init__(self, launch: dict[str, Any], artifact: Path, entry: str, kind: str):
        import wgpu

        self.wgpu = wgpu
        adapters = wgpu.gpu.enumerate_adapters_sync()
        wanted = (launch.get("device") or "").lower()
        adapter = next((a for a in adapters if wanted and wanted in a.info.get("device", "").lower()), None)
        if adapter is None:
            adapter = adapters[0]
        self.adapter_name = adapter.info.get("device", "")
        features = [f for f in ("timestamp-query",) if f in adapter.features]
        if not features:
            raise SystemExit(f"{self.adapter_name} has no timestamp-query feature")
        limits = adapter.limits
        self.device = adapter.request_device_sync(
            required_features=features,
            required_limits={
                key: limits[key]
                for key in ("max-storage-buffer-binding-size", "max-buffer-size",
                            "max-compute-workgroup-storage-size", "max-compute-invocations-per-workgroup")
            },
        )  # fmt: skip
        code: Any = artifact.read_bytes() if kind == "spirv" else artifact.read_text()
        module = self.device.create_shader_module(code=code)
        self.pipeline = self.device.create_compute_pipeline(
            layout="auto", compute={"module": module, "entry_point": entry}
        )
        usage = wgpu.BufferUsage
        entries, arrays = [], make_inputs(launch)
        for arg in launch["args"]:
            if arg["kind"] == "buffer":
                data = arrays[arg["name"]]
                # A multiple of 16 bytes: a shader may view the buffer as vec4s (at its `views`).
                buffer = self.device.create_buffer(
                    size=-(-max(data.nbytes, 16) // 16) * 16,
                    usage=usage.STORAGE | usage.COPY_DST | usage.COPY_SRC,
                )
                self.device.queue.write_buffer(buffer, 0, data)
                for binding in [arg["binding"], *arg.get("views", [])]:
                    entries.append({"binding": binding, "resource": {"buffer": buffer}})
        scalars = b"".join(
            np.array(a["value"], dtype=DTYPES[a["type"]]).tobytes()
            for a in launch["args"]
            if a["kind"] == "scalar"
        )
        if scalars:
            scalars += b"\0" * (-len(scalars) % 16)
            params = self.device.create_buffer_with_data(data=scalars, usage=usage.UNIFORM)
            entries.append({"binding": launch["params_binding"], "resource": {"buffer": params}})
        self.bind_group = self.device.create_bind_group(
            layout=self.pipeline.get_bind_group_layout(0), entries=entries
        )
        self.grid = fold(launch["grid"], limits["max-compute-workgroups-per-dimension"])
        self.queries = self.device.create_query_set(type="timestamp", count=2)
        self.resolve = self.device.create_buffer(size=16, usage=usage.QUERY_RESOLVE | usage.COPY_SRC)
        self.period_ns = 1.0
        try:  # wgpu-py has no public call for the timestamp period; 1 ns on the drivers seen
            from wgpu.backends.wgpu_native._api import libf

            self.period_ns = float(libf.wgpuQueueGetTimestampPeriod(self.device.queue._internal)) or 1.0
        except Exception:
            pass

    def launch(self) -> float:
        encoder = self.device.create_command_encoder()
        compute = encoder.begin_compute_pass(
            timestamp_writes={"query_set": self.queries, "beginning_of_pass_write_index": 0,
                              "end_of_pass_write_index": 1}
        )  # fmt: skip
        compute.set_pipeline(self.pipeline)
        compute.set_bind_group(0, self.bind_group)
        compute.dispatch_workgroups(*self.grid)
        compute.end()
        encoder.resolve_query_set(self.queries, 0, 2, self.resolve, 0)
        self.device.queue.submit([encoder.finish()])
        ticks = np.frombuffer(self.device.queue.read_buffer(self.resolve), dtype=np.uint64)
        return max(int(ticks[1]) - int(ticks[0]), 0) * self.period_ns * 1e-9

    def close(self) -> None:
        pass


def open_loop(launch: dict[str, Any]):
    artifact, entry, kind = load_build(Path(launch["folder"]), launch["kernel"])
    if kind == "cdylib":
        return CpuLoop(launch, artifact, entry)
    if kind == "ptx":
        return CudaLoop(launch, artifact, entry, int(launch.get("device_index", 0)))
    return WgpuLoop(launch, artifact, entry, kind)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("launch", help="LAUNCH.json (see this file's docstring)")
    parser.add_argument("--min-n", type=int, default=50)
    parser.add_argument("--min-time", type=float, default=1.0)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--launches", type=int, default=0, help="launch N times untimed and exit")
    args = parser.parse_args(argv)
    launch = json.loads(Path(args.launch).read_text())
    loop = open_loop(launch)
    try:
        if args.launches:
            for _ in range(args.launches):
                loop.launch()
            print(json.dumps({"launches": args.launches, "workbench_imported": "workbench" in sys.modules}))
            return 0
        for _ in range(args.warmup):
            loop.launch()
        samples: list[float] = []
        started = time.perf_counter()
        while len(samples) < args.min_n or time.perf_counter() - started < args.min_time:
            samples.append(loop.launch())
    finally:
        loop.close()
    print(json.dumps({
        "median_s": statistics.median(samples), "n": len(samples), "min_s": min(samples),
        "method": loop.method, "workbench_imported": "workbench" in sys.modules,
    }))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
