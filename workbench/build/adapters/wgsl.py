"""`wgsl`: the reference WGSL, validated with naga (as wgpu does at pipeline creation), then copied.

Validation runs in a persistent child process (`workbench.build.shader_check.Validator`); its errors become
diagnostics with file, line and column, so a typo in a `.wgsl` file fails the build where it is,
not the run. Where no wgpu adapter exists the shader is copied unvalidated (the log says so).
"""

from __future__ import annotations

import time
from importlib import metadata
from pathlib import Path

from workbench.build import shader_check
from workbench.build.adapters.base import Adapter, AdapterOutput, BuildRequest, copy_into
from workbench.build.shader_check import naga_diagnostics
from workbench.records import ToolchainInfo


class WgslAdapter(Adapter):
    name = "wgsl"
    kind = "wgsl"

    def detect(self) -> ToolchainInfo:
        # naga (inside wgpu-native) validates WGSL at build time and again at pipeline creation.
        try:
            version = f"wgpu-py {metadata.version('wgpu')}"
        except metadata.PackageNotFoundError:
            version = "copy only (wgpu is not installed)"
        return ToolchainInfo("wgsl", True, version, "", details={"compiler": "naga (wgpu), at build and run"})

    def skip_reason(self, project) -> str | None:
        if not any("wgsl" in k.reference for k in project.manifest.kernels):
            return "no [kernel.reference] wgsl file in workbench.toml"
        return None

    def build(self, req: BuildRequest) -> AdapterOutput:
        kernels, inputs = {}, []
        ok = True
        validated: set[str] = set()
        for k in req.project.manifest.kernels:
            if "wgsl" not in k.reference:
                continue
            rel = k.reference["wgsl"]
            src = req.project.root / rel
            inputs.append(src)  # naga reads the file itself: it is the whole input
            if rel not in validated:
                validated.add(rel)
                ok = validate(req, src, rel) and ok
            name = Path(rel).name
            if not (req.out_dir / name).exists():
                copy_into(src, req.out_dir)
                req.output(f"copied {rel}")
            kernels[k.name] = {"artifact": name, "entry": k.entry_for("wgsl"), "kind": "wgsl"}
        return AdapterOutput(ok, kernels, inputs=inputs)


def validate(req: BuildRequest, path: Path, rel: str, kind: str = "wgsl") -> bool:
    """naga-validate one shader (in the persistent validator child); False, with diagnostics,
    when it is invalid."""
    req.budget.check()
    start = time.perf_counter()
    answer = shader_check.validate(kind, path)
    state = answer["shader_check"]
    if state == "error":
        for diag in naga_diagnostics(answer.get("message", ""), rel, req.backend):
            req.diagnostic(diag)
        return False
    if state == "ok":
        req.output(f"naga: {rel} is valid ({(time.perf_counter() - start) * 1000:.0f} ms)")
    else:
        req.output(f"naga: {rel} not validated: {answer.get('reason', '')}")
    return True
