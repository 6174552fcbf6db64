"""Turn a finished run into sessions-database rows: `record_report(store, report, ...)`.

This is the one entry point the command line (`workbench run`) and the window (the sessions panel,
on the bridge's `runFinished`) call. It reads only what a `RunReport` (or its `to_json()` dict, as a
GPU host prints it) carries: each `RunResult`'s device, check, timing with raw samples, throughput
and provenance, plus the resources the build recorded in `build.json` beside the artifact.
"""

from __future__ import annotations

import calendar
import contextlib
import errno
import json
import os
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from workbench.profile.sessions.store import SessionStore, SessionStoreError
from workbench.records import timing_quartiles


def record_report(
    store: SessionStore,
    report: Any,
    *,
    project: Any = None,
    snapshot: tuple[str, dict[str, str]] | None = None,
    keep_outputs: bool = False,
    ceilings: dict[str, Any] | None = None,
    host: dict[str, Any] | None = None,
    series: dict[str, Any] | None = None,
) -> list[int]:
    """Record every result of one run in one transaction; returns the new run ids (in the
    report's order). `record_report_rows` takes the same arguments and also says which
    (backend, device) each id is.

    `report` is a `RunReport` or its JSON dict. `snapshot` is `(hash, {path: text})` of the kernel
    sources (see `sources.snapshot`); with only `project` given it is read now. `keep_outputs` saves
    each backend's output arrays as a compressed `.npz` beside the database. `ceilings` (the
    device's measured limits, when known) is stored with every row that has none of its own.
    `host` is what the host was doing meanwhile (`run.host_load.HostLoad`; default: the report's
    `host_conditions`) and `series` `{"id", "index", "of"}` places a `workbench run --repeat`
    repetition in its series; both go into every row's detail.
    """
    rows = record_report_rows(
        store, report, project=project, snapshot=snapshot, keep_outputs=keep_outputs,
        ceilings=ceilings, host=host, series=series,
    )  # fmt: skip
    return [run_id for _key, run_id in rows]


def row_key(result: Any) -> tuple[str, str]:
    """(backend, device) of a result's row (a `RunResult` or its dict): the device spec, else the
    provenance's device; what `record_report_rows` names each id by."""
    if not isinstance(result, dict):
        result = {"backend": result.backend, "device": result.device, "provenance": result.provenance}
    device = result.get("device") or {}
    prov = result.get("provenance") or {}
    return str(result.get("backend", "")), str(device.get("spec") or prov.get("device") or "")


def record_report_rows(
    store: SessionStore,
    report: Any,
    *,
    project: Any = None,
    snapshot: tuple[str, dict[str, str]] | None = None,
    keep_outputs: bool = False,
    ceilings: dict[str, Any] | None = None,
    host: dict[str, Any] | None = None,
    series: dict[str, Any] | None = None,
) -> list[tuple[tuple[str, str], int]]:
    """`record_report`, each new id with the (backend, device) of its row (`row_key`), so that
    what is learnt about a result later (the window's counters) finds its run."""
    data = report_dict(report)
    if snapshot is None and project is not None:
        from workbench.profile.sessions.sources import snapshot as take_snapshot

        snapshot = take_snapshot(project)
    invocation = uuid.uuid4().hex
    rows = [
        result_row(data, result, invocation, snapshot[0] if snapshot else None, ceilings)
        for result in data["results"]
    ]
    counters = {(c.get("backend"), c.get("device")): c for c in data.get("counters") or []}
    for row in rows:
        row["counters"] = counters.get((row["backend"], row["device"]))
        row["detail"]["host"] = host if host is not None else data.get("host_conditions")
        row["detail"]["series"] = series if series is not None else data.get("series")
    if not rows:
        return []
    written: list[Path] = []
    if keep_outputs:
        written = _save_outputs(store, report, rows)
    try:
        ids = store.insert_runs(rows, snapshot)
    except BaseException:
        for path in written:  # the rows were not recorded: do not leave their arrays behind
            path.unlink(missing_ok=True)
        raise
    return [((row["backend"], row["device"]), run_id) for row, run_id in zip(rows, ids, strict=True)]


def report_dict(report: Any) -> dict[str, Any]:
    """`RunReport` → {"project", "kernel", "sizes", "seed", "results": [full RunResult dicts]}."""
    if isinstance(report, dict):
        return {
            "project": report.get("project", ""),
            "kernel": report.get("kernel", ""),
            "sizes": report.get("sizes"),
            "seed": report.get("seed"),
            "results": list(report.get("results") or []),
            "host_conditions": report.get("host_conditions"),
            "series": report.get("series"),
            "counters": list(report.get("counters") or []),
        }
    return {
        "project": report.project,
        "kernel": report.kernel,
        "sizes": getattr(report, "sizes", None),
        "seed": getattr(report, "seed", None),
        "results": [r.to_dict() if hasattr(r, "to_dict") else dict(r) for r in report.results],
        "host_conditions": getattr(report, "host_conditions", None),
        # `workbench run --counters`: {(backend, device): record} (workbench.run.counters.nsight)
        "counters": [
            {**c, "backend": b, "device": d}
            for (b, d), c in (getattr(report, "counters", None) or {}).items()
        ],
    }


