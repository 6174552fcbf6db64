"""Why a result has no counters, in one line each, with what would make it work (issue 27, item 3).

One room for these sentences: the CLI, the record and the Counters view print them as they are.
"""

from __future__ import annotations

import re

CUDA_BACKENDS_TEXT = "nvptx, cuda-c or rust-cuda"

NO_NCU = (
    "no counters: ncu (Nsight Compute) is not on PATH; install Nsight Compute (it comes with the CUDA "
    "toolkit) or set $WB_NCU to the ncu program"
)
BAD_WB_NCU = "no counters: $WB_NCU names {path}, which is not a file; point it at the ncu program or unset it"
NOT_PERMITTED = (
    "no counters: this user may not read the GPU's performance counters (ERR_NVGPUCTRPERM); run as root, "
    "or let every user read them (nvidia driver option NVreg_RestrictProfilingToAdminUsers=0, "
    "https://developer.nvidia.com/ERR_NVGPUCTRPERM)"
)
NO_PROFILER = (
    "no counters: ncu could not start its profiler here ({detail}); inside a container or sandbox "
    "(gVisor, Docker without --cap-add SYS_ADMIN) the driver's profiling interface is not reachable: "
    "run on the host or a VM with the GPU passed through"
)
MIG = (
    "no counters: the GPU is a MIG instance and ncu reads no counters there; profile on a GPU "
    "with MIG disabled (nvidia-smi -mig 0) or on the whole GPU"
)
REMOTE = (
    "no counters: {host} is a GPU host over ssh and ncu runs on this machine only; run "
    "`workbench run --counters` on {host} itself"
)
NOT_RUN = "no counters: the run did not finish ({status}), so there is no launch to profile"


def not_cuda(backend: str, runtime: str) -> str:
    """A wgpu or cpu backend: Nsight Compute reads NVIDIA counters through CUDA launches only."""
    why = {
        "wgpu": "wgpu reaches the GPU through Vulkan/Metal/DX12, where Nsight Compute reads no counters",
        "cpu": "it runs on the host's cores, which have no GPU counters",
    }.get(runtime, f"its runtime is {runtime}")
    return f"no counters for {backend}: {why}; run a CUDA backend ({CUDA_BACKENDS_TEXT}) on a cuda device"


def from_output(text: str) -> str | None:
    """ncu's failure in its output → the one line above that explains it; None if none does."""
    if "ERR_NVGPUCTRPERM" in text:
        return NOT_PERMITTED
    if re.search(r"\bMIG\b", text):
        return MIG
    m = re.search(
        r"Failed to initialize the profiler[^\n]*|LibraryNotLoaded|Profiling is not supported[^\n]*", text
    )
    if m:
        return NO_PROFILER.format(detail=m.group(0).strip().rstrip("."))
    return None


def unavailable(cuda: dict | None, ncu_found: bool, wb_ncu: str | None = None) -> str | None:
    """The one line for a machine where no result can have counters, saying what would make it
    work (the Counters view shows it instead of a table); None when counters may be taken, or
    while the devices are not known yet. `cuda`: `list_devices()`'s "cuda" entry."""
    missing = []
    if cuda is not None and not (cuda.get("available") and cuda.get("devices")):
        reason = str(cuda.get("reason") or "no CUDA device was found").rstrip(".")
        missing.append(f"a CUDA device, and there is none here ({reason})")
    if not ncu_found:
        missing.append(
            f"Nsight Compute's ncu, and $WB_NCU names {wb_ncu}, which is not a file"
            if wb_ncu
            else "Nsight Compute's ncu, which is not on PATH (it comes with the CUDA toolkit; or set $WB_NCU to it)"
        )
    if not missing:
        return None
    return "No counters on this machine: they need " + "; and ".join(missing) + "."
