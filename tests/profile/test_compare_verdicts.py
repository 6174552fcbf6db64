"""Verdicts between invocations, the A/A noise floor and what is comparable, on real SQLite files.

The reports are synthetic (`make_report`) where the timing must be controlled; the database, the
recording and the comparison are the real ones.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from workbench.profile.sessions import compare, noise
from workbench.profile.sessions.record import record_report
from workbench.profile.sessions.store import SessionStore

CPU = ("cpu", "cpu")
QUIET = {"source": "/proc", "cpus": 2, "other_cpu_cores": 0.01, "wall_s": 1.0}
BUSY = {"source": "/proc", "cpus": 2, "other_cpu_cores": 1.7, "wall_s": 1.0}


def record(store, make_report, median, *, seed, build="k", sizes=None, host=QUIET, series=None) -> int:
    report = make_report(medians={CPU: median}, seed=seed, spread=0.002)
    for result in report["results"]:
        result["provenance"]["build_key"] = build * 64
        if sizes is not None:
            result["provenance"]["sizes"] = sizes
    (run_id,) = record_report(store, report, host=host, series=series)
    return run_id


def test_t_quantiles_match_the_tables():
    assert noise.t975(1) == pytest.approx(12.706)
    assert noise.t975(10) == pytest.approx(2.228)
    assert noise.t975(40) == pytest.approx(2.021, abs=0.001)
    assert noise.t975(120) == pytest.approx(1.980, abs=0.001)


def test_one_invocation_a_side_and_no_history_is_ambiguous(tmp_path, make_report):
    """Even a 2x change: one invocation a side says nothing about the spread between invocations."""
    with SessionStore(tmp_path / "s.db") as store:
        a = record(store, make_report, 1e-3, seed=1)
        b = record(store, make_report, 2e-3, seed=2, build="b")
        (row,) = compare.compare_runs(store, a, b)["rows"]
    assert row["outcome"] == "ambiguous" and row["ci"] is None
    assert row["verdict"] == "ambiguous (1 invocation: run with --repeat)"
    assert row["ratio"] == pytest.approx(2.0, rel=0.01)
    # The within-run bootstrap, which the old verdict used, is still reported, and would have called it.
    assert row["within"]["verdict"] == "slower"


def test_a_learned_noise_floor_judges_single_invocations(tmp_path, make_report):
    """Four earlier A/A runs of the baseline's build set the floor; the compared runs are left out."""
    rng = np.random.default_rng(7)
    with SessionStore(tmp_path / "s.db") as store:
        history = [
            record(store, make_report, 1e-3 * (1 + 0.01 * rng.standard_normal()), seed=s) for s in range(4)
        ]
        base = record(store, make_report, 1e-3, seed=10)
        slower = record(store, make_report, 1.3e-3, seed=11, build="s")
        faster = record(store, make_report, 0.7e-3, seed=12, build="f")
        barely = record(store, make_report, 1.005e-3, seed=13, build="e")
        rows = {
            name: compare.compare_runs(store, base, run_id)["rows"][0]
            for name, run_id in (("slower", slower), ("faster", faster), ("barely", barely))
        }
        logs = np.log([store.get_run(i, samples=False)["median_s"] for i in history])
    expected_sigma = math.sqrt(((logs - logs.mean()) ** 2).sum() / 3)
    for row in rows.values():
        floor = row["noise_floor"]
        assert floor["invocations"] == 4 and floor["df"] == 3  # base's own group: base left out
        assert floor["sigma"] == pytest.approx(expected_sigma, rel=1e-6)
    assert rows["slower"]["outcome"] == "slower" and rows["slower"]["ci"][0] > 1.02
    assert rows["faster"]["outcome"] == "faster" and rows["faster"]["ci"][1] < 0.98
    assert rows["barely"]["outcome"] == "ambiguous"  # 0.5% with a ~1% floor: neither same nor changed
    assert rows["slower"]["margin"] == noise.MIN_EFFECT  # the floor widens the interval, not the margin


def test_repeated_invocations_call_same_and_changed(tmp_path, make_report):
    """Series of --repeat invocations: a side is every repetition that measured the same thing."""
    rng = np.random.default_rng(3)
    with SessionStore(tmp_path / "s.db") as store:

        def series(name, median, build):
            return [
                record(
                    store, make_report, median * (1 + 0.003 * rng.standard_normal()), seed=i, build=build,
                    series={"id": name, "index": i + 1, "of": 5},
                )
                for i in range(5)
            ]  # fmt: skip

        a = series("a", 1e-3, "a")
        b = series("b", 1e-3, "b")
        c = series("c", 1.1e-3, "c")
        same = compare.compare_runs(store, a[0], b[2])["rows"][0]
        slower = compare.compare_runs(store, a[4], c[0])["rows"][0]
        inside = compare.compare_runs(store, a[0], a[3])["rows"][0]  # one series: just the two rows
    assert same["outcome"] == "same" and same["invocations"] == [5, 5]
    assert same["baseline_ids"] == a and same["run_ids"] == b
    assert 0.98 < same["ci"][0] < 1.0 < same["ci"][1] < 1.02
    assert slower["outcome"] == "slower" and slower["ratio"] == pytest.approx(1.1, rel=0.01)
    assert inside["invocations"] == [1, 1]


