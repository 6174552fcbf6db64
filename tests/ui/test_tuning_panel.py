"""The Tuning panel in the real window (offscreen): a control change rebuilds and reruns with the
new configuration; a background sweep fills the plot with the recorded configurations' numbers,
flags a failing one, resumes, applies the best; a size sweep draws one curve per backend."""

from __future__ import annotations

import re

import numpy as np
from pytestqt.exceptions import TimeoutError

from tests.waits import HANG_GUARD_MS, WORK_GUARD_MS
from workbench.profile.sessions.store import SessionStore
from workbench.profile.tuning import tuning_view
from workbench.project import Project
from workbench.run.timing import TimingOptions

FAST = TimingOptions(min_n=5, min_time_s=0.02, warmup_max_n=6, warmup_max_s=0.3, max_time_s=2.0)
WGSL_LINE = "        y[i] = params.a * x[i] + y[i];"


def _window(make_window, root, backends):
    window = make_window(root, panels=("tuning", "results"))
    window.bridge.set_backends(backends)
    window.bridge.set_sizes({"n": 2048})
    panel = window.panels["tuning"]
    panel.timing = FAST
    window.docks["tuning"].raise_()
    return window, panel


def test_before_any_sweep_no_empty_bar_or_chooser_shows(make_window, example_copy, test_output_dir):
    from PySide6.QtWidgets import QComboBox, QProgressBar

    from workbench.ui.screenshot import save_screenshot

    window, panel = _window(make_window, example_copy("saxpy", tunables=("threads",)), ["cpu"])
    assert panel.isVisible()
    assert [w for w in panel.findChildren(QProgressBar) if w.isVisible()] == []
    empty = [w.toolTip() for w in panel.findChildren(QComboBox) if w.isVisible() and w.count() == 0]
    assert empty == []
    save_screenshot(window, test_output_dir / "tuning-before-sweep.png")


def test_changing_a_control_rebuilds_and_reruns(make_window, example_copy, qtbot):
    window, panel = _window(make_window, example_copy("saxpy", tunables=("threads",)), ["cpu", "wgsl"])
    control = panel.controls["threads"]
    assert [control.itemData(i) for i in range(control.count())] == [256, 64, 128, 512, 1024]
    with qtbot.waitSignal(window.bridge.runFinished, timeout=WORK_GUARD_MS) as done:
        control.setCurrentIndex(2)  # threads = 128
    report = done.args[0]
    assert {r.backend for r in report.results} == {"cpu", "wgsl"}
    for result in report.results:
        assert result.status == "ok" and result.provenance["tunables"] == {"threads": 128}
    wgsl = window.bridge.loop.last_build["wgsl"]
    assert "override threads: u32 = 128u;" in open(wgsl.artifacts[0]).read()
    assert next(r for r in report.results if r.backend == "wgsl").verified is True


