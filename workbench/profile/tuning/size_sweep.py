"""Size sweeps (Qt-free): one size symbol over powers of two or a list, through the tuning runner
(`tune.SweepRunner`: each point built, run, verified, recorded), gathered into one curve per
backend × device (time and GB/s against the size) with the device's measured copy ceiling."""

from __future__ import annotations

import re
from typing import Any

from workbench import expr
from workbench.profile.tuning.sweep_space import Point, SweepResult, TuneError

#: Points in one sweep at most (2^0..2^64 is 65; a list longer than this is a typo).
MAX_POINTS = 64


def parse_size_range(text: str) -> tuple[str, list[int]]:
    """`n=2^16..2^24` (every power of two between), `n=1024,4096,65536` (a list) or `n=65536`.
    Each bound or item is an integer expression (`2^16`, `2**16`, `65536`)."""
    name, sep, spec = text.partition("=")
    name = name.strip()
    if not sep or not name or not spec.strip():
        raise TuneError(f"--size {text!r}: expected NAME=2^16..2^24 or NAME=V1,V2,...")
    spec = spec.strip().replace("^", "**")

    def number(part: str) -> int:
        try:
            value = expr.evaluate_int(part.strip(), {})
        except expr.ExprError as exc:
            raise TuneError(f"--size {text!r}: {exc}") from None
        if value < 1:
            raise TuneError(f"--size {text!r}: sizes must be at least 1")
        return value

    if ".." in spec:
        low_text, _, high_text = spec.partition("..")
        low, high = number(low_text), number(high_text)
        if low > high:
            raise TuneError(f"--size {text!r}: the range runs backwards ({low} > {high})")
        if low & (low - 1) or high & (high - 1):
            raise TuneError(f"--size {text!r}: a range's ends are powers of two (e.g. 2^16..2^24)")
        values = [1 << e for e in range(low.bit_length() - 1, high.bit_length())]
    else:
        values = list(dict.fromkeys(number(part) for part in re.split(r",", spec) if part.strip()))
    if len(values) > MAX_POINTS:
        raise TuneError(f"--size {text!r}: {len(values)} points; at most {MAX_POINTS}")
    return name, values


def size_points(kernel: Any, name: str, values: list[int], sizes: dict[str, int] | None = None,
                config: dict[str, Any] | None = None) -> list[Point]:  # fmt: skip
    if name not in kernel.sizes:
        raise TuneError(
            f"kernel {kernel.name!r} has no size {name!r}; its sizes: {', '.join(kernel.sizes) or 'none'}"
        )
    config = {**kernel.default_tunables(), **(config or {})}
    return [Point(dict(config), {**(sizes or {}), name: v}) for v in values]


def curves(result: SweepResult, name: str, ceilings: dict[str, float | None] | None = None) -> dict[str, Any]:
    """{"symbol", "curves": {"<backend>@<device>": {"points": [{n, median_s, gbps, verified,
    status, error}], "copy_gbps"}}} in size order."""
    out: dict[str, dict[str, Any]] = {}
    for entry in result.entries:
        key = f"{entry['backend']}@{entry['device']}"
        curve = out.setdefault(key, {"backend": entry["backend"], "device": entry["device"],
                                     "device_name": entry.get("device_name", ""), "points": [],
                                     "copy_gbps": (ceilings or {}).get(entry["device"])})  # fmt: skip
        timing = entry.get("timing") or {}
        curve["points"].append({
            name: entry["sizes"].get(name), "median_s": timing.get("median_s"), "gbps": entry.get("gbps"),
            "verified": entry.get("verified"), "status": entry["status"], "error": entry.get("error"),
            "run_id": entry.get("run_id"), "resumed": entry.get("resumed", False),
        })  # fmt: skip
    for curve in out.values():
        curve["points"].sort(key=lambda p: p[name] or 0)
    return {"symbol": name, "curves": out}


def copy_ceilings(
    device_specs: set[str], cache_dir: Any = None, measure: bool = False
) -> dict[str, float | None]:
    """The measured copy bandwidth (GB/s) of each device spec, from the ceilings cache (`measure`:
    measure the missing ones now, in a worker)."""
    from workbench.run import ceilings as ceilings_mod
    from workbench.run.devices import list_devices

    devices = [
        d
        for info in list_devices().values()
        for d in info.get("devices", [])
        if d.get("spec") in device_specs
    ]
    found: dict[str, float | None] = {str(d["spec"]): None for d in devices}
    if measure:
        for c in ceilings_mod.ceilings_for(devices, cache_dir=cache_dir):
            found[c.spec] = c.copy_gbps
        return found
    for device in devices:
        known = ceilings_mod.cached(device, cache_dir)
        found[str(device["spec"])] = known.copy_gbps if known is not None else None
    return found
