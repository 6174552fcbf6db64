"""`wgsl`: nothing to compile; the reference WGSL is copied (naga checks it at pipeline creation).

Tunables reach WGSL as `override` constants: the copy's `override NAME ... = DEFAULT;` declarations
get the configuration's values as their defaults (so each configuration is its own artifact, and
`@workgroup_size(NAME)` is that configuration's workgroup), and the runtime passes the same values
as pipeline constants (`run/spec.py` `constants`)."""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path
from typing import Any

from workbench.build.adapters.base import Adapter, AdapterOutput, BuildRequest, copy_into, names_in_text
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
                text, found = with_overrides(src.read_text(encoding="utf-8"), req.tunables)
                if found:
                    (req.out_dir / name).write_text(text, encoding="utf-8")
                    shown = ", ".join(f"{n}={req.tunables[n]}" for n in sorted(found))
                    req.output(f"copied {k.reference['wgsl']} with override {shown}")
                else:
                    copy_into(src, req.out_dir)
                    req.output(f"copied {k.reference['wgsl']}")
            kernels[k.name] = {"artifact": name, "entry": k.entry_for("wgsl"), "kind": "wgsl"}
        names = names_in_text(inputs, list(req.tunables), lambda name: rf"\boverride\s+{name}\b")
        req.report_unread(names, "`override {name}` declaration in the WGSL")
        return AdapterOutput(True, kernels, inputs=inputs)