def test_sweep_plot_shows_recorded_configs_flags_failures_resumes_and_applies(
    make_window, example_copy, qtbot, private_sessions_db
):
    root = example_copy("saxpy", tunables=("threads",))
    wgsl = root / "reference" / "saxpy.wgsl"
    # 512 writes a wrong value; every configuration but 128 does correct but slow extra work.
    slow = "var acc = 0.0; for (var k = 0u; k < 2000u; k++) { acc = acc + sin(f32(k) + x[i]); }"
    wgsl.write_text(
        wgsl.read_text().replace(
            WGSL_LINE,
            WGSL_LINE + "\n        if (threads == 512u) { y[i] = 0.5; }"
            f"\n        if (threads != 128u) {{ {slow} if (acc == 12345.0) {{ y[i] = 0.0; }} }}",
        )
    )
    window, panel = _window(make_window, root, ["wgsl"])
    assert panel.rounds.value() == 3
    assert not panel.progress.isVisible() and not panel.slot.isVisible()  # nothing to count yet
    with qtbot.waitSignal(panel.sweepFinished, timeout=WORK_GUARD_MS) as done:
        assert panel.start_sweep()
        assert panel.running() and panel.cancel_button.isEnabled() and panel.progress.isVisible()
    result = done.args[0]
    # 3 interleaved rounds of 5 (512 failed: not run again), then 2 side-by-side rounds of the leaders.
    assert len(result.entries) == 5 and panel.progress.value() == panel.progress.maximum() == 13 + 4
    assert panel.progress.text() == "17 of 17 runs"
    assert (
        panel.slot.isVisible() and panel.slot_label.isVisible() and panel.slot.currentText() == "wgsl@wgpu:0"
    )

    data = panel.plot_data()
    assert data["mode"] == "scatter" and data["tunable"] == "threads"
    assert data["failed"] == [{"slot": "wgsl@wgpu:0", "config": {"threads": 512}}]
    # Drawn in the failure lane under the plot at threads = 512, not at a time it never took.
    assert panel.failed_lane.model() == {"wgsl@wgpu:0": [{"x": 512.0, "why": "failed"}]}
    assert all(512 not in item.getData()[0] for item in panel.time_plot.series.values())
    series = data["series"]["wgsl@wgpu:0"]
    assert sorted(series["x"]) == [64, 128, 256, 1024]
    # The plotted numbers are the medians of the recorded rounds' medians.
    with SessionStore(private_sessions_db) as store:
        recorded = {
            e["config"]["threads"]: float(np.median([store.get_run(i)["median_s"] for i in e["run_ids"]]))
            for e in result.entries
        }
        assert (
            store.get_run(next(e["run_id"] for e in result.entries if e["config"]["threads"] == 512))[
                "verified"
            ]
            is False
        )
    assert {x: y for x, y in zip(series["x"], series["y"], strict=True)} == {
        k: recorded[k] for k in series["x"]
    }
    xs, ys = panel.time_plot.series["wgsl@wgpu:0"].getData()
    assert sorted(np.asarray(xs).tolist()) == sorted(series["x"]) and np.allclose(
        sorted(ys), sorted(series["y"])
    )
    failed_rows = [
        r for r in range(panel.table.rowCount()) if panel.table.item(r, 5).text().startswith("FAILED")
    ]
    assert [panel.table.item(r, 0).text() for r in failed_rows] == ["threads=512"]
    best = panel.best["wgsl@wgpu:0"]
    assert best["verdict"] == "winner" and best["winner"] == {"threads": 128}
    ranks = {
        panel.table.item(r, 0).text(): panel.table.item(r, 5).text() for r in range(panel.table.rowCount())
    }
    assert ranks["threads=128"] == "best"

    with qtbot.waitSignal(panel.sweepFinished, timeout=WORK_GUARD_MS) as again:
        panel.start_sweep()
    # The sweep's rounds are read back; only the side-by-side re-timing of the leaders runs again.
    swept = [(e["config"], r) for e in again.args[0].entries for r in e["rounds"] if not r["confirm"]]
    assert swept and all(r["resumed"] for _, r in swept), swept
    assert "1 failed, 0 skipped" in panel.status.text()

    assert panel.apply_button.isEnabled()
    assert panel.apply_best() == best["winner"]
    assert Project.open(root).manifest.kernel().default_tunables() == best["config"]
    assert panel.controls["threads"].currentData() == best["config"]["threads"]
    assert window.bridge.tunables() == best["config"]


def test_size_sweep_draws_one_curve_per_backend(make_window, example_copy, qtbot):
    window, panel = _window(make_window, example_copy("saxpy", tunables=("threads",)), ["cpu", "wgsl"])
    panel.size_spec.setText("n=2^10..2^11")
    with qtbot.waitSignal(panel.sweepFinished, timeout=WORK_GUARD_MS):
        assert panel.start_size_sweep()
    data = panel.size_plot_data()
    assert set(data["curves"]) == {"cpu@cpu", "wgsl@wgpu:0"}
    for curve in data["curves"].values():
        assert curve["x"] == [1024, 2048] and all(g > 0 for g in curve["gbps"])
    assert data["curves"]["cpu@cpu"]["gbps"] == panel.size_tab.data["curves"]["cpu@cpu"]["gbps"]
    assert set(data["ceilings"]) <= {"cpu@cpu", "wgsl@wgpu:0"}  # a line per measured device (cached ones)
    panel.size_metric.setCurrentText("time")
    times = panel.size_plot_data()
    assert (
        times["curves"]["wgsl@wgpu:0"]["median_s"] == panel.size_tab.data["curves"]["wgsl@wgpu:0"]["median_s"]
    )
    assert not times["ceilings"]


