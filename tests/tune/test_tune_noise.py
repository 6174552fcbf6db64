"""Tuning on the footing of trustworthy verdicts: identical builds are one point, rounds are
interleaved and a winner is named only beyond the noise between them, after the leaders were
re-timed side by side; `--apply` only where the tunable has an effect; a broken reference makes
the others "not verified (reference failed)"; resume reruns failures whose settings changed;
skipped is skipped. Real cargo builds, real runs on the cpu and on wgpu (llvmpipe)."""

from __future__ import annotations

import json
import math

import pytest

from workbench.profile.sessions.store import SessionStore
from workbench.profile.tuning import ranking
from workbench.profile.tuning.apply import ApplyError, choose_slot, winner_config
from workbench.profile.tuning.events import SweepEntries
from workbench.profile.tuning.sweep_space import Point
from workbench.profile.tuning.tune import SweepRunner
from workbench.project import Project


def _tune(workbench_cli, root, db, cache, *extra: str):
    return workbench_cli("tune", str(root), "--param", "threads=64,128", "--size", "n=4096", "--db", str(db),
                         "--cache-dir", str(cache), *extra)  # fmt: skip


def test_an_unread_tunable_is_one_point_and_a_read_one_is_ranked_and_applied(
    example_copy, workbench_cli, tmp_path, shared_cache_dir, slow_wgsl_at
):
    root = example_copy("saxpy", tunables=("threads",))
    slow_wgsl_at(root, 64)  # the WGSL reads threads, and 64 is far slower: a real winner
    db = tmp_path / "s.db"
    proc = _tune(workbench_cli, root, db, shared_cache_dir, "--backend", "cpu,wgsl", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    entries = {(e["backend"], e["config"]["threads"]): e for e in data["configs"]}

    # The cpu crate never reads threads: both builds are byte-identical, one point, no best.
    assert entries[("cpu", 64)]["build"] == entries[("cpu", 128)]["build"] is not None
    cpu = data["best"]["cpu@cpu"]
    assert cpu["verdict"] == ranking.NO_EFFECT and cpu["winner"] is None and cpu["points"] == 1
    assert cpu["no_effect"] == ["threads"] and cpu["runner_up"] is None
    assert sorted(c["threads"] for c in cpu["identical"][0]) == [64, 128]
    assert "threads has no effect on cpu" in cpu["note"]

    # The WGSL does read it: two builds, ranked on the between-round ratio, the leaders re-timed
    # side by side (rounds 4 and 5, interleaved) before 128 is named the winner.
    assert entries[("wgsl", 64)]["build"] != entries[("wgsl", 128)]["build"]
    wgsl = data["best"]["wgsl@wgpu:0"]
    assert wgsl["verdict"] == ranking.WINNER and wgsl["winner"] == {"threads": 128}
    assert wgsl["points"] == 2 and wgsl["confirmed"] and data["rounds"]["confirmed"] == ["wgsl@wgpu:0"]
    low, high = wgsl["runner_up"]["ratio_ci"]
    assert high < 1 - data["min_effect"] and wgsl["runner_up"]["common_rounds"] == 5
    for threads in (64, 128):
        rounds = entries[("wgsl", threads)]["rounds"]
        assert [r["round"] for r in rounds] == [1, 2, 3, 4, 5]
        assert [r["confirm"] for r in rounds] == [False, False, False, True, True]
    # Every round is a recorded run of its own.
    run_ids = [i for e in data["configs"] for i in e["run_ids"]]
    with SessionStore(db) as store:
        assert store.count() == len(run_ids) == len(set(run_ids)) == 20

    # An explicit slot the tunable does not affect is refused, and the file stays as it was.
    toml = root / "workbench.toml"
    before = toml.read_text()
    refused = _tune(workbench_cli, root, db, shared_cache_dir, "--backend", "cpu,wgsl", "--apply", "cpu@cpu")
    assert refused.returncode == 2
    assert "cpu@cpu: threads has no effect on cpu" in refused.stderr and "wgsl@wgpu:0" in refused.stderr
    assert toml.read_text() == before
    # The table says so too; and a bare --apply goes to the slot threads affects.
    applied = _tune(workbench_cli, root, db, shared_cache_dir, "--backend", "cpu,wgsl", "--apply")
    assert applied.returncode == 0, applied.stderr
    cpu_line = next(ln for ln in applied.stdout.splitlines() if ln.strip().startswith("cpu@cpu"))
    assert "no best" in cpu_line and "threads has no effect on cpu" in cpu_line
    assert "applied threads=128" in applied.stdout
    # The sweep's rounds were read back; the side-by-side re-timing ran again, never resumed.
    progress = applied.stderr.splitlines()
    assert sum("round" in ln and ": resumed threads=" in ln for ln in progress) == 6
    assert sum("side by side" in ln and ": ran threads=" in ln for ln in progress) == 4
    assert Project.open(root).manifest.kernel().default_tunables() == {"threads": 128}


def test_a_correct_backend_under_a_broken_reference_is_not_verified_never_no(
    example_copy, workbench_cli, tmp_path, shared_cache_dir, break_wgsl_at
):
    root = example_copy("saxpy", tunables=("threads",))
    toml = root / "workbench.toml"
    toml.write_text(toml.read_text().replace('reference = "cpu"', 'reference = "wgsl"'))
    break_wgsl_at(root, 64)  # the reference itself is wrong at threads=64
    args = ("--backend", "cpu,wgsl", "--rounds", "1", "--confirm", "0")
    proc = _tune(workbench_cli, root, tmp_path / "s.db", shared_cache_dir, *args, "--json")
    assert proc.returncode == 1, proc.stderr  # the broken reference is a failure
    entries = {(e["backend"], e["config"]["threads"]): e for e in json.loads(proc.stdout)["configs"]}
    assert entries[("wgsl", 64)]["verified"] is False and entries[("wgsl", 64)]["verdict"] == "failed"
    cpu = entries[("cpu", 64)]
    assert cpu["verified"] is None and cpu["verdict"] == "not verified (reference failed)"
    assert entries[("cpu", 128)]["verified"] is True and entries[("wgsl", 128)]["verified"] is True
    # Read back from the sessions database (resumed), the table says the same.
    again = _tune(workbench_cli, root, tmp_path / "s.db", shared_cache_dir, *args)
    line = next(
        ln for ln in again.stdout.splitlines() if ln.startswith("threads=64") and " cpu " in f" {ln} "
    )
    assert "not verified (reference failed)" in line and " NO " not in line and "resumed" in line


def test_resume_reruns_a_failure_once_the_timeout_changed(
    example_copy, tune_service, tmp_path, shared_cache_dir, slow_wgsl_at
):
    root = example_copy("saxpy", tunables=("threads",))
    # llvmpipe caps how long one invocation's loop runs (more iterations stopped adding time past
    # ~60,000 here), so the launch is made slow by its size: at n=16384 it outlasts 0.4 s by far
    # (timed out at once here), while threads=128 takes well under a millisecond.
    slow_wgsl_at(root, 64, iterations=200_000)
    project = Project.open(root)
    # 128 first: a killed worker's successor starts cold, and a cold first launch can outlast a short timeout.
    points = [Point({"threads": t}, {"n": 16384}) for t in (128, 64)]
    # The wgpu worker started and warm before the first timed sweep.
    tune_service.run(
        project, None, ["wgsl"], None, {"n": 16384}, cache_dir=shared_cache_dir, tunables={"threads": 128}
    )

    def sweep(store, timeout_s):
        runner = SweepRunner(project, None, ["cpu", "wgsl"], store=store, run_service=tune_service,
                             cache_dir=shared_cache_dir, timeout_s=timeout_s)  # fmt: skip
        events = []
        result = runner.run(points, on_event=events.append)
        resumed = {
            tuple(event.entries[0]["config"].values()): event.resumed
            for event in events
            if isinstance(event, SweepEntries)
        }
        return {(e["backend"], e["config"]["threads"]): e for e in result.entries}, resumed

    with SessionStore(tmp_path / "s.db") as store:
        first, _ = sweep(store, 0.4)
        assert first[("wgsl", 64)]["status"] == "error" and first[("wgsl", 128)]["status"] == "ok"
        same, resumed = sweep(store, 0.4)  # the same settings: the failure stands, read back
        assert resumed == {(128,): True, (64,): True} and same[("wgsl", 64)]["status"] == "error"
        # The timeout changed: the failure is run again. The new limit is only a hang guard: the
        # slow launch takes seconds on a quiet machine and outlasted 30 s at load 14.
        longer, resumed = sweep(store, 600.0)
        assert resumed == {(128,): True, (64,): False}
        assert longer[("wgsl", 64)]["status"] == "ok" and longer[("wgsl", 64)]["verified"] is True
        # The settings are recorded with each configuration: what the next resume compares.
        detail = store.get_run(longer[("wgsl", 64)]["run_id"], samples=False)["detail"]
        if isinstance(detail, str):
            detail = json.loads(detail)
        assert detail["provenance"]["tuning"]["settings"]["timeout_s"] == 600.0


def test_skipped_is_counted_as_skipped_never_as_failed(
    example_copy, workbench_cli, tmp_path, shared_cache_dir
):
    root = example_copy("saxpy", tunables=("threads",))
    args = ("--backend", "cpu,cuda-c", "--rounds", "1", "--confirm", "0")
    proc = _tune(workbench_cli, root, tmp_path / "s.db", shared_cache_dir, *args, "--json")
    data = json.loads(proc.stdout)
    cuda = [e for e in data["configs"] if e["backend"] == "cuda-c"]
    if any(e["status"] != "skipped" for e in cuda):
        pytest.skip("the cuda runtime is available here: nothing is skipped")
    assert proc.returncode == 0, proc.stderr
    assert data["counts"] == {"ok": 2, "failed": 0, "skipped": 2, "not verified": 0}
    assert set(data["best"]) == {"cpu@cpu"}
    table = _tune(workbench_cli, root, tmp_path / "s.db", shared_cache_dir, *args)
    assert table.returncode == 0
    assert "2 ok, 0 failed, 2 skipped" in table.stdout
    assert all("skipped: " in ln for ln in table.stdout.splitlines() if " cuda-c " in ln)


# ----------------------------------------------------------------------------- the rules themselves


def _entry(threads, medians, build=None, backend="wgsl", device="wgpu:0", verified=True):
    return {"config": {"threads": threads}, "backend": backend, "device": device, "status": "ok",
            "verified": verified, "build": build or f"build-{threads}",
            "rounds": [{"round": i + 1, "median_s": m} for i, m in enumerate(medians)]}  # fmt: skip


def test_close_points_tie_a_clear_leader_wins_only_after_side_by_side_rounds():
    drift = [1.00, 1.30, 0.90, 1.10]  # every configuration drifts alike from round to round
    close = [_entry(64, [1.00e-3 * d for d in drift]),
             _entry(128, [1.01e-3 * d * (1 + e) for d, e in zip(drift, (0.02, -0.03, 0.01, 0.0), strict=True)])]  # fmt: skip
    best = ranking.rank(close)["wgsl@wgpu:0"]
    assert best["verdict"] == ranking.TIE and best["winner"] is None
    assert sorted(c["threads"] for c in best["ties"]) == [64, 128]

    # 20% faster in every round despite the drift: a winner, but only once confirmed.
    clear = [_entry(64, [1.0e-3 * d for d in drift]), _entry(128, [1.2e-3 * d for d in drift])]
    clear[1]["rounds"][2]["median_s"] *= 1.01  # not exactly proportional: a real interval
    assert ranking.rank(clear, confirmed=set())["wgsl@wgpu:0"]["verdict"] == ranking.TIE
    assert ranking.leaders(ranking.rank(clear, confirmed=set())) == {
        "wgsl@wgpu:0": [{"threads": 64}, {"threads": 128}]
    }
    won = ranking.rank(clear, confirmed={"wgsl@wgpu:0"})["wgsl@wgpu:0"]
    assert won["verdict"] == ranking.WINNER and won["winner"] == {"threads": 64}
    assert math.isclose(won["runner_up"]["ratio"], 1 / 1.2, rel_tol=0.01)
    # One round is no spread: no winner can be named from it.
    single = [_entry(64, [1.0e-3]), _entry(128, [2.0e-3])]
    assert ranking.rank(single)["wgsl@wgpu:0"]["verdict"] == ranking.TIE
    # Unverified and failed entries never rank.
    wrong = [*clear, _entry(32, [0.1e-3] * 4, verified=False)]
    assert ranking.rank(wrong, confirmed={"wgsl@wgpu:0"})["wgsl@wgpu:0"]["winner"] == {"threads": 64}


def test_identical_builds_pool_into_one_point_whatever_their_timings():
    # Two builds of three configurations: 64 and 256 ran the same code; their different numbers are noise.
    entries = [_entry(64, [0.5e-3, 0.5e-3], build="A"), _entry(256, [2.0e-3, 2.1e-3], build="A"),
               _entry(128, [1.0e-3, 1.0e-3], build="B")]  # fmt: skip
    best = ranking.rank(entries, defaults={"threads": 256})["wgsl@wgpu:0"]
    assert best["points"] == 2 and best["identical"] == [[{"threads": 256}, {"threads": 64}]]
    assert best["no_effect"] == []  # threads did change the build between 64 and 128
    one = ranking.rank([_entry(64, [1e-3, 2e-3], build="A"), _entry(128, [3e-3, 1e-3], build="A")])
    assert one["wgsl@wgpu:0"]["verdict"] == ranking.NO_EFFECT and one["wgsl@wgpu:0"]["no_effect"] == [
        "threads"
    ]


def test_apply_goes_to_an_affected_slot_and_refuses_the_others():
    drift = [1.0, 1.2, 0.9]
    entries = [_entry(64, [1e-3] * 3, build="C", backend="cpu", device="cpu"),
               _entry(128, [2e-3] * 3, build="C", backend="cpu", device="cpu"),
               _entry(64, [1.0e-3 * d for d in drift]), _entry(128, [1.5e-3 * d * 1.01 ** i for i, d in enumerate(drift)])]  # fmt: skip
    best = ranking.rank(entries)
    assert choose_slot(best, None) == "wgsl@wgpu:0"
    assert winner_config(best["wgsl@wgpu:0"]) == {"threads": 64}
    with pytest.raises(
        ApplyError, match=r"cpu@cpu: threads has no effect on cpu .* slots they affect: wgsl@wgpu:0"
    ):
        choose_slot(best, "cpu@cpu")
    tied = ranking.rank(
        [entries[0], entries[1], _entry(64, [1e-3, 1.3e-3, 1e-3]), _entry(128, [1.3e-3, 1e-3, 1.01e-3])]
    )
    with pytest.raises(ApplyError, match="wgsl@wgpu:0 has no unique winner"):
        choose_slot(tied, None)
    with pytest.raises(ApplyError, match="no effect on cpu@cpu"):
        choose_slot({"cpu@cpu": best["cpu@cpu"]}, None)
