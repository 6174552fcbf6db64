"""X11 screenshots of issue 40's sequence in the real window at 1280×800: wrong output → Debug
element → paused at the writer's line, locals shown → step → fix → rerun verified.

The project is `debug_latency.py --window`'s: a saxpy copy whose invocation 1234 stores 5.0, checked
against the WGSL reference, cpu-sim with *Record writers* on. One state, four moments, each an X11
picture of the screen where the window is (`window_shots.screen_image`, 24-bit: the editor's
stopped-line tint survives) and the facts asserted before it:

1. `1-mismatch`: after the run, cpu-sim's row ✗ and its details view with y[1234]'s row selected;
2. `2-paused-locals` / `2-paused-workgroup`: after *Debug element*, paused at the writer's line
   (the editor's marked line), the Debug dock's Locals tab, then its Workgroup tab;
3. `3-step`: after one step (Over) off the body's last line: the invocation returned (no line in
   the launcher's closure), its row in the Workgroup tab;
4. `4-verified`: the session stopped, the wrong lines replaced on disk by the original store (as
   another editor saves a fix), the rerun hot reload starts: cpu-sim verified ✓; the writer's
   breakpoint, its line gone, is removed.

    DISPLAY=:98 QT_QPA_PLATFORM=xcb python benchmarks/debug_shots.py [--out-dir DIR] [--cache-dir DIR]

Pictures: DIR/debug-1280x800-*.png (default benchmarks/results/shots-x11), facts in DIR/debug_shots.json.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.debug_latency import BODY, WRONG  # noqa: E402
from benchmarks.window_shots import REPO, Shots, main, wait_signal, wait_until  # noqa: E402

SIZE = (1280, 800)
PREFIX = f"debug-{SIZE[0]}x{SIZE[1]}"


def _stopped(panel, before: int, what: str) -> dict:
    wait_until(lambda: panel.stops_seen > before or panel.failures, 600, what)
    assert not panel.failures, panel.failures
    wait_until(lambda: panel.locals_model.rowCount() > 0, 10, f"{what}: locals shown")
    return panel.last_stop


def _rows(model) -> list[list[str]]:
    return [[model.index(r, c).data() for c in range(model.columnCount())] for r in range(model.rowCount())]


def sequence(shots: Shots) -> dict:
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QPushButton, QTableWidget

    root = shots.copy("saxpy", name="saxpy")
    lib, manifest = root / "src" / "lib.rs", root / "workbench.toml"
    assert lib.read_text().count(BODY) == 1 and manifest.read_text().count('reference = "cpu"\n') == 1
    lib.write_text(lib.read_text().replace(BODY, WRONG))
    manifest.write_text(manifest.read_text().replace('reference = "cpu"\n', 'reference = "wgsl"\n'))
    wrong_line = lib.read_text().splitlines().index("            y[i] = 5.0;") + 1

    window = shots.window(root, size=SIZE)
    window.bridge.set_sizes({"n": 4096})
    window.bridge.set_backends(["wgsl", "cpu-sim"])
    panel, results, docks = window.panels["debug"], window.panels["results"], window.docks
    panel.writers_box.setChecked(True)
    facts: dict = {"wrong_line": wrong_line, "shots": {}}

    # 1. The run: cpu-sim ✗, its details view on y[1234].
    report = shots.run(window)
    sim = next(r for r in report.results if r.backend == "cpu-sim")
    writer = sim.writers["y"]["elements"][0]
    assert sim.verified is False and writer["index"] == 1234 and writer["line"] == wrong_line, writer
    docks["results"].raise_()
    row = next(r for r in range(results.table.rowCount()) if results.result_at(r) is sim)
    results.table.selectRow(row)
    dialog = results.show_details(row)
    dialog.findChild(QTableWidget, "mismatches:y").selectRow(0)
    button = dialog.findChild(QPushButton, "debugElement:y")
    assert button.isEnabled()
    # Over the editor and the plots, above the Results dock (its ✗ row stays in view).
    frame = window.frameGeometry()
    dialog.resize(min(dialog.width(), frame.width() - 300), min(dialog.height(), 470))
    dialog.move(frame.right() - dialog.frameGeometry().width() - 10, frame.top() + 50)
    facts["writer"] = writer
    facts["details_geometry"] = list(dialog.frameGeometry().getRect())
    facts["shots"]["1-mismatch"] = shots.shot(
        window, f"{PREFIX}-1-mismatch", screen=True, full_colour=True, above=[dialog]
    )

    # 2. Debug element: paused at the writer's line, the editor marks it, the dock's locals.
    QTest.mouseClick(button, Qt.MouseButton.LeftButton)
    stop = _stopped(panel, 0, "paused at the writer")
    assert (stop["reason"], stop["file"], stop["line"]) == ("breakpoint", "src/lib.rs", wrong_line), stop
    assert stop["invocation"] == {"group": [4, 0, 0], "local": [210, 0, 0]}, stop
    editor = window.editor_tabs.current_editor()
    assert editor.execution_line == wrong_line
    dialog.close()
    docks["debug"].raise_()
    panel.tabs.setCurrentIndex(0)
    editor.centerCursor()
    facts["paused"] = {"where": panel.where.text(), "locals": _rows(panel.locals_model)}
    facts["shots"]["2-paused-locals"] = shots.shot(
        window, f"{PREFIX}-2-paused-locals", screen=True, full_colour=True
    )
    panel.tabs.setCurrentIndex(2)
    workgroup = _rows(panel.workgroup_model)
    facts["paused"]["workgroup"] = {
        "rows": len(workgroup),
        "0-2": workgroup[:3],
        "209-212": workgroup[209:213],
    }
    facts["shots"]["2-paused-workgroup"] = shots.shot(
        window, f"{PREFIX}-2-paused-workgroup", screen=True, full_colour=True
    )

    # 3. One step (Over) off the body's last line: the invocation returned.
    QTest.mouseClick(panel.step_buttons["next"], Qt.MouseButton.LeftButton)
    wait_until(lambda: panel.stops_seen > 1 or panel.failures, 600, "one step over")
    assert not panel.failures, panel.failures
    stop = panel.last_stop
    assert stop["reason"] == "returned" and editor.execution_line is None, stop
    selected = [i.row() for i in panel.workgroup_view.selectionModel().selectedRows()]
    assert selected == [210], selected
    facts["stepped"] = {
        "where": panel.where.text(),
        "workgroup 209-212": _rows(panel.workgroup_model)[209:213],
        "steps enabled": [w for w, b in panel.step_buttons.items() if b.isEnabled()],
    }
    facts["shots"]["3-step"] = shots.shot(window, f"{PREFIX}-3-step", screen=True, full_colour=True)

    # 4. The fix saved on disk; hot reload's rerun: verified.
    panel.stop_session()
    wait_until(lambda: not window.bridge.busy, 60, "the bridge idle")
    fixed = lib.read_text().replace(WRONG, BODY)
    report = wait_signal(
        window.bridge.runFinished, lambda: lib.write_text(fixed), 600, "hot reload's rerun of the fix"
    )
    wait_until(lambda: not window.bridge.busy, 600, "the bridge idle after the rerun")
    sim = next(r for r in report.results if r.backend == "cpu-sim")
    assert sim.verified is True, sim.error
    assert "y[i] = 5.0" not in editor.toPlainText(), "the editor still shows the wrong line"
    fixed_line = fixed.splitlines().index("        y[i] = a * x[i] + y[i];") + 1
    editor.go_to(fixed_line)  # where the fix was made
    editor.centerCursor()
    docks["results"].raise_()
    facts["fixed_line"] = fixed_line
    facts["breakpoints after the fix"] = {path: sorted(lines) for path, lines in panel.breakpoints.items()}
    facts["verified"] = {r.backend: r.verified for r in report.results}
    facts["shots"]["4-verified"] = shots.shot(window, f"{PREFIX}-4-verified", screen=True, full_colour=True)
    return facts


if __name__ == "__main__":
    sys.exit(
        main(
            {"sequence": sequence},
            __doc__.splitlines()[0],
            "debug_shots",
            ["--out-dir", str(REPO / "benchmarks" / "results" / "shots-x11"), *sys.argv[1:]],
        )
    )
