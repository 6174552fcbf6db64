"""The window's layout shows what matters and nothing the window shows can break it (issue 21,
items 2 and 3): the real window, a real cpu + wgsl run on llvmpipe, geometry asserted."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QRect, Qt

from tests.waits import HANG_GUARD_MS, WORK_GUARD_MS, settle_qt
from workbench.backends import BACKENDS
from workbench.ui.main_window import LAYOUT_VERSION
from workbench.ui.results.table import (
    CHECK_MIN_WIDTH,
    CHECK_WIDTH,
    COL_BACKEND,
    COL_CHECK,
    COL_GBPS,
    COL_MEDIAN,
    COL_PEAK,
    COL_VERIFIED,
)
from workbench.ui.settings import load_settings, save_settings

REPO = Path(__file__).resolve().parents[2]
SAXPY = REPO / "resources" / "examples" / "saxpy"
RUN_TIMEOUT_MS = WORK_GUARD_MS
#: A cell's margins around its text (the style's focus-frame margins, both sides, and a little more).
CELL_PADDING = 12
SIZES = ((1280, 800), (1600, 1000))
#: A 2,000-character error: words, and a path no line can break (what a manifest error names).
LONG_ERROR = (
    "sweep failed: /home/user/"
    + "very-long-folder-name/" * 40
    + "workbench.toml: "
    + " ".join(["the configuration could not be built"] * 30)  # fmt: skip
)[:2000]


def inside(outer: QRect, inner: QRect) -> bool:
    return inner.isValid() and outer.contains(inner)


def wait_quietly(qtbot, predicate, timeout_ms: int = HANG_GUARD_MS) -> None:
    """Wait for `predicate`, and leave saying what is still wrong to the assertion after it."""
    try:
        qtbot.waitUntil(predicate, timeout=timeout_ms)
    except Exception:  # pytestqt's TimeoutError: the assertion that follows names the cells
        pass


def cells_out_of_view(table) -> list[str]:
    """The backend, median, GB/s, verdict and check cells of every row that are not wholly in view,
    and a check column narrower than CHECK_MIN_WIDTH."""
    viewport = table.table.viewport().rect()
    problems = []
    check_width = table.table.horizontalHeader().sectionSize(COL_CHECK)
    if check_width < CHECK_MIN_WIDTH:
        problems.append(f"check column {check_width} px < {CHECK_MIN_WIDTH}")
    metrics = table.table.fontMetrics()
    for row in range(table.table.rowCount()):
        # A check that fits its widest column (CHECK_WIDTH) is shown whole ("max abs 0, max 0 ULP"
        # read "max abs 0," at 1280×800 with the Sessions dock open); a longer one is elided.
        # With "% of peak" shown (a roof known) the numbers may leave less: the check is then
        # elided and its tooltip has it whole (at 1280×800 with measured ceilings: 113 of 146 px).
        item = table.table.item(row, COL_CHECK)
        text = item.text()
        need = metrics.horizontalAdvance(text) + CELL_PADDING
        if need <= CHECK_WIDTH and check_width < need:
            if not table.table.isColumnHidden(COL_PEAK):
                if text not in item.toolTip():
                    problems.append(f"row {row} check {text!r} cut ({check_width} px) and not in its tooltip")
            else:
                problems.append(f"row {row} check {text!r} needs {need} px, has {check_width}")
        for col in (COL_BACKEND, COL_MEDIAN, COL_GBPS, COL_VERIFIED, COL_CHECK):
            rect = table.column_rect(row, col)
            if not inside(viewport, rect):
                title = table.table.horizontalHeaderItem(col).text()
                problems.append(f"row {row} {title}: {rect.getRect()} not in {viewport.getRect()}")
    return problems


def build_rows_out_of_view(panel) -> list[str]:
    tree = panel.table
    viewport = tree.viewport().rect()
    items = [tree.topLevelItem(i) for i in range(tree.topLevelItemCount())]
    return [
        f"{item.text(0)}: {tree.visualItemRect(item).getRect()} not in {viewport.getRect()}"
        for item in items
        if not inside(viewport, tree.visualItemRect(item))
    ]


@pytest.mark.slow
def test_the_numbers_and_every_build_row_are_in_view_at_both_sizes(make_window, qtbot, test_output_dir):
    window = make_window(SAXPY)
    window.bridge.set_backends(["cpu", "wgsl"])
    window.bridge.set_devices(["cpu", "wgpu:0"])
    window.bridge.set_sizes({"n": 1 << 16})
    with qtbot.waitSignal(window.bridge.runFinished, timeout=RUN_TIMEOUT_MS) as finished:
        window.run()
    qtbot.waitUntil(lambda: not window.bridge.busy, timeout=RUN_TIMEOUT_MS)
    assert {r.backend for r in finished.args[0].results} >= {"cpu", "wgsl"}
    results, build, picker = (window.panels[k] for k in ("results", "build", "devices"))
    qtbot.waitUntil(lambda: results.table.rowCount() >= 2, timeout=HANG_GUARD_MS)
    assert all(row["Median"] and row["GB/s"] and row["Verified"] for row in results.row_texts())
    for width, height in SIZES:
        window.resize(width, height)
        window.reset_layout()
        window.docks["results"].raise_()
        settle_qt()
        wait_quietly(qtbot, lambda: not cells_out_of_view(results))
        assert not cells_out_of_view(results), (
            width,
            height,
            cells_out_of_view(results),
            results.row_texts(),
        )
        assert (window.width(), window.height()) == (width, height)
        # The default layout with the Sessions dock on the right in view (its runs list asks for
        # room): the Results pane ~430 px wide at 1280×800, the check was mostly out of view.
        window.docks["sessions"].raise_()
        settle_qt()
        wait_quietly(qtbot, lambda: not cells_out_of_view(results))
        assert not cells_out_of_view(results), (width, height, "Sessions shown", cells_out_of_view(results))
        assert window.docks["sessions"].isVisible() and window.docks["results"].width() < 0.5 * width
        window.grab().save(str(test_output_dir / f"layout_{width}x{height}_sessions.png"))
        # The device names as drawn: each whole, or its " · API" / " · GPU semantics" kept whole
        # (elided in the middle, the CPU with GPU semantics read "AMD EPY…mantics"); an
        # unavailable runtime's row says what is missing, whole (the rest is its tooltip).
        drawn = picker.names.drawn
        for group in (picker.tree.topLevelItem(i) for i in range(picker.tree.topLevelItemCount())):
            for child in (group.child(i) for i in range(group.childCount())):
                full = child.text(0)
                assert full in drawn, (full, drawn)
                _head, mark, suffix = full.rpartition(" · ")
                if mark:
                    assert drawn[full].endswith(mark + suffix), (width, full, drawn[full])
                if child.isDisabled():
                    assert drawn[full] == full, (width, full, drawn[full])
                    assert child.toolTip(0).startswith(full)
        sim = picker.sim_item()
        assert sim is not None and drawn[sim.text(0)].endswith(" · GPU semantics"), drawn
        window.docks["plots"].raise_()
        settle_qt()
        save_path = test_output_dir / f"layout_{width}x{height}.png"
        assert window.grab().save(str(save_path))
        # Every backend the examples can build has its row in view (idle until built).
        window.bridge.set_backends(list(BACKENDS))
        qtbot.waitUntil(lambda: build.table.topLevelItemCount() == len(BACKENDS), timeout=HANG_GUARD_MS)
        window.reset_layout()
        window.docks["build"].raise_()
        settle_qt()
        qtbot.waitUntil(lambda: not build_rows_out_of_view(build), timeout=HANG_GUARD_MS)
        assert not cells_out_of_view(results), cells_out_of_view(results)
        assert (window.width(), window.height()) == (width, height)
        window.bridge.set_backends(["cpu", "wgsl"])
    # "% peak" empty on every row (no roof for llvmpipe or an unmeasured CPU): hidden, and the GB/s
    # header and cells say why and how to fill it.
    if not any(row["% of peak"] for row in results.row_texts()):
        from workbench.ui.results.table import PEAK_HIDDEN

        assert results.table.isColumnHidden(COL_PEAK)
        assert PEAK_HIDDEN in results.table.horizontalHeaderItem(COL_GBPS).toolTip()
        assert "Devices › Measure" in results.table.item(0, COL_GBPS).toolTip()
    # Device rows show the short name (elided in the middle if need be), the full one in the tooltip.
    wgpu = picker.group_item("wgpu")
    llvmpipe = next(wgpu.child(i) for i in range(wgpu.childCount()) if "llvmpipe" in wgpu.child(i).text(0))
    assert llvmpipe.text(0).endswith(" · Vulkan") or llvmpipe.text(0).endswith(" · OpenGL")
    assert "(" not in llvmpipe.text(0) and "llvmpipe (" in llvmpipe.toolTip(0)
    assert picker.tree.textElideMode() == Qt.TextElideMode.ElideMiddle


def _long_texts(window) -> dict[str, object]:
    """Every label the window shows a message in, by what it is."""
    panels = window.panels
    return {
        "results caption": panels["results"].caption,
        "build summary": panels["build"].summary,
        "device status": panels["devices"].status,
        "sweep status": panels["tuning"].status,
        "tuning title (a manifest error)": panels["tuning"].title,
        "sessions message": panels["sessions"].message,
        "artifacts line note": panels["artifacts"].lines_note,
        "status bar path": window.position_label,
    }


def test_a_long_message_never_widens_the_window(make_window, qtbot):
    window = make_window(SAXPY)
    for width, height in SIZES:
        window.resize(width, height)
        window.reset_layout()
        settle_qt()
        least = window.minimumSizeHint()
        assert least.width() <= width and least.height() <= height
        window.show_message(LONG_ERROR)
        for name, label in _long_texts(window).items():
            for key in ("sessions", "tuning", "artifacts"):  # the tabbed docks: each shown in turn
                if window.docks[key].widget().isAncestorOf(label):
                    window.docks[key].raise_()
            label.setText(LONG_ERROR)
            settle_qt()
            assert window.width() == width, f"{name} widened the window to {window.width()} px"
            assert window.minimumSizeHint().width() <= least.width(), name
            assert window.minimumSizeHint().height() <= height, name
        # Reset layout while the texts are still there: the window keeps its size, the results
        # their room.
        window.reset_layout()
        settle_qt()
        assert (window.width(), window.height()) == (width, height)
        assert window.docks["results"].width() >= 0.3 * width
        assert window.panels["results"].caption.text() == " ".join(LONG_ERROR.split())  # whole
        assert window.panels["results"].caption.toolTip()  # elided, the tooltip has it whole


def _screen_area(window) -> QRect:
    return window.screen().availableGeometry()


def test_a_first_start_is_the_default_size_brought_inside_the_screen(qtbot, make_window):
    """No saved geometry: the window is DEFAULT_SIZE before it is shown (the docks' stale layout
    minimum had held it at 1600x1259), and once shown it lies inside the screen (here the
    offscreen platform's 800x800, as a 1366x768 laptop is smaller than the default)."""
    from workbench.ui.app import create_window
    from workbench.ui.main_window import DEFAULT_SIZE
    from workbench.ui.settings import load_settings

    unshown = create_window(settings=load_settings(), panels=("results", "build"))
    qtbot.addWidget(unshown)
    assert (unshown.width(), unshown.height()) == DEFAULT_SIZE
    unshown.close()

    window = make_window(None, panels=("results", "build"))
    area = _screen_area(window)
    frame = window.frameGeometry()
    assert area.contains(frame), (frame.getRect(), area.getRect())
    if area.width() >= DEFAULT_SIZE[0] + 50 and area.height() >= DEFAULT_SIZE[1] + 50:
        assert (window.width(), window.height()) == DEFAULT_SIZE  # room enough: left as it is


def test_a_saved_geometry_larger_than_the_screen_is_restored_inside_it(make_window):
    first = make_window(None, panels=("results", "build"))
    area = _screen_area(first)
    first.resize(area.width() + 1200, area.height() + 900)
    first.move(area.right() - 100, area.bottom() - 100)  # mostly off the screen, too
    first.close()  # saves the geometry and the layout
    saved = load_settings().window_geometry
    assert saved

    again = make_window(None, panels=("results", "build"))
    frame = again.frameGeometry()
    assert frame.width() <= area.width() and frame.height() <= area.height(), frame.getRect()
    assert area.contains(frame), (frame.getRect(), area.getRect())
    assert again._layout_restored  # the dock layout itself fitted: kept


def test_a_saved_layout_that_needs_more_than_the_screen_is_discarded(make_window, qtbot):
    first = make_window(None)
    area = _screen_area(first)
    docks = list(first.docks.values())
    # Every dock side by side in one row: together they need far more width than the screen.
    first.addDockWidget(Qt.DockWidgetArea.TopDockWidgetArea, docks[0])
    for left, right in zip(docks, docks[1:], strict=False):
        first.addDockWidget(Qt.DockWidgetArea.TopDockWidgetArea, right)
        first.splitDockWidget(left, right, Qt.Orientation.Horizontal)
    settle_qt()
    assert first.minimumSizeHint().width() > area.width()
    settings = load_settings()
    settings.window_state = bytes(first.saveState(LAYOUT_VERSION).toBase64()).decode()
    first.persist_settings = False  # keep the broken layout as written above
    first.close()
    save_settings(settings)

    again = make_window(None)
    settle_qt()
    assert not again._layout_restored
    assert again.minimumSizeHint().width() <= max(area.width(), 1280)
    assert all(dock.isVisible() and not dock.isFloating() for dock in again.docks.values())
    assert again.settings.window_state == ""  # not offered again


def test_reset_layout_restores_a_usable_layout_after_any_arrangement(make_window, qtbot):
    window = make_window(SAXPY)
    window.resize(1280, 800)
    window.docks["results"].setFloating(True)
    window.docks["build"].hide()
    window.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, window.docks["plots"])
    window.reset_layout()
    settle_qt()
    assert (window.width(), window.height()) == (1280, 800)
    assert all(dock.isVisible() and not dock.isFloating() for dock in window.docks.values())
    assert window.dockWidgetArea(window.docks["plots"]) == Qt.DockWidgetArea.RightDockWidgetArea
    results = window.docks["results"]
    assert window.dockWidgetArea(results) == Qt.DockWidgetArea.BottomDockWidgetArea
    assert results.width() >= 0.35 * 1280, results.width()
    assert window.editor_tabs.width() >= 0.3 * 1280


