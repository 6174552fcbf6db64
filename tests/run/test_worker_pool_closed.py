"""A worker a `WorkerPool` let go never starts again: a `get` after `close` is refused, a request
to a worker a caller still holds (after `close` or `stop`) does not restart it, and a worker a
`get` was starting while the pool closed is shut down (a real cpu worker process each time)."""

from __future__ import annotations

import sys
import threading
import time

import pytest

from workbench.run.pool import WorkerError, WorkerPool

#: The cpu worker, started a second late: time for `close` to come while it starts.
SLOW_WORKER = [
    sys.executable,
    "-c",
    "import runpy, sys, time; time.sleep(1.0); sys.argv = ['worker', 'cpu']; "
    "runpy.run_module('workbench.run.worker', run_name='__main__')",
]


def test_a_closed_pool_refuses_to_start_a_worker():
    pool = WorkerPool()
    worker = pool.get("cpu")
    assert worker.alive and worker.starts == 1
    pool.close()
    assert not worker.alive
    with pytest.raises(WorkerError, match="cpu worker .* pool is closed"):
        pool.get("cpu")
    # A caller still holding the worker (a probe that got it before the close) cannot restart it.
    with pytest.raises(WorkerError, match="not started again: its worker pool is closed"):
        worker.request({"op": "devices"}, timeout_s=30.0)
    assert pool.owned() == [] and worker.starts == 1 and not worker.alive  # nothing left to stop


def test_a_worker_starting_while_the_pool_closes_is_shut_down():
    pool = WorkerPool(command_for=lambda runtime: SLOW_WORKER)
    outcome: list[object] = []

    def get() -> None:
        try:
            outcome.append(pool.get("cpu"))
        except WorkerError as exc:
            outcome.append(exc)

    thread = threading.Thread(target=get)
    thread.start()
    deadline = time.monotonic() + 10.0
    while not pool._workers and time.monotonic() < deadline:  # the worker is being started
        time.sleep(0.01)
    (worker,) = pool._workers.values()
    pool.close()
    thread.join(30.0)
    assert not thread.is_alive()
    assert isinstance(outcome[0], WorkerError) and "pool is closed" in str(outcome[0]), outcome
    assert worker.starts == 1 and not worker.alive  # it did start, and nothing of it is left
    assert pool.owned() == []


def test_a_stopped_worker_is_not_restarted_by_a_caller_still_holding_it():
    """A probe stops an unavailable runtime's worker while a run's `forget_inputs` still holds it:
    its request must not start a process the pool no longer knows (the pool's next `get` does)."""
    pool = WorkerPool()
    try:
        held = pool.get("cpu")
        pool.stop("cpu")
        with pytest.raises(WorkerError, match="not started again: its worker pool stopped it"):
            held.request({"op": "devices"}, timeout_s=30.0)
        assert held.starts == 1 and not held.alive
        fresh = pool.get("cpu")
        assert fresh is not held and fresh.alive
    finally:
        pool.close()
