"""The Artifacts dock at the window's default layout (issue 21 item 8): a dock of its own, tabified
with Plots, whose generated-code pane shows a whole instruction line at 1280×800 and 1600×1000 (the
real window, a real wgsl build, geometry asserted)."""

from __future__ import annotations

import math

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QTextDocument

from tests.waits import HANG_GUARD_MS, WORK_GUARD_MS, settle_qt
from workbench.trust_store import set_trusted
from workbench.ui.artifacts.view import INSTRUCTION_COLUMNS
from workbench.ui.visibility import on_screen

SIZES = ((1280, 800), (1600, 1000))
BUILD_TIMEOUT_MS = WORK_GUARD_MS
#: A PTX instruction line as ptx prints it (tabs at 8 columns), 40 columns wide.
PTX_LINE = "\tld.global.nc.f32 \t%f1, [%rd10];"


def text_width(view, line: str) -> int:
    """The width `line` takes in `view`, tabs expanded at the view's tab stops (and margins)."""
    doc = QTextDocument()
    doc.setDefaultFont(view.font())
    doc.setDocumentMargin(view.document().documentMargin())
    option = doc.defaultTextOption()
    option.setTabStopDistance(view.tabStopDistance())
    doc.setDefaultTextOption(option)
    doc.setPlainText(line)
    return math.ceil(doc.idealWidth())


@pytest.mark.slow
def test_the_artifacts_dock_sits_with_the_plots_and_its_code_pane_fits_an_instruction(
    make_window, example_copy, qtbot, test_output_dir
):
    window = make_window(example_copy("saxpy"), panels=("artifacts", "plots", "results", "build"))
    window.bridge.set_backends(["wgsl"])
    with qtbot.waitSignal(window.bridge.buildFinished, timeout=BUILD_TIMEOUT_MS):
        window.build()
    qtbot.waitUntil(lambda: not window.bridge.busy, timeout=BUILD_TIMEOUT_MS)
    view, dock = window.panels["artifacts"], window.docks["artifacts"]
    assert dock.widget() is view and window.docks["plots"] in window.tabifiedDockWidgets(dock)
    assert window.dockWidgetArea(dock) == Qt.DockWidgetArea.RightDockWidgetArea
    for width, height in SIZES:
        window.resize(width, height)
        window.reset_layout()
        window.show_artifacts("wgsl")
        settle_qt()
        qtbot.waitUntil(
            lambda: view.tabs.count() > 0 and view.tabs.currentWidget().isVisible(), timeout=HANG_GUARD_MS
        )
        assert (window.width(), window.height()) == (width, height)
        assert not dock.isFloating() and window.docks["plots"] in window.tabifiedDockWidgets(dock)
        code = view.tabs.currentWidget()
        need = max(text_width(code, PTX_LINE), text_width(code, "0" * INSTRUCTION_COLUMNS))
        assert need <= code.viewport().width(), (width, need, code.viewport().width())
        # The Rust source beside (or under) it gets the same room.
        assert need <= view.source_view.viewport().width()
        assert window.grab().save(str(test_output_dir / f"artifacts_{width}x{height}.png"))


def test_a_hidden_artifacts_view_lists_the_projects_sources_once_shown(make_window, example_copy, qtbot):
    """Opening a project while the view is covered (the Plots tab in front) leaves its source list
    for later: listing the sources cost the open step's longest stall 3-7 ms
    (benchmarks/day_sequence.py). Raised, it lists them with lib.rs chosen and shown."""
    root, other = example_copy("saxpy"), example_copy("reduction")
    for folder in (root, other):
        set_trusted(folder)  # an untrusted project is not handed to the services: no sources
    window = make_window()  # every panel: Artifacts tabified with Plots, as the user has it
    view = window.panels["artifacts"]
    assert window.docks["plots"] in window.tabifiedDockWidgets(window.docks["artifacts"])
    window.docks["plots"].raise_()
    settle_qt()
    assert not on_screen(view)
    assert window.open_project(root)
    qtbot.wait(20)
    assert view.source_box.count() == 0 and view.source_view.toPlainText() == ""
    window.docks["artifacts"].raise_()
    qtbot.waitUntil(lambda: view.source_box.count() > 0, timeout=HANG_GUARD_MS)
    lib = window.project.root / "src" / "lib.rs"
    sources = [view.source_box.itemData(i) for i in range(view.source_box.count())]
    assert sources == [str(p) for p in window.project.rust_sources()]
    assert view.source_box.currentText() == "src/lib.rs"
    qtbot.waitUntil(lambda: view.source_view.toPlainText() == lib.read_text(), timeout=HANG_GUARD_MS)
    # Another project opened while it is in view is listed at once.
    assert window.open_project(other)
    assert view.source_box.currentText() == "src/lib.rs"
    assert view.source_box.currentData() == str(window.project.root / "src" / "lib.rs")
