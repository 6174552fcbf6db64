"""Every result against the roof that binds it: the one rule, for the results table, the roofline,
`workbench run`'s table and `--json` (issue 36 item 4, issue 42 items 2 and 4).

A result's roofs are its device's measured ceilings (`ceilings.py`: copy, read, write or update
bandwidth, FMA f32), each figure falling back to the device's datasheet peak where nothing was measured
(`datasheet`: the published figures of known models, else what the runtime derives from the
device's clocks). The kernel's arithmetic intensity (FLOP per byte, from its manifest's metrics)
selects the roof: at or above the ridge (compute roof / memory roof) it is compute-bound and read
in GFLOP/s against the FMA roof, below it memory-bound and read in GB/s against the copy roof, the
read (write) roof for a kernel that mostly reads (writes), or the update roof for one that rewrites
its buffers in place (`ceilings.memory_roof`; `memory_ceiling`: the copy roof where that one was not
measured). A kernel with only one metric is held to that one roof.

A result more than `SUSPECT_ABOVE` over its ceiling is not "112 %": the ceiling is a measurement
of the best the device does, so beating it means the measurement is off (data served from a cache,
a ceiling measured low, a wrong bytes or flops metric); the reading says so (`suspect`).
"""

from __future__ import annotations

from typing import Any

from workbench.result_text import format_percent
from workbench.run.ceilings_kernels import STREAMS
from workbench.units import format_rate

MISSING: Any = object()

#: More than this fraction of a ceiling is flagged as a measurement problem.
SUSPECT_ABOVE = 1.03

#: Every roof a reading names, as its texts write it: the memory streams, then the FMA one.
ROOF_NAMES = {**{stream: stream for stream in STREAMS}, "compute": "FMA f32"}


def memory_ceiling(ceilings: Any, roof: str) -> tuple[str, float | None]:
    """(the memory roof that applies, its measured GB/s) for a kernel `memory_roof` holds against
    `roof`: that stream's measured ceiling, else the copy one ("copy", `copy_gbps`): an entry
    measured before the stream existed, or one whose variants all failed. (`roof`, None) without
    measured ceilings."""
    own = getattr(ceilings, f"{roof}_gbps", None) if roof in STREAMS else None
    if own:
        return roof, float(own)
    copy = getattr(ceilings, "copy_gbps", None)
    return "copy", float(copy) if copy else None


def datasheet(device: dict[str, Any] | None) -> tuple[float | None, float | None]:
    """(GB/s, GFLOP/s) the datasheet gives for `device` (`datasheets.py`: a known model's published
    figures, the CPU's estimate), else the peaks its runtime derived from its clocks (None where
    unknown: llvmpipe)."""
    from workbench.run.datasheets import datasheet_of

    device = device or {}
    sheet = datasheet_of(device) if device.get("runtime") or device.get("name") else None
    gbps = (sheet.memory_gbps if sheet else None) or device.get("peak_gbps") or None
    gflops = (sheet.fp32_gflops if sheet else None) or device.get("peak_gflops") or None
    return gbps, gflops


def binding(
    gbps: float | None, gflops: float | None, bandwidth: float | None, compute: float | None
) -> str | None:
    """ "memory" or "compute": the roof a kernel's arithmetic intensity selects (at or above the
    ridge: compute); a kernel with one metric, that metric's roof; both metrics but one roof known:
    None (which binds cannot be told), as when no roof is known."""
    if gbps and gflops and bandwidth and compute:
        return "compute" if gflops / gbps >= compute / bandwidth else "memory"
    if gbps and gflops:  # both metrics, one roof known: which binds cannot be told, so none is said
        return None
    if gbps is not None and bandwidth:
        return "memory"
    if gflops is not None and compute:
        return "compute"
    return None


