"""Measurement conditions from NVML (`nvidia-ml-py`, imported lazily): clocks, why they are what they
are, and the total energy counter. Where NVML is absent or does not know the device, every reading
is None: a result then says "unknown" instead of guessing.

A runtime names its device for NVML with `Prepared.nvml_device()`: `{"pci_bus_id": ...}` (CUDA) or
`{"pci_device_id": ..., "name": ...}` (a wgpu adapter; matched against NVML's devices).
"""

from __future__ import annotations

from typing import Any

#: nvmlClocksEventReasons bits (nvml.h), by name.
_REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


def _nvml():
    try:
        import pynvml
    except Exception:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:
        return None
    return pynvml


def find_device(hint: dict[str, Any] | None) -> tuple[Any, Any] | None:
    """(pynvml, handle) of the device `hint` names, or None."""
    if not hint:
        return None
    nvml = _nvml()
    if nvml is None:
        return None
    try:
        if hint.get("pci_bus_id"):
            # nvidia-ml-py passes the id to C as c_char_p: bytes, not str (a str raises TypeError).
            return nvml, nvml.nvmlDeviceGetHandleByPciBusId(str(hint["pci_bus_id"]).encode())
        matches = []
        for index in range(nvml.nvmlDeviceGetCount()):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            device_id = nvml.nvmlDeviceGetPciInfo(handle).pciDeviceId >> 16
            if hint.get("pci_device_id") is not None and device_id == int(hint["pci_device_id"]):
                matches.append(handle)
        return (nvml, matches[0]) if len(matches) == 1 else None  # ambiguous: say unknown
    except Exception:
        return None


def _call(fn, *args) -> Any:
    try:
        return fn(*args)
    except Exception:
        return None


def clocks(device: tuple[Any, Any] | None) -> dict[str, Any] | None:
    """SM and memory clocks now (MHz), their maxima, the reasons NVML gives for the SM clock (throttle
    reasons among them) and the GPU temperature (°C)."""
    if device is None:
        return None
    nvml, handle = device
    reasons_fn = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
        nvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None
    )
    mask = _call(reasons_fn, handle) if reasons_fn else None
    return {
        "sm_mhz": _call(nvml.nvmlDeviceGetClockInfo, handle, nvml.NVML_CLOCK_SM),
        "mem_mhz": _call(nvml.nvmlDeviceGetClockInfo, handle, nvml.NVML_CLOCK_MEM),
        "sm_max_mhz": _call(nvml.nvmlDeviceGetMaxClockInfo, handle, nvml.NVML_CLOCK_SM),
        "mem_max_mhz": _call(nvml.nvmlDeviceGetMaxClockInfo, handle, nvml.NVML_CLOCK_MEM),
        "reasons": None if mask is None else [name for bit, name in _REASONS.items() if mask & bit],
        "temperature_c": _call(
            nvml.nvmlDeviceGetTemperature, handle, getattr(nvml, "NVML_TEMPERATURE_GPU", 0)
        ),
    }


def locked(before: dict[str, Any] | None) -> bool | None:
    """Whether the SM clock was held by a clocks setting (`nvidia-smi -lgc` / `-ac` report as
    "applications clocks setting"); None where NVML gave no reasons."""
    if not before or before.get("reasons") is None:
        return None
    return "applications_clocks_setting" in before["reasons"]


def energy_mj(device: tuple[Any, Any] | None) -> int | None:
    """NVML's total energy counter (millijoules since the driver loaded; Volta and later)."""
    if device is None:
        return None
    nvml, handle = device
    return _call(nvml.nvmlDeviceGetTotalEnergyConsumption, handle)
