"""`ncu --csv` output → one record per profiled kernel launch.

ncu's CSV (its "details" page with `--metrics`) has one line per (launch, metric): ID, Process ID,
Process Name, Host Name, Kernel Name, Context, Stream, Block Size, Grid Size, Device, CC, Section
Name, Metric Name, Metric Unit, Metric Value. Values are printed with thousands separators
("61,952"), in ncu's human units by default (ns / usecond / msecond, hz / Khz / Mhz / Ghz, %,
inst) or base units with `--print-units base`; "n/a" is no value. Lines that are not CSV rows
(`==PROF==`, `==WARNING==`, the program's own output) are skipped: with `--log-file` ncu writes its
notices into the same file. Tested on real H200 output (tests/run/data/ncu-h200*.csv).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from typing import Any

from workbench.run.counters.metrics import BY_NAME, TOP_STALLS, stall_reason

_SCALE = {
    "ns": 1e-9, "nsecond": 1e-9, "us": 1e-6, "usecond": 1e-6, "ms": 1e-3, "msecond": 1e-3, "s": 1.0, "second": 1.0,
    "hz": 1.0, "khz": 1e3, "mhz": 1e6, "ghz": 1e9, "cycle/nsecond": 1e9, "cycle/usecond": 1e6, "cycle/second": 1.0,
}  # fmt: skip


class NcuParseError(ValueError):
    pass


@dataclass
class KernelCounters:
    """The metric set of one profiled launch, in base units (seconds, hertz, percent)."""

    kernel: str
    block: str = ""
    grid: str = ""
    device: str = ""
    cc: str = ""
    values: dict[str, float | None] = field(default_factory=dict)  # Metric.key -> value
    stalls: list[tuple[str, float]] = field(default_factory=list)  # (reason, cycles per issue), largest first
    raw: dict[str, tuple[str, str]] = field(default_factory=dict)  # ncu name -> (value text, unit)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel, "block": self.block, "grid": self.grid, "device": self.device, "cc": self.cc,
            "metrics": dict(self.values), "stalls": [[r, v] for r, v in self.stalls],
        }  # fmt: skip


def number(text: str, unit: str = "") -> float | None:
    """'61,952' 'ns' → 6.1952e-05; '%' stays percent; 'n/a' → None."""
    text = text.strip().replace(",", "")
    if not text or text.lower() == "n/a":
        return None
    try:
        value = float(text)
    except ValueError:
        raise NcuParseError(f"not a number: {text!r}") from None
    return value * _SCALE.get(unit.strip().lower(), 1.0)


def csv_lines(text: str) -> list[str]:
    """The CSV part of ncu's output: from its header line on, quoted lines only."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID",')), None)
    if start is None:
        return []
    return [line for line in lines[start:] if line.startswith('"')]


def parse(text: str, top_stalls: int = TOP_STALLS) -> list[KernelCounters]:
    """Every profiled launch in `text`, in ncu's order (by ID)."""
    lines = csv_lines(text)
    if not lines:
        return []
    reader = csv.DictReader(io.StringIO("\n".join(lines)))
    missing = {"ID", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value"} - set(
        reader.fieldnames or []
    )
    if missing:
        raise NcuParseError(f"ncu CSV without the column(s) {', '.join(sorted(missing))}")
    launches: dict[str, KernelCounters] = {}
    stalls: dict[str, dict[str, float]] = {}
    for row in reader:
        launch = launches.get(row["ID"])
        if launch is None:
            launch = launches[row["ID"]] = KernelCounters(
                kernel=row["Kernel Name"], block=row.get("Block Size", ""), grid=row.get("Grid Size", ""),
                device=row.get("Device", ""), cc=row.get("CC", ""),
            )  # fmt: skip
            stalls[row["ID"]] = {}
        name, unit, value = row["Metric Name"], row["Metric Unit"], row["Metric Value"]
        launch.raw[name] = (value, unit)
        reason = stall_reason(name)
        if reason is not None:
            parsed = number(value)
            if parsed is not None:
                stalls[row["ID"]][reason] = parsed
            continue
        metric = BY_NAME.get(name)
        if metric is not None:
            launch.values[metric.key] = number(value, unit)
    for key, launch in launches.items():
        # "selected" is the cycle a warp issues, not a stall: it is left out of the top reasons.
        ranked = sorted(
            ((r, v) for r, v in stalls[key].items() if r != "selected" and v > 0), key=lambda rv: -rv[1]
        )
        launch.stalls = ranked[:top_stalls]
    return list(launches.values())
