"""Theoretical occupancy of a CUDA build: resident blocks and warps per SM, and what limits them.

Computed with no GPU from what `ptxas -v` reported (registers, static shared memory; see
`resources.py`), the launch's threads per block and the target's compute capability, by the rules
of NVIDIA's occupancy calculator (`cuda_occupancy.h`, CUDA Programming Guide "Technical
Specifications per Compute Capability"):

- warps: ceil(threads / 32) per block against the SM's resident warps;
- registers: allocated per warp, registers × 32 rounded up to the allocation unit (256), in each of
  the SM's sub-partitions (registers per SM / 4, whole warps each); a block whose warps, rounded up
  to the sub-partitions, need more than the registers per block does not launch;
- shared memory: static + dynamic + the driver's reserved bytes per block (1 KiB from sm_80 on),
  rounded up to the allocation unit, against the SM's largest shared-memory configuration (the
  driver's choice when the function states no carveout preference);
- blocks: the SM's resident-block limit.

Checked against the H200 driver's `cuOccupancyMaxActiveBlocksPerMultiprocessor`
(`tests/build/data/occupancy-h200.json`, `tests/gpu/test_occupancy_driver.py`). Qt-free.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from workbench.records import BuildResult

WARP = 32


@dataclass(frozen=True)
class SmLimits:
    """One compute capability's per-SM limits (CUDA Programming Guide, occupancy calculator)."""

    arch: str
    max_warps: int  # resident warps per SM
    max_blocks: int  # resident blocks per SM
    shared_per_sm: int  # bytes, the largest configuration
    shared_per_block: int  # bytes a block may opt in to (static + dynamic)
    shared_unit: int  # allocation unit, bytes
    shared_reserved: int = 0  # bytes the driver keeps per block
    registers: int = 65536  # per SM
    registers_per_block: int = 65536
    register_unit: int = 256  # per warp
    max_registers_per_thread: int = 255
    sub_partitions: int = 4
    max_threads_per_block: int = 1024


KIB = 1024
TABLE: dict[str, SmLimits] = {
    row.arch: row
    for row in (
        SmLimits("sm_50", 64, 32, 64 * KIB, 48 * KIB, 256),
        SmLimits("sm_52", 64, 32, 96 * KIB, 48 * KIB, 256),
        SmLimits("sm_53", 64, 32, 64 * KIB, 48 * KIB, 256, registers_per_block=32768),
        SmLimits("sm_60", 64, 32, 64 * KIB, 48 * KIB, 256, sub_partitions=2),
        SmLimits("sm_61", 64, 32, 96 * KIB, 48 * KIB, 256),
        SmLimits("sm_62", 64, 32, 64 * KIB, 48 * KIB, 256, registers_per_block=32768),
        SmLimits("sm_70", 64, 32, 96 * KIB, 96 * KIB, 256),
        SmLimits("sm_72", 64, 32, 96 * KIB, 96 * KIB, 256),
        SmLimits("sm_75", 32, 16, 64 * KIB, 64 * KIB, 256),
        SmLimits("sm_80", 64, 32, 164 * KIB, 163 * KIB, 128, KIB),
        SmLimits("sm_86", 48, 16, 100 * KIB, 99 * KIB, 128, KIB),
        SmLimits("sm_87", 48, 16, 164 * KIB, 163 * KIB, 128, KIB),
        SmLimits("sm_89", 48, 24, 100 * KIB, 99 * KIB, 128, KIB),
        SmLimits("sm_90", 64, 32, 228 * KIB, 227 * KIB, 128, KIB),
        SmLimits("sm_100", 64, 32, 228 * KIB, 227 * KIB, 128, KIB),
    )
}

#: The limits in the order the text names them.
LIMIT_NAMES = ("warps", "registers", "shared memory", "blocks")


