"""Search strategies (`profile/tuning/strategies.py`) and the Kernel Tuner cache replay
(`replay.py`, `workbench tune --replay`), on real Kernel Tuner cache files: tests/tune/kt_caches/
(Kernel Tuner's own test cache of vector_add on an RTX A4000, and the same converted to T4 by
Kernel Tuner's `file_utils.get_t4_results`) and the benchmark's trimmed caches
(benchmarks/strategies_caches/, see the README there)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.profile.tuning import replay, strategies
from workbench.profile.tuning.kernel_tuner import export

HERE = Path(__file__).parent
VECTOR_ADD = HERE / "kt_caches" / "vector_add_A4000.json"
VECTOR_ADD_T4 = HERE / "kt_caches" / "vector_add_A4000.t4.json"
REPO = HERE.parent.parent
BENCH = REPO / "benchmarks" / "strategies_caches"
CONVOLUTION = BENCH / "convolution_kt_test.json.gz"  # 450 of a 640-configuration grid


def trace_of(cache: replay.Cache, name: str, seed: int, budget: int) -> strategies.Trace:
    return strategies.search(cache.space, cache.objective, name, budget=budget, seed=seed)


@pytest.mark.parametrize("name", strategies.NAMES)
def test_each_strategy_is_seeded_and_counts_unique_valid_evaluations(name):
    cache = replay.read(CONVOLUTION)
    first = trace_of(cache, name, seed=3, budget=25)
    again = trace_of(cache, name, seed=3, budget=25)
    configs = [tuple(e.config[n] for n in cache.names) for e in first.evaluations]
    assert configs == [tuple(e.config[n] for n in cache.names) for e in again.evaluations]
    assert len(configs) == 25 and len(set(configs)) == 25 and first.stopped == "budget"
    assert all(c in cache.times for c in configs)  # never a configuration the cache lacks
    values = [cache.times[c] for c in configs]
    assert [e.value for e in first.evaluations] == values
    assert first.best().value == min(values)
    assert [e.best for e in first.evaluations] == [min(values[: i + 1]) for i in range(25)]
    other = trace_of(cache, name, seed=4, budget=25)
    if name != "grid":  # grid is the one strategy whose order does not depend on the seed
        assert [e.config for e in other.evaluations] != [e.config for e in first.evaluations]


def test_every_configuration_once_then_the_space_is_exhausted():
    cache = replay.read(VECTOR_ADD)
    for name in strategies.NAMES:
        trace = trace_of(cache, name, seed=0, budget=100)
        assert trace.stopped == "exhausted" and len(trace.evaluations) == len(cache.times) == 15, name
        assert trace.best().value == min(cache.values())


def test_restrictions_are_honoured_and_invalid_proposals_not_counted():
    # A space cut by a restriction: block sizes above 512 are invalid (as a [kernel.tunables]
    # constraint makes them); strategies that step by values propose them and are told so.
    cache = replay.read(VECTOR_ADD)
    valid = [c for c in cache.times if c[0] <= 512]
    space = strategies.SearchSpace(cache.names, {n: tuple(v) for n, v in cache.grid.items()}, valid)
    for name in strategies.NAMES:
        trace = strategies.search(space, cache.objective, name, budget=len(valid) + 5, seed=1)
        assert all(e.config["block_size_x"] <= 512 for e in trace.evaluations), name
        assert len(trace.evaluations) == len(valid) and trace.stopped == "exhausted", name


def test_failed_configurations_count_and_are_never_the_best():
    # Kernel Tuner's treatment: a configuration that fails to build or run is an evaluation
    # (counted toward the budget) that the strategy is told is the worst; never the best.
    cache = replay.read(CONVOLUTION)
    fastest = sorted(cache.times, key=lambda c: cache.times[c])[:40]  # the 40 fastest fail

    def objective(config):
        key = tuple(config[n] for n in cache.names)
        return (None if key in fastest else cache.times[key]), 0.0

    for name in strategies.NAMES:
        trace = strategies.search(cache.space, objective, name, budget=60, seed=2)
        assert len(trace.evaluations) == 60, name
        failed = [e for e in trace.evaluations if e.value is None]
        assert all(tuple(e.config[n] for n in cache.names) in fastest for e in failed), name
        best = trace.best()
        assert tuple(best.config[n] for n in cache.names) not in fastest, name
        assert trace.to_json()["failed"] == len(failed)


def test_time_budget_counts_the_recorded_cost():
    cache = replay.read(VECTOR_ADD)
    costs = [cache.costs[c] for c in cache.times]
    assert all(c > 0.1 for c in costs)  # compile + benchmark time recorded by Kernel Tuner (ms → s)
    trace = strategies.search(cache.space, cache.objective, "random", budget_s=1.0, seed=0)
    assert trace.stopped == "time" and 1 <= len(trace.evaluations) < 15
    assert trace.evaluations[-1].seconds >= 1.0 > trace.evaluations[-2].seconds


def test_replay_reads_kernel_tuner_cache_t4_open_and_gzipped_files(tmp_path):
    plain = replay.read(VECTOR_ADD)
    assert plain.kernel == "vector_add" and plain.device == "NVIDIA RTX A4000"
    assert plain.names == ["block_size_x"] and len(plain.times) == 15
    raw = json.loads(VECTOR_ADD.read_text())
    assert plain.times[(128,)] == pytest.approx(raw["cache"]["128"]["time"])
    t4 = replay.read(VECTOR_ADD_T4)
    assert t4.times == plain.times
    # Kernel Tuner writes its cache open while tuning (entries end in ",\n", no closing braces).
    text = VECTOR_ADD.read_text().rstrip()
    opened = text.rstrip("}\n ") + "},\n"  # the last entry closed, the cache and file left open
    (tmp_path / "open.json").write_text(opened)
    assert replay.read(tmp_path / "open.json").times == plain.times
    (tmp_path / "v.json.gz").write_bytes(gzip.compress(VECTOR_ADD.read_bytes()))
    assert replay.read(tmp_path / "v.json.gz").times == plain.times
    big = replay.read(CONVOLUTION)
    assert len(big.times) == 450 and len(big.names) == 10


def test_replay_reads_failures_the_workbench_exports(tmp_path):
    # The workbench's own Kernel Tuner export writes a failed build as CompilationFailedConfig.
    sweep = {"kernel": "k", "configs": [
        {"backend": "cuda", "device": "cuda:0", "config": {"threads": t}, "status": "ok", "verified": True,
         "timing": {"median_s": 1e-3 * t / 64, "samples_s": [1e-3]}, "sizes": {"n": 1024}, "error": None}
        for t in (64, 128)
    ] + [{"backend": "cuda", "device": "cuda:0", "config": {"threads": 256}, "status": "error",
          "verified": None, "timing": None, "sizes": {"n": 1024}, "error": "build failed: ptxas"}]}  # fmt: skip
    [path] = export(sweep, tmp_path / "kt.json", ["threads"], "2026-12-05T00:00:00+00:00")
    assert json.loads(path.read_text())["cache"]["256"]["time"] == "CompilationFailedConfig"
    cache = replay.read(path)
    assert cache.times == {(64,): pytest.approx(1.0), (128,): pytest.approx(2.0), (256,): None}
    out = replay.replay(cache, "grid", budget=3)
    assert out["failed"] == 1 and out["best"]["config"] == {"threads": 64}


def test_bad_cache_files_are_named(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"cache": {}}')
    with pytest.raises(
        replay.ReplayError, match=r"bad\.json: not a Kernel Tuner cache: no 'tune_params_keys'"
    ):
        replay.read(bad)
    bad.write_text("{ nope")
    with pytest.raises(replay.ReplayError, match=r"bad\.json: not JSON"):
        replay.read(bad)
    with pytest.raises(replay.ReplayError, match="cannot read"):
        replay.read(tmp_path / "missing.json")
    with pytest.raises(strategies.StrategyError, match="unknown strategy 'bayes'"):
        trace_of(replay.read(VECTOR_ADD), "bayes", 0, 3)


def test_random_expectations():
    values = [1.0, 2.0, 3.0, 4.0]
    assert strategies.random_expectation(values, 1.0) == pytest.approx(5 / 2)
    assert strategies.random_expectation(values, 2.0, total=9) == pytest.approx(10 / 3)
    curve = strategies.expected_best(values, 4)
    assert curve[0] == pytest.approx(2.5) and curve[-1] == pytest.approx(1.0)
    assert curve[1] == pytest.approx((1.0 * 3 + 2.0 * 2 + 3.0 * 1) / 6)  # pairs: min averaged


def test_cli_replay_is_reproducible_and_needs_no_device(workbench_cli):
    args = ("tune", "--replay", str(CONVOLUTION), "--strategy", "genetic", "--budget", "20", "--seed", "5")
    first = json.loads(workbench_cli(*args, "--json").stdout)
    again = json.loads(workbench_cli(*args, "--json").stdout)
    assert first["trace"] == again["trace"] and first["evaluations"] == 20
    assert first["space"] == {"recorded": 450, "failed": 0, "grid": 640}
    assert first["best"]["value"] == min(e["value"] for e in first["trace"])
    text = workbench_cli(*args).stdout
    assert "strategy genetic, seed 5: 20 evaluations" in text and "random search's expectation" in text
    bad = workbench_cli("tune", "--replay", str(HERE / "nope.json"))
    assert bad.returncode == 2 and "error: --replay: cannot read" in bad.stderr


def _cli(*args: object) -> subprocess.CompletedProcess:
    """`python -m workbench ARGS` as `tests.conftest.cli` runs it, with the optuna this process
    imports on the child's path too (a dependency of the workbench, wherever it is installed)."""
    import optuna

    path = os.pathsep.join([str(REPO), str(Path(optuna.__file__).parents[1])])
    return subprocess.run([sys.executable, "-m", "workbench", *map(str, args)], capture_output=True, text=True,
                          timeout=600, cwd=REPO, check=False, env=dict(os.environ, PYTHONPATH=path))  # fmt: skip


