"""cpu-sim as a device: the machine's CPU "with GPU semantics" — the cpu runtime's device running
the `cpu-sim` backend (the kernel body with workgroups, barriers and shared memory, every access
checked; docs/cpu-sim.md). The device picker shows it under the CPU and checking it adds the
backend to the run; this module is the one description of what it models and what it does not
(Qt-free: the window and the command line read the same words)."""

from __future__ import annotations

from typing import Any

#: The backend the device stands for (`workbench.backends`), and the spec its row shows.
SIM_BACKEND = "cpu-sim"

#: What cpu-sim runs like a GPU.
MODELLED = (
    "workgroups and invocations (local / group ids)",
    "barriers (every invocation of the workgroup; divergence reported, never a hang)",
    "workgroup-shared arrays",
    "atomic_add on buffers and workgroup arrays (two atomics never race)",
    "subgroup shuffles (32 lanes; an exchange through the workgroup with a workgroup barrier)",
)
#: What it checks at every access.
CHECKS = ("shared-race", "global-race", "out-of-bounds", "barrier-divergence", "uninitialized-read")
#: What it does not model (docs/cpu-sim.md, "What cpu-sim does not model").
NOT_MODELLED = (
    "weak memory ordering (every access sees the latest write)",
    "subgroups / warps in lockstep and their timing",
    "atomics other than a relaxed atomic_add, fences other than the barrier",
    "GPU timing (its times are the simulator's)",
)


def sim_device(cpu: dict[str, Any]) -> dict[str, Any]:
    """The cpu runtime's device `cpu` (a `list_devices()` entry) as cpu-sim shows it."""
    name = str(cpu.get("name") or "cpu")
    return {
        "name": f"{name} · GPU semantics",
        "spec": str(cpu.get("spec") or "cpu"),
        "runtime": "cpu",
        "backend": SIM_BACKEND,
        "semantics": "GPU: " + "; ".join(MODELLED),
        "checks": list(CHECKS),
        "not_modelled": list(NOT_MODELLED),
        "cores": cpu.get("cores"),
    }


def sim_devices(info: dict[str, Any]) -> list[dict[str, Any]]:
    """cpu-sim's device for each CPU device of a `list_devices()` answer (none where the cpu
    runtime is unavailable)."""
    entry = info.get("cpu") or {}
    if not isinstance(entry, dict) or not entry.get("available"):
        return []
    return [sim_device(device) for device in entry.get("devices") or []]
