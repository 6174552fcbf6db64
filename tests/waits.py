"""Waiting in tests (docs/testing.md): a test waits for the EVENT it needs (a signal, a file, a
process ending, a line of output, a condition); time is only a hang guard, so a loaded machine
makes a test slower, never red.

The guards are generous on purpose: a wait ends as soon as its event comes, so a long guard costs
time only when the test fails anyway. `WB_TEST_TIMEOUT_SCALE` (default 1) multiplies every guard
for a machine slower still (e.g. `WB_TEST_TIMEOUT_SCALE=3` under a sanitizer or an emulator).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

#: Multiplies every guard below.
SCALE = max(1.0, float(os.environ.get("WB_TEST_TIMEOUT_SCALE") or 1))

#: Guard for an event that needs no build and no kernel run: a redraw, a signal from a thread, a
#: thread or process ending, a file appearing, a server listening. A few ms on a quiet machine.
HANG_GUARD_S = 120.0 * SCALE
HANG_GUARD_MS = int(HANG_GUARD_S * 1000)

#: Guard for whatever builds or runs a kernel (a cold cargo build on two loaded cores takes minutes).
WORK_GUARD_S = 600.0 * SCALE
WORK_GUARD_MS = int(WORK_GUARD_S * 1000)


#: A limit of the product's that a test makes fire (a kernel that hangs, a host that stops
#: answering): long enough that the work which must NOT hit it (a verification launch, a round trip
#: to a host) stays under it on a loaded machine; a test waits it out once per firing.
FIRING_LIMIT_S = 10.0 * SCALE


def wait_until(predicate: Callable[[], object], timeout: float = HANG_GUARD_S) -> bool:
    """Poll `predicate` every 50 ms until it is truthy (True) or `timeout` seconds pass (False):
    for threads and processes outside Qt (windows wait with `qtbot.waitUntil`)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return bool(predicate())  # one last look: the guard ran out while this thread was not scheduled


def settle_qt(turns: int = 4) -> None:
    """Deliver what the window has posted to itself (layout requests, deferred redraws, zero-delay
    timers) by turning the event loop a few times: no clock, so the same on a loaded machine.
    Events a thread has yet to post are not covered: wait for those with `qtbot.waitUntil`."""
    from PySide6.QtCore import QCoreApplication
    from PySide6.QtWidgets import QApplication

    for _ in range(turns):
        QCoreApplication.sendPostedEvents()
        QApplication.processEvents()


def default_ctrl_c() -> None:
    """`preexec_fn` of a child a test sends Ctrl-C to: SIGINT back to its default, as in a user's
    terminal. A disposition of "ignore" that the test process picked up is inherited across exec,
    and Python then installs no KeyboardInterrupt handler: the child never hears the Ctrl-C."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
