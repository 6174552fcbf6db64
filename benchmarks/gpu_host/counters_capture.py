"""The H200 capture behind issue 27's fixtures: the driver's occupancy answers and real `ncu --csv`.

    python3 counters_capture.py occupancy PTX OUT.json   # cuOccupancyMaxActiveBlocksPerMultiprocessor
    python3 counters_capture.py launch PTX               # saxpy + reduce_shared once each (for ncu)

PTX is `tests/build/data/occupancy_probe.ptx` (nvcc -ptx -arch=sm_90 of occupancy_probe.cu). It
needs only `libcuda` and `workbench/build/occupancy_driver.py` beside it or on the path (the GPU
host has no Rust and need not have the workbench installed); `counters_capture.sh` runs both modes,
`launch` under ncu with the workbench's metric set. The outputs are committed as
`tests/build/data/occupancy-h200.json` and `tests/run/data/ncu-*.csv`.
"""

from __future__ import annotations

import ctypes
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
try:
    from occupancy_driver import Driver, driver_answers  # the GPU host: the file copied beside this one
except ImportError:
    from workbench.build.occupancy_driver import Driver, driver_answers

FUNCTIONS = (
    ["saxpy", "reduce_shared"]
    + [f"pressure_{n}" for n in (4, 16, 28, 40, 56, 72, 96, 128, 168)]
    + [f"shared_{b}" for b in (2048, 12288, 40960, 49152)]
)
BLOCK_SIZES = [32, 64, 96, 128, 160, 192, 256, 320, 384, 512, 640, 768, 1024]
DYNAMIC_SHARED = [0, 1000, 4096, 16384, 40000, 65536, 100000, 160000, 232448]


def occupancy(ptx: Path, out: Path) -> None:
    data = driver_answers(ptx.read_bytes(), FUNCTIONS, BLOCK_SIZES, DYNAMIC_SHARED)
    data["source"] = (
        "cuOccupancyMaxActiveBlocksPerMultiprocessor on the PTX of tests/build/data/occupancy_probe.cu"
    )
    out.write_text(json.dumps(data, indent=0))
    print(f"{len(data['rows'])} occupancy answers from {data['device']}")


def launch(ptx: Path) -> None:
    driver = Driver(0)
    lib = driver.lib
    module = driver.load_ptx(ptx.read_bytes())
    n = 1 << 24
    host = (ctypes.c_float * n)()  # zeros: the counters of these two kernels do not depend on values
    x, y, partial = ctypes.c_uint64(), ctypes.c_uint64(), ctypes.c_uint64()
    for ptr in (x, y):
        driver._check(lib.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(4 * n)), "cuMemAlloc")
        driver._check(lib.cuMemcpyHtoD_v2(ptr, host, ctypes.c_size_t(4 * n)), "cuMemcpyHtoD")
    blocks = n // 512
    driver._check(lib.cuMemAlloc_v2(ctypes.byref(partial), ctypes.c_size_t(4 * blocks)), "cuMemAlloc")

    def run(name: str, grid: int, block: int, *args) -> None:
        holders = list(args)
        params = (ctypes.c_void_p * len(holders))(
            *[ctypes.cast(ctypes.byref(h), ctypes.c_void_p) for h in holders]
        )
        func = driver.function(module, name)
        driver._check(
            lib.cuLaunchKernel(func, grid, 1, 1, block, 1, 1, 0, None, params, None), f"launch {name}"
        )
        driver._check(lib.cuCtxSynchronize(), f"synchronize {name}")

    run("saxpy", n // 256, 256, ctypes.c_int(n), ctypes.c_float(2.0), x, y)
    run("reduce_shared", blocks, 256, x, partial, ctypes.c_int(n))
    for ptr in (x, y, partial):
        lib.cuMemFree_v2(ptr)
    driver.close()
    print("launched saxpy and reduce_shared")


if __name__ == "__main__":
    mode, ptx = sys.argv[1], Path(sys.argv[2])
    if mode == "occupancy":
        occupancy(ptx, Path(sys.argv[3]))
    else:
        launch(ptx)