def _parse_time(text: str | None) -> tuple[str, float]:
    if text:
        try:
            stamp = time.strptime(text, "%Y-%m-%dT%H:%M:%SZ")
            return text, float(calendar.timegm(stamp))
        except ValueError:
            pass
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)), now


def result_row(
    report: dict[str, Any],
    result: dict[str, Any],
    invocation: str,
    snapshot_hash: str | None,
    ceilings: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The database row of one result (JSON columns still as Python values)."""
    prov = result.get("provenance") or {}
    device = result.get("device") or {}
    check = result.get("check") or {}
    timing = dict(result.get("timing") or {})
    q1, q3 = timing_quartiles(timing)
    samples = timing.pop("samples_s", None)
    toolchain = prov.get("toolchain") or {}
    resources = _resources(prov)
    stamp, unix = _parse_time(prov.get("time"))
    row_ceilings = device.get("ceilings") or prov.get("ceilings") or ceilings
    return {
        "uuid": uuid.uuid4().hex,
        "invocation": invocation,
        "time": stamp,
        "time_unix": unix,
        "project": prov.get("project") or report["project"],
        "kernel": prov.get("kernel") or report["kernel"],
        "backend": result.get("backend", ""),
        "device": row_key(result)[1],
        "device_name": device.get("name") or "",
        "status": result.get("status", ""),
        "verified": result.get("verified"),
        "is_reference": bool(check.get("is_reference")),
        "unverified": check.get("unverified") or None,  # why not verified ("reference failed")
        "median_s": timing.get("median_s"),
        "iqr_s": timing.get("iqr_s"),
        "q1_s": q1,
        "q3_s": q3,
        "min_s": timing.get("min_s"),
        "max_s": timing.get("max_s"),
        "n": timing.get("n"),
        "timing_method": timing.get("method") or prov.get("timing_method"),
        "source_hash": prov.get("source_hash"),
        "snapshot_hash": snapshot_hash,
        "build_key": prov.get("build_key"),
        "toolchain": toolchain.get("version") if isinstance(toolchain, dict) else str(toolchain),
        "flags": prov.get("flags"),
        "sizes": prov.get("sizes") if prov.get("sizes") is not None else report.get("sizes"),
        "tunables": prov.get("tunables"),
        "seed": prov.get("seed") if prov.get("seed") is not None else report.get("seed"),
        "registers": resources.get("registers"),
        "spills": resources.get("spills"),
        "shared_bytes": resources.get("shared_bytes"),
        "error": result.get("error"),
        "outputs": None,
        "ceilings": row_ceilings,
        "samples_s": samples,
        "detail": {
            "device": device,
            "check": check,
            "timing": timing,
            "throughput": result.get("throughput") or {},
            "provenance": prov,
            "resources": resources,
            "stale": result.get("stale"),  # a result kept from an earlier run (`RunResult.stale`)
            # cpu-sim's checks (None: none ran): a tuning sweep never ranks a configuration with findings.
            "findings": result.get("findings"),
        },
    }


def _resources(prov: dict[str, Any]) -> dict[str, Any]:
    """Registers, spills and shared memory of the kernel's entry, from the build.json beside the
    artifact (empty when the backend reports none or the folder is gone)."""
    artifact = prov.get("artifact") or {}
    path = artifact.get("path") if isinstance(artifact, dict) else None
    if not path:
        return {}
    try:
        info = json.loads((Path(path).parent / "build.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    resources = info.get("resources") or {}
    for name in (prov.get("kernel"), artifact.get("entry")):
        if name and isinstance(resources.get(name), dict):
            return resources[name]
    return {}


def _save_outputs(store: SessionStore, report: Any, rows: list[dict[str, Any]]) -> list[Path]:
    """Each backend's output arrays → `<db>-outputs/<uuid>.npz` (written, then renamed)."""
    outputs = getattr(report, "outputs", None) or {}
    folder = store.outputs_dir()
    written: list[Path] = []
    saved: dict[str, str] = {}
    for row in rows:
        arrays = outputs.get(row["backend"])
        if not arrays:
            continue
        if row["backend"] not in saved:
            name = f"{row['uuid']}.npz"
            tmp = folder / f".{name}.tmp"
            try:
                folder.mkdir(parents=True, exist_ok=True)
                with open(tmp, "wb") as file:
                    np.savez_compressed(file, **{k: np.asarray(v) for k, v in arrays.items()})
                os.replace(tmp, folder / name)
            except OSError as exc:
                # A full disk must not stay full of a half-written array, nor of the arrays of a
                # run that will not be recorded.
                for path in (tmp, *written):
                    with contextlib.suppress(OSError):
                        path.unlink(missing_ok=True)
                raise SessionStoreError(
                    f"cannot keep the output arrays in {folder}: {exc.strerror or exc}; the run was "
                    "not recorded and no partial file was left",
                    kind="full" if exc.errno == errno.ENOSPC else "other",
                ) from None
            written.append(folder / name)
            saved[row["backend"]] = f"{folder.name}/{name}"
        row["outputs"] = saved[row["backend"]]
    return written