def read_roof(
    throughput: dict[str, Any] | None, device: dict[str, Any] | None, ceilings: Any
) -> dict[str, Any] | None:
    """A result against the roof that binds it, or None when no roof is known for its device:

        {"bound": "memory" | "compute", "roof": a stream (`STREAMS`) | "compute", "unit": "GB/s" | "GFLOP/s",
         "achieved": float, "ceiling": float, "source": "measured" | "datasheet", "fraction": float,
         "datasheet": float | None, "fraction_of_datasheet": float | None, "suspect": bool}

    `ceilings`: the device's measured `Ceilings` (None: not measured)."""
    throughput = throughput or {}
    gbps, gflops = throughput.get("gbps"), throughput.get("gflops")
    sheet_gbps, sheet_gflops = datasheet(device)
    memory, measured_bw = memory_ceiling(ceilings, throughput.get("memory_roof") or "copy")
    measured_fl = getattr(ceilings, "fma_gflops_f32", None)
    bandwidth, compute = measured_bw or sheet_gbps, measured_fl or sheet_gflops
    bound = binding(gbps, gflops, bandwidth, compute)
    if bound is None:
        return None
    if bound == "memory":
        achieved, ceiling, sheet, source = (
            gbps,
            bandwidth,
            sheet_gbps,
            "measured" if measured_bw else "datasheet",
        )
        roof, unit = memory, "GB/s"
    else:
        achieved, ceiling, sheet, source = (
            gflops,
            compute,
            sheet_gflops,
            "measured" if measured_fl else "datasheet",
        )
        roof, unit = "compute", "GFLOP/s"
    fraction = float(achieved) / float(ceiling)
    return {
        "bound": bound, "roof": roof, "unit": unit, "achieved": float(achieved), "ceiling": float(ceiling),
        "source": source, "fraction": fraction, "datasheet": float(sheet) if sheet else None,
        "fraction_of_datasheet": float(achieved) / float(sheet) if sheet else None,
        "suspect": fraction > SUSPECT_ABOVE,
    }  # fmt: skip


def roof_fields(
    throughput: dict[str, Any], device: dict[str, Any] | None, ceilings: Any = MISSING
) -> dict[str, Any]:
    """A result's throughput keys from its reading: "roof" (`read_roof`, None without a roof) and
    "fraction_of_peak" (the fraction of that roof). `ceilings` default: those `workbench ceilings`
    measured and cached for the device (a small file read)."""
    if ceilings is MISSING:
        from workbench.run.ceilings import cached

        ceilings = cached(device) if device and device.get("runtime") else None
    reading = read_roof(throughput, device, ceilings)
    return {"roof": reading, "fraction_of_peak": reading["fraction"] if reading else None}


def roof_cell(reading: dict[str, Any] | None) -> str:
    """A table cell: "61.2 % copy", "61.2 % update", "41.0 % FMA f32", "⚠ 112 % copy" (suspect); ""
    without a roof."""
    if not reading:
        return ""
    text = f"{format_percent(reading['fraction'])} {ROOF_NAMES[reading['roof']]}"
    return f"⚠ {text}" if reading["suspect"] else text


def roof_lines(reading: dict[str, Any] | None) -> list[str]:
    """The reading in short lines (a hover box): "61.2 % of the measured copy roof",
    "memory-bound: 12.3 of 20.1 GB/s", "54.3 % of the datasheet's 4800 GB/s", and for a suspect one
    "⚠ more than 3 % above a ceiling: a measurement problem"."""
    if not reading:
        return []
    unit = reading["unit"]
    lines = [
        f"{format_percent(reading['fraction'])} of the {reading['source']} {ROOF_NAMES[reading['roof']]} roof",
        f"{reading['bound']}-bound: {format_rate(reading['achieved'])} of {format_rate(reading['ceiling'])} {unit}",
    ]
    if reading.get("fraction_of_datasheet") is not None and reading["source"] == "measured":
        lines.append(
            f"{format_percent(reading['fraction_of_datasheet'])} of the datasheet's {format_rate(reading['datasheet'])} {unit}"
        )
    if reading["suspect"]:
        lines.append(
            f"⚠ more than {format_percent(SUSPECT_ABOVE - 1)} above a ceiling: a measurement problem"
        )
    return lines


def roof_line(reading: dict[str, Any] | None) -> str:
    """One line naming the roof: "61.2 % of the measured copy roof (memory-bound: 12.3 of 20.1 GB/s;
    54.3 % of the datasheet's 4800 GB/s)"; a suspect one says it is a measurement problem."""
    if not reading:
        return ""
    head, bound, *rest = roof_lines(reading)
    details = [bound, *(line for line in rest if not line.startswith("⚠"))]
    text = f"{head} ({'; '.join(details)})"
    if reading["suspect"]:
        text = (
            f"⚠ {text}: more than {format_percent(SUSPECT_ABOVE - 1)} above a ceiling is a measurement problem "
            "(data served from a cache, a ceiling measured low, or a wrong bytes/flops metric), not a result"
        )
    return text


def rate_cell(throughput: dict[str, Any] | None, reading: dict[str, Any] | None) -> str:
    """The throughput a table shows: GB/s as a bare number, or "45.6 GFLOP/s" (its unit written)
    where compute binds; "" when unknown."""
    throughput = throughput or {}
    if reading and reading["bound"] == "compute":
        return f"{format_rate(reading['achieved'])} GFLOP/s"
    return format_rate(throughput.get("gbps"))