def test_the_trust_bar_never_widens_the_window(make_window, example_copy):
    """A copied project opens read-only with the trust bar above the editor; its question (the
    project's name and why) wraps inside the window instead of widening it (seen at 1280×800:
    1651 px wide under X11)."""
    window = make_window(example_copy("saxpy"), trust=False)
    assert window.trust_bar.isVisible()
    for width, height in SIZES:
        window.resize(width, height)
        window.reset_layout()
        settle_qt()
        assert (window.width(), window.height()) == (width, height)
        assert window.minimumSizeHint().width() <= width
        label = window.trust_bar.label
        assert label.wordWrap() and label.width() <= window.trust_bar.width()


def test_no_stray_tab_bar_is_drawn_over_the_docks(make_window, example_copy):
    """Qt 6.11 keeps a tab bar of an earlier step of tabifying the docks and shows it with the
    window at a stale place: a second Plots | Artifacts drawn over the Results caption (seen in the
    issue-21 screenshots), and after each Reset layout the previous layout's bars, identical, at
    their old places. No visible tab bar holds only some or all of another visible one's tabs, and
    each lies along the dock it shows, at both sizes and after repeated resets."""
    from PySide6.QtWidgets import QTabBar

    window = make_window(example_copy("saxpy"))

    def bars() -> list:
        return [b for b in window.findChildren(QTabBar) if b.parent() is window and b.isVisible()]

    def stray() -> list[list[str]]:
        tabs = [{b.tabText(i) for i in range(b.count())} for b in bars()]
        return [sorted(t) for i, t in enumerate(tabs) if any(t <= o for j, o in enumerate(tabs) if j != i)]

    def misplaced() -> list[str]:
        """Bars that do not span their current dock (the dock of the selected tab)."""
        titles = {dock.windowTitle(): dock for dock in window.docks.values()}
        out = []
        for bar in bars():
            dock = titles[bar.tabText(bar.currentIndex())]
            if (bar.geometry().left(), bar.geometry().width()) != (
                dock.geometry().left(),
                dock.geometry().width(),
            ):
                out.append(f"{bar.tabText(bar.currentIndex())}: bar {bar.geometry()} dock {dock.geometry()}")
        return out

    for _ in range(2):
        for width, height in SIZES:
            window.resize(width, height)
            settle_qt()
            assert stray() == [] and misplaced() == []
            window.reset_layout()
            settle_qt()
            assert stray() == [] and misplaced() == []
            assert len(bars()) == 2  # build | console, and plots | artifacts | sessions | tuning | counters


