"""A real SSH server on 127.0.0.1 for the remote-host tests, and a client that never touches ~/.ssh.

`sshd` (module fixture) starts OpenSSH's server in the foreground on a free port of 127.0.0.1
with a temporary host key, its own sshd_config (public keys only, no PAM, `AuthorizedKeysFile`
and `PidFile` in the temporary folder) and one authorized temporary key. The client side gets a
private ssh config (`WB_SSH_CONFIG`), its own known_hosts (`UserKnownHostsFile=`), its own
ControlMaster folder and a private hosts file (`WB_HOSTS_FILE`). The "remote" is this machine:
its worker runs this checkout's code (`env PYTHONPATH=… python`), except in the `hosts setup`
test. Skips (with the reason) only when sshd is not installed or does not start.
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.waits import HANG_GUARD_S
from workbench import childproc
from workbench.remote import ssh
from workbench.remote.hosts import Host, HostStore

REPO = Path(__file__).resolve().parents[2]
SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
#: The remote Python for most tests: this checkout's code with the shared venv's packages.
REMOTE_PYTHON = f"env PYTHONPATH={REPO} {sys.executable}"


@dataclass
class Sshd:
    port: int
    folder: Path
    client_key: Path
    known_hosts: Path
    host_line: str  # the known_hosts line of the server's key
    proc: subprocess.Popen

    def host(self, name: str = "lo", python: str = REMOTE_PYTHON, known_hosts: Path | None = None) -> Host:
        return Host(
            name=name, hostname="127.0.0.1", user=getpass.getuser(), port=self.port, identity=str(self.client_key),
            python=python, remote_dir=str(self.folder / "remote-home"),
            ssh_options=[f"UserKnownHostsFile={known_hosts or self.known_hosts}", "GlobalKnownHostsFile=/dev/null"],
        )  # fmt: skip

    def sessions(self) -> list:
        """The server's per-connection processes (killing them drops the connections)."""
        try:
            import psutil

            return psutil.Process(self.proc.pid).children()
        except Exception:  # noqa: BLE001
            return []


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)


def _start(folder: Path) -> Sshd:
    if not os.path.exists(SSHD) or shutil.which("ssh") is None:
        pytest.skip("openssh-server is not installed (packaging/bootstrap.sh installs it when root)")
    host_key, client_key = folder / "host_ed25519", folder / "client_ed25519"
    _keygen(host_key)
    _keygen(client_key)
    (folder / "authorized_keys").write_text((folder / "client_ed25519.pub").read_text())
    os.chmod(folder / "authorized_keys", 0o600)
    try:
        Path("/run/sshd").mkdir(parents=True, exist_ok=True)  # its privilege-separation folder
    except OSError:
        pass  # not root: `sshd -t` below says whether it can run anyway
    port = _free_port()
    config = folder / "sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {host_key}\nPidFile {folder}/sshd.pid\n"
        f"AuthorizedKeysFile {folder}/authorized_keys\nStrictModes no\nUsePAM no\n"
        "PubkeyAuthentication yes\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
        "PermitRootLogin prohibit-password\nX11Forwarding no\nAllowAgentForwarding no\n"
        "MaxSessions 32\nMaxStartups 32\nLogLevel ERROR\n"
    )
    test = subprocess.run([SSHD, "-t", "-f", str(config)], capture_output=True, text=True)
    if test.returncode != 0:
        pytest.skip(f"sshd rejects its test configuration: {test.stderr.strip()}")
    proc = childproc.spawn([SSHD, "-D", "-e", "-f", str(config)])
    deadline = time.monotonic() + HANG_GUARD_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.skip(f"sshd did not start: {proc.stderr.read().decode(errors='replace')[-300:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
        except OSError:
            time.sleep(0.05)
    else:
        childproc.stop_tree(proc)
        pytest.skip(f"sshd did not listen within {HANG_GUARD_S:g} s")
    pub = (folder / "host_ed25519.pub").read_text().split()
    host_line = f"[127.0.0.1]:{port} {pub[0]} {pub[1]}"
    known_hosts = folder / "known_hosts"
    known_hosts.write_text(host_line + "\n")
    return Sshd(port, folder, client_key, known_hosts, host_line, proc)


@pytest.fixture(scope="module")
def sshd(long_lived):
    folder = Path(tempfile.mkdtemp(prefix="wb-sshd-"))  # short: ControlPath sockets live here
    saved = {k: os.environ.get(k) for k in ("WB_SSH_CONFIG", "WB_SSH_CONTROL_DIR", "WB_HOSTS_FILE")}
    (folder / "ssh_config").write_text("# the tests' own client config: ~/.ssh/config is not read\n")
    os.environ["WB_SSH_CONFIG"] = str(folder / "ssh_config")
    os.environ["WB_SSH_CONTROL_DIR"] = str(folder / "cm")
    (folder / "cm").mkdir(mode=0o700)
    os.environ["WB_HOSTS_FILE"] = str(folder / "hosts.json")
    server = None
    try:
        server = _start(folder)
        long_lived.add(lambda: [server.proc.pid] if server.proc.poll() is None else [])
        yield server
    finally:
        if server is not None:
            ssh.close_master(server.host())
            childproc.stop_tree(server.proc)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def lo_host(sshd):
    """The server added as host `lo` (fast route: this checkout's code over PYTHONPATH)."""
    host = sshd.host()
    HostStore().add(host, replace=True)
    yield host
    HostStore().remove(host.name)
