"""The run service streams (issue 21): a backend runs as soon as its own build is done, on the
command line's path (the service builds with a build service of its own) as in the window.

The cpu build is a real cargo build held in the crate's build.rs until the test opens a gate
file; the test opens it from the run's own event when wgsl's result is in. The order is certain,
nothing is timed."""

from __future__ import annotations

from workbench.run.events import RunBuilt, RunEvent, RunFinished
from workbench.run.service import RunService

from .conftest import FAST_TIMING


def test_a_backend_runs_while_another_still_builds(gated_saxpy, shared_cache_dir):
    root, gates = gated_saxpy
    events: list[tuple[str, str]] = []

    def on_event(event: RunEvent) -> None:
        if isinstance(event, RunBuilt | RunFinished):
            events.append(("built" if isinstance(event, RunBuilt) else "finished", event.backend))
        if isinstance(event, RunFinished) and event.backend == "wgsl":
            assert not gates["host"].exists()  # cpu's build cannot have ended: its gate is shut
            gates["host"].touch()

    service = RunService(timing=FAST_TIMING)
    try:
        report = service.run(
            root, backends=["cpu", "wgsl"], sizes={"n": 4096}, cache_dir=shared_cache_dir,
            reference="wgsl", on_event=on_event,
        )  # fmt: skip
    finally:
        service.close()
    # wgsl built, ran and was reported while cpu was still building; cpu followed once let go.
    assert events == [("built", "wgsl"), ("finished", "wgsl"), ("built", "cpu"), ("finished", "cpu")]
    # The report keeps the order asked (the reference first), as `workbench run --json` always had.
    assert [r.backend for r in report.results] == ["wgsl", "cpu"]
    wgsl, cpu = report.results
    assert wgsl.check.is_reference and cpu.verified is True and cpu.check["reference"] == "wgsl"
