"""`cpu-sim`: the kernel body on the CPU with GPU semantics and checks. The same host cargo build as
`cpu`, with the kernel API crate's `sim` feature: every access goes through the simulator's race,
bounds and divergence checks (docs/cpu-sim.md). Only crates written on the kernel API
(`gpu_kernel`) have a body to simulate; others are skipped with the reason."""

from __future__ import annotations

from workbench.build.adapters.cpu import CpuAdapter
from workbench.kernel_api import CRATE_NAME, SIM_FEATURE, uses_kernel_api
from workbench.records import ToolchainInfo


class CpuSimAdapter(CpuAdapter):
    name = "cpu-sim"
    loop_flags = ()  # its checked loop measured no faster with them (cpu.LOOP_FLAGS)

    def detect(self) -> ToolchainInfo:
        info = super().detect()
        info.backend = self.name
        return info

    def skip_reason(self, project) -> str | None:
        if uses_kernel_api(project.manifest.crate_dir):
            return None
        return (
            f"the crate does not use the kernel API ({CRATE_NAME}): cpu-sim runs kernel bodies written on it "
            "(docs/cpu-sim.md)"
        )

    def flags(self, project, target, tunables, toolchain) -> list[str]:
        return [*super().flags(project, target, tunables, toolchain), "--features", SIM_FEATURE]

    def kernel_record(self, kernel, artifact: str) -> dict:
        record = super().kernel_record(kernel, artifact)
        # Its own entry name if the manifest gives one, else the cpu backend's: the same function.
        record["entry"] = kernel.entry.get(self.name) or kernel.entry_for("cpu")
        record["checks"] = True
        return record
