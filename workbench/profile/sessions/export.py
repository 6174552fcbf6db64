"""Export recorded runs (CSV, a JSON bundle, a Chrome trace) and import a bundle into a database.

The JSON bundle is also the import format: `{"format": "workbench-sessions", "version": 1,
"runs": [every recorded field, raw samples included], "sources": {hash: {path: text}}}`. Importing
skips runs whose UUID the database already holds, so bringing the same bundle home twice is harmless.
"""

from __future__ import annotations

import csv
import io
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from workbench.profile.sessions.bundle_check import BundleError, check_bundle, check_report
from workbench.profile.sessions.outside_files import (
    ExportError,
    parse_json,
    read_bounded,
    refuse_unless_regular,
    write_file,
)
from workbench.profile.sessions.store import (
    ALL_COLUMNS,
    SUMMARY_COLUMNS,
    SessionStore,
    held_here,
    is_sqlite_file,
)
from workbench.run.counters.metrics import METRICS

BUNDLE_FORMAT = "workbench-sessions"
BUNDLE_VERSION = 1
#: Nsight Compute's counters of a run that took them (`workbench run --counters`), blank otherwise.
COUNTER_COLUMNS = ("counters_status", *(f"ncu_{m.key}" for m in METRICS), "ncu_top_stalls")
CSV_COLUMNS = (*SUMMARY_COLUMNS, "flags", "sizes", "tunables", *COUNTER_COLUMNS)


def _counter_cells(run: dict[str, Any]) -> dict[str, Any]:
    record = run.get("counters") or {}
    if not record:
        return {}
    metrics = record.get("metrics") or {}
    cells: dict[str, Any] = {"counters_status": record.get("status")}
    cells.update({f"ncu_{m.key}": metrics.get(m.key) for m in METRICS})
    cells["ncu_top_stalls"] = "; ".join(f"{r} {v:g}" for r, v in record.get("stalls") or []) or None
    return cells


def select_runs(store: SessionStore, ids: Sequence[int] | None) -> list[dict[str, Any]]:
    """Full records of the given run ids (all runs when none are given), oldest first."""
    if ids:
        runs = [store.get_run(i) for i in ids]
    else:
        runs = [store.get_run(r["id"]) for r in store.list_runs(limit=None)]
    return sorted(runs, key=lambda r: r["id"])


def to_csv(runs: list[dict[str, Any]]) -> str:
    """One line per run: the summary columns (JSON for flags, sizes and tunables)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for run in runs:
        row = []
        counter_cells = _counter_cells(run)
        for column in CSV_COLUMNS:
            value = counter_cells.get(column) if column in COUNTER_COLUMNS else run.get(column)
            if isinstance(value, list | dict):
                value = json.dumps(value, sort_keys=True)
            row.append("" if value is None else value)
        writer.writerow(row)
    return out.getvalue()


def to_bundle(store: SessionStore, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The JSON bundle of `runs` with the source snapshots they refer to."""
    sources: dict[str, dict[str, str]] = {}
    for run in runs:
        for digest in (run.get("snapshot_hash"), run.get("prev_snapshot_hash")):
            if digest and digest not in sources:
                files = store.source(digest)
                if files is not None:
                    sources[digest] = files
    return {
        "format": BUNDLE_FORMAT,
        "version": BUNDLE_VERSION,
        "exported": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "runs": [dict(run) for run in runs],
        "sources": sources,
    }


def chrome_trace(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """A Chrome-trace JSON (`traceEvents`; opens in Perfetto and chrome://tracing) of the runs'
    launches, one track (process) per device.

    The workbench records per-sample durations, not launch time stamps: each sample becomes one
    complete ("X") event of its measured duration, laid out back to back from the run's recorded
    time. Runs on one device that would overlap are shifted to follow each other, so the timeline
    shows order and duration, not the real gaps between launches. A sample is the mean of its
    `batch` launches (see `detail.timing.batch`).
    """
    events: list[dict[str, Any]] = []
    tracks: dict[str, int] = {}
    cursor: dict[str, float] = {}  # device -> end of the last event, µs
    for run in sorted(runs, key=lambda r: (r.get("time_unix") or 0.0, r["id"])):
        device = run.get("device") or "?"
        label = f"{device} {run.get('device_name') or ''}".strip()
        if device not in tracks:
            pid = tracks[device] = len(tracks) + 1
            events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 1, "args": {"name": label}})
            events.append(
                {"ph": "M", "name": "thread_name", "pid": pid, "tid": 1, "args": {"name": "launches"}}
            )
        pid = tracks[device]
        start = max((run.get("time_unix") or 0.0) * 1e6, cursor.get(device, 0.0))
        name = f"{run['kernel']} [{run['backend']}]"
        args = {
            "run": run["id"],
            "uuid": run.get("uuid"),
            "backend": run["backend"],
            "project": run.get("project"),
        }
        for index, seconds in enumerate(run.get("samples_s") or []):
            duration = float(seconds) * 1e6
            events.append({
                "name": name, "cat": run["backend"], "ph": "X", "ts": round(start, 3),
                "dur": round(duration, 3), "pid": pid, "tid": 1, "args": {**args, "sample": index},
            })  # fmt: skip
            start += duration
        cursor[device] = start
    return {"traceEvents": events, "displayTimeUnit": "ns"}


