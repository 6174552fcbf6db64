"""The window's runs are recorded by the core (the bridge's `SessionRecorder`), not by a panel:
with no Sessions panel, or one that fails to build, every run still reaches the database, with
the sources its build read, not the ones on disk when the result arrives."""

from __future__ import annotations

import pytest

from workbench.profile.sessions.store import SessionStore
from workbench.run.events import RunStarted


def _cpu_only(window) -> None:
    window.bridge.set_backends(["cpu"])
    window.bridge.set_devices(["cpu"])


def _broken_panel(monkeypatch) -> None:
    from workbench.ui import sessions_panel

    def fail(self):
        raise RuntimeError("the sessions panel is broken")

    monkeypatch.setattr(sessions_panel.SessionsPanel, "_build_ui", fail)


@pytest.mark.parametrize("panel", ["not built", "fails to build"])
def test_a_window_run_is_recorded_without_a_sessions_panel(
    panel, make_window, example_copy, private_sessions_db, qtbot, monkeypatch
):
    if panel == "fails to build":
        _broken_panel(monkeypatch)
        panels = ("sessions", "results")
    else:
        panels = ("results",)
    root = example_copy("saxpy")
    window = make_window(root, panels=panels)
    assert not hasattr(window.panels.get("sessions"), "recorded")  # no working Sessions panel
    _cpu_only(window)
    with qtbot.waitSignal(window.bridge.runRecorded, timeout=180_000) as done:
        window.bridge.run()  # the window's Run (through the live loop)
    ids = done.args[0].get("ids")
    assert ids, done.args[0]
    with qtbot.waitSignal(window.bridge.runRecorded, timeout=180_000) as again:
        window.bridge.start_run(["cpu"], ["cpu"])  # the console's run()
    assert again.args[0].get("ids"), again.args[0]
    with SessionStore(private_sessions_db) as store:
        runs = store.list_runs()
        assert sorted(r["id"] for r in runs) == sorted(ids + again.args[0]["ids"])
        assert {(r["backend"], r["kernel"]) for r in runs} == {("cpu", "saxpy")}
        files = store.source(runs[0]["snapshot_hash"])
        assert files["src/lib.rs"] == (root / "src" / "lib.rs").read_text()


def test_the_recorded_sources_are_the_ones_built_not_the_ones_saved_meanwhile(
    make_window, example_copy, private_sessions_db, qtbot
):
    root = example_copy("saxpy")
    lib = root / "src" / "lib.rs"
    built = lib.read_text()
    window = make_window(root, panels=("results",))
    _cpu_only(window)
    edited = []

    def edit_once_running(event) -> None:
        # The build is done and the run under way: an editor saves the file before the result.
        if isinstance(event, RunStarted) and not edited:
            lib.write_text(built + "\n// saved while the run was going\n")
            edited.append(True)

    window.bridge.runEvent.connect(edit_once_running)
    with qtbot.waitSignal(window.bridge.runRecorded, timeout=180_000) as done:
        window.bridge.run()
    assert edited and done.args[0].get("ids"), done.args[0]
    with SessionStore(private_sessions_db) as store:
        (run,) = store.list_runs()
        recorded = store.source(run["snapshot_hash"])
    assert recorded["src/lib.rs"] == built != lib.read_text()
