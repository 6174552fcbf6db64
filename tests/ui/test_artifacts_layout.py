"""The Artifacts dock at the window's default layout (issue 21 item 8): a dock of its own, tabified
with Plots, whose generated-code pane shows a whole instruction line at 1280×800 and 1600×1000 (the
real window, a real wgsl build, geometry asserted)."""

from __future__ import annotations

import math

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QTextDocument

from tests.waits import HANG_GUARD_MS, WORK_GUARD_MS, settle_qt
from workbench.ui.artifacts.view import INSTRUCTION_COLUMNS

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