def test_two_tunables_draw_a_heatmap_of_the_recorded_medians(make_window, example_copy, qtbot):
    root = example_copy("saxpy", tunables=("threads",))
    toml = root / "workbench.toml"
    toml.write_text(
        toml.read_text().replace(
            "threads = [256, 64, 128, 512, 1024]", "threads = [256, 64]\nunroll = [1, 2]"
        )
    )
    window, panel = _window(make_window, root, ["cpu"])
    assert list(panel.controls) == ["threads", "unroll"]
    with qtbot.waitSignal(panel.sweepFinished, timeout=WORK_GUARD_MS) as done:
        assert panel.start_sweep()
    entries = done.args[0].entries
    assert len(entries) == 4 and all(e["verified"] is True for e in entries)
    data = panel.plot_data()
    assert data["mode"] == "heatmap" and data["slot"] == "cpu@cpu"
    assert data["x"] == [64, 256] and data["y"] == [1, 2]
    for e in entries:
        cell = data["median_s"][data["x"].index(e["config"]["threads"])][
            data["y"].index(e["config"]["unroll"])
        ]
        assert cell == e["timing"]["median_s"]
    assert np.allclose(panel.time_plot.heatmap.image, np.array(data["median_s"]))
    # The cpu build reads neither tunable: one point, no best, nothing to apply.
    best = panel.best["cpu@cpu"]
    assert best["verdict"] == "no effect" and best["no_effect"] == ["threads", "unroll"]
    assert "; threads, unroll no effect on cpu" in panel.status.text()
    ranks = {panel.table.item(r, 5).text() for r in range(panel.table.rowCount())}
    assert ranks == {"one build for all: threads, unroll no effect"}
    assert not panel.apply_button.isEnabled() and panel.apply_best() is None
    assert "Apply refused: cpu@cpu: threads, unroll have no effect on cpu" in panel.status.text()


def test_sweep_runs_through_a_local_cluster_of_two_chosen_in_the_panel(
    make_window, example_copy, qtbot, private_sessions_db
):
    window, panel = _window(make_window, example_copy("saxpy", tunables=("threads",)), ["cpu", "wgsl"])
    panel.rounds.setValue(1)
    panel.confirm_rounds = 0
    assert panel.cluster.currentText() == "none" and panel.cluster_spec() is None
    panel.cluster.setEditText("local:2")
    assert panel.cluster_spec() == "local:2" and not panel.cluster_error.isVisible()
    with qtbot.waitSignal(panel.sweepFinished, timeout=WORK_GUARD_MS) as done:
        assert panel.start_sweep()
        assert not panel.cluster.isEnabled()  # the cluster of a running sweep is fixed
    result = done.args[0]
    assert result is not None, panel.status.text()
    # Real Dask worker processes: the sweep's description names two, and the recorded rows say
    # which of them ran each configuration.
    workers = {w["worker"] for w in result.cluster["workers"]}
    assert result.cluster["spec"] == "local:2" and len(workers) == 2
    assert len(result.entries) == 10 and all(e["status"] == "ok" for e in result.entries)
    with SessionStore(private_sessions_db) as store:
        rows = [store.get_run(i, samples=False) for e in result.entries for i in e["run_ids"]]
    ran_on = {r["detail"]["provenance"]["cluster"]["worker"] for r in rows}
    assert len(rows) == 10 and ran_on == workers
    assert panel.status.text().startswith("done: 10 result(s), 0 failed")
    assert panel.cluster.isEnabled()


def test_an_invalid_cluster_spec_is_marked_with_the_parsers_message_and_nothing_starts(
    make_window, example_copy, private_sessions_db
):
    from workbench.profile.tuning.cluster.connect import ClusterError, parse

    window, panel = _window(make_window, example_copy("saxpy", tunables=("threads",)), ["cpu"])
    panel.cluster.setEditText("tcp://nowhere")
    try:
        parse("tcp://nowhere")
    except ClusterError as exc:
        message = str(exc)
    assert "expected local, local:N" in message
    assert panel.cluster_error.isVisible() and panel.cluster_error.text() == message
    assert panel.cluster.toolTip() == message and "border" in panel.cluster.lineEdit().styleSheet()
    assert panel.start_sweep() is False and not panel.running()
    assert panel.start_size_sweep() is False and not panel.running()
    assert panel.status.text() == f"not started: {message}"
    assert not private_sessions_db.exists()  # nothing ran, nothing was recorded
    panel.cluster.setEditText("none")  # back to the default: the mark goes
    assert not panel.cluster_error.isVisible() and panel.cluster.lineEdit().styleSheet() == ""


