"""A run's events are typed records, one class per kind (`workbench.run.events`), from the real
service: its own builds, the cpu and wgpu workers, the timing heartbeats."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from workbench.run.events import (
    RunBuildEvent,
    RunBuilding,
    RunBuilt,
    RunDone,
    RunEvent,
    RunFinished,
    RunPhase,
    RunProgress,
    RunStarted,
    RunVerified,
)
from workbench.run.service import RunService
from workbench.run.timing import TimingOptions

REPO = Path(__file__).resolve().parents[2]

#: Long enough for the worker's timing heartbeats (every 0.1 s) to come through as `RunProgress`.
HEARTBEAT_TIMING = TimingOptions(min_n=5, min_time_s=0.5, warmup_max_n=6, warmup_max_s=0.3, max_time_s=2.0)
#: Every kind of run event.
RUN_EVENTS = {
    RunBuilding, RunBuildEvent, RunBuilt, RunStarted, RunPhase, RunVerified, RunProgress, RunFinished, RunDone,
}  # fmt: skip


def test_every_event_of_a_real_run_is_a_typed_record(example_copy, shared_cache_dir):
    events: list = []
    service = RunService(timing=HEARTBEAT_TIMING)
    try:
        report = service.run(
            example_copy("saxpy"),
            backends=["cpu", "wgsl"],
            sizes={"n": 4096},
            cache_dir=shared_cache_dir,
            on_event=events.append,
        )
    finally:
        service.close()
    assert report.ok
    assert events and all(isinstance(e, RunEvent) for e in events)
    assert {type(e) for e in events} == RUN_EVENTS  # every kind, no other

    (building,) = [e for e in events if isinstance(e, RunBuilding)]
    assert building.backends == ("cpu", "wgsl")
    assert all(e.event.backend in ("cpu", "wgsl") for e in events if isinstance(e, RunBuildEvent))
    assert {(e.backend, e.status) for e in events if isinstance(e, RunBuilt)} == {
        ("cpu", "ok"),
        ("wgsl", "ok"),
    }
    phases = [(e.backend, e.phase) for e in events if isinstance(e, RunPhase)]
    assert phases[0] == (None, "inputs")
    for backend in ("cpu", "wgsl"):
        own = [p for b, p in phases if b == backend]
        assert own == ["upload", "launch", "download", "verify", "timing"]
    assert all(e.backend in ("cpu", "wgsl") and e.phase for e in events if isinstance(e, RunProgress))
    started = [e for e in events if isinstance(e, RunStarted)]
    assert [e.backend for e in started] == ["cpu", "wgsl"] and all(e.device["spec"] for e in started)
    finished = [e for e in events if isinstance(e, RunFinished)]
    assert [e.result for e in finished] == report.results  # the very results of the report
    # Each verdict before its timing (the check ends before the samples on the CPU and llvmpipe):
    # the same verdict and check as the final result, no timing yet.
    verified = [e for e in events if isinstance(e, RunVerified)]
    assert [e.backend for e in verified] == ["cpu", "wgsl"]
    for early, final in zip(verified, finished, strict=True):
        at = events.index(early)
        assert events[at - 1] == RunPhase(early.backend, "verify")
        assert events[at + 1] == RunPhase(early.backend, "timing")
        assert early.result.timing is None and final.result.timing is not None
        assert early.result.status == final.result.status == "ok"
        assert (early.result.verified, early.result.check) == (final.result.verified, final.result.check)
        assert early.device == final.device
    assert verified[1].result.verified is True  # wgsl checked against cpu's output
    assert isinstance(events[-1], RunDone) and events[-1].report is report
    # Fields only: an event read as a dict fails (tests/ui/test_typed_events.py holds every reader to it).
    with pytest.raises(TypeError):
        finished[0]["result"]
    assert not hasattr(finished[0], "get")


def _dict_events(path: Path) -> list[str]:
    """Calls in `path` that hand a dict literal to an event sink (`emit`, `_emit`, `on_event`)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Call) or not node.args or not isinstance(node.args[0], ast.Dict):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in ("emit", "_emit", "on_event"):
            found.append(f"{path.relative_to(REPO)}:{node.lineno}")
    return found


def test_the_run_engine_and_the_live_loop_emit_no_dict_events():
    live = list((REPO / "workbench" / "profile").rglob("live.py"))  # wherever the profile package keeps it
    sources = sorted((REPO / "workbench" / "run").glob("*.py")) + live
    assert len(live) == 1 and len(sources) > 10
    assert [hit for path in sources for hit in _dict_events(path)] == []
