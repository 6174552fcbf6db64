"""`--cluster hosts:gpu1,gpu2`: `dask worker`s started on registered GPU hosts over their ssh
transport (`workbench/remote/ssh.py`: the same command line, host keys, options), one per device
of each host, every byte through ssh tunnels (Qt-free).

Why tunnels, not the network: the scheduler runs here and listens on 127.0.0.1 only. Each worker's
ssh connection carries a reverse tunnel (`-R PORT:127.0.0.1:<scheduler port>`: the worker dials
127.0.0.1:PORT on its host and reaches the scheduler here) and a forward tunnel
(`-L LOCAL:127.0.0.1:WORKER`: the worker listens on its host's 127.0.0.1 and advertises
tcp://127.0.0.1:LOCAL, which the scheduler and the client here reach through ssh). So it works
wherever ssh works: a host behind NAT or a firewall that lets only ssh in, a laptop the host
cannot dial back; and no Dask port (an unauthenticated service that unpickles what it receives)
is ever open on a network interface. Workers never dial each other (their advertised addresses are
this machine's): the dispatcher puts every input on every worker itself (`replicate_inputs`).

Each worker is `python -c <watchdog> …dask_worker args` on the host: the watchdog starts the
worker and stops it (TERM, then KILL) when the ssh channel closes — on `close()`, on Ctrl-C or an
error here — so no worker is left behind on a host. (Were this process killed outright, its
scheduler would go with it, and a worker that loses its scheduler closes by itself.)
"""

from __future__ import annotations

import shlex
import socket
import subprocess
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from workbench import childproc
from workbench.remote import ssh
from workbench.remote.hosts import Host, HostError, HostStore, split_spec

from .worker_side import CACHE_ENV, DEVICE_ENV, HOST_ENV, resource_name

#: Seconds a host has to answer the preflight (its Python, dask, free ports).
PREFLIGHT_TIMEOUT_S = 90.0
#: Seconds an ssh channel gets to end once its stdin is closed (the watchdog stops the worker).
STOP_GRACE_S = 15.0

#: Runs on the host: the dask worker as a child that ends with the ssh channel (stdin's EOF).
WATCHDOG = r"""
import signal, subprocess, sys, threading
child = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker"] + sys.argv[1:], stdin=subprocess.DEVNULL)
def stop(*_):
    child.terminate()
    try:
        child.wait(10)
    except subprocess.TimeoutExpired:
        child.kill()
def hangup():
    while sys.stdin.buffer.read(65536):
        pass
    stop()
signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGHUP, stop)
threading.Thread(target=hangup, daemon=True).start()
sys.exit(child.wait())
"""

#: Runs on the host before any worker: dask and the worker side importable, N free ports there.
PREFLIGHT = (
    "import socket, sys\n"
    "try:\n"
    "    import distributed, workbench.profile.tuning.cluster.worker_side\n"
    "except ImportError as exc:\n"
    "    print('WB-MISSING', exc); sys.exit(3)\n"
    "socks = [socket.socket() for _ in range(int(sys.argv[1]))]\n"
    "for s in socks: s.bind(('127.0.0.1', 0))\n"
    "print('WB-PORTS', *[s.getsockname()[1] for s in socks])\n"
)


class HostWorkerError(HostError):
    """A host that cannot start its cluster workers; the message names the host and the cause."""


@dataclass
class HostWorker:
    host: Host
    device: str  # the device it owns on its host (`wgpu:0`, `cuda:1`, `cpu`)
    contact: str  # tcp://127.0.0.1:LOCAL: its address as the scheduler here knows it
    proc: subprocess.Popen
    stderr: deque = field(default_factory=lambda: deque(maxlen=40))

    @property
    def name(self) -> str:
        return f"{self.host.name}/{self.device}"


def resolve(names: tuple[str, ...]) -> list[Host]:
    """The registered hosts of `names` (HostError naming the configured ones otherwise)."""
    store = HostStore()
    return [store.get(name) for name in names]


