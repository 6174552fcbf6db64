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


def series(store, make_report, name, median, *, build, k=3, spread=0.003, host=QUIET, seed=0) -> list[int]:
    """`k` recorded invocations of one `--repeat` series around `median`."""
    rng = np.random.default_rng(seed)
    return [
        record(
            store, make_report, median * (1 + spread * rng.standard_normal()), seed=seed + i, build=build,
            host=host, series={"id": name, "index": i + 1, "of": k},
        )
        for i in range(k)
    ]  # fmt: skip


def test_a_learned_noise_floor_widens_but_gives_single_invocations_no_verdict(tmp_path, make_report):
    """Four earlier A/A runs of the baseline's build set the floor; the compared runs are left out.
    One invocation a side gets an interval from it, but no verdict: a side must show its own spread."""
    rng = np.random.default_rng(7)
    with SessionStore(tmp_path / "s.db") as store:
        history = [
            record(store, make_report, 1e-3 * (1 + 0.01 * rng.standard_normal()), seed=s) for s in range(4)
        ]
        base = record(store, make_report, 1e-3, seed=10)
        slower = record(store, make_report, 1.3e-3, seed=11, build="s")
        (single,) = compare.compare_runs(store, base, slower)["rows"]
        logs = np.log([store.get_run(i, samples=False)["median_s"] for i in history])
        a = series(store, make_report, "a", 1e-3, build="k", seed=20)
        b = series(store, make_report, "b", 1.3e-3, build="s", seed=30)
        c = series(store, make_report, "c", 0.7e-3, build="f", seed=40)
        rows = {"slower": compare.compare_runs(store, a[0], b[0])["rows"][0]}
        rows["faster"] = compare.compare_runs(store, a[0], c[0])["rows"][0]
    expected_sigma = math.sqrt(((logs - logs.mean()) ** 2).sum() / 3)
    floor = single["noise_floor"]
    assert floor["invocations"] == 4 and floor["df"] == 3  # base's own group: base left out
    assert floor["sigma"] == pytest.approx(expected_sigma, rel=1e-6)
    assert single["ci"][0] > 1.02 and single["outcome"] == "ambiguous"  # beyond the margin, yet 1 : 1
    assert single["verdict"] == (
        f"ambiguous (1 : 1 invocations; a verdict needs {noise.MIN_INVOCATIONS} a side: "
        f"run with --repeat {noise.MIN_INVOCATIONS})"
    )
    assert rows["slower"]["outcome"] == "slower" and rows["slower"]["invocations"] == [3, 3]
    assert rows["faster"]["outcome"] == "faster" and rows["faster"]["ci"][1] < 0.98
    assert rows["slower"]["margin"] == noise.MIN_EFFECT  # the floor widens the interval, not the margin


def test_the_floor_never_narrows_the_sides_own_interval():
    """Sides that scatter by 10% keep their own wide interval beside a 0.1% floor."""
    a, b = [1.0, 1.1, 0.9], [1.2, 1.32, 1.08]
    quiet = {"sigma": 0.001, "df": 40, "rel": 0.001, "invocations": 50, "groups": 5}
    alone = noise.between_invocations(a, b)
    with_floor = noise.between_invocations(a, b, quiet)
    assert with_floor["ci"] == pytest.approx(alone["ci"])
    assert alone["outcome"] == "ambiguous"


@pytest.mark.parametrize("ka, kb", [(1, 1), (3, 1), (1, 3), (3, 2), (2, 3)])
def test_uneven_or_short_sides_get_no_verdict_even_for_a_large_change(ka, kb):
    floor = {"sigma": 0.01, "df": 30, "rel": 0.01, "invocations": 40, "groups": 4}
    row = noise.between_invocations([1e-3] * ka, [2e-3 * (1 + 0.001 * i) for i in range(kb)], floor)
    assert row["outcome"] == "ambiguous" and row["ci"][0] > 1.5
    assert row["reason"].startswith(f"{ka} : {kb} invocations; a verdict needs 3 a side")


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


def test_busy_runs_teach_no_floor_and_carry_no_verdict_the_load_could_explain(tmp_path, make_report):
    """BUSY: other processes used 1.7 of 2 cores, so a busy run could be 2 / 0.3 = 6.7× slower."""
    with SessionStore(tmp_path / "s.db") as store:
        for s, median in enumerate((1e-3, 1.5e-3, 0.7e-3, 1.2e-3)):  # wild, but busy: not A/A evidence
            record(store, make_report, median, seed=s, host=BUSY)
        for s in range(3):
            record(store, make_report, 1e-3 * (1 + 0.004 * s), seed=10 + s)
        base = series(store, make_report, "a", 1e-3, build="k", seed=20)
        doubled = series(store, make_report, "b", 2e-3, build="b", host=BUSY, seed=30)
        tenfold = series(store, make_report, "c", 1e-2, build="c", host=BUSY, seed=40)
        faster = series(store, make_report, "d", 0.3e-3, build="d", host=BUSY, seed=50)
        far_faster = series(store, make_report, "e", 0.1e-3, build="e", host=BUSY, seed=60)
        (row,) = compare.compare_runs(store, base[0], doubled[0])["rows"]
        (far,) = compare.compare_runs(store, base[0], tenfold[0])["rows"]
        (quick,) = compare.compare_runs(store, base[0], faster[0])["rows"]
        (quicker,) = compare.compare_runs(store, base[0], far_faster[0])["rows"]
        (back,) = compare.compare_runs(store, doubled[0], base[0])["rows"]  # the busy side first
    assert noise.load_factor({"host": BUSY}) == pytest.approx(2 / 0.3)
    assert row["noise_floor"]["invocations"] == 3  # the quiet ones only
    assert row["ci"][0] > 1.5 and row["outcome"] == "ambiguous"
    assert row["busy_runs"] == doubled and row["load"] == [1.0, pytest.approx(2 / 0.3)]
    assert row["verdict"] == (
        f"ambiguous (the load could explain it: busy run #{doubled[0]} (other processes 1.70 of 2 cores) "
        "could be up to 6.7× slower or faster)"
    )
    assert back["outcome"] == "ambiguous" and "the load could explain it" in back["verdict"]
    # Beyond what the load could explain, the verdict stands and says what it rests on.
    assert far["outcome"] == "slower"
    assert far["verdict"].startswith("slower — rests on a busy run (#")
    assert far["verdict"].endswith(", beyond what its load could explain")
    # The busy side is the faster one: load can speed a run up too (a small two-thread launch whose
    # helper is never scheduled skips the hand-off), so 3.3× inside its 6.7× gets no verdict either;
    # 10× is beyond it.
    assert quick["outcome"] == "ambiguous" and quick["busy_runs"] == faster
    assert "could be up to 6.7× slower or faster" in quick["verdict"]
    assert quicker["outcome"] == "faster" and quicker["verdict"].startswith("faster — rests on a busy run")


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
        assert row["invocations"] == [2, 1] and row["outcome"] == "ambiguous"  # the series against one more
