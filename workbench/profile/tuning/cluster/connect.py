"""`--cluster` specs and the Dask cluster they name (Qt-free).

- `local` / `local:N`: a `distributed.LocalCluster` of worker processes (`threads_per_worker=1`),
  one per local device of the sweep's runtime (or N, the devices dealt round robin), each with
  its device in its environment (`WB_CLUSTER_DEVICE`; CUDA's also `CUDA_VISIBLE_DEVICES`, set
  before the worker's runtime starts) and advertised as the resource `device:<runtime>` = 1.
  Stopped (workers and scheduler) when the sweep ends.
- `tcp://HOST:PORT`: a running scheduler; its workers were started with
  `WB_CLUSTER_DEVICE=wgpu:0 dask worker tcp://HOST:PORT --resources device:wgpu=1`.
- `hosts:NAME[,NAME…]`: a scheduler here (127.0.0.1 only) and one `dask worker` per device of
  each registered host (`workbench hosts`), started over ssh with tunnels (`host_workers.py`);
  workers, tunnels and scheduler stopped when the sweep ends.

`parse` is the one reader of a spec: the command line's `--cluster` and the Tuning panel's
Cluster control both call it (and name its message when it refuses).
"""

from __future__ import annotations

import re
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from workbench.errors import WorkbenchError

from .worker_side import CACHE_ENV, DEVICE_ENV, resource_name

#: Seconds allowed for a cluster's workers to start or a scheduler to answer (2 loaded cores here).
CONNECT_TIMEOUT_S = 120.0
#: Seconds a scheduler named by `tcp://HOST:PORT` has to answer before the sweep gives up.
SCHEDULER_TIMEOUT_S = 30.0


class ClusterError(WorkbenchError):
    """A `--cluster` spec that is malformed, a scheduler that does not answer, no usable worker."""


@dataclass(frozen=True)
class ClusterSpec:
    kind: str  # "local" | "scheduler" | "hosts"
    workers: int | None = None  # local: how many (None: one per device)
    address: str | None = None  # scheduler: tcp://HOST:PORT
    hosts: tuple[str, ...] = ()  # hosts: the registered hosts' names

    @property
    def text(self) -> str:
        """The spec as the user writes it."""
        if self.kind == "hosts":
            return "hosts:" + ",".join(self.hosts)
        if self.kind == "scheduler":
            return str(self.address)
        return f"local:{self.workers}" if self.workers else "local"


#: The forms a spec may take (the message of every refusal names them).
FORMS = ("local, local:N (N workers here), tcp://HOST:PORT (a running Dask scheduler) or "
         "hosts:NAME[,NAME…] (workers on registered hosts, over ssh)")  # fmt: skip


def parse_names(text: str) -> tuple[str, ...]:
    """`gpu1,gpu2` → ("gpu1", "gpu2"); the syntax only (whether they are registered: `resolve`)."""
    from workbench.remote.hosts import NAME_RE

    names = tuple(n.strip() for n in text.split(","))
    bad = [n for n in names if not NAME_RE.match(n)]
    if not names or bad:
        raise ValueError(f"{', '.join(repr(n) for n in bad) or 'no host'} is not a host name")
    if len(set(names)) != len(names):
        raise ValueError("a host is named twice")
    return names


def parse(text: str) -> ClusterSpec:
    """`local`, `local:N` or `tcp://HOST:PORT` → `ClusterSpec`; anything else names the forms."""
    text = (text or "").strip()
    if text == "local":
        return ClusterSpec("local")
    match = re.fullmatch(r"local:(\d+)", text)
    if match:
        count = int(match.group(1))
        if count < 1:
            raise ClusterError(f"--cluster {text!r}: at least 1 worker")
        return ClusterSpec("local", workers=count)
    if re.fullmatch(r"tcp://[^\s:/]+:\d{1,5}", text):
        return ClusterSpec("scheduler", address=text)
    if text.startswith("hosts:"):
        try:
            return ClusterSpec("hosts", hosts=parse_names(text[len("hosts:") :]))
        except ValueError as exc:
            raise ClusterError(f"--cluster {text!r}: {exc}; expected hosts:NAME[,NAME…]") from None
    raise ClusterError(f"--cluster {text!r}: expected {FORMS}")


