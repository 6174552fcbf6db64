"""A child process that compares recorded runs for the window (Qt-free).

    python -m workbench.profile.sessions.compare_child     (`frozen.python_command` starts it)

One JSON request a line on stdin, one JSON answer a line on stdout, in order, until stdin ends:

    {"id": 7, "db": "/path/sessions.db", "baseline": 181, "run": 180, "invocation": true}
    {"id": 7, "result": {...compare_runs' answer...}}   or   {"id": 7, "error": "no run #180 in ..."}

Why a process: at 100,000 recorded runs one comparison is about half a second of pure Python (the
noise floor reads thousands of earlier runs of the pair). On a thread of the window's process that
work holds the GIL the GUI thread needs for every cell it paints (measured: the window stalled
120-170 ms per Compare, its own work under 20 ms); in a process of its own it costs the window
nothing. A store is kept open per database file between requests.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from workbench.errors import WorkbenchError
from workbench.profile.sessions.compare import compare_runs
from workbench.profile.sessions.store import SessionStore


def answer(request: dict[str, Any], stores: dict[str, Any]) -> dict[str, Any]:
    """The answer to one request (`stores`: the open stores by file, reused)."""
    out: dict[str, Any] = {"id": request.get("id")}
    try:
        db = str(request["db"])
        if db not in stores:
            stores[db] = SessionStore(db)
        out["result"] = compare_runs(
            stores[db],
            int(request["baseline"]),
            int(request["run"]),
            invocation=bool(request.get("invocation")),
        )
    except WorkbenchError as exc:
        out["error"] = str(exc)
    except Exception as exc:  # anything else is this request's failure, not the child's end
        out["error"] = f"the comparison failed: {exc!r}"
    return out


def _plain(value: Any) -> Any:
    """numpy scalars (and anything else JSON lacks) as plain values."""
    return value.item() if hasattr(value, "item") else str(value)


def main() -> int:
    stores: dict[str, Any] = {}
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            try:
                request = json.loads(line)
            except ValueError as exc:
                reply = {"id": None, "error": f"the comparison request is not JSON: {exc}"}
            else:
                reply = answer(request, stores)
            sys.stdout.write(json.dumps(reply, default=_plain) + "\n")
            sys.stdout.flush()
    finally:
        for store in stores.values():
            store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
