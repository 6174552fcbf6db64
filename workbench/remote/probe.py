"""What a host offers: its Python, the workbench version there, the runtimes and their devices.

One ssh command runs `python -c` (versions) and `python -m workbench.run.devices --json` (the
same probe `workbench doctor` runs here) on the host. Answers are cached per host in-process;
device specs get the host's name in front (`lo/cpu`, `lo/wgpu:0`) and each device dict a
`host` key, so a result's device says where it ran.
"""

from __future__ import annotations

import json
import shlex
import threading
from typing import Any

from workbench.remote import ssh
from workbench.remote.hosts import Host, HostError
from workbench.runtimes_table import RUNTIMES

PROBE_TIMEOUT_S = 90.0
_INFO = (
    "import json, platform, sys; import workbench; "
    "print('WB-INFO ' + json.dumps({'python': sys.version.split()[0], 'executable': sys.executable, "
    "'workbench': workbench.__version__, 'platform': platform.platform(), 'machine': platform.machine()}))"
)

_cache: dict[str, dict[str, Any]] = {}
_lock = threading.Lock()


def check(host: Host, timeout_s: float = PROBE_TIMEOUT_S) -> dict[str, Any]:
    """{"host", "url", "python", "workbench", "platform", "devices": {runtime: {...}}}; raises
    HostError (HostKeyError, NotSetUp) with what to do when the host cannot answer."""
    command = f"cd && {host.python} -c {shlex.quote(_INFO)} && {host.python} -m workbench.run.devices --json"
    done = ssh.run(host, command, timeout_s=timeout_s)
    if done.returncode != 0:
        explained = ssh.explain(host, done.stderr)
        if explained is not None:
            raise explained
        if done.returncode == 127:
            raise HostError(
                f"host {host.name}: `{host.python}` was not found there; give the remote Python "
                f"with `workbench hosts add {host.name} {host.url} --python CMD --replace`"
            )
        tail = " | ".join(ln for ln in done.stderr[-3:] if ln.strip()) or f"exit code {done.returncode}"
        raise HostError(f"host {host.name}: the probe failed: {tail}")
    info: dict[str, Any] = {}
    devices: dict[str, Any] | None = None
    for line in done.stdout:
        if line.startswith("WB-INFO "):
            info = json.loads(line[len("WB-INFO ") :])
        elif line.startswith("{"):
            try:
                devices = json.loads(line)
            except json.JSONDecodeError:
                pass
    if devices is None:
        raise HostError(f"host {host.name}: the device probe printed no answer")
    return {"host": host.name, "url": host.url, **info, "devices": with_host(host.name, devices)}


def with_host(name: str, devices: dict[str, Any]) -> dict[str, Any]:
    """The devices answer with `NAME/` in front of every spec and a `host` key in every device."""
    out = {}
    for runtime, entry in devices.items():
        entry = dict(entry)
        entry["devices"] = [
            dict(d, host=name, spec=f"{name}/{d.get('spec') or runtime}") for d in entry.get("devices", [])
        ]
        out[runtime] = entry
    return out


def host_devices(host: Host, refresh: bool = False) -> dict[str, Any]:
    """The host's devices by runtime (cached); a host that cannot answer gives every runtime
    unavailable with the reason (so a run reports it instead of failing)."""
    with _lock:
        if not refresh and host.name in _cache:
            return json.loads(json.dumps(_cache[host.name]))
    try:
        devices = check(host)["devices"]
    except HostError as exc:
        reason = str(exc)
        devices = {r: {"available": False, "reason": reason, "devices": []} for r in RUNTIMES}
        with _lock:
            _cache.pop(host.name, None)
        return devices
    with _lock:
        _cache[host.name] = devices
    return json.loads(json.dumps(devices))


def forget(name: str | None = None) -> None:
    with _lock:
        if name is None:
            _cache.clear()
        else:
            _cache.pop(name, None)


def all_hosts_devices(refresh: bool = False) -> dict[str, dict[str, Any]]:
    """{host name: host_devices(host)} for every configured host (doctor, the device picker)."""
    from workbench.remote.hosts import HostStore

    try:
        hosts = HostStore().load()
    except HostError as exc:
        return {"?": {r: {"available": False, "reason": str(exc), "devices": []} for r in RUNTIMES}}
    return {name: host_devices(host, refresh) for name, host in sorted(hosts.items())}
