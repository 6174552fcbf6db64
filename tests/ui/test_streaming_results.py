"""Results stream in (issue 21): in the real window, each backend runs as soon as its own build is
done, and a backend whose runtime is unavailable (nvptx without CUDA) is built in the background
without holding the results back; the window's status and run table say so.

The slow builds are real cargo builds held by the crate's build.rs until the test opens a gate
file (one for the host target, i.e. cpu, one for nvptx): what is asserted is an order of events
that a gate makes certain, never a duration."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.build.conftest import processes_with
from tests.conftest import niceness_of_stat
from tests.waits import HANG_GUARD_MS, WORK_GUARD_MS
from workbench.build.service import BACKGROUND_NICENESS
from workbench.build.toolchains import detect
from workbench.project import Project
from workbench.run.service import BACKGROUND_BUILD_NOTE
from workbench.ui.build.panel import BuildPanel
from workbench.ui.results.table import ResultsTable

TIMEOUT_MS = WORK_GUARD_MS


def _compiling_in(root: Path, marker: str) -> list[int]:
    """Processes with `marker` on their command line working in the crate `root` (cargo runs
    there, and its rustc and build scripts), not another build on the same machine."""
    found = []
    for pid in processes_with(marker):
        try:
            if Path(f"/proc/{pid}/cwd").resolve() == root.resolve():
                found.append(pid)
        except OSError:
            continue  # it exited
    return found


def test_results_stream_in_and_an_unrunnable_backend_builds_in_the_background(
    qtbot, make_widget, bridge, gated_saxpy
):
    nvptx = detect("nvptx")
    if not nvptx.found:
        pytest.skip(f"no nvptx toolchain: {nvptx.hint}")
    if bridge.run_service.devices("cuda").get("available"):
        pytest.skip("CUDA is available here: nvptx would run, not build in the background")
    root, gates = gated_saxpy
    bridge.set_project(root)
    bridge.set_backends(["cpu", "wgsl", "nvptx"])
    bridge.set_devices(["cpu", "wgpu:0"])
    bridge.loop.reference = "wgsl"  # cpu is then checked against wgsl when its build is let go
    table = make_widget(ResultsTable, bridge, show=True)
    panel = make_widget(BuildPanel, bridge, show=True)
    messages: list[str] = []
    bridge.statusMessage.connect(messages.append)
    finished: list = []
    bridge.runFinished.connect(finished.append)

    bridge.run()
    # wgsl's result is in the table while cpu's build is held at its gate; nvptx (CUDA was
    # probed above: its runtime is known to be unavailable) waits for the runs, not started.
    qtbot.waitUntil(lambda: {r["Backend"]: r["Verified"] for r in table.row_texts()} == {"wgsl": "reference"},
                    timeout=TIMEOUT_MS)  # fmt: skip
    assert panel.state("cpu") == "building" and panel.state("nvptx") == "waiting"
    assert not finished and not gates["host"].exists()
    assert not _compiling_in(root, "nvptx64-nvidia-cuda")  # no cargo or rustc for it yet

    gates["host"].touch()  # cpu builds, runs and is checked; nvptx is still held
    qtbot.waitUntil(lambda: bool(finished), timeout=TIMEOUT_MS)
    rows = {r["Backend"]: r for r in table.row_texts()}
    assert rows["cpu"]["Verified"] == "✓ yes", rows["cpu"]
    assert rows["wgsl"]["Verified"] == "reference"
    assert rows["nvptx"]["Status"] == "skipped" and BACKGROUND_BUILD_NOTE in rows["nvptx"]["Check"]
    report = finished[-1]
    by_backend = {r.backend: r for r in report.results}
    assert by_backend["cpu"].verified is True and by_backend["wgsl"].check.is_reference
    # The results did not wait for nvptx; it started once they were in.
    qtbot.waitUntil(lambda: panel.state("nvptx") == "building", timeout=HANG_GUARD_MS)
    assert not gates["nvptx"].exists()
    qtbot.waitUntil(
        lambda: any("nvptx still building in the background" in m for m in messages), timeout=HANG_GUARD_MS
    )
    assert bridge.busy  # work in flight: Cancel can stop it

    # The next Run neither waits for nor restarts the build still going on in the background.
    bridge.run()
    qtbot.waitUntil(lambda: len(finished) == 2, timeout=TIMEOUT_MS)
    assert {r.backend: r.status for r in finished[-1].results} == {
        "wgsl": "ok",
        "cpu": "ok",
        "nvptx": "skipped",
    }
    assert panel.state("nvptx") == "building" and not gates["nvptx"].exists()

    with qtbot.waitSignal(bridge.buildFinished, timeout=TIMEOUT_MS) as built:
        gates["nvptx"].touch()
    assert set(built.args[0]) == {"nvptx"} and built.args[0]["nvptx"].status == "ok"  # PTX to inspect
    qtbot.waitUntil(lambda: panel.state("nvptx") == "ok", timeout=HANG_GUARD_MS)
    qtbot.waitUntil(lambda: not bridge.busy, timeout=HANG_GUARD_MS)
    assert bridge.last_build["nvptx"].status == "ok" and bridge.last_build["cpu"].status == "ok"
    assert any(m.startswith("built in the background, for inspection: nvptx ok") for m in messages)
    assert len(finished) == 2  # the background build did not rerun or re-report anything
    # Nobody waited for nvptx: its build ran below the priority of cpu's, the result's path.
    host = niceness_of_stat(Path(f"{gates['host']}.stat").read_text())
    background = niceness_of_stat(Path(f"{gates['nvptx']}.stat").read_text())
    assert host == os.getpriority(os.PRIO_PROCESS, 0) and background == min(19, host + BACKGROUND_NICENESS)


def test_the_window_defaults_to_the_command_lines_backends(qtbot, bridge, example_copy):
    """Nobody chose: the window's backends are `RunService.default_backends`, the command line's
    rule (here: no CUDA, so no nvptx), and a run uses them."""
    project = Project.open(example_copy("saxpy"))
    expected = bridge.run_service.default_backends(project)
    bridge.set_backends([])
    shown: list = []
    bridge.backendsChanged.connect(shown.append)
    bridge.set_project(project)
    qtbot.waitUntil(lambda: bool(shown), timeout=WORK_GUARD_MS)
    assert shown[-1] == expected and bridge.backends() == []  # shown, still nobody's choice
    if not bridge.run_service.devices("cuda").get("available"):
        assert "nvptx" not in expected
    bridge.set_sizes({"n": 1024})
    with qtbot.waitSignal(bridge.runFinished, timeout=TIMEOUT_MS) as finished:
        bridge.run()
    assert [r.backend for r in finished.args[0].results] == expected


def test_the_windows_backend_menu_shows_the_default_and_keeps_it_nobodys_choice(
    make_window, qtbot, example_copy
):
    """A window nobody chose backends in checks the command line's default in its Backends menu,
    and closing it does not turn that into a remembered choice (a newer default still applies)."""
    from workbench.ui.settings import load_settings

    window = make_window(example_copy("saxpy"), panels=("build",))
    expected = window.bridge.run_service.default_backends(window.project)
    qtbot.waitUntil(lambda: window.selected_backends() == expected, timeout=WORK_GUARD_MS)
    assert window.bridge.backends() == []
    window.persist_settings = True
    window.close()
    assert load_settings().backends == []


def test_a_rows_verdict_is_shown_before_its_timing(qtbot, make_widget, bridge, example_copy):
    """Each row shows its verdict as soon as its output is checked, its median reading "timing…"
    while the samples are taken; the finished run's rows all carry their timing."""
    from workbench.result_text import TIMING_PENDING
    from workbench.run.events import RunFinished, RunVerified

    bridge.set_project(example_copy("saxpy"))
    bridge.set_backends(["cpu", "wgsl"])
    bridge.set_devices(["cpu", "wgpu:0"])
    bridge.set_sizes({"n": 4096})
    table = make_widget(ResultsTable, bridge, show=True)
    seen: list[tuple[str, str, dict]] = []  # (event, backend, that backend's row as then shown)
    # Connected after the table: its slot has run when this one reads the rows.
    bridge.runEvent.connect(
        lambda e: (
            isinstance(e, RunVerified | RunFinished)
            and seen.append(
                (type(e).__name__, e.backend, next(r for r in table.row_texts() if r["Backend"] == e.backend))
            )
        )
    )
    with qtbot.waitSignal(bridge.runFinished, timeout=TIMEOUT_MS):
        bridge.run()
    assert [(kind, backend) for kind, backend, _ in seen] == [
        ("RunVerified", "cpu"),
        ("RunFinished", "cpu"),
        ("RunVerified", "wgsl"),
        ("RunFinished", "wgsl"),
    ]
    early = {backend: row for kind, backend, row in seen if kind == "RunVerified"}
    assert early["cpu"]["Median"] == TIMING_PENDING and early["cpu"]["Verified"] == "reference"
    assert early["wgsl"]["Median"] == TIMING_PENDING and early["wgsl"]["Verified"] == "✓ yes"
    rows = table.row_texts()
    assert {r["Backend"] for r in rows} == {"cpu", "wgsl"}
    assert all(r["Median"] not in ("", TIMING_PENDING) and r["Median"][0].isdigit() for r in rows), rows
