"""`workbench tune --cluster hosts:NAME`: a scheduler here, `dask worker`s started on a registered
host over the ssh transport (a real sshd on 127.0.0.1, tunnels both ways), every configuration
recorded with the worker's host, and no worker left on the host afterwards."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import psutil

from tests.waits import default_ctrl_c
from workbench.profile.sessions.store import SessionStore
from workbench.remote.hosts import HostStore

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SWEEP = ["--backend", "cpu,wgsl", "--size", "n=4096", "--rounds", "2", "--confirm", "0"]


def _tune(*args: str, cache_dir) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "workbench", "tune", *args, "--cache-dir", str(cache_dir)],
        capture_output=True, text=True, cwd=REPO, timeout=900,
        env={**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "120s"},
    )  # fmt: skip


def _dask_workers(marker: str) -> list[str]:
    """The command lines of running `dask worker`s that name `marker` (their --name)."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if "dask_worker" in cmdline and marker in cmdline:
            found.append(f"{proc.pid}: {cmdline}")
    return found


def _provenance(db) -> list[dict]:
    store = SessionStore(db)
    try:
        return [store.get_run(r["id"], samples=False) for r in store.list_runs(limit=None)]
    finally:
        store.close()


def test_hosts_cluster_runs_every_configuration_on_the_hosts_workers_and_leaves_none(
    sshd, example_copy, shared_cache_dir, tmp_path
):
    name = f"gpuhost-{os.getpid()}"  # its workers are named after it: the check below finds only those
    HostStore().add(sshd.host(name), replace=True)
    try:
        project, db = example_copy("saxpy", tunables=("threads",)), tmp_path / "s.db"
        done = _tune(str(project), *SWEEP, "--param", "threads=64,128", "--db", str(db),
                     "--cluster", f"hosts:{name}", "--json", cache_dir=shared_cache_dir)  # fmt: skip
        assert done.returncode == 0, done.stderr
        data = json.loads(done.stdout)
        assert data["cluster"]["spec"] == f"hosts:{name}" and not data["cluster"]["refused"]
        (worker,) = data["cluster"]["workers"]  # one wgpu adapter here (llvmpipe): one worker
        assert worker["worker"].startswith("tcp://127.0.0.1:") and worker["device"] == "wgpu:0"
        assert worker["ssh_host"] == name
        runs = _provenance(db)
        # 2 configurations x 2 backends x 2 rounds, each recorded once, all ok, all on the host's worker.
        assert len(runs) == 8 and all(r["status"] == "ok" for r in runs)
        for run in runs:
            cluster = run["detail"]["provenance"]["cluster"]
            assert cluster["ssh_host"] == name and cluster["worker"] == worker["worker"]
            assert cluster["host"] and cluster["device"] == run["device"]
        configs = {(r["detail"]["provenance"]["tuning"]["config"]["threads"], r["backend"]) for r in runs}
        assert configs == {(t, b) for t in (64, 128) for b in ("cpu", "wgsl")}
        assert "cluster: 1 worker(s)" in done.stderr
    finally:
        HostStore().remove(name)
    assert _dask_workers(f"{name}/") == []


def test_a_host_without_dask_is_named_with_the_cause(sshd, example_copy, shared_cache_dir, tmp_path):
    name = f"nodask-{os.getpid()}"
    # A Python that has the workbench but no `distributed`: dask's import fails on the host.
    python = f"env PYTHONPATH={tmp_path / 'shadow'}:{REPO} {sys.executable}"
    shadow = tmp_path / "shadow" / "distributed"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError(\"No module named 'distributed'\")\n")
    HostStore().add(sshd.host(name, python=python), replace=True)
    try:
        done = _tune(str(example_copy("saxpy", tunables=("threads",))), "--backend", "cpu", "--db", str(tmp_path / "s.db"),
                     "--cluster", f"hosts:{name}", cache_dir=shared_cache_dir)  # fmt: skip
    finally:
        HostStore().remove(name)
    assert done.returncode == 2, done.stderr
    assert (
        f"host {name}: cannot start a cluster worker: dask's `distributed` is not importable" in done.stderr
    )
    assert "Traceback" not in done.stderr
    assert _dask_workers(f"{name}/") == []


def test_an_unregistered_host_and_a_refused_connection_are_named(
    sshd, example_copy, shared_cache_dir, tmp_path
):
    project = example_copy("saxpy", tunables=("threads",))
    done = _tune(str(project), "--backend", "cpu", "--db", str(tmp_path / "s.db"), "--cluster", "hosts:nosuch",
                 cache_dir=shared_cache_dir)  # fmt: skip
    assert done.returncode == 2 and "no host named 'nosuch'" in done.stderr, done.stderr
    name = f"closed-{os.getpid()}"
    host = sshd.host(name)
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        host.port = probe.getsockname()[1]
    HostStore().add(host, replace=True)
    try:
        done = _tune(str(project), "--backend", "cpu", "--db", str(tmp_path / "s.db"), "--cluster",
                     f"hosts:{name}", cache_dir=shared_cache_dir)  # fmt: skip
    finally:
        HostStore().remove(name)
    assert done.returncode == 2
    assert (
        f"host {name}: cannot start a cluster worker" in done.stderr and "Connection refused" in done.stderr
    )
    assert "Traceback" not in done.stderr


def test_ctrl_c_mid_sweep_stops_the_hosts_workers(sshd, example_copy, shared_cache_dir, tmp_path):
    import signal

    name = f"ctrlc-{os.getpid()}"
    HostStore().add(sshd.host(name), replace=True)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "workbench", "tune", str(example_copy("saxpy", tunables=("threads",))), *SWEEP, "--param",
             "threads=64,128,256,512", "--db", str(tmp_path / "s.db"), "--cluster", f"hosts:{name}",
             "--cache-dir", str(shared_cache_dir)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, preexec_fn=default_ctrl_c,
        )  # fmt: skip
        seen = []
        for line in proc.stderr:
            seen.append(line)
            if "] round 1: ran" in line:
                assert _dask_workers(f"{name}/"), "".join(seen)  # the host's worker runs now
                proc.send_signal(signal.SIGINT)
                break
        _out, err = proc.communicate(timeout=300)
    finally:
        HostStore().remove(name)
    assert proc.returncode == 130, "".join(seen) + err
    assert "interrupted: the finished configurations are recorded" in err
    assert _dask_workers(f"{name}/") == []