def _tune(root, db, *args):
    proc = _cli(
        "tune", root, "--backend", "cpu", "--size", "n=1024", "--confirm", "0", "--db", db, "--json", *args
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_cli_param_sweeps_only_the_tunables_named(example_copy, workbench_cli, tmp_path):
    root = example_copy("saxpy")  # threads = [256, 64, 128, 512, 1024], vector = [1, 4]
    data = _tune(root, tmp_path / "s.db", "--param", "threads=64,128,256", "--rounds", "1")
    assert sorted(e["config"]["threads"] for e in data["configs"]) == [64, 128, 256]
    assert {e["config"]["vector"] for e in data["configs"]} == {1}  # vector at its default
    assert data["space"]["grid"] == 3 and data["space"]["strategy"] == "grid"
    alone = _tune(root, tmp_path / "s.db", "--param", "vector", "--rounds", "1")
    assert sorted((e["config"]["threads"], e["config"]["vector"]) for e in alone["configs"]) == [
        (256, 1),
        (256, 4),
    ]
    every = _tune(root, tmp_path / "s.db", "--budget", "100", "--strategy", "grid", "--rounds", "1")
    assert len(every["configs"]) == 10  # without --param, every tunable
    help_text = workbench_cli("tune", "--help").stdout
    assert "without --param every tunable is swept" in " ".join(help_text.split())


def test_cli_strategy_and_budget_on_a_real_example(example_copy, shared_cache_dir, tmp_path):
    root = example_copy("saxpy")
    args = ("--strategy", "tpe", "--budget", "3", "--seed", "1", "--rounds", "2")
    data = _tune(root, tmp_path / "s.db", *args)
    search = data["search"]
    assert search["strategy"] == "tpe" and search["evaluations"] == 3 and search["stopped"] == "budget"
    chosen = [e["config"] for e in search["trace"]]
    assert sorted(map(str, chosen)) == sorted(str(e["config"]) for e in data["configs"])
    # The same rounds as every sweep: each chosen configuration measured in both, verified.
    assert all(e["verified"] is True and [r["round"] for r in e["rounds"]] == [1, 2] for e in data["configs"])
    assert data["best"]["cpu@cpu"]["ranked"] == 3
    assert data["space"] == {"tunables": ["threads", "vector"], "grid": 10, "valid": 10, "strategy": "tpe",
                             "budget": 3, "budget_s": None}  # fmt: skip
    # Recorded: a rerun with the same seed makes the same choices from the recorded times.
    again = _tune(root, tmp_path / "s.db", *args)
    assert [e["config"] for e in again["search"]["trace"]] == chosen
    assert all(r["resumed"] for e in again["configs"] for r in e["rounds"])
    text = _cli("tune", root, "--backend", "cpu", "--size", "n=1024", "--confirm", "0", "--db", tmp_path / "s.db",
                *args)  # fmt: skip
    assert "search tpe (seed 1): 3 evaluations (0 failed; stopped: budget)" in text.stdout
    assert "search tpe: evaluation 3/3" in text.stderr