def test_a_search_draws_its_convergence_and_the_heatmap_says_what_it_shows(
    make_window, example_copy, qtbot, private_sessions_db, test_output_dir
):
    """Issue 41 item 5 and issue 36 item 2: strategy and budget controls, the convergence plot,
    a heatmap opened on the slot the tunables affect (wgsl: `threads` is not read by cpu) with
    ticks that are the tunables' values, a colour bar in the timing's unit, values printed and on
    hover, identical builds labelled, the verdict written, Apply's reason, the status cleared."""
    from workbench.profile.tuning import strategies

    root = example_copy("saxpy")  # threads × vector
    window, panel = _window(make_window, root, ["cpu", "wgsl"])
    assert [panel.strategy.itemText(i) for i in range(panel.strategy.count())] == list(strategies.NAMES)
    assert panel.strategy.currentText() == "grid" and panel.budget.text() == "all"
    assert panel.apply_reason.text() == "Apply: no sweep has ranked a configuration yet"
    assert not panel.apply_button.isEnabled() and "no sweep has ranked" in panel.apply_button.toolTip()
    panel.budget.setValue(4)
    assert panel.strategy.currentText() == strategies.DEFAULT  # a budget asks for a search
    panel.strategy.setCurrentText("annealing")
    panel.rounds.setValue(2)
    panel.confirm_rounds = 0
    with qtbot.waitSignal(panel.sweepFinished, timeout=WORK_GUARD_MS) as done:
        assert panel.start_sweep()
        assert not panel.apply_button.isEnabled() and panel.apply_reason.text() == "Apply: a sweep is running"
    result = done.args[0]
    assert result.search["strategy"] == "annealing" and result.search["evaluations"] == 4
    assert len({str(e["config"]) for e in result.entries}) == 4  # only what the search chose
    assert panel.status.text().startswith("done: annealing chose 4 configuration(s)")

    conv = panel.convergence_data()
    assert conv["n"] == [1, 2, 3, 4]
    bests = [b for b in conv["best"] if b is not None]
    assert bests == sorted(bests, reverse=True)  # the best so far never rises
    assert len(conv["random"]) == sum(e.value is not None for e in panel.evaluations)
    drawn = [item for item in panel.convergence_plot.listDataItems()]
    assert len(drawn) == 2 and list(drawn[0].getData()[0]) == conv["n"][-len(bests) :]

    # Opened on wgsl, where threads changes the build, not on cpu@cpu (first in order).
    assert panel.slot.currentText() == "wgsl@wgpu:0"
    data = panel.plot_data()
    assert data["mode"] == "heatmap" and data["tunables"] == ["threads", "vector"]
    assert data["ticks"] == [[str(v) for v in data["x"]], [str(v) for v in data["y"]]]
    assert set(data["x"]) <= {64, 128, 256, 512, 1024} and set(data["y"]) <= {1, 4}
    bottom = panel.plot.getAxis("bottom")._tickLevels[0]
    assert [label for _, label in bottom] == data["ticks"][0]
    assert [pos for pos, _ in bottom] == list(range(len(data["x"])))
    finite = [v for row in data["median_s"] for v in row if v == v]
    assert data["colorbar"]["levels"] == [min(finite), max(finite)]
    assert panel.time_plot.colorbar is not None and tuple(panel.time_plot.colorbar.levels()) == tuple(
        data["colorbar"]["levels"]
    )
    assert (
        panel.time_plot.colorbar.axis.labelUnits == "s"
        and panel.time_plot.colorbar.axis.labelText == "median"
    )
    # Every ranked cell printed (few) and on hover, with its configuration.
    assert sorted(label.toPlainText() for label in panel.time_plot.cell_labels) == sorted(
        c["text"] for c in data["cells"].values()
    )
    key, cell = next(iter(data["cells"].items()))
    i, j = (int(k) for k in key.split(","))
    hover = panel.hover_text(i + 0.2, j - 0.3)
    assert hover.startswith(f"threads={data['x'][i]}, vector={data['y'][j]}: median ")
    assert panel.verdict.text() == data["verdict"] and data["verdict"].startswith("wgsl@wgpu:0: ")
    from workbench.ui.screenshot import save_screenshot

    window.resize(1280, 800)
    save_screenshot(window, test_output_dir / "tuning-search-heatmap.png")
    panel.tabs.setCurrentWidget(panel.convergence_plot)
    save_screenshot(window, test_output_dir / "tuning-search-convergence.png")
    panel.tabs.setCurrentIndex(0)
    best = panel.best["wgsl@wgpu:0"]
    if best["winner"] is None:  # two rounds on a busy machine: most often a tie
        assert (
            panel.apply_reason.text()
            == "Apply: no unique winner on wgsl@wgpu:0 (a tie within noise): nothing to apply"
        )
        assert "tie set" in data["verdict"]
    else:
        assert panel.apply_button.isEnabled() and panel.apply_reason.text() == ""

    # On cpu, threads changes nothing: the configurations differing only in threads are one build.
    panel.slot.setCurrentText("cpu@cpu")
    cpu = panel.plot_data()
    assert cpu["slot"] == "cpu@cpu" and panel.slot.currentText() == "cpu@cpu"  # the user's choice holds
    by_vector: dict[int, list] = {}
    for e in result.entries:
        if e["backend"] == "cpu":
            by_vector.setdefault(e["config"]["vector"], []).append(e["config"])
    merged = [configs for configs in by_vector.values() if len(configs) > 1]
    assert sorted(len(g["configs"]) for g in cpu["same_build"]) == sorted(len(m) for m in merged)
    for group in cpu["same_build"]:
        texts = [c["text"] for c in cpu["cells"].values() if c["label"] == group["label"]]
        assert texts and all(t.endswith(f"≡{group['label']}") for t in texts)
    # Apply follows the ranking of the slot shown: whether cpu's `vector` wins beyond the noise is
    # the machine's to say (at load 10 it did, and Apply was enabled with no reason).
    reason = tuning_view.apply_reason(panel.best, "cpu@cpu", running=False)
    assert panel.apply_reason.text() == (f"Apply: {reason}" if reason else "")
    assert panel.apply_button.isEnabled() == (reason is None)

    # A hot-reload run's "running …" line is cleared when its result comes.
    with qtbot.waitSignal(window.bridge.runFinished, timeout=WORK_GUARD_MS):
        panel.controls["threads"].setCurrentIndex(1)
        assert panel.status.text().startswith("running threads=64")
    qtbot.waitUntil(lambda: panel.status.text() == "", timeout=HANG_GUARD_MS)


