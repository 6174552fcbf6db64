"""The `ncu --csv` parser on real Nsight Compute output captured on the H200
(benchmarks/gpu_host/counters_capture.sh: ncu 2025.3.1, driver 580.159.04, the workbench's metric set
on saxpy and reduce_shared; tests/run/data/ncu-h200-env.txt), not hand-written text."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.run.counters.metrics import METRICS, ncu_metrics_argument
from workbench.run.counters.ncu_csv import NcuParseError, number, parse

DATA = Path(__file__).parent / "data"


def test_the_default_capture_gives_every_metric_of_both_launches():
    text = (DATA / "ncu-h200.csv").read_text()
    assert text.startswith("==PROF== Connected")  # ncu's notices share the --log-file
    saxpy, reduce = parse(text)
    assert (saxpy.kernel, saxpy.block, saxpy.grid, saxpy.cc) == (
        "saxpy",
        "(256, 1, 1)",
        "(65536, 1, 1)",
        "9.0",
    )
    assert reduce.kernel == "reduce_shared" and reduce.grid == "(32768, 1, 1)"
    assert set(saxpy.values) == {m.key for m in METRICS}  # the whole documented set came back
    assert saxpy.values["duration_s"] == pytest.approx(61952e-9)  # "61,952" ns
    assert saxpy.values["sm_hz"] == pytest.approx(1_468_359_179.35)  # ncu's base-clock lock
    assert saxpy.values["dram_pct"] == 61.43 and saxpy.values["l2_pct"] == 75.13
    assert (
        saxpy.values["achieved_occupancy_pct"] == 74.09 and saxpy.values["theoretical_occupancy_pct"] == 100
    )
    assert saxpy.values["l1_hit_pct"] == 33.0 and reduce.values["l2_hit_pct"] == 2.54
    # The top stall reasons, largest first; 'selected' (issuing) is not a stall.
    assert saxpy.stalls == [
        ("long_scoreboard", 43.95),
        ("short_scoreboard", 3.83),
        ("wait", 3.22),
        ("drain", 1.18),
    ]
    assert reduce.stalls[0] == ("long_scoreboard", 4.85) and ("barrier", 2.63) in reduce.stalls
    assert len(saxpy.raw) == len(METRICS) + 19  # the regex matched Hopper's 19 stall metrics


def test_base_units_and_clocks_left_alone_read_the_same_way():
    saxpy, reduce = parse((DATA / "ncu-h200-base-units.csv").read_text())
    assert saxpy.values["duration_s"] == pytest.approx(58624e-9)
    assert saxpy.values["sm_hz"] == pytest.approx(1_974_434_919.61)  # --clock-control none: boost clock
    assert reduce.values["sm_pct"] == 66.21


def test_numbers_units_and_bad_text():
    assert number("1.5", "usecond") == pytest.approx(1.5e-6)
    assert number("1.98", "Ghz") == pytest.approx(1.98e9)
    assert number("n/a", "%") is None
    with pytest.raises(NcuParseError, match="not a number: 'abc'"):
        number("abc")
    assert parse("==PROF== nothing profiled\n") == []
    with pytest.raises(NcuParseError, match="Metric Value"):
        parse('"ID","Kernel Name","Metric Name","Metric Unit"\n"0","k","m","u"\n')


def test_the_metrics_argument_names_the_set_and_the_stall_regex():
    argument = ncu_metrics_argument()
    assert argument.split(",")[0] == "gpu__time_duration.sum"
    assert argument.endswith(r"regex:^smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$")
