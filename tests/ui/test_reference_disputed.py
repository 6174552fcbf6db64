"""A reference that is not trusted blindly: the reduction example with the folding loop's
`ctx.barrier()` removed (a race in the cpu reference's own code, which cpu-sim finds) and with a
broken WGSL reference that cpu and cpu-sim outvote.

Real builds and runs: `workbench run --json` and its table (cpu, cpu-sim and wgsl on llvmpipe),
and the window's results table through the bridge. The correct backend's mismatch reads
"disputed — …", never a plain "✗ no"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import cli
from tests.waits import WORK_GUARD_MS
from workbench.result_text import check_line, verdict_cell
from workbench.ui.results.table import ResultsTable

pytestmark = pytest.mark.slow

TIMEOUT_MS = WORK_GUARD_MS
SIZE = "n=131072"
FOLD = "            scratch.set(tid, scratch.get(tid) + scratch.get(tid + stride));\n"
LOOP_BARRIER = FOLD + "        }\n        ctx.barrier();\n"


LANES_ENTRY = """    k.run_lanes(
        move |ctx| {
            let scratch = ctx.shared::<f32, BLOCK>();
            reduction_body(ctx, VECTOR, MAX_GROUPS, n, x, partial, scratch)
        },
        move |wg| {
            let scratch = wg.shared::<f32, BLOCK>();
            reduction_body_lanes(wg, VECTOR, MAX_GROUPS, n, x, partial, scratch)
        },
    );
"""
FIBERS_ENTRY = """    k.run(move |ctx| {
        let scratch = ctx.shared::<f32, BLOCK>();
        reduction_body(ctx, VECTOR, MAX_GROUPS, n, x, partial, scratch)
    });
"""


def racy_copy(example_copy) -> tuple[Path, int]:
    """The reduction with its loop's barrier removed, its body run on fibers (no `#[lanes]`); the
    line of the racing fold.

    On fibers each invocation runs to its next barrier, so with the loop's barrier gone invocation
    0 folds every step before the others fold any: the cpu reference's partial sums come out
    wrong, and the correct wgsl reference disagrees with it. As `#[lanes]` the same race gives the
    right sums (a barrier-free `while` with a uniform condition runs iteration by iteration with
    the lanes inside, the order the barrier gave), so nothing would mismatch to dispute; cpu-sim
    reports the race either way."""
    root = example_copy("reduction")
    lib = root / "src" / "lib.rs"
    text = lib.read_text()
    assert text.count(LOOP_BARRIER) == 1 and text.count(LANES_ENTRY) == 1
    assert text.count("#[lanes]\npub fn reduction_body(") == 1
    racy = text.replace(LOOP_BARRIER, FOLD + "        }\n").replace(LANES_ENTRY, FIBERS_ENTRY)
    lib.write_text(racy.replace("#[lanes]\npub fn reduction_body(", "pub fn reduction_body("))
    return root, racy[: racy.index(FOLD)].count("\n")


def run(
    root: Path, cache: Path, *extra: str, backends: str = "cpu,cpu-sim,wgsl", sizes: str = SIZE
) -> tuple[dict, str]:
    """`workbench run --json` and the same run's table (`--no-record` unless `extra` names a --db)."""
    record = [] if "--db" in extra else ["--no-record"]
    args = ["run", root, "--backend", backends, "--size", sizes, "--cache-dir", cache, *record, *extra]
    done = cli(*args, "--json", timeout=600)
    assert done.stdout, done.stderr
    table = cli(*args, timeout=600).stdout
    return {r["backend"]: r for r in json.loads(done.stdout)["results"]}, table


def row_of(table: str, backend: str) -> str:
    (row,) = [line for line in table.splitlines() if line.startswith(backend + " ")]
    return row


def test_a_racy_reference_disputes_the_correct_wgsl_in_json_and_the_table(
    example_copy, shared_cache_dir, tmp_path
):
    root, line = racy_copy(example_copy)
    db = tmp_path / "runs.db"
    results, table = run(root, shared_cache_dir, "--db", db)
    race = [f for f in results["cpu-sim"]["findings"]["findings"] if f["kind"] == "shared-race"]
    assert race, results["cpu-sim"]["findings"]
    wgsl = results["wgsl"]
    assert wgsl["verified"] is False  # the comparison itself failed: that stays true
    reason = f"the reference (cpu) has 1 race at src/lib.rs:{line}"
    assert wgsl["check"]["disputed"] == reason, wgsl["check"]
    assert "disputed" not in results["cpu-sim"]["check"]  # it agreed with the reference
    row = row_of(table, "wgsl")
    assert "⚠ disputed" in row and f"disputed — {reason}; first bad partial[" in row, table
    assert "✗ no" not in row
    # Later, without cpu-sim: the findings recorded for the same sources still dispute it.
    later, table = run(root, shared_cache_dir, "--db", db, backends="cpu,wgsl")
    assert later["wgsl"]["verified"] is False and later["wgsl"]["check"]["disputed"] == reason
    assert "⚠ disputed" in row_of(table, "wgsl")


def test_a_broken_wgsl_reference_is_outvoted_by_cpu_and_cpu_sim(example_copy, shared_cache_dir):
    root = example_copy("reduction")
    wgsl = root / "reference" / "reduction.wgsl"
    text = wgsl.read_text()
    assert text.count("partial[block] = scratch[0];") == 1
    wgsl.write_text(text.replace("partial[block] = scratch[0];", "partial[block] = scratch[0] * 2.0;"))
    results, table = run(root, shared_cache_dir, "--reference", "wgsl")
    for backend in ("cpu", "cpu-sim"):
        assert results[backend]["verified"] is False
        assert results[backend]["check"]["disputed"] == "the reference (wgsl) is outvoted by 2 backends"
        assert "⚠ disputed" in row_of(table, backend)