def test_one_tunables_plot_ticks_its_values_and_prints_them_inside_the_plot(make_window, example_copy, qtbot):
    """At 1280×800 in the whole window after a sweep of two values of `threads`: the ticks are the
    values as the manifest writes them ("64", not "64.0"), and each printed median lies wholly
    inside the plot (the view clips what lies outside: "1.287 ms" was shown for 61.287 ms)."""
    root = example_copy("saxpy", tunables=("threads",))
    manifest = root / "workbench.toml"
    text, count = re.subn(r"(?m)^threads = \[.*\]", "threads = [256, 64]", manifest.read_text(), count=1)
    assert count == 1  # [kernel.tunables]' threads, the first such line ([kernel.launch] has its own)
    manifest.write_text(text)
    window = make_window(root)
    window.resize(1280, 800)
    window.bridge.set_backends(["cpu", "wgsl"])  # the reference: wgsl's results are verified, ranked
    window.bridge.set_sizes({"n": 2048})
    panel = window.panels["tuning"]
    panel.timing = FAST
    panel.rounds.setValue(2)  # medians ranked (and printed) need rounds to compare
    window.docks["tuning"].raise_()
    with qtbot.waitSignal(panel.sweepFinished, timeout=WORK_GUARD_MS):
        assert panel.start_sweep()
    data = panel.plot_data()
    assert len(data["cells"]) == 2, (
        panel.status.text(),
        [(e["config"], e.get("error")) for e in panel.entries],
    )
    assert data["mode"] == "scatter" and sorted(data["ticks"], key=int) == ["64", "256"]
    assert sorted(panel.plot.getAxis("bottom")._tickLevels[0]) == [(64.0, "64"), (256.0, "256")]
    assert len(panel.time_plot.cell_labels) == 2
    view = panel.plot.getViewBox()

    def outside() -> list[str]:
        return [
            label.toPlainText()
            for label in panel.time_plot.cell_labels
            if not view.sceneBoundingRect().contains(label.sceneBoundingRect())
        ]

    try:
        qtbot.waitUntil(lambda: not outside(), timeout=5_000)  # the view's range follows its layout
    except TimeoutError:
        pass
    assert not outside(), f"printed medians cut by the plot's edge: {outside()}"
    # The lines are named under the plot, never over the data: no legend box in the plot (at
    # 1280×800 it lay over the points and the orange line crossed "cpu@cpu"); the legend line lies
    # below the plot's area at both sizes and names each line in its colour.
    from tests.waits import settle_qt
    from workbench.ui.plots.base import SeriesColors

    assert panel.plot.getPlotItem().legend is None
    legend = panel.time_plot.legend
    for width, height in ((1280, 800), (1600, 1000)):
        window.resize(width, height)
        settle_qt()
        assert legend.isVisible()
        plot_rect = panel.plot.geometry()
        legend_rect = legend.geometry()
        assert legend_rect.top() >= plot_rect.bottom(), (legend_rect.getRect(), plot_rect.getRect())
        assert legend_rect.height() >= legend.heightForWidth(legend_rect.width())  # every line shown
        colours = SeriesColors()
        for slot in sorted(panel.time_plot.series):
            assert f'color:{colours(slot)}">■</span>&nbsp;{slot}' in legend.text()
            pen = panel.time_plot.series[slot].opts["pen"]
            assert pen.color().name() == colours(slot).lower()


