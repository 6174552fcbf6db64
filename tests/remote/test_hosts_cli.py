"""`workbench hosts …`, `doctor` and `run --device NAME/…` as a user types them, against the real
sshd of conftest.py; the done-when path: add, setup (a wheel built here, installed into a venv
on the host), run saxpy with cpu + wgsl on the host's devices."""

from __future__ import annotations

import getpass
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.remote import probe
from workbench.remote.hosts import HostStore

REPO = Path(__file__).resolve().parents[2]
SAXPY = REPO / "resources" / "examples" / "saxpy"
#: This checkout's code as the host's Python (the fast route; `hosts setup` is tested once).
CHECKOUT_PYTHON = f"env PYTHONPATH={REPO} {sys.executable}"


def workbench(*args, env=None, timeout=240):
    return subprocess.run(
        [sys.executable, "-m", "workbench", *args], capture_output=True, text=True, timeout=timeout,
        cwd=REPO, env=dict(os.environ, **(env or {})),
    )  # fmt: skip


def add_args(sshd, name, python, known_hosts=None, remote_dir=None):
    return [
        "hosts", "add", name, f"ssh://{getpass.getuser()}@127.0.0.1:{sshd.port}", "--identity", str(sshd.client_key),
        "--python", python, "--ssh-option", f"UserKnownHostsFile={known_hosts or sshd.known_hosts}",
        "--ssh-option", "GlobalKnownHostsFile=/dev/null",
        "--remote-dir", str(remote_dir or sshd.folder / "remote-home"),
    ]  # fmt: skip


def test_add_list_remove_and_bad_input(sshd):
    done = workbench(*add_args(sshd, "box", "python3"))
    assert done.returncode == 0, done.stderr
    listed = json.loads(workbench("hosts", "list", "--json").stdout)
    box = next(h for h in listed if h["name"] == "box")
    assert box["url"] == f"ssh://{getpass.getuser()}@127.0.0.1:{sshd.port}" and box["port"] == sshd.port
    assert "password" not in json.dumps(listed).lower()
    again = workbench(*add_args(sshd, "box", "python3"))
    assert again.returncode == 2 and "exists already" in again.stderr
    bad = workbench("hosts", "add", "b/x", "ssh://h")
    assert bad.returncode == 2 and "host name 'b/x'" in bad.stderr
    bad_url = workbench("hosts", "add", "h", "http://h")
    assert bad_url.returncode == 2 and "expected ssh://" in bad_url.stderr
    assert workbench("hosts", "remove", "box").returncode == 0
    gone = workbench("hosts", "remove", "box")
    assert gone.returncode == 2 and "no host named 'box'" in gone.stderr
    assert "box" not in HostStore().names()


def test_unknown_host_key_is_refused_with_the_command_that_adds_it(sshd, tmp_path):
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    assert workbench(*add_args(sshd, "stranger", CHECKOUT_PYTHON, known_hosts=empty)).returncode == 0
    try:
        done = workbench("hosts", "check", "stranger", "--json")
        assert done.returncode == 1
        error = json.loads(done.stdout)["error"]
        assert f"ssh-keyscan -p {sshd.port} 127.0.0.1 >> {empty}" in error
        assert "fingerprint" in error
        assert empty.read_text() == ""  # nothing was trusted behind the user's back
        # A run on that host's devices names the problem too.
        run = workbench("run", str(SAXPY), "--backend", "cpu", "--device", "stranger/cpu", "--no-record")
        assert run.returncode == 2 and "host key" in run.stderr and "ssh-keyscan" in run.stderr
        # After adding the key as the message says, the host answers.
        empty.write_text(sshd.host_line + "\n")
        assert workbench("hosts", "check", "stranger").returncode == 0
    finally:
        workbench("hosts", "remove", "stranger")


def test_a_host_without_the_workbench_says_to_run_setup(sshd):
    if not Path("/usr/bin/python3").exists():
        pytest.skip("no system Python to stand for a bare host")
    assert workbench(*add_args(sshd, "bare", "env -i /usr/bin/python3")).returncode == 0
    try:
        done = workbench("hosts", "check", "bare")
        assert done.returncode == 1
        assert "workbench hosts setup bare" in done.stderr, done.stderr
    finally:
        workbench("hosts", "remove", "bare")


@pytest.mark.slow
def test_setup_then_run_saxpy_cpu_and_wgsl_on_the_host(sshd, shared_cache_dir, tmp_path):
    """The issue's done-when: hosts add, hosts setup, run --device lo/cpu,lo/wgpu:0 --json."""
    home = tmp_path / "remote-home"
    assert workbench(*add_args(sshd, "lo2", sys.executable, remote_dir=home)).returncode == 0
    try:
        setup = workbench("hosts", "setup", "lo2", "--use-system-packages", timeout=300)
        assert setup.returncode == 0, setup.stderr[-2000:]
        venv_python = HostStore().get("lo2").python
        assert venv_python == str(home / "venv" / "bin" / "python")
        # the host runs the wheel installed there, not this checkout
        checked = json.loads(workbench("hosts", "check", "lo2", "--json").stdout)
        assert checked["ok"] and checked["executable"] == venv_python
        assert checked["workbench"] == checked["local_workbench"] and "note" not in checked
        assert (home / "venv").is_dir() and list(
            home.glob("venv/lib/python*/site-packages/workbench/run/worker.py")
        )
        run = workbench(
            "run", str(SAXPY), "--backend", "cpu,wgsl", "--device", "lo2/cpu,lo2/wgpu:0", "--json",
            "--no-record", "--size", "n=4096", env={"WB_CACHE_DIR": str(shared_cache_dir)},
        )  # fmt: skip
        assert run.returncode == 0, run.stderr[-2000:]
        results = {r["backend"]: r for r in json.loads(run.stdout)["results"]}
        assert results["cpu"]["device"]["spec"] == "lo2/cpu" and results["cpu"]["check"]["is_reference"]
        assert results["wgsl"]["device"]["spec"] == "lo2/wgpu:0" and results["wgsl"]["verified"] is True
        assert results["wgsl"]["provenance"]["host"]["name"] == "lo2"
        assert str(home) in results["wgsl"]["provenance"]["artifact"]["path"]
    finally:
        workbench("hosts", "remove", "lo2")
        probe.forget("lo2")


def test_doctor_lists_the_hosts_devices(lo_host):
    done = workbench("doctor", "--json")
    assert done.returncode == 0, done.stderr
    hosts = json.loads(done.stdout)["hosts"]
    specs = [
        d["spec"]
        for d in hosts["lo"]["devices"]["cpu"]["devices"] + hosts["lo"]["devices"]["wgpu"]["devices"]
    ]
    assert "lo/cpu" in specs and "lo/wgpu:0" in specs
    text = workbench("doctor").stdout
    assert "lo/cpu" in text and "lo/wgpu:0" in text
