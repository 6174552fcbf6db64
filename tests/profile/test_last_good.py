"""LastGood: failed rows show their last good result, stale; recorders get only fresh rows."""

from __future__ import annotations

import numpy as np

from workbench.profile.last_good import LastGood, fresh_only
from workbench.records import BuildResult, RunResult, Stale
from workbench.result_text import stale_label, stale_note
from workbench.run.service import RunReport


def _result(backend: str, status: str = "ok", time: str = "2026-12-01T01:00:00Z", error=None) -> RunResult:
    spec = "cpu" if backend == "cpu" else "wgpu:0"
    return RunResult(backend, {"spec": spec}, status, verified=status == "ok" or None, error=error,
                     provenance={"time": time, "source_hash": "ab" * 32})  # fmt: skip


def test_a_failed_build_brings_back_the_last_good_row_and_its_outputs_stale():
    keeper = LastGood()
    y = np.arange(4, dtype=np.float32)
    good = RunReport("saxpy", "saxpy", [_result("cpu"), _result("wgsl")], {"cpu": {"y": y}, "wgsl": {"y": y}})
    assert keeper.merge(good).results == good.results
    # The next cycle: cpu did not build, so the live loop ran wgsl alone.
    later = RunReport(
        "saxpy", "saxpy", [_result("wgsl", time="2026-12-01T01:05:00Z")], {"wgsl": {"y": y + 1}}
    )
    shown = keeper.merge(later, {"cpu": BuildResult("cpu", "error"), "wgsl": BuildResult("wgsl", "ok")})
    rows = {r.backend: r for r in shown.results}
    assert rows["wgsl"].stale is None
    assert rows["cpu"].stale == Stale(
        reason="cpu build error", time="2026-12-01T01:00:00Z", source_hash="ab" * 32
    )
    # A field of the result, not a key tucked into its provenance (which is the run's own).
    assert rows["cpu"].provenance == good.results[0].provenance and "stale" not in rows["cpu"].provenance
    assert stale_note(rows["cpu"].stale) == (
        "stale: cpu build error — result of 2026-12-01 01:00:00 UTC, source abababab"
    )
    assert stale_label(rows["cpu"].stale) == "stale · 01:00:00"
    # The JSON carries it (an added key), and a result read back from that JSON is stale again.
    shown_json = rows["cpu"].to_json()
    assert shown_json["stale"] == {"reason": "cpu build error", "time": "2026-12-01T01:00:00Z",
                                   "source_hash": "ab" * 32}  # fmt: skip
    assert RunResult.from_dict(rows["cpu"].to_dict()).stale == rows["cpu"].stale
    assert rows["wgsl"].to_json()["stale"] is None
    assert np.array_equal(shown.outputs["cpu"]["y"], y) and np.array_equal(shown.outputs["wgsl"]["y"], y + 1)
    assert good.results[0].stale is None  # the kept result itself is untouched
    # A run error of a backend that ran before: its last good row, stale, with the error as reason.
    failed = RunReport(
        "saxpy", "saxpy", [_result("cpu", "error", error="worker died\nmore"), _result("wgsl")]
    )
    (cpu,) = [r for r in keeper.merge(failed).results if r.backend == "cpu"]
    assert cpu.stale is not None and cpu.stale.reason == "worker died"
    # What a recorder gets: only the rows that ran now.
    assert [r.backend for r in fresh_only(shown).results] == ["wgsl"]
    assert fresh_only(keeper.all_stale(good, "nothing to run")) is None
