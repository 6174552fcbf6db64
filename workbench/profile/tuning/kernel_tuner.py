"""A tuning sweep as Kernel Tuner's cache JSON (schema `cache/1.0.0`), one file per backend × device.

Kernel Tuner's tools (its simulation mode, restarts, `kernel_tuner.util.read_cache`) read a cache of
one kernel on one device: `device_name`, `kernel_name`, `problem_size`, `tune_params_keys`,
`tune_params`, `objective` and `cache`, whose keys are the values of `tune_params_keys` joined by
commas and whose entries carry the parameters, `time` (ms) and `times` (ms). Here:

- `time` is the sweep's median (the median of the rounds' medians), `times` every timed sample of
  every round, in ms; `GB/s` the measured throughput.
- A configuration that failed is `"CompilationFailedConfig"` (its build failed) or
  `"RuntimeFailedConfig"` (it failed to run or its output was wrong); skipped and not-verified
  ones are left out: Kernel Tuner would read them as measured.
- `compile_time`, `verification_time`, `benchmark_time`, `strategy_time`, `framework_time` are
  required by the schema but not measured per configuration here: 0.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from workbench.errors import WorkbenchError
from workbench.profile.tuning.ranking import outcome

SCHEMA_VERSION = "1.0.0"
UNMEASURED = ("compile_time", "verification_time", "benchmark_time", "strategy_time", "framework_time")


class KernelTunerExportError(WorkbenchError):
    """The cache cannot be written (the message names the file)."""


def slot_of(entry: dict[str, Any]) -> str:
    return f"{entry['backend']}@{entry['device']}"


def cache(sweep: dict[str, Any], slot: str, tunables: list[str], timestamp: str) -> dict[str, Any]:
    """The Kernel Tuner cache of one backend × device of a sweep's JSON (`SweepResult.to_json()`)."""
    entries = [e for e in sweep["configs"] if slot_of(e) == slot]
    if not entries:
        raise KernelTunerExportError(f"the sweep has no configuration on {slot}")
    values: dict[str, list] = {name: [] for name in tunables}
    out: dict[str, Any] = {}
    for entry in entries:
        config = entry["config"]
        for name in tunables:
            if config[name] not in values[name]:
                values[name].append(config[name])
        kind = outcome(entry)
        timing = entry.get("timing") or {}
        if kind == "failed":
            build_failed = str(entry.get("error") or "").startswith("build failed")
            time: Any = "CompilationFailedConfig" if build_failed else "RuntimeFailedConfig"
            times: list[float] = []
        elif kind == "ok" and timing.get("median_s"):
            time = float(timing["median_s"]) * 1e3
            times = [float(s) * 1e3 for s in timing.get("samples_s") or []]
        else:
            continue
        record = {name: config[name] for name in tunables}
        record.update(time=time, times=times, **dict.fromkeys(UNMEASURED, 0.0), timestamp=timestamp)
        if entry.get("gbps") is not None:
            record["GB/s"] = float(entry["gbps"])
        out[",".join(str(config[name]) for name in tunables)] = record
    first = entries[0]
    return {
        "schema_version": SCHEMA_VERSION,
        "device_name": first.get("device_name") or first["device"],
        "kernel_name": sweep["kernel"],
        "problem_size": [int(v) for v in (first.get("sizes") or {}).values()],
        "tune_params_keys": list(tunables),
        "tune_params": {name: sorted(v) for name, v in values.items()},
        "objective": "time",
        "cache": out,
    }


def target_paths(path: str | Path, slots: list[str]) -> dict[str, Path]:
    """`path` for a sweep of one backend × device, else `<stem>.<backend>@<device><suffix>` each."""
    path = Path(path)
    if len(slots) == 1:
        return {slots[0]: path}
    suffix = path.suffix or ".json"
    stem = path.name[: -len(path.suffix)] if path.suffix else path.name
    return {slot: path.with_name(f"{stem}.{slot.replace(':', '-')}{suffix}") for slot in slots}


def export(sweep: dict[str, Any], path: str | Path, tunables: list[str], timestamp: str) -> list[Path]:
    """Write one Kernel Tuner cache per backend × device of the sweep; the files written."""
    from workbench.profile.sessions.store import is_sqlite_file

    slots = list(dict.fromkeys(slot_of(e) for e in sweep["configs"]))
    if not slots:
        raise KernelTunerExportError(f"{path}: the sweep ran no configuration, nothing to export")
    written = []
    for slot, target in target_paths(path, slots).items():
        if target.exists() and is_sqlite_file(target):
            raise KernelTunerExportError(f"{target} is a SQLite database: not overwritten")
        data = cache(sweep, slot, tunables, timestamp)
        tmp = None
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
            with os.fdopen(fd, "w") as handle:
                json.dump(data, handle, indent=1)
            os.replace(tmp, target)
        except OSError as exc:
            if tmp is not None and os.path.exists(tmp):
                os.unlink(tmp)  # no half-written file left beside the target
            raise KernelTunerExportError(f"cannot write {target}: {exc.strerror or exc}") from None
        written.append(target)
    return written
