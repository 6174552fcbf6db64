"""Which devices a run uses: the ones asked for with `--device`, else one default per runtime.

Defaults: cpu → the cpu; cuda → cuda:0; wgpu → the first Vulkan, Metal or DX12 adapter, never a
GL one unless asked for by index or name (GL adapters lack timestamps and often compute limits).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from workbench.run.devices import resolve_device_spec

#: wgpu adapter APIs a run picks by default.
NATIVE_WGPU_APIS = ("vulkan", "metal", "d3d12", "dx12")


@dataclass(frozen=True)
class DeviceChoice:
    runtime: str
    index: int
    spec: str
    device: dict[str, Any] = field(default_factory=dict)
    available: bool = True
    reason: str = ""
    host: str | None = None  # a configured GPU host (workbench.remote) the device is on


def result_device(device: dict[str, Any]) -> dict[str, Any]:
    """The device dict a result carries (without the long feature list)."""
    return {k: v for k, v in device.items() if k != "features"}


def resolve_specs(specs: list[str], devices: dict[str, dict[str, Any]]) -> dict[str, list[int]]:
    """--device specs → {runtime: [device index, ...]} (DeviceNotFound names the devices here)."""
    chosen: dict[str, list[int]] = {}
    for spec in specs:
        runtime, index = resolve_device_spec(spec, devices)
        if index not in chosen.setdefault(runtime, []):
            chosen[runtime].append(index)
    return chosen


def choose_devices(runtime: str, info: dict[str, Any], indices: list[int]) -> list[DeviceChoice]:
    """The devices of `runtime` to run on: `indices` when given, else the default one.

    An unavailable runtime (or no suitable device) gives one choice with available=False and the
    reason, which the run reports as "skipped".
    """
    listed = {int(d.get("index", 0)): d for d in info.get("devices", [])}
    if not info.get("available"):
        return [
            _unavailable(
                runtime, f"the {runtime} runtime is unavailable: {info.get('reason') or 'no reason given'}"
            )
        ]
    if indices:
        return [_choice(runtime, listed[i]) for i in indices if i in listed]
    if runtime == "wgpu":
        for device in listed.values():
            if str(device.get("backend_api", "")).lower() in NATIVE_WGPU_APIS:
                return [_choice(runtime, device)]
        names = ", ".join(
            f"{d.get('spec')} {d.get('name')} ({d.get('backend_api')})" for d in listed.values()
        )
        reason = "no Vulkan, Metal or DX12 adapter" + (
            f" (only {names}; pick one with --device)" if names else ""
        )
        return [_unavailable(runtime, reason)]
    if not listed:
        return [_unavailable(runtime, "no device")]
    return [_choice(runtime, listed[min(listed)])]


def _unavailable(runtime: str, reason: str) -> DeviceChoice:
    """The one choice of a runtime that cannot run here; the run reports it as skipped."""
    return DeviceChoice(runtime, 0, runtime, {"runtime": runtime, "spec": runtime}, False, reason)


def _choice(runtime: str, device: dict[str, Any]) -> DeviceChoice:
    index = int(device.get("index", 0))
    spec = str(device.get("spec") or f"{runtime}:{index}")
    return DeviceChoice(runtime, index, spec, result_device(device))
