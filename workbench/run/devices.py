"""The device registry: which runtimes work here and the devices each one reaches.

`list_devices()` probes in a child process (`python -m workbench.run.devices --json`, started
by `workbench.childproc`, whose timeout stops the probe's whole process tree), so a broken GPU driver that hangs or crashes cannot take the caller down; the answer is
cached in-process. `resolve_device_spec()` turns `cpu`, `cuda:0`, `wgpu:0` or `wgpu:llvmpipe` into
(runtime, index).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any

from workbench import childproc
from workbench.build.scratch import runtime_dir
from workbench.errors import WorkbenchError
from workbench.frozen import python_command
from workbench.runtimes_table import RUNTIMES as RUNTIME_NAMES

PROBE_TIMEOUT_S = 60.0

_cache: dict[str, dict[str, Any]] | None = None
_lock = threading.Lock()


class DeviceNotFound(WorkbenchError):
    """A device spec that names no device here; the message lists the devices."""


def probe() -> dict[str, dict[str, Any]]:
    """Ask every runtime, in this process, whether it works and which devices it has."""
    from workbench.run.runtimes.base import get_runtime

    out: dict[str, dict[str, Any]] = {}
    for name in RUNTIME_NAMES:
        try:
            runtime = get_runtime(name)
            ok, reason = runtime.available()
            devices = runtime.devices() if ok else []
        except Exception as exc:  # a runtime's own bug must not hide the others
            ok, reason, devices = False, f"{type(exc).__name__}: {exc}", []
        out[name] = {"available": bool(ok), "reason": reason, "devices": devices}
    return out


def child_env() -> dict[str, str]:
    """The environment for child processes that open GPU drivers (Mesa wants XDG_RUNTIME_DIR)."""
    env = dict(os.environ)
    current = env.get("XDG_RUNTIME_DIR")
    if not current or not os.path.isdir(current):
        env["XDG_RUNTIME_DIR"] = runtime_dir()  # one per user, reused: none left per run
    return env


def _failed(reason: str) -> dict[str, dict[str, Any]]:
    return {name: {"available": False, "reason": reason, "devices": []} for name in RUNTIME_NAMES}


def _probe_in_child(timeout_s: float) -> dict[str, dict[str, Any]]:
    command = python_command("workbench.run.devices", "--json")
    try:
        done = childproc.capture(command, timeout_s=timeout_s, env=child_env())
    except TimeoutError:
        return _failed(f"the device probe did not finish within {timeout_s:.0f} s (a hung GPU driver?)")
    except OSError as exc:
        return _failed(f"the device probe could not start: {exc}")
    for line in reversed(done.stdout):
        if line.startswith("{"):
            try:
                result = json.loads(line)
            except json.JSONDecodeError:
                break
            for name in RUNTIME_NAMES:
                result.setdefault(name, {"available": False, "reason": "not probed", "devices": []})
            return result
    tail = ([ln for ln in done.stderr if ln.strip()] or ["no output"])[-1]
    return _failed(f"the device probe exited with status {done.returncode}: {tail}")


def list_devices(refresh: bool = False, timeout_s: float = PROBE_TIMEOUT_S) -> dict[str, dict[str, Any]]:
    """{runtime: {"available", "reason", "devices": [dict]}} for every runtime of the table (cached)."""
    global _cache
    with _lock:
        if _cache is None or refresh:
            _cache = _probe_in_child(timeout_s)
        return json.loads(json.dumps(_cache))  # a copy the caller may change


def _describe(devices: dict[str, dict[str, Any]]) -> str:
    parts = []
    for runtime, entry in devices.items():
        if not entry.get("available"):
            parts.append(f"{runtime}: unavailable ({entry.get('reason') or 'no reason given'})")
            continue
        for dev in entry.get("devices", []):
            api = f", {dev['backend_api']}" if dev.get("backend_api") else ""
            parts.append(f"{dev.get('spec')} ({dev.get('name')}{api})")
    return "; ".join(parts) or "none"


def resolve_device_spec(spec: str, devices: dict[str, dict[str, Any]] | None = None) -> tuple[str, int]:
    """(runtime, index) for `cpu`, `cuda`, `cuda:0`, `wgpu:0` or `wgpu:<part of the adapter name>`.

    A name matching several wgpu adapters picks the Vulkan one (then the first)."""
    if devices is None:
        devices = list_devices()
    text = spec.strip()
    runtime, _, selector = text.partition(":")
    runtime, selector = runtime.strip().lower(), selector.strip()
    if runtime not in devices:
        raise DeviceNotFound(
            f"unknown device {spec!r}: expected cpu, cuda:N, wgpu:N or wgpu:<adapter name>; "
            f"devices here: {_describe(devices)}"
        )
    entry = devices[runtime]
    if not entry.get("available"):
        raise DeviceNotFound(
            f"device {spec!r}: the {runtime} runtime is unavailable: {entry.get('reason')}; "
            f"devices here: {_describe(devices)}"
        )
    listed = entry.get("devices", [])
    if not selector:
        selector = "0"
    if selector.isdigit():
        index = int(selector)
        if any(d.get("index") == index for d in listed):
            return runtime, index
        raise DeviceNotFound(f"no device {runtime}:{index}; devices here: {_describe(devices)}")
    wanted = selector.lower()
    matches = [d for d in listed if wanted in str(d.get("name", "")).lower()]
    if not matches:
        raise DeviceNotFound(
            f"no {runtime} device whose name contains {selector!r}; devices here: {_describe(devices)}"
        )
    vulkan = [d for d in matches if str(d.get("backend_api", "")).lower() == "vulkan"]
    return runtime, int((vulkan or matches)[0]["index"])


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    result = probe()
    if "--json" in args:
        # One line, last on stdout: drivers may print their own chatter before it.
        print(json.dumps(result, default=str))
    else:
        for runtime, entry in result.items():
            if not entry["available"]:
                print(f"{runtime}: unavailable ({entry['reason']})")
            for dev in entry["devices"]:
                print(f"{dev['spec']}: {dev['name']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