def test_the_compare_tables_verdict_change_and_ci_are_readable_at_both_sizes(make_window, qtbot, tmp_path):
    """The Sessions dock in the default layout, a run compared against a baseline: the change, its
    CI and the verdict are in view and whole (at 1280×800 the CI was elided and the invocations
    scrolled off); the other columns come from the header's menu."""
    from tests.ui.test_sessions_panel import synthetic
    from workbench.profile.sessions.compare import COLUMNS
    from workbench.profile.sessions.record import record_report
    from workbench.profile.sessions.store import SessionStore

    db = tmp_path / "s.db"
    with SessionStore(db) as store:
        record_report(store, synthetic("saxpy", {("cpu", "cpu"): 1e-3, ("wgsl", "wgpu:0"): 2e-3}, 1))
        record_report(store, synthetic("saxpy", {("cpu", "cpu"): 1e-3, ("wgsl", "wgpu:0"): 1.6e-3}, 2))
    settings = load_settings()
    settings.sessions_db = str(db)
    save_settings(settings)
    window = make_window(None)
    panel = window.panels["sessions"]
    compare = panel.compare
    table = compare.compare_table
    for width, height in SIZES:
        window.resize(width, height)
        window.reset_layout()
        window.docks["sessions"].raise_()
        settle_qt()
        panel.refresh()
        if compare.compare_result is None:
            panel.select_run(1)
            panel.set_baseline(panel.current_id())
            with qtbot.waitSignal(compare.compared, timeout=HANG_GUARD_MS):
                panel.select_run(3)
        settle_qt()
        assert (window.width(), window.height()) == (width, height)
        assert table.rowCount() == 2
        viewport = table.viewport().rect()
        metrics = table.fontMetrics()
        for row in range(table.rowCount()):
            for name in ("backend", "change", "95% CI of change", "verdict"):
                column = COLUMNS.index(name)
                rect = table.visualRect(table.model().index(row, column))
                text = table.item(row, column).text()
                assert inside(viewport, rect), (width, name, rect.getRect(), viewport.getRect())
                # Whole: on one line, or wrapped within the cell's height (the verdict).
                lines = metrics.boundingRect(
                    rect.adjusted(4, 0, -4, 0), Qt.TextFlag.TextWordWrap | Qt.AlignmentFlag.AlignLeft, text
                )
                assert lines.width() <= rect.width() - 8 and lines.height() <= rect.height(), (
                    width,
                    name,
                    text,
                    lines.getRect(),
                    rect.getRect(),
                )
        # The rest on demand, from the header's menu; every cell's tooltip has the whole row.
        menu = {action.text(): action for action in compare.column_menu().actions()}
        assert set(menu) == set(COLUMNS) and not menu["invocations"].isChecked()
        assert "invocations: " in table.item(0, 0).toolTip()
