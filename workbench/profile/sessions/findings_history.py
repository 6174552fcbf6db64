"""cpu-sim findings recorded for a reference's sources: evidence against the reference (Qt-free).

A run whose reference is a crate backend (cpu, …) and that did not run cpu-sim itself can still
know that cpu-sim found faults in exactly these sources: an earlier recorded cpu-sim run with the
same source hash. `dispute_from_history(database, report)` looks for one and lets the reference
policy (`run.reference.dispute`, `recorded_reason`: the wording and the rule live there) mark the
report's mismatches "disputed". The command line calls it after each run it records, the window
after each Run (off the GUI thread). The history is a help, never a reason for a run to fail: a
database that cannot be read is passed over.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from workbench.backends import RUST_BACKENDS
from workbench.errors import WorkbenchError
from workbench.profile.sessions.store import SessionStore
from workbench.run.reference import dispute, recorded_reason

#: cpu-sim rows of the kernel read, newest first, looking for the reference's source hash.
LOOK_BACK = 50


def dispute_from_history(database: str | Path | None, report: Any) -> None:
    """Mark `report`'s mismatches disputed when cpu-sim findings were recorded in `database` for
    the sources its (crate) reference ran; nothing when there are no mismatches to explain."""
    reference = getattr(report, "reference", "")
    results = list(getattr(report, "results", None) or [])
    own = next((r for r in results if r.backend == reference), None)
    source = (own.provenance or {}).get("source_hash") if own is not None else None
    open_question = any(r.verified is False and not (r.check or {}).get("disputed") for r in results)
    if not source or reference not in RUST_BACKENDS or not open_question:
        return
    if database is None or not Path(database).is_file():
        return
    try:
        with SessionStore(database) as store:
            rows = store.records(
                project=report.project, kernel=report.kernel, backend="cpu-sim", limit=LOOK_BACK
            )
            for row in rows:
                if row.get("source_hash") != source:
                    continue
                detail = store.get_run(row["id"], samples=False).get("detail")
                found = detail.get("findings") if isinstance(detail, dict) else None
                if isinstance(found, dict) and found.get("findings"):
                    dispute(results, reference, recorded_reason(reference, found))
                    return
    except (WorkbenchError, OSError, sqlite3.Error):
        return
