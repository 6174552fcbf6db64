"""The window's side of typed events: every panel declares the bridge members it uses (a
`Protocol` in its own module) and the real `ServiceBridge` has each of them, signals as signals;
the bridge hands the panels the run service's typed events as they came, from the live loop and
from a console run alike."""

from __future__ import annotations

import inspect
import re
import typing
from pathlib import Path

import pytest
from PySide6.QtCore import SignalInstance

from workbench.profile.live.live import LiveEvent
from workbench.run.events import RunDone, RunEvent, RunFinished, RunPhase
from workbench.ui.artifacts_view import ArtifactsBridge
from workbench.ui.build_panel import BuildPanelBridge
from workbench.ui.ceilings_store import CeilingsOwner
from workbench.ui.console import ConsoleBridge
from workbench.ui.device_picker import DevicePickerBridge
from workbench.ui.plots.panel import PlotsBridge
from workbench.ui.result_details import DetailsBridge
from workbench.ui.results_table import ResultsBridge
from workbench.ui.sessions_panel import SessionsBridge
from workbench.ui.size_controls import SizeControlsBridge
from workbench.ui.trace_view import TraceBridge
from workbench.ui.tuning_panel import TuningBridge

PROTOCOLS = [ArtifactsBridge, BuildPanelBridge, CeilingsOwner, ConsoleBridge, DevicePickerBridge, PlotsBridge,
             DetailsBridge, ResultsBridge, SessionsBridge, SizeControlsBridge, TraceBridge, TuningBridge]  # fmt: skip
UI = Path(__file__).resolve().parents[2] / "workbench" / "ui"
TIMEOUT_MS = 600_000


def _members(protocol) -> tuple[dict[str, object], list[str]]:
    """(annotated members and their types, methods) a protocol declares."""
    hints = typing.get_type_hints(protocol)
    methods = [
        name
        for name, value in vars(protocol).items()
        if inspect.isfunction(value) and not name.startswith("_")
    ]
    return hints, methods


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=lambda p: p.__name__)
def test_the_service_bridge_has_what_each_panel_declares(bridge, protocol):
    hints, methods = _members(protocol)
    assert hints or methods
    assert isinstance(bridge, protocol)
    for name, kind in hints.items():
        if kind is SignalInstance:  # a signal the panel connects to, not a value it reads
            assert isinstance(getattr(bridge, name), SignalInstance), name
        else:
            assert hasattr(bridge, name), name
    for name in methods:
        own = inspect.signature(getattr(protocol, name))
        real = inspect.signature(getattr(bridge, name))
        assert callable(getattr(bridge, name)), name
        # Every parameter the panel may pass exists on the bridge under the same name.
        assert [p for p in own.parameters if p != "self"] == list(real.parameters), name


def test_no_panel_probes_the_bridge():
    probe = re.compile(r"\b(getattr|hasattr)\(\s*(self\.)?_?bridge\b")
    probing = [
        f"{path.name}:{number}: {line.strip()}"
        for path in sorted(UI.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if probe.search(line)
    ]
    assert probing == []


def test_the_panels_get_the_runs_typed_events_from_the_loop_and_the_console(qtbot, bridge, example_copy):
    bridge.set_project(example_copy("saxpy"))
    bridge.set_backends(["cpu"])
    bridge.set_devices(["cpu"])
    events: list = []
    bridge.runEvent.connect(events.append)

    with qtbot.waitSignal(bridge.runFinished, timeout=TIMEOUT_MS):
        bridge.run()  # the live loop's cycle: its LiveRunEvent is unwrapped once, in the bridge
    looped = list(events)
    report = bridge.run_blocking()  # the console's run: the service's events as they came
    qtbot.waitUntil(
        lambda: any(isinstance(e, RunDone) and e.report is report for e in events), timeout=30_000
    )
    console = events[len(looped) :]

    for run in (looped, console):
        assert run and all(isinstance(e, RunEvent) and not isinstance(e, LiveEvent) for e in run)
        assert [e.backend for e in run if isinstance(e, RunFinished)] == ["cpu"]
        assert (None, "inputs") in [(e.backend, e.phase) for e in run if isinstance(e, RunPhase)]
    assert [e.result for e in console if isinstance(e, RunFinished)] == report.results
