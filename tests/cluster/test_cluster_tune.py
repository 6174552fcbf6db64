"""`workbench tune --cluster`: configurations built here, measured on Dask workers' devices,
recorded here with the worker, host and device on each row (real Dask processes on 127.0.0.1)."""

from __future__ import annotations

import json
import os
import signal

from tests.tune.conftest import _break_wgsl_at
from tests.waits import HANG_GUARD_S

from .conftest import recorded_rows

SWEEP = ["--backend", "cpu,wgsl", "--size", "n=4096", "--rounds", "2", "--confirm", "0"]


def _finish(proc, timeout: float = 900) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def _sweep_rows(rows: list[dict]) -> set[tuple]:
    return {(r["tuning"]["config"]["threads"], r["backend"], r["tuning"]["round"]) for r in rows}


def test_local_cluster_of_two_uses_both_workers_records_every_configuration_and_resumes(
    example_copy, tune_cli, tmp_path
):
    project, db = example_copy("saxpy", tunables=("threads",)), tmp_path / "s.db"
    args = [
        str(project),
        *SWEEP,
        "--param",
        "threads=64,128,256",
        "--db",
        str(db),
        "--cluster",
        "local:2",
        "--json",
    ]
    code, out, err = _finish(tune_cli(*args))
    assert code == 0, err
    data = json.loads(out)
    rows = recorded_rows(db)
    # 3 configurations x 2 backends x 2 rounds, each recorded once, all ok.
    assert len(rows) == 12 and all(r["status"] == "ok" for r in rows)
    assert _sweep_rows(rows) == {(t, b, r) for t in (64, 128, 256) for b in ("cpu", "wgsl") for r in (1, 2)}
    workers = {r["cluster"]["worker"] for r in rows}
    assert len(workers) == 2, workers
    assert workers == {w["worker"] for w in data["cluster"]["workers"]}
    for row in rows:
        assert row["cluster"]["host"] and row["cluster"]["device"] == row["device"]
        assert row["device"] == ("cpu" if row["backend"] == "cpu" else "wgpu:0")
    # The same rules as a local tune: the cpu build ignores threads (one point), wgsl is ranked.
    assert data["best"]["cpu@cpu"]["verdict"] == "no effect"
    assert data["best"]["wgsl@wgpu:0"]["verdict"] in ("winner", "tie")
    assert data["counts"]["ok"] == 6 and not data["cluster"]["refused"]

    # A rerun resumes from what is recorded: nothing runs again, nothing is recorded twice.
    code, out, err = _finish(tune_cli(*args))
    assert code == 0, err
    assert all(entry["resumed"] for entry in json.loads(out)["configs"])
    assert len(recorded_rows(db)) == 12


def test_a_point_read_back_dead_is_not_run_in_later_rounds_on_a_cluster(example_copy, tune_cli, tmp_path):
    # The round rule a local sweep follows (tests/tune: "never run again"), on a cluster also
    # for a point whose round is read back from the store: threads=64 fails in a one-round
    # sweep; a three-round rerun reads its round 1 back and never runs it in rounds 2 and 3.
    project, db = example_copy("saxpy", tunables=("threads",)), tmp_path / "s.db"
    _break_wgsl_at(project, 64)
    args = [str(project), "--backend", "wgsl", "--size", "n=4096", "--param", "threads=64,128", "--confirm", "0",
            "--db", str(db), "--cluster", "local:2", "--json"]  # fmt: skip
    code, _out, err = _finish(tune_cli(*args, "--rounds", "1"))
    assert code == 1, err  # the broken configuration fails verification
    code, out, err = _finish(tune_cli(*args, "--rounds", "3"))
    assert code == 1, err
    assert _sweep_rows(recorded_rows(db)) == {(64, "wgsl", 1), *((128, "wgsl", r) for r in (1, 2, 3))}
    by_threads = {e["config"]["threads"]: e for e in json.loads(out)["configs"]}
    assert [r["round"] for r in by_threads[64]["rounds"]] == [1] and by_threads[64]["resumed"]


