"""The devices a run can use: each runtime's devices as its worker sees them, GPU hosts' devices,
the worker pool of each host, and `--device` specs resolved to devices per backend.

The worker is the child process that will run the kernels anyway, so asking it costs no extra
probe, and a driver that crashes while probing takes down only that worker. Answers are cached
for the life of the catalog (one per `RunService`); `refresh=True` asks again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from workbench.backends import BACKENDS, RUNTIMES, runtime_of
from workbench.project import Project
from workbench.run.pool import SETUP_TIMEOUT_S, WorkerError, WorkerPool, side_by_side
from workbench.run.request import RunError
from workbench.run.selection import DeviceChoice, choose_devices, default_backends, resolve_specs

#: --device specs split by where they run: ({runtime: [index]} here, {host: {runtime: [index]}}).
DeviceIndices = tuple[dict[str, list[int]], dict[str, dict[str, list[int]]]]


class DeviceCatalog:
    """Devices per runtime (probed in the workers of `pool`, cached) and per GPU host (over ssh)."""

    def __init__(self, pool: WorkerPool, on_stderr: Callable[[str, str], None] | None = None):
        self.pool = pool
        self._on_stderr = on_stderr
        self._devices: dict[str, dict[str, Any]] = {}
        self._devices_lock = threading.Lock()
        self._runtime_locks: dict[str, threading.Lock] = {}
        self._remote_pools: dict[str, WorkerPool] = {}  # host name → its workers (over ssh)
        self._hosts: dict[str, Any] = {}  # host name → workbench.remote.hosts.Host

    def devices(self, runtime: str, refresh: bool = False) -> dict[str, Any]:
        """{"available", "reason", "devices"} of one runtime, as its worker sees it (cached)."""
        with self._devices_lock:
            lock = self._runtime_locks.setdefault(runtime, threading.Lock())
        with lock:  # one probe per runtime at a time; runtimes probe side by side (`probe`)
            if refresh or runtime not in self._devices:
                try:
                    worker = self.pool.get(runtime)
                    info = worker.request({"op": "devices"}, timeout_s=SETUP_TIMEOUT_S)[0]
                except WorkerError as exc:
                    info = {"available": False, "reason": str(exc), "devices": []}
                if not info.get("available"):
                    self.pool.stop(runtime)  # nothing will run there
                self._devices[runtime] = info
            return self._devices[runtime]

    def known_unavailable(self, runtime: str) -> bool:
        """True only when an earlier probe found `runtime` unavailable here: answered from the
        cache, never starting a worker (a caller deciding how to build must not wait on a probe)."""
        with self._devices_lock:
            info = self._devices.get(runtime)
        return info is not None and not info.get("available")

    def probe(self, runtimes: set[str]) -> None:
        """Ask every runtime not probed yet for its devices, side by side: each probe starts a
        worker (importing pycuda and creating a context, or enumerating Vulkan adapters takes a
        second or more on a GPU host), and one after the other they added up."""
        missing = sorted(r for r in runtimes if r not in self._devices)
        side_by_side([partial(self.devices, r) for r in missing], "wb-probe")

    def all_devices(self) -> dict[str, dict[str, Any]]:
        """Every runtime's devices, in the shape of `workbench.run.devices.list_devices()`."""
        return {runtime: self.devices(runtime) for runtime in RUNTIMES}

    def default_backends(
        self,
        project: Project,
        artifacts_dir: str | Path | None = None,
        host_runtimes: frozenset[str] = frozenset(),
    ) -> list[str]:
        """cpu, plus every backend whose toolchain is installed (or whose artifacts are in
        `artifacts_dir`) and whose runtime is available here or asked for on a GPU host
        (`selection.default_backends`, the rule the window follows too)."""
        if artifacts_dir is not None:
            have = [b for b in BACKENDS if (Path(artifacts_dir) / b / "build.json").is_file()]
        else:
            from workbench.build.toolchains import detect_toolchains

            have = ["cpu"] + [t.backend for t in detect_toolchains() if t.found and t.backend != "cpu"]
        kernel_refs = set().union(*(k.reference for k in project.manifest.kernels))
        return default_backends(
            have, kernel_refs, lambda runtime: runtime in host_runtimes or self.devices(runtime)["available"]
        )

    # ------------------------------------------------------------------ GPU hosts (workbench.remote)

    def host(self, name: str):
        """The configured host `name` (`workbench.remote.hosts.Host`), read once."""
        if name not in self._hosts:
            from workbench.remote.hosts import HostStore

            self._hosts[name] = HostStore().get(name)
        return self._hosts[name]

    def host_devices(self, name: str, refresh: bool = False) -> dict[str, dict[str, Any]]:
        """A configured host's devices by runtime (specs `NAME/cpu` …), probed over ssh (cached)."""
        from workbench.remote.probe import host_devices

        return host_devices(self.host(name), refresh=refresh)

    def host_record(self, name: str) -> dict[str, Any]:
        """What a result's provenance says of the host it ran on."""
        host = self.host(name)
        return {"name": host.name, "url": host.url, "python": host.python}

    def pool_for(self, host: str | None) -> WorkerPool:
        """The workers here (`host` None) or on a GPU host (started over ssh on first use)."""
        if host is None:
            return self.pool
        if host not in self._remote_pools:
            from workbench.remote.launcher import RemoteLauncher

            launcher = RemoteLauncher(self.host(host))
            self._remote_pools[host] = WorkerPool(on_stderr=self._on_stderr, launcher=launcher)
        return self._remote_pools[host]

    def close_remote(self) -> None:
        """Shut every GPU host's workers down (the local pool is the caller's)."""
        pools, self._remote_pools = list(self._remote_pools.values()), {}
        for pool in pools:
            pool.close()

    # ------------------------------------------------------------------ --device specs

    def split_specs(self, specs: list[str]) -> DeviceIndices:
        """--device specs → (local {runtime: [index]}, {host: {runtime: [index]}})."""
        local = [s for s in specs if "/" not in s]
        remote: dict[str, list[str]] = {}
        if len(local) < len(specs):
            from workbench.remote.hosts import HostError, HostStore, split_spec

            names = HostStore().names()
            for spec in specs:
                if "/" in spec:
                    try:
                        name, rest = split_spec(spec, names)
                    except HostError as exc:
                        raise RunError(str(exc)) from None
                    remote.setdefault(name, []).append(rest)
        local_indices = resolve_specs(local, self.all_devices()) if local else {}
        remote_indices = {name: resolve_specs(s, self.host_devices(name)) for name, s in remote.items()}
        return local_indices, remote_indices

    def choices(self, backend: str, indices: DeviceIndices) -> list[DeviceChoice]:
        """The devices asked for (here and on hosts); a runtime asked for nowhere: the default here."""
        local, remote = indices
        runtime = runtime_of(backend)
        choices: list[DeviceChoice] = []
        if runtime in local or not any(runtime in idx for idx in remote.values()):
            choices = choose_devices(runtime, self.devices(runtime), local.get(runtime, []))
        for host, idx in remote.items():
            if runtime in idx:
                found = choose_devices(runtime, self.host_devices(host)[runtime], idx[runtime])
                choices += [replace(c, host=host) for c in found]
        return choices