def _tail(lines: list[str], count: int = 3) -> str:
    return " | ".join(ln.strip() for ln in lines[-count:] if ln.strip()) or "no output"


def _free_local_port(taken: set[int]) -> int:
    while True:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        if port not in taken:
            return port


def _preflight(host: Host, count: int) -> list[int]:
    """`count` free ports on the host's 127.0.0.1; errors say what the host lacks."""
    command = f"cd && {host.python} -c {shlex.quote(PREFLIGHT)} {count}"
    done = ssh.run(host, command, timeout_s=PREFLIGHT_TIMEOUT_S)
    missing = next((ln.split(" ", 1)[1] for ln in done.stdout if ln.startswith("WB-MISSING ")), None)
    if missing is not None:
        what = "dask's `distributed`" if "distributed" in missing else "the workbench's run part"
        raise HostWorkerError(
            f"host {host.name}: cannot start a cluster worker: {what} is not importable by `{host.python}` "
            f"there ({missing}); `workbench hosts setup {host.name}` installs the workbench, and "
            f"`{host.python} -m pip install distributed` dask"
        )
    if done.returncode == 127:
        raise HostWorkerError(f"host {host.name}: cannot start a cluster worker: `{host.python}` was not "
                              "found there (give it with `workbench hosts add … --python CMD --replace`)")  # fmt: skip
    ports = next((ln.split()[1:] for ln in done.stdout if ln.startswith("WB-PORTS")), None)
    if done.returncode != 0 or ports is None or len(ports) != count:
        explained = ssh.explain(host, done.stderr)
        raise explained or HostWorkerError(
            f"host {host.name}: the cluster preflight failed: {_tail(done.stderr) if done.stderr else done.returncode}"
        )
    return [int(p) for p in ports]


def host_devices(host: Host, runtime: str) -> list[str]:
    """The host's devices of `runtime` (`wgpu:0`, …; `cpu` for the cpu runtime), as the probe sees them."""
    from workbench.remote.probe import check

    from .devices import local_devices

    devices = check(host)["devices"].get(runtime) or {}
    return [split_spec(spec)[1] for spec in local_devices(runtime, devices)]


def _remote_command(host: Host, device: str, scheduler_port: int, listen: int, contact: int) -> str:
    base = ssh.remote_base(host)
    runtime = device.split(":", 1)[0]
    env = {DEVICE_ENV: device, HOST_ENV: host.name, "PYTHONUNBUFFERED": "1"}
    if device.startswith("cuda:"):  # the worker sees its one GPU only, as cuda:0 (as local workers)
        env.update({"CUDA_VISIBLE_DEVICES": device.split(":", 1)[1], DEVICE_ENV: "cuda:0"})
    args = [f"tcp://127.0.0.1:{scheduler_port}", "--no-nanny", "--nthreads", "1", "--no-dashboard",
            "--name", f"{host.name}/{device}", "--resources", f"{resource_name(runtime)}=1",
            "--listen-address", f"tcp://127.0.0.1:{listen}", "--contact-address", f"tcp://127.0.0.1:{contact}",
            "--death-timeout", "120"]  # fmt: skip
    assignments = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    # Mesa wants a private XDG_RUNTIME_DIR, which an ssh session may lack (as the run launcher).
    return (
        f'cd && {{ [ -d "$XDG_RUNTIME_DIR" ] || {{ XDG_RUNTIME_DIR={base}/xdg; '
        f'mkdir -p -m 700 "$XDG_RUNTIME_DIR"; export XDG_RUNTIME_DIR; }}; }} && '
        f"mkdir -p {base}/cluster-cache && env {CACHE_ENV}={base}/cluster-cache {assignments} "
        f"{host.python} -c {shlex.quote(WATCHDOG)} " + " ".join(shlex.quote(a) for a in args)
    )


