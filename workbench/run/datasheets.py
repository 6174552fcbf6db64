"""Datasheet peaks beside the measured ceilings (issue 42): what the vendor says a device can do,
for known GPU models, and an estimate for the machine's CPU from what it reports (Qt-free).

A measured ceiling is what the workbench's own kernels reached (`ceilings.py`); a datasheet peak
is what no kernel reaches (HBM refresh, clock limits). Both are shown: % of the measured ceiling
says how close a kernel is to what this device does, % of the datasheet how close to the vendor's
figure. Figures are NVIDIA's product datasheets (SXM forms unless the name says PCIe/NVL).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Datasheet:
    memory_gbps: float | None
    fp32_gflops: float | None
    fp64_gflops: float | None
    source: str

    def to_json(self) -> dict:
        return {"memory_gbps": self.memory_gbps, "fp32_gflops": self.fp32_gflops,
                "fp64_gflops": self.fp64_gflops, "source": self.source}  # fmt: skip


#: (pattern on the device name, memory GB/s, FP32 GFLOP/s, FP64 GFLOP/s), most specific first.
GPU_MODELS: tuple[tuple[str, float, float, float], ...] = (
    (r"H200 NVL", 4800, 60000, 30000),
    (r"H200", 4800, 67000, 34000),
    (r"H100 NVL", 3900, 60000, 30000),
    (r"H100 PCIe", 2000, 51000, 26000),
    (r"H100", 3350, 67000, 34000),
    (r"A100.*80GB.*PCIe|A100 80GB PCIe", 1935, 19500, 9700),
    (r"A100.*80GB", 2039, 19500, 9700),
    (r"A100", 1555, 19500, 9700),
    (r"V100", 900, 15700, 7800),
    (r"RTX 4090", 1008, 82600, 1290),
    (r"\bT4\b", 320, 8100, 254),
)


def gpu_datasheet(name: str) -> Datasheet | None:
    """The datasheet of a GPU by its reported name (`NVIDIA H200`), or None when unknown."""
    for pattern, memory, fp32, fp64 in GPU_MODELS:
        if re.search(pattern, name or "", re.I):
            return Datasheet(memory, fp32, fp64, f"NVIDIA datasheet ({pattern.split('|')[0]})")
    return None


def cpu_estimate(threads: int | None = None, cpuinfo: str | None = None) -> Datasheet | None:
    """The CPU's FMA peak from what it reports: threads × clock × f32 lanes of its widest vector
    unit (AVX-512: 16, AVX2: 8, else 4) × 2 FMA pipes × 2 FLOP; f64 half of it. None when the clock
    is not reported. Memory bandwidth is not estimated (it depends on the DIMMs)."""
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
                cpuinfo = f.read()
        except OSError:
            return None
    mhz = [float(m) for m in re.findall(r"^cpu MHz\s*:\s*([0-9.]+)", cpuinfo, re.M)]
    found = re.search(r"^flags\s*:\s*(.*)$", cpuinfo, re.M)
    flags = set(found.group(1).split()) if found else set()
    if not mhz:
        return None
    lanes = 16 if "avx512f" in flags else 8 if "avx2" in flags else 4
    threads = threads or os.cpu_count() or 1
    fp32 = threads * max(mhz) / 1000 * lanes * 2 * 2
    return Datasheet(
        None, fp32, fp32 / 2,
        f"estimate: {threads} threads × {max(mhz) / 1000:.2f} GHz × {lanes} f32 lanes × 2 FMA pipes × 2 FLOP",
    )  # fmt: skip


def datasheet_of(device: dict) -> Datasheet | None:
    """The datasheet figures of a probed device (`list_devices()`), where known."""
    if device.get("runtime") == "cpu":
        return cpu_estimate(int(device.get("cores") or 0) or None)
    return gpu_datasheet(str(device.get("name") or ""))
