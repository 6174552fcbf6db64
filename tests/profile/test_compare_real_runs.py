"""`sessions compare` on real runs: saxpy on the CPU and on llvmpipe, each `workbench run` its own
process, as a user records them; A/A, a slowed WGSL kernel, unlike sizes, unlike backends."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import pytest

from tests.conftest import cli as run_cli
from tests.waits import WORK_GUARD_S, default_ctrl_c
from workbench.profile.sessions.store import SessionStore

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "resources" / "examples"
#: Real runs of saxpy (cpu + wgsl, repeated): the longest guard, whatever the helper's default.
cli = partial(run_cli, timeout=WORK_GUARD_S)
WGSL_LINE = "        y[i] = params.a * x[i] + y[i];"
#: 256 extra loads per element, and a test the compiler cannot drop that is never true.
SLOW_BODY = (
    "        var acc = 0.0;\n"
    "        for (var k = 0u; k < 256u; k = k + 1u) { acc = acc + x[(i + k) % params.n]; }\n"
    "        y[i] = params.a * x[i] + y[i];\n"
    "        if (acc == 1234567.0) { y[i] = 0.0; }"
)


def copy_saxpy(dest: Path, slow: bool = False) -> Path:
    shutil.copytree(EXAMPLES / "saxpy", dest, ignore=shutil.ignore_patterns("target"))
    if slow:
        wgsl = dest / "reference" / "saxpy.wgsl"
        text = wgsl.read_text()
        assert WGSL_LINE in text
        wgsl.write_text(text.replace(WGSL_LINE, SLOW_BODY))
    return dest


@pytest.fixture(scope="module")
def recorded(tmp_path_factory, shared_cache_dir):
    """Two processes of the same saxpy and one of a slowed WGSL copy, each `--repeat 3`."""
    tmp = tmp_path_factory.mktemp("compare-real")
    db = tmp / "runs.db"
    same = copy_saxpy(tmp / "saxpy")
    slow = copy_saxpy(tmp / "slow", slow=True)
    common = [
        "--backend",
        "cpu,wgsl",
        "--size",
        "n=4096",
        "--cache-dir",
        str(shared_cache_dir),
        "--db",
        str(db),
    ]
    ids = {}
    for name, root in (("a", same), ("b", same), ("slow", slow)):
        done = cli("run", str(root), *common, "--repeat", "3")
        assert done.returncode == 0, done.stderr
        assert "repetition 3 of 3" in done.stdout
        assert "conditions" in done.stdout.splitlines()[1]  # the run table's header
        listed = json.loads(cli("sessions", "list", "--db", str(db), "--json").stdout)["runs"]
        ids[name] = sorted(r["id"] for r in listed if r["id"] not in {i for v in ids.values() for i in v})
    return db, ids, common


def by_backend(result: dict) -> dict[str, dict]:
    return {row["backend"]: row for row in result["rows"]}


def test_repeat_records_one_invocation_per_repetition_in_one_series(recorded):
    db, ids, _ = recorded
    listed = {
        r["id"]: r for r in json.loads(cli("sessions", "list", "--db", str(db), "--json").stdout)["runs"]
    }
    rows = [listed[i] for i in ids["a"]]
    assert len(rows) == 6  # cpu + wgsl, three times
    assert len({r["invocation"] for r in rows}) == 3
    assert len({r["series"]["id"] for r in rows}) == 1
    assert [r["series"]["index"] for r in rows] == [1, 1, 2, 2, 3, 3]  # interleaved: both, then both
    assert [r["backend"] for r in rows] == ["cpu", "wgsl"] * 3
    for r in rows:
        assert isinstance(r["condition_flags"], list)
    shown = json.loads(cli("sessions", "show", str(ids["a"][0]), "--db", str(db), "--json").stdout)
    host = shown["detail"]["host"]
    assert host["source"] == "/proc" and host["wall_s"] > 0 and host["other_cpu_cores"] >= 0
    assert host["own_cpu_cores"] > 0  # the workers' time counts as this run's own
    assert len(host["loadavg_before"]) == 3


def test_identical_code_in_two_processes_gets_no_faster_or_slower_verdict(recorded):
    db, ids, _ = recorded
    done = cli(
        "sessions", "compare", str(ids["a"][0]), str(ids["b"][0]), "--invocation", "--db", str(db), "--json"
    )
    assert done.returncode == 0, done.stderr
    rows = by_backend(json.loads(done.stdout))
    assert set(rows) == {"cpu", "wgsl"}
    for row in rows.values():
        assert row["invocations"] == [3, 3] and row["same_build"] is True
        # Identical code: never faster or slower, busy or not (a busy side's load explains it).
        assert row["outcome"] in {"same", "ambiguous"}, row


def test_a_several_times_slower_wgsl_kernel_is_called_slower(recorded):
    db, ids, _ = recorded
    wgsl_a, wgsl_slow = ids["a"][1], ids["slow"][1]
    done = cli("sessions", "compare", str(wgsl_a), str(wgsl_slow), "--db", str(db), "--json")
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)["rows"]
    assert row["backend"] == "wgsl" and row["invocations"] == [3, 3]
    assert row["ratio"] > 2 and row["ci"][0] > 1 + row["margin"]
    bound = row["load"][1]  # what the slowed side's load alone could explain (None: anything)
    if bound is not None and row["ci"][0] > bound:
        assert row["outcome"] == "slower", row
        table = cli("sessions", "compare", str(wgsl_a), str(wgsl_slow), "--db", str(db)).stdout
        assert "slower" in table and "3 : 3" in table
    else:  # recorded on a machine so busy that its load could explain the change
        assert row["outcome"] == "ambiguous" and "the load could explain it" in row["verdict"], row


def test_rows_of_different_backends_of_one_run_are_not_comparable(recorded):
    db, ids, _ = recorded
    cpu, wgsl = ids["a"][0], ids["a"][1]
    done = cli("sessions", "compare", str(cpu), str(wgsl), "--db", str(db), "--json")
    (row,) = json.loads(done.stdout)["rows"]
    assert row["outcome"] == "not comparable"
    assert "backend: cpu → wgsl" in row["differs"] and "device: cpu → wgpu:0" in row["differs"]
    table = cli("sessions", "compare", str(cpu), str(wgsl), "--db", str(db)).stdout
    assert "not comparable; differs in backend: cpu → wgsl" in table


def test_unlike_sizes_are_not_comparable_with_the_difference_listed(recorded, tmp_path):
    db, _, common = recorded
    root = copy_saxpy(tmp_path / "saxpy")
    args = ["--backend", "cpu,wgsl", "--cache-dir", common[common.index("--cache-dir") + 1], "--db", str(db)]
    first = cli("run", str(root), *args, "--size", "n=1048576")
    second = cli("run", str(root), *args, "--size", "n=1000000")
    assert first.returncode == second.returncode == 0, first.stderr + second.stderr
    listed = json.loads(cli("sessions", "list", "--backend", "wgsl", "--db", str(db), "--json").stdout)[
        "runs"
    ]
    newest, previous = listed[0]["id"], listed[1]["id"]
    done = cli("sessions", "compare", str(previous), str(newest), "--db", str(db), "--json")
    (row,) = json.loads(done.stdout)["rows"]
    assert row["outcome"] == "not comparable" and row["differs"] == ["sizes n: 1048576 → 1000000"]
    forced = cli("sessions", "compare", str(previous), str(newest), "--force", "--db", str(db))
    assert "compared anyway (--force); differs in sizes n: 1048576 → 1000000" in forced.stdout
    assert "forced: " in forced.stdout


def test_repeat_json_keeps_the_report_shape_and_adds_the_repetitions(recorded, tmp_path):
    _, _, common = recorded
    root = copy_saxpy(tmp_path / "saxpy")
    cache = ["--cache-dir", common[common.index("--cache-dir") + 1]]
    done = cli(
        "run",
        str(root),
        "--backend",
        "cpu",
        "--size",
        "n=1024",
        *cache,
        "--no-record",
        "--repeat",
        "2",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert {"project", "kernel", "results", "host_conditions", "series", "repetitions"} <= set(data)
    assert [r["series"]["index"] for r in data["repetitions"]] == [1, 2]
    assert data["repetitions"][0]["results"] == data["results"]
    assert all(r["host_conditions"]["source"] == "/proc" for r in data["repetitions"])
    single = json.loads(
        cli("run", str(root), "--backend", "cpu", "--size", "n=1024", *cache, "--no-record", "--json").stdout
    )
    assert single["series"] is None and "repetitions" not in single
    bad = cli("run", str(root), "--backend", "cpu", *cache, "--no-record", "--repeat", "0")
    assert (
        bad.returncode == 2 and "argument --repeat: expected an integer from 1 to 1000, got 0" in bad.stderr
    )


def _new_ids(db: Path, before: set[int]) -> list[int]:
    listed = json.loads(cli("sessions", "list", "--db", str(db), "--json").stdout)["runs"]
    return sorted(r["id"] for r in listed if r["id"] not in before)


def test_uneven_sides_and_a_killed_series_get_no_verdict(recorded, tmp_path):
    """3 : 1 (a `--repeat 3` killed after its first repetition: it counts what it recorded) and
    3 : 2 of identical code: no verdict whatever the numbers, and the reason says why."""
    db, ids, common = recorded
    root = copy_saxpy(tmp_path / "saxpy")
    args = [str(root), "--backend", "cpu", *common[2:]]  # n=4096, the shared cache, the db
    before = set(_new_ids(db, set()))  # whatever earlier tests recorded too
    two = cli("run", *args, "--repeat", "2")
    assert two.returncode == 0, two.stderr
    pair = _new_ids(db, before)
    assert len(pair) == 2
    child = subprocess.Popen(
        [sys.executable, "-m", "workbench", "run", *args, "--repeat", "3"],
        cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=default_ctrl_c,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + WORK_GUARD_S
        while child.poll() is None and time.monotonic() < deadline:
            with SessionStore(db) as store:
                if [r for r in store.records() if r["id"] not in {*before, *pair}]:
                    break
            time.sleep(0.05)
    finally:
        # Frozen the moment its first repetition is seen (a loaded machine once let the series end
        # between the poll and the Ctrl-C), then Ctrl-C: what was recorded stays; at most the
        # repetition in flight is added.
        child.send_signal(signal.SIGSTOP)
        child.send_signal(signal.SIGINT)
        child.send_signal(signal.SIGCONT)
        child.wait(timeout=120)
    killed = _new_ids(db, {*before, *pair})
    assert 1 <= len(killed) < 3, f"the killed series recorded {len(killed)} repetition(s)"
    for other, split in ((killed[0], [3, len(killed)]), (pair[1], [3, 2])):
        done = cli("sessions", "compare", str(ids["a"][0]), str(other), "--db", str(db), "--json")
        assert done.returncode == 0, done.stderr
        (row,) = json.loads(done.stdout)["rows"]
        assert row["invocations"] == split and row["outcome"] == "ambiguous", row
        assert f"{split[0]} : {split[1]} invocations; a verdict needs 3 a side" in row["verdict"]


def test_a_busy_side_of_identical_code_gets_no_verdict_its_load_explains(recorded, tmp_path):
    """Three invocations under two CPU burners against the quiet(er) series: each busy row carries
    its load factor, and no faster / slower comes out of identical code."""
    db, ids, common = recorded
    root = copy_saxpy(tmp_path / "saxpy")
    before = set(_new_ids(db, set()))
    burners = [subprocess.Popen([sys.executable, "-c", "while 1: pass"]) for _ in range(2)]
    try:
        done = cli("run", str(root), "--backend", "cpu", *common[2:], "--repeat", "3")
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
    assert done.returncode == 0, done.stderr
    busy = _new_ids(db, before)
    done = cli("sessions", "compare", str(ids["a"][0]), str(busy[-1]), "--db", str(db), "--json")
    (row,) = json.loads(done.stdout)["rows"]
    assert row["invocations"] == [3, 3] and row["busy_runs"], row  # two burners on this machine: busy
    assert row["load"][1] is None or row["load"][1] > 1.0
    assert row["outcome"] in {"same", "ambiguous"}, row
