"""A child process for the fault tests: record synthetic runs into a database in a loop.

`python sessions_writer.py DB COUNT` records COUNT reports (0: forever) and prints each new run id
after its transaction committed, so the parent knows which runs must survive a kill -9.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from conftest import synthetic_report  # noqa: E402

from workbench.profile.sessions.record import record_report  # noqa: E402
from workbench.profile.sessions.sources import snapshot_hash  # noqa: E402
from workbench.profile.sessions.store import SessionStore  # noqa: E402


def main() -> None:
    db, count = sys.argv[1], int(sys.argv[2])
    files = {"src/lib.rs": "fn main() {}\n"}
    with SessionStore(db) as store:
        i = 0
        while count == 0 or i < count:
            files = {"src/lib.rs": files["src/lib.rs"] + f"// edit {i}\n"}
            ids = record_report(
                store, synthetic_report(seed=i, n=2000), snapshot=(snapshot_hash(files), files)
            )
            print(" ".join(map(str, ids)), flush=True)
            i += 1


if __name__ == "__main__":
    main()
