"""Recorded runs read a page at a time, for lists that load as they scroll and plots that read only
what they draw (Qt-free; the Sessions panel's model and history plot call these).

Pages are keyset pages on the run id (`id < before`, newest first): each costs the same at the end
of 100,000 runs as at the start, and a run recorded meanwhile never shifts a page (`newer` reads
just those). The filters are the panel's (`RunFilter`), the SQL the same rules as
`SessionStore.list_runs`, each narrowing on its index (`schema.py`). Reads go through the store's
own connection and error handling (`SessionStore._query`); rows are sanitised as `list_runs`'
are (`store._summary`), so a poisoned row reads as missing values, never as an error.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from workbench.profile.sessions.bundle_check import sanitize
from workbench.profile.sessions.comparable import series_of
from workbench.profile.sessions.store import SUMMARY_COLUMNS, SessionStore, _summary
from workbench.run.host_load import flags

#: Rows a page holds: a screenful or two, read in a few milliseconds.
PAGE = 50
#: The history plot's points: the newest runs of a kernel it draws (older ones are not read).
HISTORY_POINTS = 200
#: The columns the history plot draws from.
HISTORY_COLUMNS = ("id", "backend", "device", "snapshot_hash", "median_s", "q1_s", "q3_s")


@dataclass(frozen=True)
class RunFilter:
    """Which runs a list shows (None: any). `device` is a spec or part of a device's name, `since` a
    Unix time, `verified=True` includes the reference (the `passed` column), as in `list_runs`.
    `devices` is what `device` resolved to and `min_id` the lowest id `since` lets through
    (`resolved`), so the pages of one list agree and none scans past the last match."""

    kernel: str | None = None
    backend: str | None = None
    device: str | None = None
    project: str | None = None
    verified: bool | None = None
    since: float | None = None
    devices: tuple[str, ...] = field(default=(), compare=False)
    min_id: int | None = field(default=None, compare=False)

    def resolved(self, store: SessionStore) -> RunFilter:
        """This filter with its device matched to the specs it means (a scan of the device-name
        index) and, with `since`, the lowest id recorded since (a scan of the time index): done
        once per list, not once per page. Without that bound, a page past the last recent run
        walked every older run to find none (170 ms at 100,000 runs). Ids only grow, so the bound
        holds for runs recorded later (an imported run's time may be old, its id never is)."""
        specs = tuple(store._device_specs(self.device)) if self.device else ()
        min_id = None
        if self.since is not None:
            found = store._query(
                # The time index walks only the recent runs; unbidden SQLite walks ids from the
                # oldest up (its MIN(id) shortcut) until one is recent: the whole table.
                "SELECT MIN(id) AS low, (SELECT COALESCE(MAX(id), 0) FROM runs) AS high "
                "FROM runs INDEXED BY runs_time WHERE time_unix >= ?",
                (self.since,),
            )[0]
            min_id = int(found["low"]) if found["low"] is not None else int(found["high"]) + 1
        return replace(self, devices=specs, min_id=min_id)

    def where(self) -> tuple[list[str], list[Any]]:
        """SQL conditions and their parameters."""
        where: list[str] = []
        params: list[Any] = []
        for column, value in (("kernel", self.kernel), ("backend", self.backend), ("project", self.project)):
            if value:
                where.append(f"{column} = ?")
                params.append(value)
        if self.device:
            specs = self.devices or (self.device,)
            where.append(f"device IN ({', '.join('?' * len(specs))})")
            params += specs
        if self.verified is not None:
            where.append("passed = ?")
            params.append(int(self.verified))
        if self.since is not None:
            where.append("time_unix >= ?")
            params.append(self.since)
        if self.min_id is not None:
            where.append("id >= ?")
            params.append(self.min_id)
        return where, params


def _summaries(store: SessionStore, where: list[str], params: list[Any], limit: int) -> list[dict[str, Any]]:
    sql = f"SELECT {', '.join(SUMMARY_COLUMNS)} FROM runs"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY id DESC LIMIT ?"
    return [_summary(row) for row in store._query(sql, [*params, int(limit)])]


def page(
    store: SessionStore, runs: RunFilter, *, before: int | None = None, limit: int = PAGE
) -> list[dict[str, Any]]:
    """Up to `limit` run summaries that pass `runs` with ids below `before` (None: the newest),
    newest first: the next page of a list is `page(..., before=<its last id>)`."""
    where, params = runs.where()
    if before is not None:
        where.append("id < ?")
        params.append(int(before))
    return _summaries(store, where, params, limit)


def newer(store: SessionStore, runs: RunFilter, *, after: int, limit: int = PAGE) -> list[dict[str, Any]]:
    """The runs recorded after run `after` that pass `runs`, newest first (at most `limit`: a list
    that gets `limit` back has missed some and reloads its first page instead)."""
    where, params = runs.where()
    where.append("id > ?")
    params.append(int(after))
    return _summaries(store, where, params, limit)


def distinct(store: SessionStore, column: str) -> list[str]:
    """The distinct values of `kernel`, `backend`, `device` or `project`, sorted: one index probe
    per value (a skip scan), not a walk of 100,000 index entries as `SELECT DISTINCT` takes."""
    if column not in {"kernel", "backend", "device", "project"}:
        raise ValueError(column)
    sql = (
        f"WITH RECURSIVE v(x) AS (SELECT MIN({column}) FROM runs UNION ALL "
        f"SELECT (SELECT MIN({column}) FROM runs WHERE {column} > v.x) FROM v WHERE v.x IS NOT NULL) "
        "SELECT x FROM v WHERE x IS NOT NULL"
    )
    return [str(row["x"]) for row in store._query(sql)]


def conditions(store: SessionStore, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """{run id: {"series", "condition_flags"}} for the given runs: what a list shows beside each
    row (`conditions.run_conditions`' answer, read from the three parts of the detail it needs)."""
    if not ids:
        return {}
    # One parse of each detail for the three parts (json_extract of several paths answers an
    # array), after json_valid: a detail that is not JSON reads as none, not as an error.
    rows = store._query(
        "SELECT runs.id AS id, CASE WHEN json_valid(run_data.detail) THEN json_extract(run_data.detail, "
        "'$.host', '$.series', '$.timing.conditions') END AS parts "
        "FROM runs LEFT JOIN run_data ON run_data.run_id = runs.id "
        f"WHERE runs.id IN ({', '.join('?' * len(ids))})",
        [int(i) for i in ids],
    )
    found = {row["id"]: _parts(row["parts"]) for row in rows}
    out = {}
    for run_id in ids:
        host, series, timing = found.get(run_id) or (None, None, None)
        out[run_id] = {"series": series_of({"series": series}), "condition_flags": flags(host, timing)}
    return out


def history(
    store: SessionStore, project: str, kernel: str, limit: int = HISTORY_POINTS
) -> tuple[list[dict[str, Any]], int]:
    """(the newest `limit` runs of one kernel, oldest first, with only the columns the history plot
    draws; how many runs the kernel has in all)."""
    where = "WHERE project = ? AND kernel = ?"
    rows = store._query(
        f"SELECT {', '.join(HISTORY_COLUMNS)} FROM runs {where} ORDER BY id DESC LIMIT ?",
        (project, kernel, int(limit)),
    )
    if len(rows) < limit:
        total = len(rows)
    else:
        total = int(store._query(f"SELECT COUNT(*) AS n FROM runs {where}", (project, kernel))[0]["n"])
    return [sanitize(row) for row in reversed(rows)], total


def _parts(text: Any) -> tuple[Any, ...]:
    """The three objects of `conditions`' array (None for each that is not an object)."""
    try:
        parts = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        parts = None
    if not isinstance(parts, list) or len(parts) != 3:
        return (None, None, None)
    return tuple(part if isinstance(part, dict) else None for part in parts)
