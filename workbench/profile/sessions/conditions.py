"""Recorded runs' invocation, `--repeat` series and condition flags, for the tables that list runs
(`sessions list`, the Sessions panel): one query for all the shown rows (`SessionStore.records`),
the flags by the one rule in `run.host_load.flags`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from workbench.profile.sessions.comparable import series_of
from workbench.profile.sessions.store import SessionStore
from workbench.run.host_load import flags


def run_conditions(store: SessionStore, ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """{run id: {"invocation", "series", "condition_flags"}} (flags such as "busy", "throttled")."""
    found = {r["id"]: r for r in store.records(ids=list(ids))} if ids else {}
    out = {}
    for run_id in ids:
        run = found.get(run_id) or {}
        out[run_id] = {
            "invocation": run.get("invocation"),
            "series": series_of(run),
            "condition_flags": flags(run.get("host"), run.get("timing_conditions")),
        }
    return out


def series_text(series: dict[str, Any] | None) -> str:
    """ "2/3" for the second repetition of three, "-" outside a series."""
    return f"{series.get('index', '?')}/{series.get('of', '?')}" if series else "-"
