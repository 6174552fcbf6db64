"""The run engine: device registry, worker processes and their protocol, runtimes, inputs,
timing, verification and the run service (docs/contracts.md, "Run service API").

    from workbench.run import RunService, list_devices
    report = RunService().run("resources/examples/saxpy", backends=["cpu", "wgsl"])

Names are imported on first use, so a worker process (`python -m workbench.run.worker`) loads
only what it needs.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "RunService": "workbench.run.service",
    "RunReport": "workbench.run.service",
    "RunError": "workbench.run.service",
    "list_devices": "workbench.run.devices",
    "resolve_device_spec": "workbench.run.devices",
    "DeviceNotFound": "workbench.run.devices",
    "TimingOptions": "workbench.run.timing",
    "WorkerProcess": "workbench.run.pool",
    "WorkerError": "workbench.run.pool",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'workbench.run' has no attribute {name!r}")
