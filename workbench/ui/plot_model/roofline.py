"""The roofline plot's model: each result's point (arithmetic intensity, achieved rate), the roofs
its device's measured ceilings (or datasheet peaks) give, and the ranges that show both (Qt-free)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from workbench.run.ceilings_roof import memory_ceiling
from workbench.ui.plot_model.marks import Marks, marks_of, result_order_key
from workbench.ui.plot_model.timing import series_name


@dataclass
class RoofPoint:
    """One backend × device on the roofline (base units)."""

    series: str
    backend: str
    device: str
    intensity: float  # FLOP per byte
    flops_per_s: float
    bytes_per_s: float
    roof_flops_per_s: float | None = None  # what the device's roofs allow at this intensity
    fraction_of_roof: float | None = None
    roof_source: str = ""  # "measured" (ceilings) or "datasheet"
    roof_memory: str = ""  # the memory roof it is held against: "copy", "read", "update" ...
    marks: Marks = field(default_factory=Marks)


@dataclass
class Roof:
    """A device's memory and compute roofs (from its measured ceilings). `memory` names the memory
    roof: "copy" (bytes read + written), or the stream `memory_roof` holds the kernel against where
    it was measured ("read", "write", "update": `ceilings_roof.memory_ceiling`)."""

    device: str
    name: str
    bytes_per_s: float | None
    flops_per_s: float | None
    source: str = "measured"
    memory: str = "copy"

    @property
    def key(self) -> str:
        """One curve per device and memory roof: "cuda:0", "cuda:0 read"."""
        return self.device if self.memory == "copy" else f"{self.device} {self.memory}"

    def attainable(self, intensity: float) -> float | None:
        limits = [v for v in (self.bytes_per_s and self.bytes_per_s * intensity, self.flops_per_s) if v]
        return min(limits) if limits else None

    @property
    def ridge(self) -> float | None:
        """The intensity where the memory roof meets the compute roof."""
        if self.bytes_per_s and self.flops_per_s:
            return self.flops_per_s / self.bytes_per_s
        return None


def roof_of(device: dict[str, Any], ceilings: Any, memory: str = "copy") -> Roof | None:
    """The roofs of a result's device: its measured ceilings, else its datasheet peaks. `memory`
    (a stream: "read", "update" ...) takes that stream's measured ceiling where there is one, else
    the copy one (`ceilings_roof.memory_ceiling`, the rule the results table reads by too)."""
    spec = str(device.get("spec") or device.get("runtime") or "?")
    if ceilings is not None and (ceilings.copy_gbps or ceilings.fma_gflops_f32):
        memory, bandwidth = memory_ceiling(ceilings, memory)
        return Roof(
            spec,
            str(device.get("name") or ""),
            bandwidth * 1e9 if bandwidth else None,
            ceilings.fma_gflops_f32 * 1e9 if ceilings.fma_gflops_f32 else None,
            "measured",
            memory,
        )
    if device.get("peak_gbps") or device.get("peak_gflops"):
        bw, fl = device.get("peak_gbps"), device.get("peak_gflops")
        return Roof(spec, str(device.get("name") or ""), bw and bw * 1e9, fl and fl * 1e9, "datasheet")
    return None


def roofline_model(report: Any, ceilings_of) -> tuple[list[RoofPoint], list[Roof]]:
    """Points (from each result's throughput) and the roofs of their devices.

    `ceilings_of(device dict) -> Ceilings | None` looks the measured ceilings up."""
    points: list[RoofPoint] = []
    roofs: dict[str, Roof] = {}
    reference = getattr(report, "reference", "") or ""
    for result in sorted(
        getattr(report, "results", None) or (), key=lambda r: result_order_key(r, reference)
    ):
        throughput = result.throughput or {}
        gflops, gbps = throughput.get("gflops"), throughput.get("gbps")
        if result.status != "ok" or not gflops or not gbps:
            continue
        device = result.device or {}
        memory = throughput.get("memory_roof") or "copy"
        slot = (str(device.get("spec")), memory)
        roof = roofs.get(slot)
        if roof is None:
            roof = roof_of(device, ceilings_of(device), memory)
            if roof is not None:
                roofs[slot] = roof
        point = RoofPoint(
            series_name(result),
            result.backend,
            str(device.get("spec") or ""),
            intensity=gflops / gbps,
            flops_per_s=gflops * 1e9,
            bytes_per_s=gbps * 1e9,
            marks=marks_of(result),
        )
        if roof is not None:
            point.roof_source = roof.source
            point.roof_memory = roof.memory
            point.roof_flops_per_s = roof.attainable(point.intensity)
            if point.roof_flops_per_s:
                point.fraction_of_roof = point.flops_per_s / point.roof_flops_per_s
        points.append(point)
    unique = {roof.key: roof for roof in roofs.values()}  # a stream's roof not measured is the copy roof
    return points, list(unique.values())


def roofline_ranges(
    points: list[RoofPoint], roofs: list[Roof]
) -> tuple[tuple[float, float], tuple[float, float]]:
    """(x, y) ranges in base units holding every point, each roof's ridge and a margin."""
    xs = [p.intensity for p in points] + [r.ridge for r in roofs if r.ridge]
    if not xs:
        return (0.01, 100.0), (1e6, 1e12)
    x_lo, x_hi = min(xs) / 4, max(xs) * 4
    ys = [p.flops_per_s for p in points] + [r.flops_per_s for r in roofs if r.flops_per_s]
    ys += [r.attainable(x_lo) for r in roofs if r.attainable(x_lo)]
    y_lo, y_hi = min(ys) / 3, max(ys) * 3
    return (x_lo, x_hi), (y_lo, y_hi)
