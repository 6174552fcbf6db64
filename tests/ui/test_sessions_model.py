"""The Sessions panel at scale: its runs model over 10,000 recorded runs (a real SQLite file)
reads pages on demand, its data equals the store's records, new recordings are inserted at the
top; the columns that matter lie within the list at 1280×800 and 1600×1000 in the real window; one
wording names runs; Set as baseline and Compare work through the model."""

from __future__ import annotations

import re
import time

import numpy as np
import pytest
from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QStyle, QStyleOptionComboBox

from tests.waits import HANG_GUARD_MS, WORK_GUARD_MS, settle_qt
from workbench.profile.sessions import paging
from workbench.profile.sessions.paging import RunFilter
from workbench.profile.sessions.record import record_report
from workbench.profile.sessions.store import SessionStore
from workbench.result_text import cell_of, row_verdict
from workbench.ui.screenshot import save_screenshot
from workbench.ui.sessions.panel import SessionsPanel
from workbench.ui.sessions.runs_table import MATTER, RUN_COLUMNS, SHOWN, RunsModel
from workbench.units import format_time

KERNELS = ["saxpy", "reduction", "matmul", "bitonic"]
BACKENDS = ["cpu", "nvptx", "cuda-c", "wgsl", "rust-gpu"]
DEVICES = [
    ("cpu", "Intel Xeon"),
    ("cuda:0", "NVIDIA H200"),
    ("cuda:1", "NVIDIA H200"),
    ("wgpu:0", "llvmpipe"),
]
RUNS = 10_000
KERNEL = RUN_COLUMNS.index("kernel")


def invocation(index: int, rng: np.random.Generator) -> dict:
    """One recorded `workbench run` of 20 results (5 backends × 4 devices), some failed, some busy."""
    kernel = KERNELS[index % len(KERNELS)]
    results = []
    for backend in BACKENDS:
        for spec, name in DEVICES:
            samples = rng.lognormal(np.log(1e-4 * (1 + BACKENDS.index(backend))), 0.03, 16)
            results.append({
                "backend": backend, "device": {"spec": spec, "name": name}, "status": "ok",
                "verified": None if backend == "cpu" else bool(rng.random() > 0.05),
                "check": {"is_reference": backend == "cpu"}, "error": None,
                "timing": {"median_s": float(np.median(samples)), "iqr_s": 1e-6, "n": 16, "samples_s": samples.tolist()},
                "provenance": {"project": kernel, "kernel": kernel, "time": "2026-12-01T00:00:00Z",
                               "build_key": f"{index // 50}-{backend}", "source_hash": f"{index // 50}"},
            })  # fmt: skip
    return {"project": kernel, "kernel": kernel, "results": results}


def record(store: SessionStore, index: int, rng: np.random.Generator) -> list[int]:
    busy = {"source": "/proc", "cpus": 2, "other_cpu_cores": 1.8 if index % 7 == 0 else 0.0, "wall_s": 1.0}
    return record_report(store, invocation(index, rng), host=busy)