def divergent_copy(example_copy) -> tuple[Path, int]:
    """The reduction with its folding loop's barrier moved inside `if tid < stride` (a divergent
    barrier); the barrier's line. The invocations that skip it return early: partial[0] and
    partial[1] are never written, by the cpu reference as by cpu-sim, which reports the
    divergence at that barrier."""
    root = example_copy("reduction")
    lib = root / "src" / "lib.rs"
    text = lib.read_text()
    assert text.count(LOOP_BARRIER) == 1
    divergent = text.replace(LOOP_BARRIER, FOLD + "            ctx.barrier();\n        }\n")
    lib.write_text(divergent)
    return root, divergent[: divergent.index(FOLD)].count("\n") + 2


def test_a_reference_that_never_wrote_elements_says_so_in_its_row_and_the_others(
    example_copy, shared_cache_dir
):
    root, line = divergent_copy(example_copy)
    results, table = run(root, shared_cache_dir, backends="cpu,cpu-sim", sizes="n=4096")
    cpu, sim = results["cpu"], results["cpu-sim"]
    assert cpu["check"]["is_reference"] and cpu["check"]["unwritten"] == 2, cpu["check"]
    assert cpu["check"]["first_unwritten"] == {"buffer": "partial", "index": 0}
    row = row_of(table, "cpu")
    assert "⚠ reference (incomplete)" in row and "incomplete: partial[0] never written" in row, table
    # cpu-sim's mismatch: disputed for its own finding, and worded as the reference's gap.
    assert sim["verified"] is False and sim["check"]["first_bad"]["reference_unwritten"] is True
    row = row_of(table, "cpu-sim")
    assert f"the reference (cpu) has 1 divergence at src/lib.rs:{line}" in row, table
    assert "first bad partial[0]: the reference never wrote it" in row and "expected nan" not in row
    # What cpu-sim found, at the line, under the table.
    assert f"src/lib.rs:{line}:" in table and "error[barrier-divergence]" in table, table


@pytest.fixture
def bridge(shared_cache_dir, tmp_path):
    """The window's bridge as `ui/app.py` makes it, recording into the test's own database."""
    from workbench.profile.sessions.recorder import SessionRecorder
    from workbench.ui.bridge import ServiceBridge

    bridge = ServiceBridge(cache_dir=shared_cache_dir, recorder=SessionRecorder(tmp_path / "sessions.db"))
    bridge.set_sizes({"n": 131072})
    yield bridge
    bridge.shutdown()


def test_the_window_shows_the_dispute_with_the_race_line(qtbot, make_widget, bridge, example_copy, tmp_path):
    from workbench.profile.sessions.store import SessionStore

    root, line = racy_copy(example_copy)
    bridge.set_project(root)
    table = make_widget(ResultsTable, bridge, show=True)
    reason = f"the reference (cpu) has 1 race at src/lib.rs:{line}"

    def shown(backends: list[str]) -> dict:
        with qtbot.waitSignal(bridge.runFinished, timeout=TIMEOUT_MS):
            bridge.start_run(backends, ["cpu", "wgpu:0"])
        qtbot.waitUntil(lambda: len(table.row_texts()) == len(backends), timeout=TIMEOUT_MS)
        wgsl = next(r for r in table.report.results if r.backend == "wgsl")
        texts = {r["Backend"]: r for r in table.row_texts()}
        assert texts["wgsl"]["Verified"] == verdict_cell(wgsl) == "⚠ disputed"
        assert texts["wgsl"]["Check"] == check_line(wgsl)
        assert check_line(wgsl).startswith(f"disputed — {reason}; ")
        return texts

    texts = shown(["cpu", "cpu-sim", "wgsl"])
    assert "1 disputed" in table.caption.text() and texts["cpu-sim"]["Verified"] == "✓ yes"

    def recorded() -> bool:
        with SessionStore(tmp_path / "sessions.db") as store:
            return bool(store.records(backend="cpu-sim"))

    qtbot.waitUntil(recorded, timeout=TIMEOUT_MS)
    # The next Run leaves cpu-sim out: the findings recorded for these sources still speak.
    shown(["cpu", "wgsl"])


def test_the_window_shows_the_incomplete_reference_as_the_command_line_does(
    qtbot, make_widget, bridge, example_copy
):
    root, _ = divergent_copy(example_copy)
    bridge.set_sizes({"n": 4096})
    bridge.set_project(root)
    table = make_widget(ResultsTable, bridge, show=True)
    with qtbot.waitSignal(bridge.runFinished, timeout=TIMEOUT_MS):
        bridge.start_run(["cpu", "cpu-sim"], ["cpu"])
    qtbot.waitUntil(lambda: len(table.row_texts()) == 2, timeout=TIMEOUT_MS)
    results = {r.backend: r for r in table.report.results}
    texts = {r["Backend"]: r for r in table.row_texts()}
    assert texts["cpu"]["Verified"] == verdict_cell(results["cpu"]) == "⚠ reference (incomplete)"
    assert texts["cpu"]["Check"] == check_line(results["cpu"])
    assert check_line(results["cpu"]).startswith("incomplete: partial[0] never written")
    assert texts["cpu-sim"]["Verified"] == "⚠ disputed"
    assert "the reference never wrote it" in texts["cpu-sim"]["Check"]
