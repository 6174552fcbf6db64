"""`wgsl`: nothing to compile; the reference WGSL is copied (naga checks it at pipeline creation)."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

from workbench.build.adapters.base import Adapter, AdapterOutput, BuildRequest, copy_into
from workbench.records import ToolchainInfo


class WgslAdapter(Adapter):
    name = "wgsl"
    kind = "wgsl"

    def detect(self) -> ToolchainInfo:
        # naga (inside wgpu-native) compiles WGSL when the run service creates the pipeline.
        try:
            version = f"wgpu-py {metadata.version('wgpu')}"
        except metadata.PackageNotFoundError:
            version = "copy only (wgpu is not installed)"
        return ToolchainInfo("wgsl", True, version, "", details={"compiler": "naga, at pipeline creation"})

    def skip_reason(self, project) -> str | None:
        if not any("wgsl" in k.reference for k in project.manifest.kernels):
            return "no [kernel.reference] wgsl file in workbench.toml"
        return None

    def build(self, req: BuildRequest) -> AdapterOutput:
        kernels, inputs = {}, []
        for k in req.project.manifest.kernels:
            if "wgsl" not in k.reference:
                continue
            src = req.project.root / k.reference["wgsl"]
            inputs.append(src)  # naga reads the file itself: it is the whole input
            name = Path(k.reference["wgsl"]).name
            if not (req.out_dir / name).exists():
                copy_into(src, req.out_dir)
                req.output(f"copied {k.reference['wgsl']}")
            kernels[k.name] = {"artifact": name, "entry": k.entry_for("wgsl"), "kind": "wgsl"}
        return AdapterOutput(True, kernels, inputs=inputs)
