"""The transport: the system's OpenSSH client, one shared connection per host.

Every command to a host goes through `ssh_argv`: `BatchMode=yes` (never a password prompt; no
password is stored anywhere), `StrictHostKeyChecking=yes` (host keys are checked against
known_hosts — a host option can relax it, the default never does), a ControlMaster socket so a
host's workers and file transfers reuse one connection (ControlPersist keeps it a minute after
the last user), and keep-alives so a host that stops answering ends the connection. The client
reads `~/.ssh/config`, so agents, jump hosts and host aliases work as they do in a terminal.

`explain()` turns ssh's own failure lines into errors that say what to do: an unknown host key
gives the `ssh-keyscan` command that would add it.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import tempfile
from pathlib import Path

from workbench import childproc
from workbench.remote.hosts import Host, HostError

#: Seconds ssh may take to connect; keep-alive period and how many may go unanswered.
CONNECT_TIMEOUT_S = 10
ALIVE_INTERVAL_S = 5
ALIVE_COUNT = 3
PERSIST_S = 60


class HostKeyError(HostError):
    """The host's key is unknown or changed: nothing is sent until the user trusts it."""


class NotSetUp(HostError):
    """The workbench (its run part) is not importable on the host."""


@functools.cache
def _default_control_dir() -> str:
    path = Path(tempfile.gettempdir()) / f"wb-ssh-{os.getuid()}"
    path.mkdir(mode=0o700, exist_ok=True)
    os.chmod(path, 0o700)
    return str(path)


def control_dir() -> str:
    """Where the ControlMaster sockets live (short: a unix socket path has ~100 bytes)."""
    return os.environ.get("WB_SSH_CONTROL_DIR") or _default_control_dir()


def ssh_argv(
    host: Host, remote_command: str | None = None, *, master: bool = True, forwards: tuple[str, ...] = ()
) -> list[str]:
    """The `ssh` command line that runs `remote_command` (a shell string) on `host`; `forwards` are
    `-R`/`-L` arguments (`("-R", "40001:127.0.0.1:8786")`), and ssh fails when one cannot be set up."""
    argv = ["ssh"]
    if os.environ.get("WB_SSH_CONFIG"):  # a private client config (tests)
        argv += ["-F", os.environ["WB_SSH_CONFIG"]]
    for option in host.ssh_options:  # first: ssh keeps the first value it sees
        argv += ["-o", option]
    argv += [
        "-o", "BatchMode=yes",
        "-o", "StrictHostKeyChecking=yes",
        "-o", f"ConnectTimeout={CONNECT_TIMEOUT_S}",
        "-o", f"ServerAliveInterval={ALIVE_INTERVAL_S}",
        "-o", f"ServerAliveCountMax={ALIVE_COUNT}",
    ]  # fmt: skip
    if master:
        argv += [
            "-o", "ControlMaster=auto",
            "-o", f"ControlPath={control_dir()}/%C",
            "-o", f"ControlPersist={PERSIST_S}",
        ]  # fmt: skip
    if forwards:
        argv += ["-o", "ExitOnForwardFailure=yes", *forwards]
    if host.identity:
        argv += ["-i", str(Path(host.identity).expanduser()), "-o", "IdentitiesOnly=yes"]
    if host.port:
        argv += ["-p", str(host.port)]
    if host.user:
        argv += ["-l", host.user]
    argv += ["-T", "--", host.hostname]
    if remote_command is not None:
        argv.append(remote_command)
    return argv


def remote_base(host: Host) -> str:
    """The host's base folder as a shell word (`"$HOME"/…` for a relative one)."""
    if host.remote_dir.startswith("/"):
        return shlex.quote(host.remote_dir.rstrip("/"))
    return '"$HOME"/' + shlex.quote(host.remote_dir.strip("/"))


def run(host: Host, remote_command: str, *, timeout_s: float = 60.0, stdin: str | Path | None = None):
    """Run a shell command on `host`; returns `childproc.Completed`. Connection failures (ssh's
    status 255) raise a HostError saying what went wrong and what to do."""
    argv = ssh_argv(host, remote_command)
    try:
        done = childproc.capture(argv, timeout_s=timeout_s, stdin=stdin)
    except TimeoutError:
        raise HostError(f"host {host.name} ({host.url}) did not answer within {timeout_s:g} s") from None
    except OSError as exc:
        raise HostError(
            f"cannot start the ssh client for host {host.name}: {exc} (install OpenSSH)"
        ) from None
    if done.returncode == 255:
        raise explain(host, done.stderr) or HostError(
            f"ssh to host {host.name} ({host.url}) failed: {_tail(done.stderr)}"
        )
    return done


def _tail(lines: list[str], count: int = 3) -> str:
    useful = [ln.strip() for ln in lines if ln.strip()]
    return " | ".join(useful[-count:]) or "no output"


def known_hosts_file(host: Host) -> str:
    for option in host.ssh_options:
        key, _, value = option.partition("=")
        if key.strip().lower() == "userknownhostsfile" and value.strip():
            return value.strip().split()[0]
    return "~/.ssh/known_hosts"


def keyscan_command(host: Host) -> str:
    port = f"-p {host.port} " if host.port else ""
    return f"ssh-keyscan {port}{shlex.quote(host.hostname)} >> {known_hosts_file(host)}"


def explain(host: Host, stderr: list[str]) -> HostError | None:
    """A HostError for ssh's and the remote side's failure lines that need the user; else None."""
    text = "\n".join(stderr)
    where = f"host {host.name} ({host.url})"
    if re.search(r"REMOTE HOST IDENTIFICATION HAS CHANGED|Host key for .* has changed", text):
        return HostKeyError(
            f"{where}: its host key has CHANGED since it was trusted; this may be an attack. If the "
            f"server was reinstalled, remove the old key (`ssh-keygen -R {host.hostname}`), then add "
            f"the new one after checking its fingerprint: {keyscan_command(host)}"
        )
    if re.search(r"host key is known|Host key verification failed", text):
        return HostKeyError(
            f"{where}: its host key is not in {known_hosts_file(host)}, so the connection was refused. "
            f"To trust it, add it with `{keyscan_command(host)}` — and first verify the fingerprint "
            f"(`ssh-keyscan {'-p ' + str(host.port) + ' ' if host.port else ''}{host.hostname} | "
            f"ssh-keygen -lf -`) against the one the server's administrator gives you."
        )
    if "Permission denied" in text:
        return HostError(
            f"{where}: authentication failed (BatchMode: keys and agents only, never a password); "
            f"give a key with `--identity FILE` or load one into ssh-agent. ssh said: {_tail(stderr, 1)}"
        )
    if re.search(r"No module named '?workbench", text):
        return NotSetUp(
            f"{where}: the workbench is not installed for `{host.python}` there; run "
            f"`workbench hosts setup {host.name}`"
        )
    if re.search(r"Connection refused|Could not resolve|timed out|No route to host|Connection closed", text):
        return HostError(f"{where}: cannot connect: {_tail(stderr, 1)}")
    return None


def close_master(host: Host) -> None:
    """Stop the host's shared connection (if one is running); errors are ignored."""
    try:
        argv = ssh_argv(host)
        at = argv.index("--")
        childproc.capture([*argv[:at], "-O", "exit", *argv[at:]], timeout_s=10)
    except (OSError, TimeoutError):
        pass
