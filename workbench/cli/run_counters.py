"""`workbench run --counters`: Nsight Compute counters after the run, printed and kept with it.

The run is done and timed as without the flag; then each result's launch runs once more under ncu
(`workbench.run.counters.nsight`). Each result gets one line: its counters, or why it has none.
The records ride on the report (`report.counters`), so `record_report` stores them with the runs
and `--json` adds them under "counters" (additive: the rest of the shape is unchanged).
"""

from __future__ import annotations

import sys
from typing import Any


def take(project: Any, report: Any, args: Any) -> None:
    from workbench.run.counters.nsight import collect

    def show(key: tuple[str, str], record: dict[str, Any]) -> None:
        if not args.json:
            print(f"counters {key[0]} @ {key[1]}: {record['message']}", file=sys.stderr, flush=True)

    if not args.json:
        print("taking counters under ncu (one launch per CUDA result) ...", file=sys.stderr, flush=True)
    report.counters = collect(report, project, on_record=show)


def as_json(report: Any) -> dict[str, Any]:
    """{"counters": [record + backend and device]} when the run took counters, else {}."""
    counters = getattr(report, "counters", None)
    if not counters:
        return {}
    return {"counters": [{**record, "backend": b, "device": d} for (b, d), record in counters.items()]}