def test_a_verdict_that_rests_on_a_busy_run_says_so_and_busy_runs_teach_no_floor(tmp_path, make_report):
    with SessionStore(tmp_path / "s.db") as store:
        for s, median in enumerate((1e-3, 1.5e-3, 0.7e-3, 1.2e-3)):  # wild, but busy: not A/A evidence
            record(store, make_report, median, seed=s, host=BUSY)
        for s in range(3):
            record(store, make_report, 1e-3 * (1 + 0.004 * s), seed=10 + s)
        base = record(store, make_report, 1e-3, seed=20)
        run = record(store, make_report, 2e-3, seed=21, build="b", host=BUSY)
        (row,) = compare.compare_runs(store, base, run)["rows"]
    assert row["noise_floor"]["invocations"] == 3  # the quiet ones only
    assert row["noise_floor"]["rel"] < 0.01
    assert row["outcome"] == "slower"
    assert row["busy_runs"] == [run]
    assert row["verdict"] == f"slower — rests on a busy run (#{run})"


def test_unlike_sizes_are_not_comparable_unless_forced(tmp_path, make_report):
    with SessionStore(tmp_path / "s.db") as store:
        a = record(store, make_report, 1e-3, seed=1, sizes={"n": 1_048_576})
        b = record(store, make_report, 0.95e-3, seed=2, sizes={"n": 1_000_000})
        (row,) = compare.compare_runs(store, a, b)["rows"]
        (forced,) = compare.compare_runs(store, a, b, force=True)["rows"]
    assert row["outcome"] == "not comparable" and row["comparable"] is False and row["ratio"] is None
    assert row["differs"] == ["sizes n: 1048576 → 1000000"]
    assert row["verdict"] == "not comparable: sizes n: 1048576 → 1000000"
    assert forced["forced"] is True and forced["differs"] == row["differs"]
    assert forced["verdict"].startswith("forced: ambiguous")
    assert forced["ratio"] == pytest.approx(0.95, rel=0.01)
    assert compare.cells(row)[-1] == "not comparable (differences below)"


def test_an_invocation_row_without_a_partner_says_so(tmp_path, make_report):
    with SessionStore(tmp_path / "s.db") as store:
        a = record_report(store, make_report(seed=1))
        b = record_report(store, make_report(medians={CPU: 1e-3}, seed=2))
        rows = compare.compare_runs(store, a[0], b[0], invocation=True)["rows"]
    by_backend = {r["backend"]: r for r in rows}
    assert by_backend["cpu"]["outcome"] == "ambiguous"
    assert by_backend["wgsl"]["outcome"] == "not comparable"
    assert by_backend["wgsl"]["differs"] == ["no result of wgsl on wgpu:0 in the compared invocation"]


def test_a_repeat_report_imports_every_repetition_and_odd_conditions_read_as_unknown(tmp_path, make_report):
    import json

    from workbench.profile.sessions.export import import_bundle
    from workbench.run.host_load import flags

    reps = [
        {
            **make_report(medians={CPU: 1e-3}, seed=i),
            "host_conditions": QUIET,
            "series": {"id": "s", "index": i, "of": 2},
        }
        for i in (1, 2)
    ]
    (tmp_path / "repeat.json").write_text(json.dumps({**reps[0], "repetitions": reps}))
    with SessionStore(tmp_path / "s.db") as store:
        assert import_bundle(store, tmp_path / "repeat.json") == (2, 0)
        first, second = sorted(store.records(), key=lambda r: r["id"])
        assert [first["series"]["index"], second["series"]["index"]] == [1, 2]
        assert first["invocation"] != second["invocation"] and first["host"] == QUIET
        assert compare.compare_runs(store, first["id"], second["id"])["rows"][0]["invocations"] == [1, 1]
        # A bundle may carry anything where conditions go: read as unknown, never a crash.
        odd = record_report(store, make_report(medians={CPU: 1e-3}, seed=3), host="x", series=["y"])
        (row,) = store.records(ids=odd)
        assert flags(row["host"], {"clocks_after": "z"}) == []
        (row,) = compare.compare_runs(store, first["id"], odd[0])["rows"]
        assert row["invocations"] == [2, 1] and row["outcome"] == "same"  # the series against one more