@dataclass
class Occupancy:
    arch: str
    threads: int
    registers: int
    shared_bytes: int
    dynamic_shared_bytes: int = 0
    blocks_per_sm: int = 0
    warps_per_sm: int = 0
    max_warps: int = 0
    limits: dict[str, int] = field(default_factory=dict)  # blocks per SM each resource allows
    limited_by: list[str] = field(default_factory=list)
    problem: str | None = None  # why a block cannot launch at all

    @property
    def fraction(self) -> float:
        return self.warps_per_sm / self.max_warps if self.max_warps else 0.0

    def text(self) -> str:
        """'64 of 64 warps per SM (100%); limited by: registers at 1024 threads'."""
        if self.problem:
            return f"no block fits: {self.problem}"
        pct = round(100 * self.fraction)
        return (
            f"{self.warps_per_sm} of {self.max_warps} warps per SM ({pct}%); "
            f"limited by: {', '.join(self.limited_by)} at {self.threads} threads"
        )

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "fraction": round(self.fraction, 4), "text": self.text()}


def limits_for(arch: str) -> SmLimits | None:
    """The table's row for `sm_XX` (`sm_90a` reads as `sm_90`); None when the table has none."""
    base = arch.strip().lower().rstrip("af")
    return TABLE.get(base)


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


