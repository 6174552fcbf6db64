"""Which of a machine's devices a cluster puts one worker on (Qt-free): the rule the local cluster
(`connect.py`), the dispatcher and the hosts' workers (`host_workers.py`) share."""

from __future__ import annotations

from typing import Any


def local_devices(runtime: str, devices: dict[str, Any]) -> list[str]:
    """The specs of this machine's devices of `runtime` (`cpu` for the cpu runtime or none found)."""
    found = [d for d in devices.get("devices") or [] if d.get("spec")]
    if runtime == "cpu" or not devices.get("available") or not found:
        return ["cpu"]
    # One adapter seen through two APIs (Vulkan and OpenGL) is one device: the first API's only.
    api = found[0].get("backend_api")
    return [d["spec"] for d in found if d.get("backend_api") == api]