@contextmanager
def _workers_leave_ctrl_c_to_us() -> Iterator[None]:
    """While the local workers are spawned: SIGINT ignored in this process, a disposition their
    interpreters inherit across exec and keep (Python installs its KeyboardInterrupt handler only
    where SIGINT is not ignored). Ctrl-C in a terminal sends SIGINT to the whole foreground process
    group: each worker used to die printing a KeyboardInterrupt traceback; now only this process
    hears it, the sweep stops keeping what it recorded, and `Cluster.close` stops the workers and
    the scheduler quietly. A Ctrl-C while the workers start (a second or two) is ignored. (A
    blocked signal mask would not do: multiprocessing's children start with an empty one.) Only
    the main thread may set a handler; elsewhere (the window's sweep thread) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class Cluster:
    """A Dask client on the named cluster (and the local cluster it started, if any)."""

    def __init__(self, spec: ClusterSpec, runtime: str, devices: list[str], cache_dir: str | None = None):
        self.spec = spec
        self.runtime = runtime
        self.local = None
        self.client = None
        self.host_workers = None
        #: Every worker gets every input from here (`hosts`: workers cannot dial each other).
        self.replicate_inputs = spec.kind == "hosts"
        try:
            self._open(devices, cache_dir)
        except BaseException:
            self.close()
            raise

    def _open(self, devices: list[str], cache_dir: str | None) -> None:
        from distributed import Client

        from .quiet_cancel import hide_sync_cancel_bug

        hide_sync_cancel_bug()  # a Ctrl-C prints the sweep's one line, not distributed's NameError

        if self.spec.kind == "scheduler":
            try:
                self.client = Client(self.spec.address, timeout=SCHEDULER_TIMEOUT_S)
            except (OSError, TimeoutError) as exc:
                raise ClusterError(
                    f"--cluster {self.spec.address}: no Dask scheduler answers ({exc})"
                ) from None
            return
        from distributed import LocalCluster

        if self.spec.kind == "hosts":
            self._open_hosts()
            return
        count = self.spec.workers or len(devices)
        self.local = LocalCluster(
            n_workers=0, processes=True, threads_per_worker=1, dashboard_address=None,
            host="127.0.0.1", silence_logs=40,
        )  # fmt: skip
        for i in range(count):
            device = devices[i % len(devices)]
            env = {DEVICE_ENV: device}
            if cache_dir:
                env[CACHE_ENV] = cache_dir
            if device.startswith("cuda:"):  # the worker sees its one GPU only, as cuda:0
                env.update(CUDA_VISIBLE_DEVICES=device.split(":", 1)[1], **{DEVICE_ENV: "cuda:0"})
            ((name, template),) = self.local.new_worker_spec().items()
            worker = dict(template)  # the template is one dict for every new worker
            worker["options"] = {**worker["options"], "env": env,
                                 "resources": {resource_name(device.split(":", 1)[0]): 1}}  # fmt: skip
            self.local.worker_spec[name] = worker
        with _workers_leave_ctrl_c_to_us():
            self.local.sync(self.local._correct_state)  # spawns the worker processes
        self.client = Client(self.local, timeout=CONNECT_TIMEOUT_S)
        self.client.wait_for_workers(count, timeout=CONNECT_TIMEOUT_S)

    def _open_hosts(self) -> None:
        """A scheduler here on 127.0.0.1 and the hosts' workers, which reach it through ssh."""
        import dask
        from distributed import Client, LocalCluster

        from .host_workers import HostWorkers, resolve

        try:
            hosts = resolve(self.spec.hosts)
        except WorkbenchError as exc:
            raise ClusterError(f"--cluster {self.spec.text}: {exc}") from None
        # Inputs are placed on every worker by the dispatcher: no policy may drop those copies.
        with dask.config.set({"distributed.scheduler.active-memory-manager.start": False}):
            self.local = LocalCluster(n_workers=0, processes=True, dashboard_address=None, host="127.0.0.1",
                                      silence_logs=40)  # fmt: skip
        port = int(self.local.scheduler_address.rsplit(":", 1)[1])
        self.client = Client(self.local, timeout=CONNECT_TIMEOUT_S)
        self.host_workers = HostWorkers(hosts, self.runtime, port)
        self.host_workers.wait(self.client, CONNECT_TIMEOUT_S)

    def close(self) -> None:
        """Close the client; stop the local cluster's workers and scheduler (a scheduler we
        only connected to keeps running) and the hosts' workers (their ssh channels end)."""
        client, self.client = self.client, None
        local, self.local = self.local, None
        host_workers, self.host_workers = self.host_workers, None
        try:
            if client is not None:
                client.close()
            if local is not None:
                local.close()  # asks every worker to close, the hosts' too
        finally:
            if host_workers is not None:
                host_workers.close()
