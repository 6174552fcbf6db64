"""Which backends and devices a run uses when nobody chose, and the devices asked for.

Backends: `default_backends`, the one rule of the command line and the window.
Devices: the ones asked for with `--device`, else one default per runtime.

Defaults: cpu → the cpu; cuda → cuda:0; wgpu → the first Vulkan, Metal or DX12 adapter, never a
GL one unless asked for by index or name (GL adapters lack timestamps and often compute limits).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from workbench.backends import BACKENDS, ON_DEMAND_BACKENDS, REFERENCE_BACKENDS, runtime_of
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


def default_backends(
    have: list[str] | set[str],
    kernel_references: set[str],
    runtime_available: Callable[[str], bool],
) -> list[str]:
    """The backends a run uses when nobody chose (the command line and the window alike): cpu,
    plus every backend in `have` (toolchain installed, or artifacts at hand) whose runtime is
    available, less reference-only backends (cuda-c, ...) no kernel has a source for and the
    backends run only when asked for (`ON_DEMAND_BACKENDS`: cpu-sim).

    A backend whose runtime is missing is left out: its build (a cold nvptx `-Zbuild-std=core`
    takes a minute) would only end in "skipped"."""
    chosen = []
    for backend in BACKENDS:
        if backend not in have or backend in ON_DEMAND_BACKENDS:
            continue  # not installed, or a checker run only when asked for (cpu-sim)
        if backend in REFERENCE_BACKENDS and backend not in kernel_references:
            continue  # no reference source to build
        if backend != "cpu" and not runtime_available(runtime_of(backend)):
            continue
        chosen.append(backend)
    return chosen or ["cpu"]


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
