"""Items from service threads reach the GUI thread in order and a few milliseconds at a time
(`paced_relay.PacedRelay`); a console job starts after its statement returns, or at once when
waited for (`profile.live.console_jobs.JobFuture`). Real threads, a real Qt event loop; nothing timed against a
budget: the assertions count turns of the loop and check order."""

from __future__ import annotations

import threading
import time

from PySide6.QtCore import QTimer

from tests.waits import HANG_GUARD_MS, WORK_GUARD_MS
from workbench.ui.paced_relay import TURN_S, PacedRelay

ITEM_S = 0.002  # what delivering one item costs here (a panel redrawing a row)


def test_a_burst_is_delivered_in_order_over_several_turns_of_the_loop(qtbot):
    delivered: list[tuple[int, int]] = []
    ticks = [0]  # turns of the event loop: a zero-interval timer fires once per turn
    ticker = QTimer()
    ticker.setInterval(0)
    ticker.timeout.connect(lambda: ticks.__setitem__(0, ticks[0] + 1))

    def deliver(item: int) -> None:
        time.sleep(ITEM_S)
        delivered.append((item, ticks[0]))

    relay = PacedRelay(deliver)
    items = 40
    ticker.start()
    poster = threading.Thread(target=lambda: [relay.post(i) for i in range(items)])
    poster.start()
    poster.join()
    qtbot.waitUntil(lambda: len(delivered) == items, timeout=HANG_GUARD_MS)
    ticker.stop()
    assert [item for item, _ in delivered] == list(range(items))
    per_turn: dict[int, int] = {}
    for _, tick in delivered:
        per_turn[tick] = per_turn.get(tick, 0) + 1
    # At most a turn's worth each time (one item may end past the budget): never the whole burst.
    most = int(TURN_S / ITEM_S) + 1
    assert max(per_turn.values()) <= most < items
    assert len(per_turn) >= items // most


def test_a_closed_relay_delivers_nothing_more(qtbot):
    delivered: list[int] = []
    relay = PacedRelay(delivered.append)
    relay.post(1)  # its delivery is on its way to the GUI thread
    relay.close()
    relay.post(2)
    # A relay posted to after it: the GUI thread handles the closed one's delivery first, so once
    # this one has delivered, the closed one had its turn (no clock decides that it is over).
    witness: list[int] = []
    after = PacedRelay(witness.append)
    after.post(3)
    qtbot.waitUntil(lambda: witness == [3], timeout=HANG_GUARD_MS)
    assert delivered == [] and relay.pending() == 0


def test_a_console_job_starts_after_the_statement_or_when_waited_for(qtbot, bridge, example_copy):
    bridge.set_project(example_copy("saxpy"))
    job = bridge.start_build(["cpu"])
    assert not job.started  # the statement that asked for it returns first
    qtbot.waitUntil(lambda: job.started, timeout=HANG_GUARD_MS)  # the next turn of the loop starts it
    qtbot.waitUntil(job.done, timeout=WORK_GUARD_MS)
    assert job.result()["cpu"].status == "ok"

    # Waited for at once, on the GUI thread with no turn of the loop in between: no deadlock.
    waited = bridge.start_build(["cpu"])
    assert not waited.started
    assert waited.result(timeout=600)["cpu"].status == "ok" and waited.started
