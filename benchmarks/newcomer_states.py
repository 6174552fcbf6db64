"""Issue 21's evidence: the real window in each state the issue lists, one PNG each under
benchmarks/results/newcomer/ and the data or geometry behind every picture in newcomer.json.

    python benchmarks/newcomer_states.py [--only first_run_streaming,layout_1280x800,...]
                                         [--out-dir DIR] [--cache-dir DIR]

Runs under Xvfb when there is no display (see `window_shots.py`), on copies of the bundled
examples in a temporary folder. Each state asserts what the tests assert for it (cells inside the
viewport, rows in view, a Diagnostics row at the manifest's line, the plots' data, ...); a failed
state is recorded with its message and the script exits 1. Sources are changed through patterns
(the first `name[index] = value;` store, the first `direction = ...`), not exact example lines.
The first-result and edit → result times are `benchmarks/hot_reload.py`'s (results/newcomer/README.md).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.window_shots import (  # noqa: E402
    main,
    plots_drawn,
    settle,
    wait_signal,
    wait_until,
    with_store_changed,
)

SIZES = ((1280, 800), (1600, 1000))
LONG_ERROR = (
    "sweep failed: /home/user/"
    + "very-long-folder-name/" * 40
    + "workbench.toml: "
    + " ".join(["the configuration could not be built"] * 30)
)[:2000]
GATED_BUILD_RS = """fn main() {{
    println!("cargo:rerun-if-changed=build.rs");
    let target = std::env::var("TARGET").unwrap_or_default();
    if !target.starts_with("nvptx") {{
        return;
    }}
    // nvptx waits for the script's gate: its result is then certainly not there when cpu's and
    // wgsl's are shown (a safety valve after 10 minutes).
    for _ in 0..12000 {{
        if std::path::Path::new("{gate}").exists() {{
            return;
        }}
        std::thread::sleep(std::time::Duration::from_millis(50));
    }}
}}
"""


def _inside(outer, inner) -> bool:
    return inner.isValid() and outer.contains(inner)


def _cells_out_of_view(results) -> list[str]:
    from workbench.ui.results.table import COL_CHECK, COL_GBPS, COL_MEDIAN, COL_VERIFIED

    viewport = results.table.viewport().rect()
    return [
        f"row {row} col {col}: {results.column_rect(row, col).getRect()}"
        for row in range(results.table.rowCount())
        for col in (COL_MEDIAN, COL_GBPS, COL_VERIFIED, COL_CHECK)
        if not _inside(viewport, results.column_rect(row, col))
    ]


def _build_rows_out_of_view(build) -> list[str]:
    tree = build.table
    viewport = tree.viewport().rect()
    items = [tree.topLevelItem(i) for i in range(tree.topLevelItemCount())]
    return [i.text(0) for i in items if not _inside(viewport, tree.visualItemRect(i))]


def _rows(window) -> dict[str, dict]:
    return {r["Backend"]: r for r in window.panels["results"].row_texts()}


# ================================================================ the states
def first_run_streaming(shots) -> dict:
    """The first Run on a fresh copy (cpu, wgsl, nvptx chosen): cpu and wgsl results are shown while
    nvptx is still building (its build.rs held at a gate the script opens after the picture)."""
    from workbench.run.service import BACKGROUND_BUILD_NOTE

    root = shots.copy("saxpy", unique=True)
    gate = shots.work / "open-nvptx"
    (root / "build.rs").write_text(GATED_BUILD_RS.format(gate=gate))
    window = shots.window(root, backends=["cpu", "wgsl", "nvptx"], devices=["cpu", "wgpu:0"])
    cuda = window.bridge.run_service.devices("cuda").get("available")
    assert not cuda, "CUDA is available here: nvptx would run, not build in the background"
    messages: list[str] = []
    window.bridge.statusMessage.connect(messages.append)
    try:
        # Not `shots.run`: the bridge stays busy while nvptx builds on in the background.
        report = wait_signal(window.bridge.runFinished, window.run, 600, "the first run's report")
        settle()
        build = window.panels["build"]
        rows = _rows(window)
        assert build.state("nvptx") == "building", build.state("nvptx")
        assert not gate.exists()
        assert rows["cpu"]["Verified"] == "reference" and rows["wgsl"]["Verified"] == "✓ yes", rows
        assert rows["nvptx"]["Status"] == "skipped" and BACKGROUND_BUILD_NOTE in rows["nvptx"]["Check"]
        wait_until(lambda: any("in the background" in m for m in messages), 30, "the background note")
        window.docks["results"].raise_()
        plots_drawn(window, "01-first-run-streaming")
        medians, _ = window.panels["plots"].curve_data()["compare"]["medians"]
        compared = len(medians) if medians is not None else 0
        assert compared == 2, f"the comparison plot shows {compared} medians, not cpu's and wgsl's"
        picture = shots.shot(window, "01-first-run-streaming")
        facts = {
            "statuses": {r.backend: r.status for r in report.results},
            "verified": {b: r["Verified"] for b, r in rows.items()},
            "nvptx_build_state_when_shown": build.state("nvptx"),
            "comparison_plot_medians": compared,
            "status_messages": messages[-3:],
            "picture": picture,
        }
        # Let nvptx go: it finishes for inspection, nothing is rerun.
        built = wait_signal(window.bridge.buildFinished, gate.touch, 900, "nvptx's background build")
        assert set(built) == {"nvptx"} and built["nvptx"].status == "ok", built
        wait_until(lambda: build.state("nvptx") == "ok", 60, "the nvptx row to say ok")
        wait_until(lambda: not window.bridge.busy, 60, "idle")
        window.docks["build"].raise_()
        facts["after_gate"] = {
            "nvptx_build": built["nvptx"].status,
            "message": next((m for m in messages if m.startswith("built in the background")), None),
            "picture": shots.shot(window, "02-first-run-nvptx-built-later"),
        }
        return facts
    finally:
        gate.touch()


def _layout(shots, width: int, height: int) -> dict:
    from workbench.backends import BACKENDS

    window = shots.window(shots.copy("saxpy"), size=(width, height), backends=["cpu", "wgsl"],
                          devices=["cpu", "wgpu:0"])  # fmt: skip
    window.bridge.set_sizes({"n": 1 << 16})
    report = shots.run(window)
    results, build = window.panels["results"], window.panels["build"]
    wait_until(lambda: results.table.rowCount() >= 2, 10, "two result rows")
    window.resize(width, height)
    window.reset_layout()
    window.docks["results"].raise_()
    settle()
    wait_until(lambda: not _cells_out_of_view(results), 10, "median, GB/s, verified and check in view")
    assert (window.width(), window.height()) == (width, height)
    rows = results.row_texts()
    assert all(r["Median"] and r["GB/s"] and r["Verified"] for r in rows), rows
    # Every backend the examples can build has its build row in view.
    window.bridge.set_backends(list(BACKENDS))
    wait_until(lambda: build.table.topLevelItemCount() == len(BACKENDS), 10, "a build row per backend")
    settle()
    wait_until(lambda: not _build_rows_out_of_view(build), 10, "every build row in view")
    assert not _cells_out_of_view(results)
    picture = shots.shot(window, f"03-layout-{width}x{height}")
    viewport = results.table.viewport().rect()
    return {
        "window": [window.width(), window.height()],
        "results_viewport": viewport.getRect(),
        "rows": [
            {k: r[k] for k in ("Backend", "Device", "Median", "GB/s", "Verified", "Check")} for r in rows
        ],
        "build_rows_in_view": build.table.topLevelItemCount(),
        "statuses": {r.backend: r.status for r in report.results},
        "picture": picture,
    }


def layout_1280x800(shots) -> dict:
    return _layout(shots, 1280, 800)


def layout_1600x1000(shots) -> dict:
    return _layout(shots, 1600, 1000)


def long_error(shots) -> dict:
    """A 2,000-character error in the status bar, the results caption and the sweep status at
    1600×1000: the window keeps its width, the labels elide, the tooltip has the whole text."""
    width, height = 1600, 1000
    window = shots.window(shots.copy("saxpy"), size=(width, height))
    least = window.minimumSizeHint().width()
    window.show_message(LONG_ERROR)
    window.panels["results"].caption.setText(LONG_ERROR)
    window.panels["build"].summary.setText(LONG_ERROR)
    window.panels["tuning"].status.setText(LONG_ERROR)
    settle()
    window.reset_layout()
    settle()
    assert (window.width(), window.height()) == (width, height), (window.width(), window.height())
    assert window.minimumSizeHint().width() <= least
    caption = window.panels["results"].caption
    assert caption.toolTip() and caption.width() < width
    window.docks["results"].raise_()
    return {
        "message_chars": len(LONG_ERROR),
        "window": [window.width(), window.height()],
        "screen": window.screen().availableGeometry().getRect(),
        "minimum_width_before_after": [least, window.minimumSizeHint().width()],
        "caption_width": caption.width(),
        "picture": shots.shot(window, "04-long-error-1600x1000"),
    }


def _manifest_rows(window) -> list[dict]:
    return [r for r in window.panels["build"].diagnostic_rows() if r["backend"] == "manifest"]


def manifest_error(shots) -> dict:
    """workbench.toml broken on disk (a buffer's direction): a Diagnostics row at its line and a
    marker in the editor's gutter."""
    root = shots.copy("saxpy")
    manifest = root / "workbench.toml"
    window = shots.window(root, backends=["cpu"], devices=["cpu"])
    window.hot_reload_action.setChecked(False)
    text = manifest.read_text()
    broken, count = re.subn(r'(?m)^direction = "\w+"', 'direction = "sideways"', text, count=1)
    assert count == 1
    line = next(i for i, t in enumerate(broken.splitlines(), 1) if '"sideways"' in t)
    manifest.write_text(broken)
    wait_until(lambda: len(_manifest_rows(window)) == 1, 30, "the manifest's Diagnostics row")
    (row,) = _manifest_rows(window)
    assert row["location"] == f"workbench.toml:{line}" and "sideways" in row["message"], row
    editor = window.editor_tabs.open_file(manifest, line=line)
    marks = [d["line"] for d in editor.diagnostics_at_line(line)]
    assert marks == [line], marks
    window.docks["build"].raise_()
    build = window.panels["build"]
    build.tabs.setCurrentWidget(build.diagnostics)
    return {
        "line": line,
        "row": row,
        "gutter_lines": marks,
        "picture": shots.shot(window, "05-manifest-error"),
    }


def manifest_edited_on_disk(shots) -> dict:
    """workbench.toml's size edited by another program: hot reload re-reads it and reruns at it; the
    size field follows."""
    root = shots.copy("saxpy")
    manifest = root / "workbench.toml"
    window = shots.window(root, backends=["cpu"], devices=["cpu"])
    window.hot_reload_action.setChecked(True)
    name, old = next(iter(tomllib.loads(manifest.read_text())["kernel"][0]["sizes"].items()))
    new = 3000 if old != 3000 else 2500
    text, count = re.subn(rf"(?m)^{name} = {old}\b", f"{name} = {new}", manifest.read_text(), count=1)
    assert count == 1

    def at_new_size(report) -> bool:
        return any(r.status == "ok" and r.provenance["sizes"][name] == new for r in report.results)

    report = wait_signal(window.bridge.runFinished, lambda: manifest.write_text(text), 600,
                         f"a run at {name}={new}", accept=at_new_size)  # fmt: skip
    wait_until(lambda: not window.bridge.busy, 600, "idle")
    assert window.bridge.project.manifest.kernel().sizes[name] == new
    field = window.size_controls.fields[name].text()
    assert field == str(new), field
    window.docks["results"].raise_()
    return {
        "size": {name: [old, new]},
        "run_sizes": [r.provenance["sizes"] for r in report.results],
        "size_field": field,
        "picture": shots.shot(window, "06-manifest-edited-on-disk"),
    }


def new_project(shots) -> dict:
    """`workbench new vadd` (the blank template) on the command line, then the window on it: the
    renamed project runs."""
    dest = shots.work / "vadd"
    done = subprocess.run([sys.executable, "-m", "workbench", "new", "vadd", str(dest), "--json"],
                          capture_output=True, text=True, cwd=REPO)  # fmt: skip
    assert done.returncode == 0, done.stderr
    manifest = tomllib.loads((dest / "workbench.toml").read_text())
    cargo = tomllib.loads((dest / "Cargo.toml").read_text())
    assert manifest["project"]["name"] == "vadd" and cargo["package"]["name"] == "vadd"
    window = shots.window(dest, trust=False, backends=["cpu", "wgsl"], devices=["cpu", "wgpu:0"])
    assert window.trusted and not window.trust_bar.isVisible()  # `new` trusted it
    assert window.windowTitle().startswith("vadd")
    report = shots.run(window)
    assert all(r.status == "ok" for r in report.results), [
        (r.backend, r.status, r.error) for r in report.results
    ]
    window.docks["results"].raise_()
    return {
        "cli": done.stdout.strip()[:400],
        "project": manifest["project"]["name"],
        "crate": cargo["package"]["name"],
        "entries": manifest["kernel"][0]["entry"],
        "files": sorted(
            str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file() and "target" not in p.parts
        ),
        "verified": {b: r["Verified"] for b, r in _rows(window).items()},
        "title": window.windowTitle(),
        "picture": shots.shot(window, "07-new-project-vadd"),
    }


def trust_bar(shots) -> dict:
    """A copied project opens read-only with the trust bar; `workbench trust PATH` trusts it for
    the window (and `gui --screenshot`)."""
    root = shots.copy("saxpy")
    window = shots.window(root, trust=False)
    editor = window.editor_tabs.current_editor()
    assert window.trust_bar.isVisible() and editor.isReadOnly()
    assert not window.run_action.isEnabled() and window.bridge.project is None
    picture = shots.shot(window, "08-trust-bar")
    shots.close(window)
    done = subprocess.run(
        [sys.executable, "-m", "workbench", "trust", str(root)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    again = shots.window(root, trust=False)
    assert again.trusted and not again.trust_bar.isVisible() and again.run_action.isEnabled()
    return {
        "untrusted": {"bar_visible": True, "read_only": True, "run_enabled": False},
        "cli": done.stdout.strip(),
        "after_cli_trust": {
            "bar_visible": again.trust_bar.isVisible(),
            "run_enabled": again.run_action.isEnabled(),
        },
        "picture": picture,
    }


def plot_marks(shots) -> dict:
    """The timing plots after the WGSL was wrong (check failed) and then broken (the last good
    result shown stale): both marked, the table and the plots agreeing."""
    root = shots.copy("saxpy")
    wgsl = next((root / "reference").glob("*.wgsl"))
    good = wgsl.read_text()
    window = shots.window(root, size=(1600, 1000), backends=["cpu", "wgsl"], devices=["cpu", "wgpu:0"])
    window.hot_reload_action.setChecked(False)
    window.bridge.set_sizes({"n": 4096})
    plots = window.panels["plots"]
    window.docks["plots"].raise_()
    facts = {}
    wgsl.write_text(with_store_changed(good, lambda v: f"({v}) + 1.0"))  # computes something else
    report = shots.run(window)
    wrong = next(r for r in report.results if r.backend == "wgsl")
    assert wrong.status == "ok" and wrong.verified is False
    plots.draw_now()
    rows = {r["backend"]: r for r in plots.plots_data()["timing"]["rows"]}
    assert (
        rows["wgsl"]["check_failed"]
        and not rows["wgsl"]["fastest"]
        and "check failed" in rows["wgsl"]["label"]
    )
    plots.show_tab("timing")
    facts["check_failed"] = {"rows": rows, "picture": shots.shot(window, "09-plots-check-failed")}
    wgsl.write_text(good)
    shots.run(window)
    wgsl.write_text(good + "\nfn broken( {\n")  # does not compile: the last good result comes back stale
    report = shots.run(window)
    stale = next(r for r in report.results if r.backend == "wgsl")
    assert stale.stale is not None and stale.stale.reason
    plots.draw_now()
    data = plots.plots_data()
    rows = {r["backend"]: r for r in data["timing"]["rows"]}
    assert rows["wgsl"]["stale"] and "stale" in rows["wgsl"]["label"] and not rows["wgsl"]["fastest"]
    assert window.panels["results"].is_row_stale(
        next(i for i, r in enumerate(window.panels["results"].row_texts()) if r["Backend"] == "wgsl")
    )
    facts["stale"] = {
        "rows": rows,
        "stale_reason": stale.stale.reason,
        "history_failed": data["timing"]["history"]["failed"],
        "picture": shots.shot(window, "10-plots-stale"),
    }
    return facts


def size_sweep(shots) -> dict:
    """The Size sweep tab after a real sweep over three decades (cpu + wgsl): log axes whose drawn
    labels never overlap, the legend outside the data, only series with data."""
    from pyqtgraph import TextItem
    from PySide6.QtGui import QImage, QPainter

    from workbench.run.timing import TimingOptions

    sizes = [1024, 8192, 65536, 1048576]
    window = shots.window(shots.copy("saxpy"), size=(1600, 1000), backends=["cpu", "wgsl"],
                          devices=["cpu", "wgpu:0"])  # fmt: skip
    panel = window.panels["tuning"]
    panel.timing = TimingOptions(min_n=5, min_time_s=0.02, warmup_max_n=6, warmup_max_s=0.3, max_time_s=2.0)
    window.docks["tuning"].raise_()
    panel.tabs.setCurrentIndex(panel.tabs.count() - 1)
    panel.size_spec.setText("n=" + ",".join(map(str, sizes)))
    wait_signal(panel.sweepFinished, lambda: panel.start_size_sweep() or None, 600, "the size sweep")
    wait_until(lambda: not window.bridge.busy, 60, "idle")
    settle()
    data = panel.size_plot_data()
    assert {tuple(c["x"]) for c in data["curves"].values()} == {tuple(sizes)}, data["curves"]
    assert panel.size_plot.getPlotItem().legend is None
    assert not [i for i in panel.size_plot.getPlotItem().items if isinstance(i, TextItem)]

    def labels(axis):
        image = QImage(10, 10, QImage.Format.Format_ARGB32)
        painter = QPainter(image)
        try:
            texts = axis.generateDrawSpecs(painter)[2]
        finally:
            painter.end()
        drawn = [(t, r) for r, _, t in texts if t]
        for i, (t, r) in enumerate(drawn):
            assert not any(r.intersects(o) for _, o in drawn[i + 1 :]), (
                f"{t!r} overlaps on {axis.orientation}"
            )
        return [t for t, _ in drawn]

    plot = panel.size_plot.getPlotItem()
    return {
        "curves": {k: {"x": c["x"], "gbps": c.get("gbps")} for k, c in data["curves"].items()},
        "legend": data["legend"],
        "y_axis": data["y_axis"],
        "bottom_labels": labels(plot.getAxis("bottom")),
        "left_labels": labels(plot.getAxis("left")),
        "picture": shots.shot(window, "11-size-sweep"),
    }


def output_image(shots) -> dict:
    """matmul's 2-D `c` drawn as value and error images with colour bars."""
    import numpy as np

    m, n, k = 48, 32, 16
    window = shots.window(shots.copy("matmul"), size=(1600, 1000), backends=["cpu", "wgsl"],
                          devices=["cpu", "wgpu:0"])  # fmt: skip
    window.bridge.set_sizes({"m": m, "n": n, "k": k})
    report = shots.run(window)
    plots = window.panels["plots"]
    window.docks["plots"].raise_()
    plots.show_tab("outputs")
    plots.draw_now()
    settle()
    data = plots.plots_data()["outputs"]
    image = data["image"]
    assert image is not None and image["shape"] == [m, n], image
    tab = plots.tab("outputs")
    backend = image["backend"]
    buffer = data["buffer"]
    got = np.asarray(report.outputs[backend][buffer], dtype=np.float64)
    assert np.array_equal(tab.images.values.image.image, got.reshape(m, n))
    return {
        "buffer": buffer,
        "backend": backend,
        "shape": image["shape"],
        "values_range": image["values_range"],
        "error_range": image["error_range"],
        "picture": shots.shot(window, "12-output-image-matmul"),
    }


def size_controls(shots) -> dict:
    """The toolbar's size field: typed `3*1000`, the run is at n = 3000; workbench.toml untouched."""
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    root = shots.copy("saxpy")
    before = (root / "workbench.toml").read_text()
    window = shots.window(root, backends=["cpu", "wgsl"], devices=["cpu", "wgpu:0"])
    (name,) = list(window.size_controls.fields)
    field = window.size_controls.fields[name]
    field.setFocus()
    field.selectAll()
    QTest.keyClick(field, Qt.Key.Key_Delete)
    QTest.keyClicks(field, "3*1000")
    QTest.keyClick(field, Qt.Key.Key_Return)
    assert window.bridge.sizes() == {name: 3000} and field.text() == "3000"
    report = shots.run(window)
    assert report.sizes == {name: 3000}
    assert all(len(v) == 3000 for outputs in report.outputs.values() for v in outputs.values())
    assert (root / "workbench.toml").read_text() == before
    window.docks["results"].raise_()
    return {
        "typed": "3*1000",
        "field": field.text(),
        "run_sizes": report.sizes,
        "picture": shots.shot(window, "13-size-controls"),
    }


def artifacts_dock(shots) -> dict:
    """Artifacts: a dock of its own, tabified with Plots on the right; the WGSL pane fits an
    instruction line."""
    from PySide6.QtCore import Qt

    from workbench.ui.artifacts.view import INSTRUCTION_COLUMNS

    window = shots.window(shots.copy("saxpy"), backends=["wgsl"])
    wait_signal(window.bridge.buildFinished, window.build, 600, "the wgsl build")
    wait_until(lambda: not window.bridge.busy, 600, "idle")
    view, dock = window.panels["artifacts"], window.docks["artifacts"]
    assert dock.widget() is view and window.docks["plots"] in window.tabifiedDockWidgets(dock)
    assert window.dockWidgetArea(dock) == Qt.DockWidgetArea.RightDockWidgetArea
    window.show_artifacts("wgsl")
    wait_until(lambda: view.tabs.count() > 0 and view.tabs.currentWidget().isVisible(), 10, "the wgsl pane")
    code = view.tabs.currentWidget()
    need = code.fontMetrics().horizontalAdvance("0" * INSTRUCTION_COLUMNS)
    assert need <= code.viewport().width(), (need, code.viewport().width())
    return {
        "dock_area": "right",
        "tabified_with": [d.objectName() or d.windowTitle() for d in window.tabifiedDockWidgets(dock)],
        "code_viewport_width": code.viewport().width(),
        "instruction_columns_need": need,
        "picture": shots.shot(window, "14-artifacts-dock"),
    }


def cpu_assembly(shots) -> dict:
    """The cpu backend's assembly (built with line tables on demand) linked to the Rust source: the
    kernel's store line highlights the assembly lines the line map gives it."""
    from benchmarks.ir_views import show_linked  # the sibling script owns the linking check

    window = shots.window(shots.copy("saxpy"), size=(1600, 1000), backends=["cpu"], devices=["cpu"])
    return show_linked(shots, window, "cpu", "15-cpu-assembly")


def cached_build_log(shots) -> dict:
    """Build › Log of a cached build: the log kept when it was built, under the line naming the key."""
    from workbench.build.artifacts import read_build
    from workbench.ui.build.panel import COL_CACHE

    window = shots.window(shots.copy("saxpy", unique=True), backends=["cpu"], devices=["cpu"])
    first = wait_signal(window.bridge.buildFinished, window.build, 600, "the first cpu build")["cpu"]
    wait_until(lambda: not window.bridge.busy, 600, "idle")
    second = wait_signal(window.bridge.buildFinished, window.build, 600, "the cached cpu build")["cpu"]
    wait_until(lambda: not window.bridge.busy, 600, "idle")
    assert not first.cached and second.cached and first.log.strip()
    panel = window.panels["build"]
    window.docks["build"].raise_()
    item = next(panel.table.topLevelItem(i) for i in range(panel.table.topLevelItemCount())
                if panel.table.topLevelItem(i).text(0) == "cpu")  # fmt: skip
    panel.table.setCurrentItem(item)
    panel.tabs.setCurrentWidget(panel.log_view)
    assert item.text(COL_CACHE) == "hit"
    shown = panel.log_view.toPlainText()
    created = read_build(first.artifact_dir)["created"]
    assert shown.startswith(f"served from the build cache: key {first.key}, built {created}"), shown[:200]
    assert first.log.strip() in shown
    return {
        "cache": item.text(COL_CACHE),
        "log_head": shown.splitlines()[:3],
        "picture": shots.shot(window, "16-cached-build-log"),
    }


STATES = {
    "first_run_streaming": first_run_streaming,
    "layout_1280x800": layout_1280x800,
    "layout_1600x1000": layout_1600x1000,
    "long_error": long_error,
    "manifest_error": manifest_error,
    "manifest_edited_on_disk": manifest_edited_on_disk,
    "new_project": new_project,
    "trust_bar": trust_bar,
    "plot_marks": plot_marks,
    "size_sweep": size_sweep,
    "output_image": output_image,
    "size_controls": size_controls,
    "artifacts_dock": artifacts_dock,
    "cpu_assembly": cpu_assembly,
    "cached_build_log": cached_build_log,
}

if __name__ == "__main__":
    sys.exit(main(STATES, __doc__.splitlines()[0], "newcomer"))
