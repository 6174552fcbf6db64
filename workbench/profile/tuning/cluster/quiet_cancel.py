"""A Ctrl-C during a Dask call must not print distributed's own traceback.

`distributed.utils.sync` (2026.8.0) answers a KeyboardInterrupt in the waiting thread by scheduling
`cancel()` on the event loop, and `cancel` reads `future` before `f` has assigned it when the
interrupt comes while `f` still waits for its first turn (`yield gen.moment`) or for a busy loop:
a `NameError: cannot access free variable 'future'` that tornado logs with its traceback, under
the sweep's one "interrupted" line (`tests/cluster/test_cluster_ctrl_c.py` caught it on a loaded
machine; `tests/cluster/test_quiet_cancel.py` makes it happen every time). Nothing was running
yet, so nothing is left to cancel: this filter drops exactly that record (a NameError raised in
`cancel` of `distributed/utils.py`) from tornado's "tornado.application" logger, and nothing else.
"""

from __future__ import annotations

import logging
import traceback

LOGGER = "tornado.application"


class SyncCancelBeforeStart(logging.Filter):
    """Drops the log record of distributed's `sync.cancel` NameError; passes every other one."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if not isinstance(exc, NameError) or "'future'" not in str(exc):
            return True
        frames = traceback.extract_tb(exc.__traceback__)
        last = frames[-1] if frames else None
        return not (
            last is not None
            and last.name == "cancel"
            and last.filename.replace("\\", "/").endswith("distributed/utils.py")
        )


def hide_sync_cancel_bug() -> None:
    """Install the filter once on tornado's application logger (where the record is logged)."""
    logger = logging.getLogger(LOGGER)
    if not any(isinstance(f, SyncCancelBeforeStart) for f in logger.filters):
        logger.addFilter(SyncCancelBeforeStart())
