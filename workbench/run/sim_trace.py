"""cpu-sim's traces: "see inside one invocation". A kernel body calls `ctx.trace("name", value)`
(the kernel API; a no-op on every GPU target), and a cpu-sim run asked to trace one invocation —
a workgroup and a local id, `workbench run --backend cpu-sim --trace GX,GY:LX,LY` or the
window's Trace control — gets back the values that invocation traced, in order, each with its
Rust line and the barrier interval it was in (`RunResult.trace`). Qt-free: the CLI and the
window read the same records and the same words.

A record, as the simulator reports it (`gpu_kernel::host::report`) with its file made relative
to the project here:

    {"name": "sum", "type": "f32", "value": 1.5, "epoch": 2, "file": "src/lib.rs", "line": 40, "column": 9}

`value` is a JSON number, `true` / `false`, or a string for a float that is not finite ("NaN",
"inf", "-inf"). `epoch`: how many barriers the workgroup had passed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.errors import WorkbenchError

#: What `--trace` takes, for messages.
FORMAT = "GX[,GY[,GZ]]:LX[,LY[,LZ]] (workgroup : local id, e.g. 3:17 or 1,2:0,5)"


class TraceSpecError(WorkbenchError):
    """A `--trace` value (or the window's trace field) that names no invocation."""


@dataclass(frozen=True)
class TracePoint:
    """The invocation to trace: its workgroup and its local id (x, y, z)."""

    group: tuple[int, int, int]
    local: tuple[int, int, int]

    def to_json(self) -> dict[str, list[int]]:
        return {"group": list(self.group), "local": list(self.local)}

    def text(self) -> str:
        return f"workgroup ({', '.join(map(str, self.group))}) local id ({', '.join(map(str, self.local))})"


def _coords(text: str, what: str, whole: str) -> tuple[int, int, int]:
    parts = [p.strip() for p in text.split(",")]
    if not 1 <= len(parts) <= 3 or any(not p for p in parts):
        raise TraceSpecError(f"--trace {whole!r}: the {what} needs 1 to 3 numbers; expected {FORMAT}")
    values = []
    for part in parts:
        try:
            value = int(part, 0)
        except ValueError:
            raise TraceSpecError(
                f"--trace {whole!r}: {part!r} in the {what} is not a whole number; expected {FORMAT}"
            ) from None
        if not 0 <= value < 1 << 32:
            raise TraceSpecError(f"--trace {whole!r}: {value} in the {what} is not between 0 and 2^32 - 1")
        values.append(value)
    values += [0] * (3 - len(values))
    return values[0], values[1], values[2]


def parse_point(text: str) -> TracePoint:
    """`GX[,GY[,GZ]]:LX[,LY[,LZ]]` → the invocation; a clear `TraceSpecError` otherwise."""
    whole = text.strip()
    group, sep, local = whole.partition(":")
    if not sep:
        raise TraceSpecError(
            f"--trace {whole!r}: no ':' between the workgroup and the local id; expected {FORMAT}"
        )
    return TracePoint(_coords(group, "workgroup", whole), _coords(local, "local id", whole))


def outside(
    point: TracePoint, grid: list[int] | tuple[int, ...], threads: list[int] | tuple[int, ...]
) -> str:
    """Why `point` is not an invocation of the launch ("" when it is one)."""
    grid3 = [*map(int, grid), 1, 1, 1][:3]
    threads3 = [*map(int, threads), 1, 1, 1][:3]
    if any(g >= n for g, n in zip(point.group, grid3, strict=True)):
        return f"{point.text()} is outside the launch: the grid is {tuple(grid3)} workgroups"
    if any(t >= n for t, n in zip(point.local, threads3, strict=True)):
        return f"{point.text()} is outside the launch: workgroups are {tuple(threads3)} invocations"
    return ""


def located(
    records: list[dict[str, Any]], dropped: int, point: TracePoint, crate_dir: Path, project_root: Path
) -> dict[str, Any]:
    """The trace as a run result keeps it (`RunResult.trace`): the invocation, its records with
    files relative to the project, and how many records did not fit."""
    from workbench.run.sim_findings import locate

    fixed = locate({"findings": [{"accesses": records}]}, crate_dir, project_root)
    return {**point.to_json(), "records": fixed["findings"][0]["accesses"], "dropped": int(dropped)}


def value_text(record: dict[str, Any]) -> str:
    """A record's value as the CLI and the window show it."""
    value = record.get("value")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        from workbench.result_text import ELEMENT_DIGITS

        return f"{value:.{ELEMENT_DIGITS}g}"
    return str(value)


def record_line(record: dict[str, Any]) -> str:
    """`src/lib.rs:40:9: sum = 1.5 (f32, after 2 barriers)`."""
    where = f"{record.get('file')}:{record.get('line')}:{record.get('column')}"
    epoch = int(record.get("epoch") or 0)
    after = "before any barrier" if epoch == 0 else f"after {epoch} barrier{'s' if epoch != 1 else ''}"
    return f"{where}: {record.get('name')} = {value_text(record)} ({record.get('type')}, {after})"


def lines(trace: dict[str, Any]) -> list[str]:
    """The trace under a heading naming the invocation, one line a record."""
    point = TracePoint(tuple(trace.get("group") or (0, 0, 0)), tuple(trace.get("local") or (0, 0, 0)))  # type: ignore[arg-type]
    records = trace.get("records") or []
    head = f"cpu-sim trace of {point.text()}: {len(records)} value{'s' if len(records) != 1 else ''}"
    if not records:
        head += (
            " (the invocation traced nothing: no ctx.trace call reached, or not an invocation of the launch)"
        )
    out = [head, *(f"  {record_line(r)}" for r in records)]
    if trace.get("dropped"):
        out.append(f"  (+{trace['dropped']} more not kept)")
    return out
