"""`workbench tune` / `workbench sweep` and the sweep runner under them: real builds, real runs on
the cpu and on wgpu (llvmpipe), a real sessions database."""

from __future__ import annotations

import difflib
import json

import numpy as np
import pytest

from workbench.profile.sessions.store import SessionStore
from workbench.profile.tuning import ranking
from workbench.profile.tuning.apply import ApplyError, apply_config
from workbench.profile.tuning.events import SweepEntries, SweepEvent
from workbench.profile.tuning.sweep_space import Point, TuneError, parse_param, space
from workbench.profile.tuning.tune import SweepRunner
from workbench.project import Project


def test_tune_json_shape_every_config_verified(example_copy, workbench_cli, tmp_path, shared_cache_dir):
    root = example_copy("saxpy", tunables=("threads",))
    db = tmp_path / "s.db"
    proc = workbench_cli("tune", str(root), "--param", "threads=64,128", "--backend", "cpu,wgsl",
                         "--size", "n=4096", "--db", str(db), "--cache-dir", str(shared_cache_dir), "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert len(data["configs"]) == 4
    for entry in data["configs"]:
        assert {"config", "backend", "device", "verified", "status", "timing"} <= set(entry)
        assert entry["status"] == "ok" and entry["verified"] is True
        assert entry["config"] in ({"threads": 64}, {"threads": 128})
        assert entry["timing"]["median_s"] > 0 and len(entry["timing"]["samples_s"]) >= 15
        # Three interleaved rounds (the default), the entry's time the median of theirs.
        rounds = entry["rounds"]
        assert [r["round"] for r in rounds][:3] == [1, 2, 3] and not any(r["confirm"] for r in rounds[:3])
        assert entry["timing"]["median_s"] == float(np.median([r["median_s"] for r in rounds]))
    assert set(data["best"]) == {"cpu@cpu", "wgsl@wgpu:0"}
    assert data["counts"] == {"ok": 4, "failed": 0, "skipped": 0, "not verified": 0}
    for best in data["best"].values():
        assert set(best) >= {"config", "median_s", "ci_s", "tied_with", "ties", "winner", "verdict", "note"}
        low, high = best["ci_s"]
        assert low < high and best["config"] in ({"threads": 64}, {"threads": 128})
    with SessionStore(db) as store:  # every round of every configuration recorded as it finished
        assert store.count() == sum(len(e["rounds"]) for e in data["configs"])


def test_failing_config_is_flagged_and_never_ranked(
    example_copy, workbench_cli, tmp_path, shared_cache_dir, break_wgsl_at
):
    root = example_copy("saxpy", tunables=("threads",))
    break_wgsl_at(root, 64)
    proc = workbench_cli("tune", str(root), "--param", "threads=64,128", "--backend", "wgsl", "--size", "n=2048",
                         "--db", str(tmp_path / "s.db"), "--cache-dir", str(shared_cache_dir), "--json")  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    by_threads = {e["config"]["threads"]: e for e in data["configs"]}
    assert by_threads[64]["verified"] is False and by_threads[128]["verified"] is True
    best = data["best"]["wgsl@wgpu:0"]
    assert best["config"] == {"threads": 128} and best["ranked"] == 1 and best["verdict"] == "single"
    assert all(t["config"] != {"threads": 64} for t in best["tied_with"])
    assert len(by_threads[64]["rounds"]) == 1 and len(by_threads[128]["rounds"]) == 3  # never run again


def test_resume_skips_recorded_configs(example_copy, tune_service, tmp_path, shared_cache_dir):
    project = Project.open(example_copy("saxpy", tunables=("threads",)))
    kernel = project.manifest.kernel()
    sizes = {"n": 2048}
    with SessionStore(tmp_path / "s.db") as store:
        runner = SweepRunner(project, None, ["cpu", "wgsl"], store=store, run_service=tune_service,
                             cache_dir=shared_cache_dir)  # fmt: skip
        points = [Point(c, sizes) for c in space(kernel, {"threads": (64, 128, 256)}).configs]

        # An interrupted sweep: cancelled once the first configuration is recorded.
        def cancel_after_first(event: SweepEvent) -> None:
            if isinstance(event, SweepEntries):
                runner.cancel()

        first = runner.run(points, on_event=cancel_after_first)
        assert first.cancelled and len(first.entries) == 2
        assert store.count() == 2
        runner._cancel.clear()

        events = []
        second = runner.run(points, on_event=events.append)
        resumed = [event.resumed for event in events if isinstance(event, SweepEntries)]
        assert resumed == [True, False, False]
        assert store.count() == 6  # only the two missing configurations ran
        assert [e["run_id"] for e in second.entries[:2]] == [e["run_id"] for e in first.entries]
        # The resumed entries carry their recorded samples: they rank like fresh ones.
        assert set(ranking.rank(second.entries)) == {"cpu@cpu", "wgsl@wgpu:0"}


def test_apply_rewrites_only_the_value(example_copy, workbench_cli, tmp_path, shared_cache_dir):
    root = example_copy("saxpy", tunables=("threads",))
    toml = root / "workbench.toml"
    before = toml.read_text()
    proc = workbench_cli("tune", str(root), "--param", "threads=128", "--backend", "wgsl", "--size", "n=1024",
                         "--db", str(tmp_path / "s.db"), "--cache-dir", str(shared_cache_dir), "--apply")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    after = toml.read_text()
    changed = [ln for ln in difflib.ndiff(before.splitlines(), after.splitlines()) if ln[:1] in "+-"]
    assert changed == [
        "- threads = [256, 64, 128, 512, 1024]",
        "+ threads = [128, 64, 256, 512, 1024]",
    ]
    assert Project.open(root).manifest.kernel().default_tunables() == {"threads": 128}


def test_apply_keeps_comments_and_refuses_unknown(example_copy):
    root = example_copy("matmul")
    toml = root / "workbench.toml"
    text = toml.read_text()
    apply_config(toml, "matmul", {"tile": 32})
    line = next(ln for ln in toml.read_text().splitlines() if ln.startswith("tile"))
    assert line.startswith("tile = [32, 8, 16]") and line.endswith(
        "# TILE in src/lib.rs, tile in the references"
    )
    with pytest.raises(ApplyError, match="no tunable"):
        apply_config(toml, "matmul", {"tiles": 8})
    assert len(toml.read_text()) == len(text)


def test_bad_params_are_named():
    assert parse_param("threads=64,128") == ("threads", (64, 128))
    assert parse_param("threads") == ("threads", None)  # NAME alone: over its workbench.toml values
    for bad in ("threads=", "=64", "two words"):
        with pytest.raises(TuneError, match="NAME=V1,V2"):
            parse_param(bad)
    with pytest.raises(TuneError, match="'x' is not a number"):
        parse_param("threads=64,x")


def test_sweep_cli_curves_per_backend(example_copy, workbench_cli, tmp_path, shared_cache_dir):
    root = example_copy("saxpy", tunables=("threads",))
    db = tmp_path / "s.db"
    args = ("sweep", str(root), "--size", "n=2^10..2^12", "--backend", "cpu,wgsl", "--db", str(db),
            "--cache-dir", str(shared_cache_dir), "--json")  # fmt: skip
    proc = workbench_cli(*args)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["symbol"] == "n" and data["values"] == [1024, 2048, 4096]
    assert set(data["curves"]) == {"cpu@cpu", "wgsl@wgpu:0"}
    for curve in data["curves"].values():
        assert [p["n"] for p in curve["points"]] == [1024, 2048, 4096]
        assert all(p["status"] == "ok" and p["verified"] is True and p["gbps"] > 0 for p in curve["points"])
        assert "copy_gbps" in curve
    again = json.loads(workbench_cli(*args).stdout)
    assert all(p["resumed"] for c in again["curves"].values() for p in c["points"])
    bad = workbench_cli("sweep", str(root), "--size", "n=2^12..2^10")
    assert bad.returncode == 2 and "runs backwards" in bad.stderr


def test_random_strategy_draws_a_seeded_budget_of_valid_configs(example_copy):
    kernel = Project.open(example_copy("matmul", tunables=("tile",))).manifest.kernel()
    params = {"tile": (4, 8, 16, 32, 64)}  # 64 breaks tile * tile <= 1024
    first = space(kernel, params, strategy="random", budget=3, seed=7)
    again = space(kernel, params, strategy="random", budget=3, seed=7)
    assert first.configs == again.configs and len(first.configs) == 3
    assert len({c["tile"] for c in first.configs}) == 3 and all(c["tile"] != 64 for c in first.configs)
    assert [c["tile"] for c in space(kernel, params, budget=2).configs] == [4, 8]  # grid: the first two
    with pytest.raises(TuneError, match="has no tunable tiles; its tunables: tile"):
        space(kernel, {"tiles": (8,)})


def test_tune_on_cpu_sim_records_each_configuration_with_its_findings(
    example_copy, workbench_cli, tmp_path, shared_cache_dir
):
    # The host entry indexes with 64 whatever the workgroup: right at threads=64; at 128 two
    # workgroups write one element (a global race cpu-sim finds).
    root = example_copy("saxpy", tunables=("threads",))
    lib = root / "src" / "lib.rs"
    text = lib.read_text()
    call = "move |ctx| saxpy_body(ctx, ctx.group_size_x(), VECTOR, n, a, x, y)"  # the entry's closure
    assert text.count(call) == 1
    lib.write_text(text.replace(call, call.replace("ctx.group_size_x()", "64")))
    db = tmp_path / "s.db"
    proc = workbench_cli("tune", str(root), "--param", "threads=64,128", "--backend", "cpu-sim",
                         "--size", "n=4096", "--db", str(db), "--cache-dir", str(shared_cache_dir), "--json")  # fmt: skip
    data = json.loads(proc.stdout)
    by_threads = {e["config"]["threads"]: e for e in data["configs"]}
    assert set(by_threads) == {64, 128} and {e["backend"] for e in data["configs"]} == {"cpu-sim"}
    assert by_threads[64]["findings"] == 0 and by_threads[64]["verified"] is True
    assert by_threads[128]["findings"] >= 1  # the race, counted
    best = data["best"]["cpu-sim@cpu"]
    assert best["config"] == {"threads": 64}
    with SessionStore(db) as store:  # every round recorded, the findings with it
        assert store.count() == sum(len(e["rounds"]) for e in data["configs"])
        racy = store.get_run(by_threads[128]["run_id"], samples=False)["detail"]["findings"]
        assert {f["kind"] for f in racy["findings"]} == {"global-race"}
        assert store.get_run(by_threads[64]["run_id"], samples=False)["detail"]["findings"]["findings"] == []