class HostWorkers:
    """The workers started on `hosts` for a scheduler listening on 127.0.0.1:`scheduler_port`."""

    def __init__(self, hosts: list[Host], runtime: str, scheduler_port: int) -> None:
        self.workers: list[HostWorker] = []
        plan = []
        for host in hosts:
            try:
                devices = host_devices(host, runtime)
            except HostError as exc:
                raise HostWorkerError(f"host {host.name}: cannot start a cluster worker: {exc}") from None
            ports = _preflight(host, 2 * len(devices))
            plan.append((host, devices, ports))
        try:
            self._start(plan, scheduler_port)
        except BaseException:
            self.close()  # those started already
            raise

    def _start(self, plan: list, scheduler_port: int) -> None:
        taken: set[int] = {scheduler_port}
        for host, devices, ports in plan:
            for i, device in enumerate(devices):
                remote_scheduler, listen = ports[2 * i], ports[2 * i + 1]
                contact = _free_local_port(taken | {remote_scheduler, listen})
                taken.add(contact)
                forwards = ("-R", f"{remote_scheduler}:127.0.0.1:{scheduler_port}",
                            "-L", f"{contact}:127.0.0.1:{listen}")  # fmt: skip
                # Its own connection (no ControlMaster): the tunnels live and die with this worker.
                argv = ssh.ssh_argv(host, _remote_command(host, device, remote_scheduler, listen, contact),
                                    master=False, forwards=forwards)  # fmt: skip
                try:
                    proc = childproc.spawn(argv, stdin=subprocess.PIPE)
                except OSError as exc:
                    raise HostWorkerError(
                        f"cannot start the ssh client for host {host.name}: {exc}"
                    ) from None
                worker = HostWorker(host, device, f"tcp://127.0.0.1:{contact}", proc)
                childproc.pump_lines(
                    proc.stderr, lambda line, w=worker: line is not None and w.stderr.append(line)
                )
                childproc.pump_lines(proc.stdout, lambda line: None)
                self.workers.append(worker)

    def wait(self, client: Any, timeout_s: float) -> None:
        """Until every worker has joined the scheduler; a worker whose ssh ended is an error
        naming its host and what it said."""
        deadline = time.monotonic() + timeout_s
        while True:
            joined = {w.get("name") for w in client.scheduler_info()["workers"].values()}
            for worker in self.workers:
                if worker.proc.poll() is not None and worker.name not in joined:
                    raise self._failure(worker)
            if all(w.name in joined for w in self.workers):
                return
            if time.monotonic() > deadline:
                late = ", ".join(w.name for w in self.workers if w.name not in joined)
                raise HostWorkerError(f"cluster workers {late} did not join within {timeout_s:g} s")
            time.sleep(0.2)

    def _failure(self, worker: HostWorker) -> HostWorkerError:
        lines = list(worker.stderr)
        explained = ssh.explain(worker.host, lines)
        if explained is not None and "No module named" not in "\n".join(lines):
            return HostWorkerError(f"cannot start the cluster worker {worker.name}: {explained}")
        forward = next((ln for ln in lines if "forwarding failed" in ln), None)
        cause = forward or _tail(lines) if lines else f"ssh ended with status {worker.proc.returncode}"
        return HostWorkerError(
            f"host {worker.host.name}: the cluster worker for {worker.device} did not start: {cause}"
        )

    def close(self) -> None:
        """End every worker's ssh channel (its watchdog stops the worker on the host), then ssh."""
        for worker in self.workers:
            try:
                if worker.proc.stdin is not None:
                    worker.proc.stdin.close()
            except OSError:
                pass
        deadline = time.monotonic() + STOP_GRACE_S
        threads = []
        for worker in self.workers:

            def stop(proc=worker.proc):
                try:
                    proc.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    childproc.stop_tree(proc)

            thread = threading.Thread(target=stop, name="wb-host-worker-stop", daemon=True)
            thread.start()
            threads.append(thread)
        for thread in threads:
            thread.join()
        self.workers = []
