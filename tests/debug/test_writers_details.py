"""The details view answers "written by" (issue 40, item 1): a saxpy whose invocation 1234 stores
a wrong value, run for real on wgsl (llvmpipe, the reference) and cpu-sim with writers recorded
(`RunService.run(writers=[])`); the cpu-sim result's details list the mismatching element with
the invocation and the Rust line that wrote it."""

from __future__ import annotations

import pytest
from PySide6.QtWidgets import QTableWidget

from workbench.build.toolchains import detect
from workbench.run.service import RunService
from workbench.ui.results.details import MISMATCH_COLUMNS, ResultDetails

pytestmark = pytest.mark.slow

BODY = "    } else if i < n {\n        y[i] = a * x[i] + y[i];\n"
WRONG = "    } else if i < n {\n        if i == 1234 {\n            y[i] = 5.0;\n        } else {\n            y[i] = a * x[i] + y[i];\n        }\n"


def test_the_details_view_names_the_writer_of_a_wrong_element(example_copy, shared_cache_dir, qtbot):
    if not detect("cpu").found:
        pytest.skip("no host cargo: run packaging/bootstrap.sh setup")
    root = example_copy("saxpy")
    lib = root / "src" / "lib.rs"
    assert lib.read_text().count(BODY) == 1
    lib.write_text(lib.read_text().replace(BODY, WRONG))
    line = next(k for k, t in enumerate(lib.read_text().splitlines(), 1) if "y[i] = 5.0;" in t)
    service = RunService()
    try:
        report = service.run(root, backends=["wgsl", "cpu-sim"], sizes={"n": 4096}, reference="wgsl",
                             cache_dir=shared_cache_dir, writers=[])  # fmt: skip
    finally:
        service.close()
    sim = next(r for r in report.results if r.backend == "cpu-sim")
    assert sim.status == "ok" and sim.verified is False, sim.error
    (element,) = sim.writers["y"]["elements"]  # the one mismatch
    assert (element["index"], element["group"], element["local"], element["line"]) == (
        1234,
        [4, 0, 0],
        [210, 0, 0],
        line,
    )

    dialog = ResultDetails(report, sim)
    qtbot.addWidget(dialog)
    table = dialog.findChild(QTableWidget, "mismatches:y")
    headers = [table.horizontalHeaderItem(c).text() for c in range(table.columnCount())]
    assert headers == [*MISMATCH_COLUMNS, "Written by"]
    assert table.rowCount() == 1 and table.item(0, 0).text() == "1234"
    assert table.item(0, len(MISMATCH_COLUMNS)).text() == (
        f"written by workgroup (4, 0, 0) local (210, 0, 0) at src/lib.rs:{line}"
    )
