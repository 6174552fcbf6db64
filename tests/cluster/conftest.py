"""Real Dask processes on 127.0.0.1 for the cluster tests: a `dask scheduler`, `dask worker`s each
owning one device (`WB_CLUSTER_DEVICE`, resource `device:wgpu=1`), the command line as a user
runs it, and the recorded rows read back. Every process started here is stopped with its tree."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.waits import WORK_GUARD_S
from workbench import childproc

REPO = Path(__file__).resolve().parents[2]
#: Generous deadlines: two cores shared with other test runs; Dask and wgpu start slowly there.
START_TIMEOUT_S = WORK_GUARD_S
DASK_ENV = {
    "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "120s",
    "DASK_DISTRIBUTED__COMM__TIMEOUTS__TCP": "120s",
    "DASK_DISTRIBUTED__SCHEDULER__WORKER_TTL": "600s",
}


def _wait_for(what: str, found, proc: subprocess.Popen, log: Path):
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        value = found()
        if value:
            return value
        if proc.poll() is not None:
            break
        time.sleep(0.2)
    raise AssertionError(f"{what} did not start (exit {proc.poll()}):\n{log.read_text()[-3000:]}")


class DaskProcesses:
    """A scheduler and its workers, started as a user would (`python -m distributed.cli...`)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.procs: list[subprocess.Popen] = []
        self.address = ""

    def _spawn(self, args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen:
        handle = log.open("w")
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", *args], stdout=handle, stderr=subprocess.STDOUT,
                env={**os.environ, **DASK_ENV, **env}, cwd=REPO, start_new_session=True,
            )  # fmt: skip
        finally:
            handle.close()
        self.procs.append(proc)
        return proc

    def scheduler(self) -> str:
        info = self.folder / "scheduler.json"
        log = self.folder / "scheduler.log"
        proc = self._spawn(["distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
                            "--no-dashboard", "--scheduler-file", str(info)], log, {})  # fmt: skip
        self.address = _wait_for("the scheduler", lambda: info.is_file() and json.loads(
            info.read_text() or "{}").get("address"), proc, log)  # fmt: skip
        return self.address

    def worker(self, name: str, device: str = "wgpu:0", env: dict[str, str] | None = None):
        """A worker owning `device` (no nanny: one process, so SIGKILL ends it); (proc, address)."""
        log = self.folder / f"{name}.log"
        proc = self._spawn(
            ["distributed.cli.dask_worker", self.address, "--no-nanny", "--nthreads", "1", "--name", name,
             "--resources", f"device:{device.split(':')[0]}=1", "--no-dashboard"],
            log, {"WB_CLUSTER_DEVICE": device, "WB_CLUSTER_CACHE": str(self.folder / f"{name}-cache"),
                  **(env or {})},
        )  # fmt: skip

        def address():
            for line in log.read_text().splitlines():
                if "Start worker at:" in line:
                    return line.split("Start worker at:", 1)[1].strip()
            return None

        return proc, _wait_for(f"worker {name}", address, proc, log)

    def stop(self) -> None:
        for proc in reversed(self.procs):
            childproc.stop_tree(proc)


@pytest.fixture
def dask_processes(tmp_path):
    processes = DaskProcesses(tmp_path)
    yield processes
    processes.stop()


@pytest.fixture
def tune_cli(shared_cache_dir):
    """`python -m workbench tune ...` in a child process, with the session's build cache."""

    def start(*args: str) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-m", "workbench", "tune", *args, "--cache-dir", str(shared_cache_dir)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
            env={**os.environ, **DASK_ENV},
        )  # fmt: skip

    return start


def recorded_rows(db: Path) -> list[dict]:
    """Every recorded row: backend, device, and its provenance (tuning, cluster)."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = con.execute(
            "SELECT r.id, r.invocation, r.backend, r.device, r.status, d.detail FROM runs r JOIN run_data d ON d.run_id = r.id"
        ).fetchall()
    finally:
        con.close()
    out = []
    for rid, invocation, backend, device, status, detail in rows:
        prov = json.loads(detail)["provenance"]
        out.append({"id": rid, "invocation": invocation, "backend": backend, "device": device, "status": status,
                    "tuning": prov.get("tuning") or {}, "cluster": prov.get("cluster") or {}})  # fmt: skip
    return out
