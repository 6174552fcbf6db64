"""`wgsl`: the reference WGSL, validated with naga (as wgpu does at pipeline creation), then copied.

Validation runs in a persistent child process (`workbench.build.shader_check.Validator`); its errors become
diagnostics with file, line and column, so a typo in a `.wgsl` file fails the build where it is,
not the run. Where no wgpu adapter exists the shader is copied unvalidated (the log says so).

Tunables reach WGSL as `override` constants: the copy's `override NAME ... = DEFAULT;` declarations
get the configuration's values as their defaults (so each configuration is its own artifact, and
`@workgroup_size(NAME)` is that configuration's workgroup), and the runtime passes the same values
as pipeline constants (`run/spec.py` `constants`).
"""

from __future__ import annotations

import importlib.util
import re
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from workbench.build import shader_check
from workbench.build.adapters.base import Adapter, AdapterOutput, BuildRequest, copy_into, names_in_text
from workbench.build.shader_check import naga_diagnostics
from workbench.records import ToolchainInfo

#: `override name: type = value;` (the type and the default are optional in WGSL).
_OVERRIDE = re.compile(
    r"(?P<head>(?:@id\(\s*\d+\s*\)\s*)?override\s+(?P<name>[A-Za-z_]\w*)\s*(?::\s*(?P<type>[A-Za-z_]\w*))?)"
    r"\s*(?:=\s*[^;]*)?;"
)


def wgsl_literal(value: Any, type_: str | None) -> str:
    """`value` spelled as a WGSL literal of the override's type (abstract when untyped)."""
    if type_ == "u32":
        return f"{int(value)}u"
    if type_ == "i32":
        return f"{int(value)}i"
    if type_ in ("f32", "f16"):
        return f"{float(value)!r}{'f' if type_ == 'f32' else 'h'}"
    if type_ == "bool":
        return "true" if value else "false"
    return repr(value)


def with_overrides(text: str, values: dict[str, Any]) -> tuple[str, set[str]]:
    """`text` with each `override` named in `values` defaulting to its value; the names found."""
    found: set[str] = set()

    def replace(match: re.Match) -> str:
        name = match["name"]
        if name not in values:
            return match.group(0)
        found.add(name)
        return f"{match['head']} = {wgsl_literal(values[name], match['type'])};"

    return _OVERRIDE.sub(replace, text), found


class WgslAdapter(Adapter):
    name = "wgsl"

    def detect(self) -> ToolchainInfo:
        # naga (inside wgpu-native) validates WGSL at build time and again at pipeline creation.
        try:
            version = f"wgpu-py {metadata.version('wgpu')}"
            spec = importlib.util.find_spec("wgpu")
            where = str(Path(spec.origin).parent) if spec and spec.origin else ""
        except (metadata.PackageNotFoundError, ImportError, ValueError):
            version, where = "copy only (wgpu is not installed)", ""
        return ToolchainInfo(
            "wgsl", True, version, where, details={"compiler": "naga (wgpu), at build and run"}
        )

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
                text, found = with_overrides(src.read_text(encoding="utf-8"), req.tunables)
                if found:
                    (req.out_dir / name).write_text(text, encoding="utf-8")
                    shown = ", ".join(f"{n}={req.tunables[n]}" for n in sorted(found))
                    req.output(f"copied {rel} with override {shown}")
                else:
                    copy_into(src, req.out_dir)
                    req.output(f"copied {rel}")
            kernels[k.name] = {"artifact": name, "entry": k.entry_for("wgsl"), "kind": self.kind}
        names = names_in_text(inputs, list(req.tunables), lambda name: rf"\boverride\s+{name}\b")
        req.report_unread(names, "`override {name}` declaration in the WGSL")
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