def dumps_in_pieces(value: Any) -> str:
    """`json.dumps(value)`, the same text, made one top-level list item at a time (nested in
    dicts): C's encoder holds the GIL for a whole call, and the window exports on a thread (2,000
    runs' trace is 31 MB: one call held the window's GUI thread 2 s); the pure-Python encoder
    (what `indent` uses) takes about 5 times as long."""
    if isinstance(value, dict) and value and all(isinstance(k, str) for k in value):
        return "{" + ", ".join(f"{json.dumps(k)}: {dumps_in_pieces(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list) and value:
        return "[" + ", ".join(json.dumps(v) for v in value) + "]"
    return json.dumps(value)


def render(store: SessionStore, fmt: str, ids: Sequence[int] | None) -> str:
    """The text of an export in `fmt` (`csv`, `json`, `chrome-trace`)."""
    runs = select_runs(store, ids)
    if fmt == "csv":
        return to_csv(runs)
    if fmt == "json":
        return json.dumps(to_bundle(store, runs), indent=1) + "\n"
    if fmt == "chrome-trace":
        return dumps_in_pieces(chrome_trace(runs)) + "\n"
    raise ExportError(f"unknown export format {fmt!r}: choose csv, json or chrome-trace")


def check_target(path: str | Path) -> None:
    """Refuse an export target that is not a regular file (`outside_files`: a device, FIFO,
    socket, folder or symbolic link), or is a SQLite database (a sessions database, the one open
    here included, or any other) or one's `-wal` / `-shm`: an export never replaces recorded data.
    The kind is read with `lstat` first: opening a FIFO to look for SQLite's header would hang."""
    path = Path(path).expanduser()
    refuse_unless_regular(path)
    try:
        sqlite = is_sqlite_file(path)
    except OSError as exc:
        raise ExportError(f"cannot check the export target {path}: {exc.strerror or exc}") from None
    if sqlite:
        which = "the sessions database open here" if held_here(path) else "a SQLite database"
        raise ExportError(
            f"refusing to export over {path}: it is {which} (or a file of one), and an export "
            "never replaces a database; choose another output file"
        )


def write_text(path: str | Path, text: str, *, overwrite: bool = False) -> None:
    """Write atomically to a new file, or over an existing regular file when `overwrite`
    (`outside_files.write_file`: devices, FIFOs, sockets, folders and links are refused and left
    as they were); a SQLite file as target or an unwritable place is an `ExportError`."""
    path = Path(path).expanduser()
    check_target(path)
    write_file(path, text, overwrite=overwrite)


def import_bundle(store: SessionStore, path: str | Path) -> tuple[int, int]:
    """Add a bundle's runs (or a `workbench run --json` report) to `store`; (added, skipped).
    Only a regular file of at most `outside_files.MAX_BUNDLE_BYTES`, nested at most `MAX_DEPTH`
    deep, is read. Every field is checked first (`bundle_check`): a bad one rejects the whole
    file, naming the field, and nothing is added."""
    path = Path(path).expanduser()
    data = parse_json(read_bounded(path), path)  # a regular file, bounded in size and nesting
    try:
        if isinstance(data, dict) and "results" in data and "format" not in data:
            from workbench.profile.sessions.record import record_report

            # A GPU host's `workbench run --json`; with --repeat, every repetition (each checked first).
            reports = data["repetitions"] if isinstance(data.get("repetitions"), list) else [data]
            for report in reports:
                check_report(report)
            return sum(len(record_report(store, report)) for report in reports), 0
        if not isinstance(data, dict) or data.get("format") != BUNDLE_FORMAT:
            raise ExportError(
                f'{path} is not a workbench sessions bundle (expected "format": "{BUNDLE_FORMAT}"; '
                "make one with `workbench sessions export --format json`)"
            )
        version = data.get("version", 0)
        if isinstance(version, int) and version > BUNDLE_VERSION:
            raise ExportError(f"{path} is bundle version {version}, newer than this workbench reads")
        check_bundle(data)
        sources = data.get("sources") or {}
        for index, run in enumerate(data["runs"]):
            digest = run.get("snapshot_hash")
            if digest and digest not in sources and store.source(digest) is None:
                raise BundleError(
                    f"runs[{index}].snapshot_hash",
                    f"names the source snapshot {digest!r}, which is neither in the bundle's "
                    '"sources" nor in the database',
                )
    except BundleError as exc:
        raise ExportError(f"{path}: {exc}; nothing was imported") from None
    rows = []
    for run in data["runs"]:
        row = {c: run.get(c) for c in ALL_COLUMNS if c != "id"}
        row["samples_s"] = run.get("samples_s")
        row["counters"] = run.get("counters")
        row["detail"] = run.get("detail") or {}
        row["time_unix"] = run.get("time_unix") or 0.0
        row["is_reference"] = bool(run.get("is_reference"))
        row["outputs"] = None  # kept arrays stay beside the database they were recorded in
        rows.append(row)
    return store.import_rows(rows, sources)
