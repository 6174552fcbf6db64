"""What two recorded runs must share to be compared, and what they differ in (Qt-free).

A timing compares with another only when it measured the same thing: the same kernel of the same
project at the same sizes and tunables, on the same backend and device, built with the same flags,
timed the same way (timing method, L2 policy). Sources, build keys and toolchains may differ: that
is what a comparison is for. `differences(a, b)` lists what breaks the rule as text such as
"sizes n: 1048576 → 1000000"; `aa_key(run)` is what A/A history groups on (all of the above and the
build itself: the same code measured again).

Both take full records as `SessionStore.records()` returns them.
"""

from __future__ import annotations

import json
from typing import Any

#: (label, how to read it from a record): the fields that must match.
MUST_MATCH = (
    ("project", lambda r: r.get("project")),
    ("kernel", lambda r: r.get("kernel")),
    ("sizes", lambda r: r.get("sizes")),
    ("tunables", lambda r: r.get("tunables")),
    ("backend", lambda r: r.get("backend")),
    ("device", lambda r: r.get("device")),
    ("device name", lambda r: r.get("device_name") or None),
    ("build flags", lambda r: r.get("flags")),
    ("timing method", lambda r: r.get("timing_method")),
    ("L2 policy", lambda r: (r.get("timing_conditions") or {}).get("l2")),
)


def _text(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)


def _describe(label: str, a: Any, b: Any) -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        keys = sorted(set(a) | set(b))
        parts = [f"{k}: {_text(a.get(k))} → {_text(b.get(k))}" for k in keys if a.get(k) != b.get(k)]
        return f"{label} " + ", ".join(parts)
    return f"{label}: {_text(a)} → {_text(b)}"


def differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """What keeps run `b` from being compared with run `a` (empty: comparable)."""
    out = []
    for label, read in MUST_MATCH:
        left, right = read(a), read(b)
        if left is not None and right is not None and left != right:
            out.append(_describe(label, left, right))
        elif (left is None) != (right is None) and label != "device name":
            out.append(_describe(label, left, right))  # recorded on one side only
    return out


def series_of(run: dict[str, Any]) -> dict[str, Any] | None:
    """The run's `--repeat` series `{"id", "index", "of"}`, or None (also for a malformed one, as
    an imported bundle may hold)."""
    series = run.get("series")
    if isinstance(series, dict) and isinstance(series.get("id"), str):
        return series
    return None


def aa_key(run: dict[str, Any]) -> str:
    """Runs with equal keys measured the same build of the same thing: A/A repetitions."""
    fields = {label: read(run) for label, read in MUST_MATCH}
    fields.update(build_key=run.get("build_key"), source_hash=run.get("source_hash"))
    return json.dumps(fields, sort_keys=True, default=str)