def test_scheduler_sweep_survives_a_worker_killed_with_sigkill(
    example_copy, tune_cli, dask_processes, tmp_path
):
    address = dask_processes.scheduler()
    victim, victim_address = dask_processes.worker("a")
    _survivor, survivor_address = dask_processes.worker("b")
    project, db = example_copy("saxpy", tunables=("threads",)), tmp_path / "s.db"
    proc = tune_cli(str(project), "--backend", "cpu,wgsl", "--size", "n=262144", "--rounds", "2", "--confirm", "0",
                    "--param", "threads=64,128,256,512", "--db", str(db), "--cluster", address)  # fmt: skip
    seen = []
    for line in proc.stderr:  # the first configuration back: both workers hold submitted ones
        seen.append(line)
        if "] round 1: ran" in line:
            os.kill(victim.pid, signal.SIGKILL)
            break
    code, _out, err = _finish(proc)
    assert victim.wait(timeout=HANG_GUARD_S) == -signal.SIGKILL
    assert code == 0, "".join(seen) + err
    rows = recorded_rows(db)
    assert _sweep_rows(rows) == {
        (t, b, r) for t in (64, 128, 256, 512) for b in ("cpu", "wgsl") for r in (1, 2)
    }
    assert len(rows) == 16 and all(r["status"] == "ok" for r in rows)
    # After the kill every configuration still to come ran on the survivor.
    last = max(rows, key=lambda r: r["id"])
    assert last["cluster"]["worker"] == survivor_address
    assert {r["cluster"]["worker"] for r in rows} <= {victim_address, survivor_address}
    # Artifacts travel by digest, once per worker: no worker fetched one digest twice.
    fetched = {(r["cluster"]["worker"], r["invocation"]): r["cluster"]["fetched"] for r in rows}
    for worker in {w for w, _ in fetched}:
        digests = [d for (w, _), ds in fetched.items() if w == worker for d in ds]
        assert digests and len(digests) == len(set(digests)), (worker, digests)


def test_worker_with_a_different_device_model_is_refused(example_copy, tune_cli, dask_processes, tmp_path):
    address = dask_processes.scheduler()
    _same, same_address = dask_processes.worker("same")
    # llvmpipe with 128-bit vectors is another device model (its name says so), as another GPU would be.
    _other, other_address = dask_processes.worker("other", env={"LP_NATIVE_VECTOR_WIDTH": "128"})
    project, db = example_copy("saxpy", tunables=("threads",)), tmp_path / "s.db"
    code, out, err = _finish(tune_cli(str(project), *SWEEP, "--param", "threads=64,128", "--db", str(db),
                                      "--cluster", address, "--json"))  # fmt: skip
    assert code == 0, err
    cluster = json.loads(out)["cluster"]
    assert [w["worker"] for w in cluster["workers"]] == [same_address]
    (refused,) = cluster["refused"]
    assert refused["worker"] == other_address
    assert "128 bits" in refused["device"]["wgpu"] and "refused for this ranking" in refused["reason"]
    assert f"cluster: worker {other_address} refused for this ranking" in err
    rows = recorded_rows(db)
    assert len(rows) == 8 and {r["cluster"]["worker"] for r in rows} == {same_address}


def test_a_bad_cluster_spec_is_named(example_copy, tune_cli, tmp_path):
    code, _out, err = _finish(tune_cli(str(example_copy("saxpy", tunables=("threads",))), "--db", str(tmp_path / "s.db"),
                                       "--cluster", "tcp://nowhere"))  # fmt: skip
    assert code == 2
    assert "--cluster 'tcp://nowhere': expected local, local:N" in err and "Traceback" not in err
    assert not (tmp_path / "s.db").exists() or recorded_rows(tmp_path / "s.db") == []


def test_a_scheduler_that_does_not_answer_is_named(example_copy, tune_cli, tmp_path):
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    code, _out, err = _finish(tune_cli(str(example_copy("saxpy", tunables=("threads",))), "--backend", "cpu", "--db",
                                       str(tmp_path / "s.db"), "--cluster", f"tcp://127.0.0.1:{port}"))  # fmt: skip
    assert code == 2
    assert f"--cluster tcp://127.0.0.1:{port}: no Dask scheduler answers" in err and "Traceback" not in err