def test_a_sweeps_results_keep_the_plots_geometry_and_each_turns_results_are_drawn_once(
    make_window, example_copy, qtbot
):
    """At 1280×800: the labels above the plot (status, verdict, Apply's reason) keep their height
    whatever their text, so the plot keeps its geometry from the first result drawn to the last
    (it shrank 408 → 373 px as they gained lines, re-laid out and repainted at each result); a
    text too long for its lines is cut with its whole text in the tooltip. Results arriving in
    one turn of the event loop are drawn once, and none while the panel is behind another dock
    (drawn when it is raised)."""
    from tests.waits import settle_qt
    from workbench.profile.tuning.events import SweepEntries

    root = example_copy("saxpy", tunables=("threads",))
    manifest = root / "workbench.toml"
    manifest.write_text(
        re.sub(r"(?m)^threads = \[.*\]", "threads = [256, 64]", manifest.read_text(), count=1)
    )
    window = make_window(root)
    window.resize(1280, 800)
    window.bridge.set_backends(["cpu", "wgsl"])
    window.bridge.set_sizes({"n": 2048})
    panel = window.panels["tuning"]
    panel.timing = FAST
    panel.rounds.setValue(2)
    window.docks["tuning"].raise_()
    settle_qt()
    with qtbot.waitSignal(panel.sweepFinished, timeout=WORK_GUARD_MS):
        assert panel.start_sweep()
        qtbot.waitUntil(lambda: panel.time_plot.draws >= 1, timeout=WORK_GUARD_MS)
        settle_qt()
        first = panel.plot.geometry()
    settle_qt()
    assert panel.status.text().startswith("done: ") and panel.verdict.text()
    assert panel.plot.geometry() == first, (first.getRect(), panel.plot.geometry().getRect())
    long = "a reason that goes on " * 60
    for label in (panel.status, panel.verdict, panel.apply_reason):
        label.setText(long)
    settle_qt()
    assert panel.plot.geometry() == first
    assert panel.status.text() == long and panel.status.toolTip() == long and panel.status.is_cut()

    data, draws = panel.plot_data(), panel.time_plot.draws
    result = SweepEntries(0, 1, [], False, 0, False, merged=panel.entries, best=panel.best)
    for _ in range(5):  # through the runner's queued relay, as the sweep's thread posts them
        panel.runner._relay.posted.emit(result)
    settle_qt()
    assert panel.time_plot.draws == draws + 1
    assert panel.plot_data() == data and sorted(panel.time_plot.series) == sorted(data["series"])

    window.docks["sessions"].raise_()  # the Tuning dock's tab behind it
    settle_qt()
    panel.runner._relay.posted.emit(result)
    settle_qt()
    assert panel.time_plot.draws == draws + 1  # not drawn off screen
    window.docks["tuning"].raise_()
    qtbot.waitUntil(lambda: panel.time_plot.draws == draws + 2, timeout=HANG_GUARD_MS)
