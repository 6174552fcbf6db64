"""What a Dask worker runs for a tuning sweep (Qt-free): its device, and one configuration.

A worker owns one device (`WB_CLUSTER_DEVICE`, e.g. `wgpu:1` or `cuda:0`; default: the first
device of the runtime its `device:<runtime>` resource names; CUDA's is pinned with
`CUDA_VISIBLE_DEVICES` before any runtime starts, so it is `cuda:0` inside). It keeps one warm
`RunService` per device for the life of the worker process (module-level: the runtime workers,
inputs and shader modules stay between configurations). Project files and artifact folders
arrive as tar bytes named by their digest and are unpacked once per worker into
`$WB_CLUSTER_CACHE` (default: a folder of the worker's temporary directory).
"""

from __future__ import annotations

import io
import os
import socket
import tarfile
import tempfile
import threading
from pathlib import Path
from typing import Any

#: The Dask resource a worker owning one device of `runtime` advertises (quantity 1): a task
#: asks for one, so a device runs one configuration at a time.
RESOURCE_PREFIX = "device:"
#: Environment variable naming the device a worker owns (`wgpu:1`, `cuda:0`, `cpu`).
DEVICE_ENV = "WB_CLUSTER_DEVICE"
CACHE_ENV = "WB_CLUSTER_CACHE"
#: Environment variable naming the registered host (`workbench hosts`) a worker was started on.
HOST_ENV = "WB_CLUSTER_HOST"

_services: dict[str, Any] = {}
_lock = threading.Lock()


def resource_name(runtime: str) -> str:
    return f"{RESOURCE_PREFIX}{runtime}"


def pack(folder: str | Path, names: list[str] | None = None) -> bytes:
    """A folder (or the listed files in it) as tar bytes, in a stable order."""
    folder = Path(folder)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        paths = [folder / n for n in names] if names is not None else sorted(folder.rglob("*"))
        for path in sorted(paths):
            if path.is_file():
                info = tar.gettarinfo(str(path), arcname=path.relative_to(folder).as_posix())
                info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
                with path.open("rb") as handle:
                    tar.addfile(info, handle)
    return buffer.getvalue()


def _cache_root() -> Path:
    root = os.environ.get(CACHE_ENV) or os.path.join(tempfile.gettempdir(), f"wb-cluster-{os.getuid()}")
    Path(root).mkdir(parents=True, exist_ok=True)
    return Path(root)


def unpack(kind: str, digest: str, data: bytes) -> Path:
    """The folder of `data` in this worker's cache (unpacked the first time, then reused)."""
    folder = _cache_root() / kind / digest
    if (folder / ".complete").is_file():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{digest[:12]}-", dir=folder.parent))
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
        tar.extractall(staging, filter="data")
    (staging / ".complete").write_text(digest)
    try:
        staging.rename(folder)
    except OSError:  # another task of this worker (or a worker sharing the cache) was first
        import shutil

        shutil.rmtree(staging, ignore_errors=True)
    return folder


def fetch(kind: str, digest: str, data: bytes, fetched: list[str]) -> Path:
    """The folder of a blob by its digest: from this worker's cache, else unpacked (and noted)."""
    folder = _cache_root() / kind / digest
    if (folder / ".complete").is_file():
        return folder
    fetched.append(digest)
    return unpack(kind, digest, data)


def owned_device() -> str:
    """The device spec this worker owns (`wgpu:0`, `cuda:0`, `cpu`)."""
    return os.environ.get(DEVICE_ENV) or "cpu"


def _service():
    from workbench.run import RunService

    spec = owned_device()
    with _lock:
        if spec not in _services:
            if not _services:
                import atexit

                atexit.register(close_services)  # the runtime workers end with the Dask worker
            _services[spec] = RunService()
        return _services[spec]


def close_services() -> None:
    """End the warm run services of this worker process (at worker shutdown)."""
    with _lock:
        services = list(_services.values())
        _services.clear()
    for service in services:
        service.close()


def _worker_identity() -> dict[str, Any]:
    try:
        from distributed import get_worker

        address = get_worker().address
    except (ImportError, ValueError):
        address = None
    identity = {"worker": address, "host": socket.gethostname(), "pid": os.getpid()}
    if os.environ.get(HOST_ENV):  # started over ssh by `--cluster hosts:…`: the host's registered name
        identity["ssh_host"] = os.environ[HOST_ENV]
    return identity


def model_name(device: dict[str, Any]) -> str:
    """A device's model as rankings compare it: its full name (llvmpipe's vector width, a GPU's
    variant) and, for an adapter, the graphics API it is seen through."""
    api = device.get("backend_api")
    return f"{device.get('name')} · {api}" if api else str(device.get("name"))


def describe(runtimes: list[str]) -> dict[str, Any]:
    """This worker's identity and, per runtime a sweep needs, the device it would run on."""
    service = _service()
    spec = owned_device()
    owned_runtime = spec.split(":", 1)[0]
    devices: dict[str, Any] = {}
    for runtime in runtimes:
        info = service.devices(runtime)
        found = info.get("devices") or []
        index = 0
        if runtime == owned_runtime and ":" in spec:
            index = int(spec.split(":", 1)[1]) if spec.split(":", 1)[1].isdigit() else 0
        chosen = next((d for d in found if int(d.get("index", 0)) == index), None)
        devices[runtime] = (
            {"spec": chosen.get("spec"), "name": model_name(chosen)}
            if info.get("available") and chosen
            else {"spec": None, "name": None, "reason": info.get("reason") or f"no {runtime} device {index}"}
        )
    return {**_worker_identity(), "owns": spec, "devices": devices}


def run_configuration(request: dict[str, Any], blobs: dict[str, bytes]) -> Any:
    """Run one configuration on this worker's device from the artifacts built by the tuning
    process (`blobs`: digest → tar bytes, unpacked only when this worker's cache lacks it); the
    `RunReport` comes back with the worker, host, device and the digests it unpacked in each
    provenance."""
    fetched: list[str] = []
    project_dir = fetch("projects", request["project_digest"], blobs[request["project_digest"]], fetched)
    run_dir = _cache_root() / "runs" / request["run_digest"]
    if not run_dir.is_dir():
        staging = Path(tempfile.mkdtemp(prefix=".run-", dir=_cache_root()))
        for backend, digest in request["artifacts"].items():
            (staging / backend).symlink_to(fetch("artifacts", digest, blobs[digest], fetched))
        try:
            (_cache_root() / "runs").mkdir(exist_ok=True)
            staging.rename(run_dir)
        except OSError:
            import shutil

            shutil.rmtree(staging, ignore_errors=True)
    spec = owned_device()
    runtime = spec.split(":", 1)[0]
    devices = [spec] if runtime != "cpu" else None
    service = _service()
    if request.get("timing") is not None:  # the sweep's timing protocol, as a local tune would use
        from workbench.run.timing import options_from_dict

        service.timing = options_from_dict(request["timing"])
    from workbench.run.request import RunRequest

    report = service.execute(
        RunRequest.of(
            str(project_dir), request["backends"], devices, kernel=request["kernel"], sizes=request["sizes"],
            timeout_s=request["timeout_s"], artifacts_dir=str(run_dir), seed=request["seed"],
            tunables=request["config"], keep_outputs=False,
        )
    )  # fmt: skip
    identity = {**_worker_identity(), "owns": spec, "fetched": fetched}
    for result in report.results:
        result.provenance["cluster"] = {**identity, "device": (result.device or {}).get("spec"),
                                        "device_name": (result.device or {}).get("name")}  # fmt: skip
    return report