@pytest.fixture(scope="module")
def big_db(tmp_path_factory):
    """10,000 runs recorded by `record_report` (what `SessionRecorder` calls), 500 invocations."""
    path = tmp_path_factory.mktemp("sessions") / "s.db"
    rng = np.random.default_rng(0)
    with SessionStore(path) as store:
        for index in range(RUNS // (len(BACKENDS) * len(DEVICES))):
            record(store, index, rng)
        assert store.count() == RUNS
    return path


@pytest.fixture
def db(big_db, tmp_path):
    """A copy of the big database a test may record into."""
    import sqlite3

    path = tmp_path / "s.db"
    source, target = sqlite3.connect(big_db), sqlite3.connect(path)
    source.backup(target)  # through SQLite: never `open()` a database file another store holds
    source.close()
    target.close()
    return path


def row_texts(model: RunsModel, row: int) -> dict[str, str]:
    return {name: model.index(row, column).data() for column, name in enumerate(RUN_COLUMNS)}


def expected_texts(run: dict) -> dict[str, str]:
    """A run's cells from the store's own record (`get_run`), as the list must show them."""
    return {
        "#": str(run["id"]), "kernel": run["kernel"], "backend": run["backend"],
        "device": run["device"], "median": format_time(run["median_s"], "–"),
        "verified": cell_of(row_verdict(run)), "n": str(run["n"]),
    }  # fmt: skip


def test_the_model_loads_pages_on_demand_and_shows_the_stores_records(qtbot, db):
    store = SessionStore(db)
    try:
        model = RunsModel()
        model.load(store, RunFilter())
        assert model.rowCount() == paging.PAGE and model.pages_read == 1  # one page of 10,000
        assert model.canFetchMore(QModelIndex())
        with qtbot.waitSignal(model.rowsInserted, timeout=HANG_GUARD_MS) as inserted:
            model.fetchMore(QModelIndex())
        assert inserted.args[1:] == [paging.PAGE, 2 * paging.PAGE - 1]  # appended at the end
        assert model.rowCount() == 2 * paging.PAGE and model.pages_read == 2
        ids = model.ids()
        assert ids == [run["id"] for run in store.list_runs(limit=2 * paging.PAGE)]
        assert ids == list(range(RUNS, RUNS - 2 * paging.PAGE, -1))
        for row in (0, paging.PAGE - 1, paging.PAGE, 2 * paging.PAGE - 1):
            run_id = model.index(row, 0).data(Qt.ItemDataRole.UserRole)
            shown = row_texts(model, row)
            assert {k: shown[k] for k in expected_texts(store.get_run(run_id))} == expected_texts(
                store.get_run(run_id)
            )
        # the flags column: the busy invocations (every seventh) say so, the others nothing
        flags = {model.index(r, RUN_COLUMNS.index("flags")).data() for r in range(model.rowCount())}
        assert flags == {"busy", ""}

        # A filter reloads the first page of what passes it, the same runs `list_runs` lists.
        model.load(store, RunFilter(kernel="matmul", backend="wgsl", device="cuda:1"))
        assert (
            model.ids()
            == [r["id"] for r in store.list_runs(kernel="matmul", backend="wgsl", device="cuda:1")][
                : paging.PAGE
            ]
        )
        while model.canFetchMore(QModelIndex()):  # 125 runs pass: three pages, then no more
            model.fetchMore(QModelIndex())
        assert model.rowCount() == 125 and model.pages_read == 3

        # "Last hour": none of these (all recorded at 2026-12-01T00:00Z), no page walks them;
        # a run recorded now arrives in the list.
        model.load(store, RunFilter(since=time.time() - 3600))
        assert model.rowCount() == 0 and not model.canFetchMore(QModelIndex())
        now = invocation(777, np.random.default_rng(3))
        for result in now["results"]:
            result["provenance"]["time"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        recent = record_report(store, now)
        assert model.update() and model.ids() == sorted(recent, reverse=True)

        # A recording arriving: only the new runs are read, inserted at the top.
        model.load(store, RunFilter())
        with qtbot.waitSignal(model.rowsInserted, timeout=HANG_GUARD_MS) as inserted:
            new = record(store, 9999, np.random.default_rng(1))
            assert model.update()
        assert inserted.args[1:] == [0, len(new) - 1]
        assert model.ids()[: len(new)] == sorted(new, reverse=True)
        assert model.rowCount() == paging.PAGE + len(new)
    finally:
        store.close()


def test_the_view_fetches_as_it_scrolls(make_widget, db, qtbot):
    panel = make_widget(SessionsPanel, None, db_path=db, show=True)
    panel.resize(1280, 700)
    panel.refresh()
    table = panel.table
    assert len(panel.shown_ids()) == paging.PAGE
    bar = table.verticalScrollBar()
    for pages in (2, 3):
        qtbot.waitUntil(
            lambda: bar.maximum() > 0 and bar.value() < bar.maximum(), timeout=HANG_GUARD_MS
        )  # laid out
        bar.setValue(bar.maximum())
        qtbot.waitUntil(lambda n=pages: len(panel.shown_ids()) >= n * paging.PAGE, timeout=HANG_GUARD_MS)
    pages = table.runs_model.pages_read
    assert 3 <= pages < RUNS // paging.PAGE and len(panel.shown_ids()) == pages * paging.PAGE


@pytest.mark.parametrize("size", [(1280, 800), (1600, 1000)])
def test_the_columns_that_matter_are_visible_in_the_window(
    make_window, private_sessions_db, db, qtbot, test_output_dir, size
):
    window = make_window(None)
    window.resize(*size)
    window.docks["sessions"].raise_()
    panel = window.panels["sessions"]
    panel.set_database(db)
    qtbot.waitUntil(lambda: len(panel.shown_ids()) == paging.PAGE, timeout=HANG_GUARD_MS)
    settle_qt()  # the table fits its columns to its width as its resize events arrive
    table = panel.table
    header = table.horizontalHeader()
    viewport = table.viewport()
    assert window.width() == size[0] and viewport.width() > 0
    # The six that matter always; the id too where there is room (at 1600×1000: the kernel's
    # tooltip names the run either way).
    assert set(MATTER) == {"kernel", "backend", "device", "median", "verified", "flags"}
    wide = size == (1600, 1000)
    assert table.shown_columns() == (list(SHOWN) if wide else list(MATTER))
    assert model_tooltip(table, 0, KERNEL).startswith(f"run #{panel.shown_ids()[0]}: ")
    for name in table.shown_columns():
        column = RUN_COLUMNS.index(name)
        left = header.sectionViewportPosition(column)
        assert 0 <= left and left + header.sectionSize(column) <= viewport.width(), (
            name,
            left,
            viewport.width(),
        )
    for name in table.shown_columns():  # the shown rows' texts and the titles whole, not elided
        column = RUN_COLUMNS.index(name)
        assert table.sizeHintForColumn(column) <= header.sectionSize(column), name
        assert header.sectionSizeFromContents(column).width() <= header.sectionSize(column), name
    assert not table.horizontalScrollBar().isVisible()
    # The filters' "any …" texts whole in their fields (6 characters' width cut "any backend").
    for box in (panel.kernel_box, panel.backend_box, panel.device_box):
        assert box.currentIndex() == 0 and box.currentText().startswith("any ")
        option = QStyleOptionComboBox()
        box.initStyleOption(option)
        style = box.style()
        field = style.subControlRect(
            QStyle.ComplexControl.CC_ComboBox, option, QStyle.SubControl.SC_ComboBoxEditField, box
        )
        assert box.fontMetrics().horizontalAdvance(box.currentText()) <= field.width(), (
            box.currentText(),
            field.width(),
        )
    save_screenshot(window, test_output_dir / f"sessions-100k-{size[0]}x{size[1]}.png")

    # The rest on demand: the header's menu shows a hidden column.
    menu = table.column_menu()
    (iqr,) = [a for a in menu.actions() if a.text() == "IQR"]
    assert not iqr.isChecked()
    iqr.trigger()
    assert "IQR" in table.shown_columns()
    assert not table.isColumnHidden(RUN_COLUMNS.index("IQR"))


def model_tooltip(table, row: int, column: int) -> str:
    return table.model().index(row, column).data(Qt.ItemDataRole.ToolTipRole)


def click_row(table, row: int) -> None:
    rect = table.visualRect(table.model().index(row, 1))
    QTest.mouseClick(
        table.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, rect.center()
    )


def test_set_as_baseline_and_compare_through_the_model_with_one_wording(make_widget, db, qtbot):
    panel = make_widget(SessionsPanel, None, db_path=db, show=True)
    panel.resize(1280, 700)
    panel.refresh()
    table, model = panel.table, panel.table.runs_model
    click_row(table, 25)  # an older invocation of the same kernel as the newest (20 rows each)
    baseline = panel.current_id()
    assert baseline == model.runs[25]["id"]
    panel.baseline_button.click()
    assert model.index(25, KERNEL).data() == f"★ {model.runs[25]['kernel']}"
    assert model.baseline_id == baseline
    label = panel.baseline_label.text()
    assert label.startswith(f"Baseline run #{baseline} (★): ")
    # The kernel named as the list names it ("saxpy", not "saxpy/saxpy" beside the list's "saxpy").
    kernel = model.runs[25]["kernel"]
    assert model.runs[25]["project"] == kernel and label.startswith(
        f"Baseline run #{baseline} (★): {kernel}, "
    )

    with qtbot.waitSignal(panel.compare.compared, timeout=WORK_GUARD_MS) as shown:
        click_row(table, 5)
    run_id = model.runs[5]["id"]
    result = shown.args[0]
    assert (result["baseline"], result["run"]) == (baseline, run_id) and result["rows"]
    method = panel.method_label.text()
    assert method.startswith(f"Run #{run_id} against baseline run #{baseline}, whole invocations. Method:")
    assert panel.compare_table.rowCount() == len(result["rows"])

    # A new baseline moves the star; the recorded message names runs the same way.
    click_row(table, 45)
    panel.baseline_button.click()
    assert model.index(25, KERNEL).data() == model.runs[25]["kernel"]
    assert model.index(45, KERNEL).data().startswith("★ ")
    with SessionStore(db) as store:
        ids = record(store, 12345, np.random.default_rng(2))
    panel._on_recorded({"ids": ids})  # as the bridge's runRecorded delivers it
    assert panel.shown_ids()[0] == max(ids) and model.index(45 + len(ids), KERNEL).data().startswith("★ ")

    # One wording: every "#N" in the panel's texts is "run #N" / "runs #N–#M", never "baseline #N".
    texts = " ".join(
        w.text() for w in (panel.baseline_label, panel.method_label, panel.message, panel.history.diff_label)
    )
    assert re.findall(r"#\d+", texts)
    for word in re.findall(r"(\S+) #\d+", texts):
        assert word.lower() in ("run", "runs"), texts
    assert "baseline #" not in texts.lower()


def test_the_command_line_names_runs_as_the_panel_does(db):
    """`workbench sessions compare` heads its table with the panel's wording (`wording.against`)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-m", "workbench", "sessions", "compare", "9000", "9980", "--invocation", "--db", str(db)],
        capture_output=True, text=True, cwd=repo, env=dict(os.environ, PYTHONPATH=str(repo)), timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith("run #9980 against baseline run #9000, whole invocations;")


def test_the_comparing_process_answers_each_request_in_order(db):
    """The Compare tab's child (`compare_child`): an answer per line, errors named, never an end."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    requests = [
        {"id": 1, "db": str(db), "baseline": 9000, "run": 9980, "invocation": True},
        "not json",
        {"id": 2, "db": str(db), "baseline": 9000, "run": 123456},
        {"id": 3, "db": str(db), "baseline": 9001, "run": 9981},
    ]
    done = subprocess.run(
        [sys.executable, "-m", "workbench.profile.sessions.compare_child"],
        input="".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in requests),
        capture_output=True, text=True, cwd=repo, env=dict(os.environ, PYTHONPATH=str(repo)), timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    first, bad, missing, last = (json.loads(line) for line in done.stdout.splitlines())
    assert first["id"] == 1 and (first["result"]["baseline"], first["result"]["run"]) == (9000, 9980)
    assert first["result"]["mode"] == "invocations" and len(first["result"]["rows"]) == 20
    assert bad["id"] is None and "not JSON" in bad["error"]
    assert missing == {"id": 2, "error": f"no run #123456 in {db}"}
    assert last["id"] == 3 and last["result"]["mode"] == "runs"