def occupancy(
    arch: str, threads: int, registers: int, shared_bytes: int = 0, dynamic_shared_bytes: int = 0
) -> Occupancy:
    """Resident blocks and warps per SM for one kernel launch shape on `arch`."""
    sm = limits_for(arch)
    if sm is None:
        known = ", ".join(TABLE)
        raise ValueError(f"no occupancy table for {arch!r} (the table has {known})")
    out = Occupancy(arch, threads, registers, shared_bytes, dynamic_shared_bytes, max_warps=sm.max_warps)
    if threads < 1 or threads > sm.max_threads_per_block:
        out.problem = f"{threads} threads per block (1 to {sm.max_threads_per_block} on {sm.arch})"
        return out
    if registers > sm.max_registers_per_thread:
        out.problem = f"{registers} registers per thread (at most {sm.max_registers_per_thread})"
        return out
    warps = -(-threads // WARP)
    limits = {"warps": sm.max_warps // warps, "blocks": sm.max_blocks}

    per_warp = _round_up(max(registers, 0) * WARP, sm.register_unit)
    if per_warp:
        assumed = per_warp * _round_up(warps, sm.sub_partitions)  # the hardware's per-block check
        if max(assumed, per_warp * warps) > sm.registers_per_block:
            out.problem = (
                f"{threads} threads × {registers} registers need {max(assumed, per_warp * warps)} registers "
                f"per block (at most {sm.registers_per_block})"
            )
            return out
        warps_by_registers = (sm.registers // sm.sub_partitions // per_warp) * sm.sub_partitions
        limits["registers"] = warps_by_registers // warps

    shared = shared_bytes + dynamic_shared_bytes
    if shared > sm.shared_per_block:
        out.problem = (
            f"{shared} bytes of shared memory per block (at most {sm.shared_per_block} on {sm.arch})"
        )
        return out
    allocated = _round_up(shared + sm.shared_reserved, sm.shared_unit)
    if allocated:
        limits["shared memory"] = sm.shared_per_sm // allocated

    blocks = min(limits.values())
    out.limits = {name: limits[name] for name in LIMIT_NAMES if name in limits}
    out.blocks_per_sm = blocks
    out.warps_per_sm = blocks * warps
    out.limited_by = [name for name in LIMIT_NAMES if limits.get(name) == blocks]
    return out


def build_occupancy(
    kernels: list[Any], backend: str, resources: dict[str, dict[str, Any]], target: str | None,
    tunables: dict[str, int | float] | None = None, sizes: dict[str, int] | None = None,
) -> dict[str, Occupancy | str]:  # fmt: skip
    """Each kernel's occupancy in a PTX build, at its launch's threads per block for `sizes` and
    `tunables` (the defaults where not given): {kernel: Occupancy, or the reason there is none}."""
    out: dict[str, Occupancy | str] = {}
    for kernel in kernels:
        res = resources.get(kernel.name) or {}
        if res.get("registers") is None:
            continue  # no ptxas report (not a PTX build, or no ptxas here)
        try:
            symbols = kernel.symbols(sizes, tunables)
            threads, _grid = kernel.geometry(symbols, backend)
            block = int(threads[0]) * int(threads[1]) * int(threads[2])
            out[kernel.name] = occupancy(
                target or "sm_90", block, int(res["registers"]), int(res.get("shared_bytes") or 0)
            )
        except (ValueError, KeyError, ArithmeticError) as exc:
            out[kernel.name] = str(exc)
    return out


def result_occupancy(
    project: Any, result: Any, tunables: dict[str, int | float] | None = None, target: str | None = None
) -> dict[str, Any]:
    """{kernel: Occupancy.to_dict() or {"error": why}} of one `BuildResult`, at the target and
    tunables its build.json records (or `target`: a device's sm_XX; `tunables`: a block size
    chosen since); {} for a build with no ptxas report or no artifact folder."""
    from workbench.build.artifacts import read_build
    from workbench.errors import WorkbenchError

    if not result.artifact_dir or not any(r.get("registers") is not None for r in result.resources.values()):
        return {}
    try:
        info = read_build(result.artifact_dir)
    except (OSError, ValueError, WorkbenchError):
        return {}
    chosen = {**(info.get("tunables") or {}), **(tunables or {})}
    found = build_occupancy(
        list(project.manifest.kernels),
        result.backend,
        result.resources,
        target or info.get("target"),
        chosen or None,
    )
    return {name: (o.to_dict() if isinstance(o, Occupancy) else {"error": o}) for name, o in found.items()}


def occupancy_texts(project: Any, result: Any) -> tuple[list[str], list[str]]:
    """A build's occupancy in words at the tunables it was built with (the build panel's artifacts
    cell and its tooltip): (["48/64 warps"] for its first kernel, or ["no block fits"]; every
    kernel's line); nothing for a build with no ptxas report, and for a result that is not a
    `BuildResult` (an event's dict form)."""
    found = (
        result_occupancy(project, result) if project is not None and isinstance(result, BuildResult) else {}
    )
    lines = [f"{name}: occupancy {o.get('text') or o.get('error')}" for name, o in found.items()]
    first = next(iter(found.values()), None)
    if not first:
        return [], lines
    return [
        f"{first['warps_per_sm']}/{first['max_warps']} warps" if "text" in first else "no block fits"
    ], lines


def arch_of(compute_capability: str | None) -> str | None:
    """'9.0' (a device's compute capability) -> 'sm_90'."""
    if not compute_capability:
        return None
    digits = str(compute_capability).replace(".", "")
    return f"sm_{digits}" if digits.isdigit() else None


def device_rows(device: dict[str, Any], project: Any = None, results: Any = ()) -> list[tuple[str, str]]:
    """A CUDA device's occupancy context: its SM limits from the table, and each of `results`' (the
    last builds) kernels at this device's compute capability. [] for a device with none."""
    arch = arch_of(device.get("compute_capability"))
    sm = limits_for(arch) if arch else None
    if sm is None:
        return [("Occupancy", f"no occupancy table for {arch}")] if arch else []
    rows = [(
        f"Occupancy limits ({sm.arch})",
        f"{sm.max_warps} warps · {sm.max_blocks} blocks · {sm.registers} registers · "
        f"{sm.shared_per_sm // KIB} KiB shared per SM",
    )]  # fmt: skip
    for result in results if project is not None else ():
        for name, occ in result_occupancy(project, result, target=sm.arch).items():
            rows.append((f"Occupancy: {result.backend} {name}", occ.get("text") or occ.get("error", "")))
    return rows
