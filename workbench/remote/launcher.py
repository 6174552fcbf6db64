"""Launchers: the command that starts a run worker, here or on a host over ssh.

`WorkerProcess` (`workbench/run/pool.py`) speaks the framed protocol to whatever process its
launcher starts; a `RemoteLauncher` starts `ssh … python -m workbench.run.worker RUNTIME` on the
host, so the frames travel over ssh's stdin/stdout and nothing else changes. Its `place` names
the host in every error, and `explain` turns ssh's failure lines (host key, authentication, a
host without the workbench) into what the user should do.
"""

from __future__ import annotations

import shlex

from workbench.remote import ssh
from workbench.remote.hosts import Host

#: The line the remote shell writes to stderr when the worker was killed by a signal.
SIGNAL_MARK = "workbench worker ended by signal"


class RemoteLauncher:
    """Starts run workers on one host, all through the host's shared ssh connection."""

    def __init__(self, host: Host):
        self.host = host
        self.place = f"host {host.name}"

    def command(self, runtime: str) -> list[str]:
        base = ssh.remote_base(self.host)
        # Mesa wants a private XDG_RUNTIME_DIR, which an ssh session may lack. The shell stays to
        # report a worker killed by a signal as 128+N (ssh itself would say 255, as for a lost
        # connection). WB_WORKER_EXIT_ON_HANGUP: the worker leaves when ssh's channel closes,
        # even inside a kernel.
        remote = (
            f'cd && {{ [ -d "$XDG_RUNTIME_DIR" ] || {{ XDG_RUNTIME_DIR={base}/xdg; '
            f'mkdir -p -m 700 "$XDG_RUNTIME_DIR"; export XDG_RUNTIME_DIR; }}; }} && '
            f"env PYTHONUNBUFFERED=1 WB_WORKER_EXIT_ON_HANGUP=1 {self.host.python} "
            f"-m workbench.run.worker {shlex.quote(runtime)}; s=$?; "
            f'[ $s -gt 128 ] && echo "{SIGNAL_MARK} $((s - 128))" >&2; exit $s'
        )
        return ssh.ssh_argv(self.host, remote)

    def status(self, returncode: int | None, stderr: list[str] = ()) -> int | None:
        """ssh's exit status as the worker's own: 128+N (the remote shell's) → -N, a signal; the
        shell's own line says so too (ssh may report 255 when the channel closes first)."""
        for line in reversed(stderr):
            if line.startswith(SIGNAL_MARK + " ") and line.split()[-1].isdigit():
                return -int(line.split()[-1])
        if returncode is not None and 128 < returncode < 255:
            return -(returncode - 128)
        return returncode

    def explain(self, stderr: list[str]) -> str | None:
        error = ssh.explain(self.host, stderr)
        return str(error) if error is not None else None
