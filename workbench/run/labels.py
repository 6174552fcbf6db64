"""Short, unambiguous names for devices, as every view shows them.

Two adapters of one GPU (or of llvmpipe) differ only by their graphics API, so a wgpu adapter is
named with it: "llvmpipe · Vulkan", "llvmpipe · OpenGL". The CPU and CUDA devices keep their name.
"""

from __future__ import annotations

from typing import Any


def short_name(name: str) -> str:
    """An adapter's name without its parenthesised details ("llvmpipe (LLVM 15.0.6, 256 bits)")."""
    head = name.split(" (", 1)[0].strip()
    return head or name


def device_label(device: dict[str, Any]) -> str:
    """ "llvmpipe · Vulkan" for a wgpu adapter, the device's name otherwise (its spec as a fallback)."""
    name = str(device.get("name") or "")
    spec = str(device.get("spec") or device.get("runtime") or "")
    api = str(device.get("backend_api") or "")
    if not name:
        return spec
    if api:
        return f"{short_name(name)} · {api}"
    return short_name(name) if device.get("runtime") != "cpu" else name


def spec_runtime(spec: str) -> str:
    """The runtime a device spec names: "cpu", "cuda:0" -> "cuda", "wgpu:llvmpipe" -> "wgpu"."""
    return spec.split(":", 1)[0].strip().lower()


def reference_device_notice(
    reference: str, devices: list[str], devices_info: dict[str, Any] | None
) -> dict[str, Any] | None:
    """When the chosen devices leave out the reference backend's runtime, what would run anyway.

    The run checks every backend against `reference`, which needs a device of its runtime; with
    none of them chosen it would quietly run on that runtime's default device. Returns None when
    nothing is hidden (no choice made, or the runtime is chosen), else {reference, runtime, spec,
    label, message} naming the device it needs."""
    from workbench.backends import BACKENDS
    from workbench.run.selection import choose_devices

    runtime = BACKENDS.get(reference)
    if not devices or runtime is None or runtime in {spec_runtime(s) for s in devices}:
        return None
    info = (devices_info or {}).get(runtime) or {}
    if not info.get("available"):
        return None  # it cannot run anyway: the results say "skipped" with the reason
    choice = choose_devices(runtime, info, [])[0]
    label = device_label(choice.device) if choice.available else runtime
    return {
        "reference": reference,
        "runtime": runtime,
        "spec": choice.spec,
        "label": label,
        "message": (
            f"The reference backend {reference} runs on {label} ({choice.spec}), which is not "
            f"checked. Every other backend is verified against it."
        ),
    }
