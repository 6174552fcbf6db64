"""The window's side of typed events: every panel declares the bridge members it uses (a
`Protocol` in its own module) and the real `ServiceBridge` has each of them, signals as signals;
the bridge hands the panels the run service's typed events as they came, from the live loop and
from a console run alike."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import typing
from collections.abc import Mapping
from pathlib import Path

import pytest
from PySide6.QtCore import SignalInstance

from tests.waits import HANG_GUARD_MS, WORK_GUARD_MS
from workbench.profile.live.live_events import LiveEvent
from workbench.profile.tuning.events import SweepEntries, SweepEvent
from workbench.run.events import Event, RunDone, RunEvent, RunFinished, RunPhase
from workbench.ui.artifacts.view import ArtifactsBridge
from workbench.ui.build.panel import BuildPanelBridge
from workbench.ui.ceilings_store import CeilingsOwner
from workbench.ui.console.panel import ConsoleBridge
from workbench.ui.counters.view import CountersBridge
from workbench.ui.debug import DebugBridge
from workbench.ui.devices.picker import DevicePickerBridge
from workbench.ui.plots.panel import PlotsBridge
from workbench.ui.results.details import DetailsBridge
from workbench.ui.results.table import ResultsBridge
from workbench.ui.results.trace_view import TraceBridge
from workbench.ui.sessions.panel import SessionsBridge
from workbench.ui.size_controls import SizeControlsBridge
from workbench.ui.tuning.panel import TuningBridge

PROTOCOLS = [ArtifactsBridge, BuildPanelBridge, CeilingsOwner, ConsoleBridge, CountersBridge, DebugBridge, DevicePickerBridge, PlotsBridge,
             DetailsBridge, ResultsBridge, SessionsBridge, SizeControlsBridge, TraceBridge, TuningBridge]  # fmt: skip
UI = Path(__file__).resolve().parents[2] / "workbench" / "ui"
TIMEOUT_MS = WORK_GUARD_MS


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
        lambda: any(isinstance(e, RunDone) and e.report is report for e in events), timeout=HANG_GUARD_MS
    )
    console = events[len(looped) :]

    for run in (looped, console):
        assert run and all(isinstance(e, RunEvent) and not isinstance(e, LiveEvent) for e in run)
        assert [e.backend for e in run if isinstance(e, RunFinished)] == ["cpu"]
        assert (None, "inputs") in [(e.backend, e.phase) for e in run if isinstance(e, RunPhase)]
    assert [e.result for e in console if isinstance(e, RunFinished)] == report.results


# ---------------------------------------------------------------- no event is read as a dict
REPO = UI.parents[1]
#: Where events are read: the code, the benchmarks that time it and the tests that drive it.
SCANNED = ("workbench", "benchmarks", "tests")
#: What a dict reader calls; an event has none of these.
DICT_METHODS = {"get", "keys", "items", "values", "to_dict"}


def _event_classes() -> list[type]:
    """Every typed event class: the run's, the live loop's and a sweep's (all derive from
    `run.events.Event`)."""
    found, todo = [], [Event]
    while todo:
        for sub in todo.pop().__subclasses__():
            found.append(sub)
            todo.append(sub)
    return found


EVENT_CLASSES = _event_classes()
EVENT_NAMES = {cls.__name__ for cls in EVENT_CLASSES} | {"Event"}


def _names_in(node: ast.AST | None) -> set[str]:
    """The names an annotation or an isinstance() class argument spells (strings included)."""
    if node is None:
        return set()
    names = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            names.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            names.add(sub.attr)
        elif isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            names.update(re.findall(r"\w+", sub.value))
    return names


def _event_names(function: ast.AST) -> set[str]:
    """The names that hold an event in `function`: a parameter annotated with an event class, a
    parameter called `event` that is not declared a dict (a lambda's, an unannotated callback's),
    and any name an `isinstance(name, <event class>)` in it narrows to an event."""
    held = set()
    for arg in [*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs]:
        declared = _names_in(arg.annotation)
        if declared & EVENT_NAMES or (arg.arg == "event" and not declared & {"dict", "Mapping"}):
            held.add(arg.arg)
    for node in ast.walk(function):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "isinstance"
            and len(node.args) == 2
            and isinstance(node.args[0], ast.Name)
            and _names_in(node.args[1]) & EVENT_NAMES
        ):
            held.add(node.args[0].id)
    return held


def _holds_event(node: ast.AST, held: set[str]) -> bool:
    """`node` is an event: a held name, or a `LiveRunEvent`'s `.event` of one."""
    if isinstance(node, ast.Attribute) and node.attr == "event":
        node = node.value
    return isinstance(node, ast.Name) and node.id in held


def dict_reads(source: str, filename: str) -> list[str]:
    """Where `source` reads an event as a dict: `event[...]` or `event.get(...)` (and the other
    dict methods) on a name that holds an event (`_event_names`)."""
    found: set[tuple[int, str]] = set()
    for function in ast.walk(ast.parse(source, filename)):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        held = _event_names(function)
        for node in ast.walk(function):
            if isinstance(node, ast.Subscript) and _holds_event(node.value, held):
                found.add((node.lineno, ast.unparse(node)))
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in DICT_METHODS
                and _holds_event(node.func.value, held)
            ):
                found.add((node.lineno, ast.unparse(node)))
    return [f"{filename}:{line}: {text}" for line, text in sorted(found)]


def test_an_event_cannot_be_read_as_a_dict():
    # The eight run events, the live loop's seven, a sweep's five and their bases.
    assert len(EVENT_CLASSES) >= 20
    assert issubclass(SweepEntries, SweepEvent) and SweepEntries in EVENT_CLASSES
    for cls in [Event, *EVENT_CLASSES]:
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen, cls
        # No event leaves its process, so none serializes itself either (`to_dict`).
        assert not {"__getitem__", *DICT_METHODS} & set(dir(cls)), cls
    phase = RunPhase("cpu", "timing")
    with pytest.raises(TypeError):
        phase["phase"]
    assert not isinstance(phase, Mapping)


def test_the_dict_read_scan_finds_what_it_looks_for():
    bad = (
        "def on_event(event):\n    return event['kind']\n"
        "def typed(e: RunEvent | None):\n    return e.get('backend')\n"
        "def narrowed(x):\n    if isinstance(x, (RunFinished, RunDone)):\n        return x['result']\n"
        "def wrapped(e: LiveEvent):\n    return e.event['backend']\n"
        "subscribe(lambda event: event['kind'] == 'idle')\n"
    )
    assert [hit.split(": ", 1)[1] for hit in dict_reads(bad, "bad.py")] == [
        "event['kind']", "e.get('backend')", "x['result']", "e.event['backend']", "event['kind']"
    ]  # fmt: skip
    fine = (
        "def progress(event: dict[str, Any]):\n    return event['kind']\n"  # declared a dict: not an event
        "def on_event(event: RunEvent):\n    return event.backend\n"
        "def rows(entry):\n    return entry['backend']\n"
    )
    assert dict_reads(fine, "fine.py") == []


def test_no_code_reads_an_event_as_a_dict():
    sources = [path for top in SCANNED for path in sorted((REPO / top).rglob("*.py"))]
    assert len(sources) > 100
    reads = [hit for path in sources for hit in dict_reads(path.read_text(), str(path.relative_to(REPO)))]
    assert reads == []
