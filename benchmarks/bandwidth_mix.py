"""Memory bandwidth by access mix and access width on a CUDA device: why saxpy stops short of the copy ceiling.

    python benchmarks/bandwidth_mix.py [--n 268435456] [--out FILE.json]

`workbench ceilings` measures the copy ceiling with 16-byte loads and stores (1 read : 1 write).
saxpy moves 2 reads : 1 write with 4-byte accesses. This benchmark (CUDA C through pycuda and nvcc,
independent of the workbench's runtimes) times, on the same buffers:
copy, saxpy in place (y = a x + y) and triad out of place (z = a x + y), each with 4-byte (scalar)
and 16-byte (float4) accesses; median of 30 launches after a warm-up, CUDA events. GB/s counts the
bytes each kernel must move (copy 8 n, saxpy and triad 12 n). Needs a CUDA device, pycuda and nvcc.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.bench_output import OUT_HELP, machine, write_json  # noqa: E402

SOURCE = r"""
extern "C" {
__global__ void copy_scalar(const float *src, float *dst, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dst[i] = src[i];
}
__global__ void copy_vec4(const float4 *src, float4 *dst, unsigned int n4) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) dst[i] = src[i];
}
__global__ void saxpy_scalar(float a, const float *x, float *y, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
__global__ void saxpy_vec4(float a, const float4 *x, float4 *y, unsigned int n4) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 u = x[i], v = y[i];
        y[i] = make_float4(a * u.x + v.x, a * u.y + v.y, a * u.z + v.z, a * u.w + v.w);
    }
}
__global__ void triad_scalar(float a, const float *x, const float *y, float *z, unsigned int n) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) z[i] = a * x[i] + y[i];
}
__global__ void triad_vec4(float a, const float4 *x, const float4 *y, float4 *z, unsigned int n4) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 u = x[i], v = y[i];
        z[i] = make_float4(a * u.x + v.x, a * u.y + v.y, a * u.z + v.z, a * u.w + v.w);
    }
}
}
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1 << 28, help="floats per buffer (a multiple of 4)")
    parser.add_argument("--launches", type=int, default=30)
    parser.add_argument("--out", default=None, help=OUT_HELP)
    args = parser.parse_args(argv)
    import numpy as np
    import pycuda.autoinit  # noqa: F401  (a context on device 0)
    import pycuda.driver as cuda
    from pycuda.compiler import SourceModule

    n = args.n - args.n % 4
    module = SourceModule(SOURCE, no_extern_c=True, options=["-O3"])
    x, y, z = (cuda.mem_alloc(n * 4) for _ in range(3))
    for buf in (x, y, z):
        cuda.memset_d32(buf, 0x3F800000, n)  # 1.0f
    a = np.float32(0.5)
    block = 256
    u32 = np.uint32

    def grid(count: int) -> tuple[int, int]:
        return ((count + block - 1) // block, 1)

    cases = {
        "copy, 4-byte": ("copy_scalar", (x, y, u32(n)), n, 8),
        "copy, 16-byte": ("copy_vec4", (x, y, u32(n // 4)), n // 4, 8),
        "saxpy in place, 4-byte": ("saxpy_scalar", (a, x, y, u32(n)), n, 12),
        "saxpy in place, 16-byte": ("saxpy_vec4", (a, x, y, u32(n // 4)), n // 4, 12),
        "triad, 4-byte": ("triad_scalar", (a, x, y, z, u32(n)), n, 12),
        "triad, 16-byte": ("triad_vec4", (a, x, y, z, u32(n // 4)), n // 4, 12),
    }
    start, end = cuda.Event(), cuda.Event()
    rows = {}
    for label, (name, params, threads, bytes_per_element) in cases.items():
        function = module.get_function(name)
        times = []
        for i in range(args.launches + 5):
            start.record()
            function(*params, block=(block, 1, 1), grid=grid(threads))
            end.record()
            end.synchronize()
            if i >= 5:  # warm-up
                times.append(start.time_till(end) * 1e-3)
        median = statistics.median(times)
        rows[label] = {"median_s": median, "gbps": bytes_per_element * n / median / 1e9}
    device = cuda.Context.get_device()
    print(f"{device.name()}, n = {n} floats per buffer")
    print(f"{'kernel':28s} {'median':>11} {'GB/s':>8}")
    for label, row in rows.items():
        print(f"{label:28s} {row['median_s'] * 1e6:9.1f} µs {row['gbps']:8.0f}")
    result = {
        "benchmark": "bandwidth_mix",
        "device": device.name(),
        "n": n,
        "launches": args.launches,
        "machine": machine(),
        "rows": rows,
    }
    out = write_json(args.out, "bandwidth_mix.json", result)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
