"""Start-up hook for the workbench's worker processes in `benchmarks/wgsl_variants.py` only.

Python imports `sitecustomize` at start-up from the first folder on sys.path that has one; the
benchmark puts this folder on PYTHONPATH, with WB_WGSL_RUNTIME_CHECKS set, for the workers of one
RunService and nothing else. Every shader module wgpu-py then creates goes through wgpu-native's
`wgpuDeviceCreateShaderModuleTrusted(device, descriptor, runtimeChecks)` instead of
`wgpuDeviceCreateShaderModule` (which keeps all of wgpu's checks): without the BoundsChecks bit (0x1)
naga emits no index clamps, without ForceLoopBounding (0x2) no loop counters
(benchmarks/results/wgsl-spirv/README.md). Each module created appends a line to
$WB_WGSL_RUNTIME_CHECKS_LOG, so the benchmark can tell that the hook took effect.
"""

import os


def _install() -> None:
    value = os.environ.get("WB_WGSL_RUNTIME_CHECKS")
    if value is None:
        return
    checks = int(value, 0)
    log = os.environ.get("WB_WGSL_RUNTIME_CHECKS_LOG")
    try:
        from wgpu.backends.wgpu_native import _api
        from wgpu.backends.wgpu_native._ffi import lib
    except Exception:  # no wgpu here: nothing to change
        return

    def create(device, descriptor):
        module = lib.wgpuDeviceCreateShaderModuleTrusted(device, descriptor, checks)
        if log:
            with open(log, "a", encoding="utf-8") as f:
                f.write(f"{os.getpid()} runtime checks {checks:#x}\n")
        return module

    _api.libf.wgpuDeviceCreateShaderModule = create


_install()
