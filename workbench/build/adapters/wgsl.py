"""`wgsl`: the reference WGSL, validated with naga (as wgpu does at pipeline creation), then copied.

Validation runs in a child process (`workbench.build.shader_check`); its errors become
diagnostics with file, line and column, so a typo in a `.wgsl` file fails the build where it is,
not the run. Where no wgpu adapter exists the shader is copied unvalidated (the log says so).
"""

from __future__ import annotations

import os
import tempfile
from importlib import metadata
from pathlib import Path

from workbench.build.adapters.base import Adapter, AdapterOutput, BuildRequest, copy_into
from workbench.build.shader_check import child_command, naga_diagnostics, parse_child_output
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
        kernels = {}
        ok = True
        validated: set[str] = set()
        for k in req.project.manifest.kernels:
            if "wgsl" not in k.reference:
                continue
            rel = k.reference["wgsl"]
            src = req.project.root / rel
            if rel not in validated:
                validated.add(rel)
                ok = validate(req, src, rel) and ok
            name = Path(rel).name
            if not (req.out_dir / name).exists():
                copy_into(src, req.out_dir)
                req.output(f"copied {rel}")
            kernels[k.name] = {"artifact": name, "entry": k.entry_for("wgsl"), "kind": "wgsl"}
        return AdapterOutput(ok, kernels)


def validate(req: BuildRequest, path: Path, rel: str, kind: str = "wgsl") -> bool:
    """naga-validate one shader in a child process; False (with diagnostics) when it is invalid."""
    answers: list[dict] = []

    def on_stdout(line: str) -> bool:
        answer = parse_child_output(line)
        if answer is not None:
            answers.append(answer)
        return answer is not None

    proc = req.run(child_command(kind, path), cwd=req.project.root, env=_child_env(), on_stdout=on_stdout)
    if not answers and proc.returncode != 0:
        # wgpu-native aborts on some inputs instead of raising: that shader is not valid either.
        message = f"the naga validator stopped (exit {proc.returncode}) on {rel}; see the build log"
        answers.append({"shader_check": "error", "message": message})
    answer = answers[-1] if answers else {"shader_check": "skipped", "reason": "the validator gave no answer"}
    state = answer["shader_check"]
    if state == "error":
        for diag in naga_diagnostics(answer.get("message", ""), rel, req.backend):
            req.diagnostic(diag)
        return False
    if state == "ok":
        req.output(f"naga: {rel} is valid")
    else:
        req.output(f"naga: {rel} not validated: {answer.get('reason', '')}")
    return True


def _child_env() -> dict[str, str]:
    """The environment, with a private XDG_RUNTIME_DIR when there is none (Mesa complains into
    the build log otherwise)."""
    env = dict(os.environ)
    if not os.path.isdir(env.get("XDG_RUNTIME_DIR", "")):
        private = Path(tempfile.gettempdir()) / f"wb-xdg-{os.getuid()}"
        private.mkdir(mode=0o700, exist_ok=True)
        env["XDG_RUNTIME_DIR"] = str(private)
    return env
