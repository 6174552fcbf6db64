"""`rust-gpu`: cargo-gpu -> SPIR-V + manifest.json, or a prebuilt folder of that output.

cargo-gpu cannot be installed on the project's CI machines; this adapter follows its documented
command line (`cargo gpu build --shader-crate DIR -o OUT`) and output (OUT/*.spv plus
OUT/manifest.json, an array of {source_path, entry_point, wgsl_entry_point}).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from workbench.build.adapters.base import Adapter, AdapterOutput, BuildRequest, copy_into, version_of, which
from workbench.build.adapters.wgsl import validate
from workbench.build.diagnostics import error, parse_rustc_text
from workbench.build.resources import spirv_report
from workbench.records import ToolchainInfo
from workbench.spirv import entry_points as spirv_entry_points

HINT = "cargo install --git https://github.com/Rust-GPU/cargo-gpu cargo-gpu && cargo gpu install"
DEFAULT_TARGET = "spirv-unknown-vulkan1.2"


def prebuilt_dir(project) -> Path | None:
    """`[backends.rust-gpu] prebuilt = "DIR"` (relative to the project, or absolute)."""
    value = project.manifest.backend_settings("rust-gpu").get("prebuilt")
    if not value:
        return None
    path = Path(str(value)).expanduser()
    return path if path.is_absolute() else (project.root / path)


class RustGpuAdapter(Adapter):
    name = "rust-gpu"
    kind = "spirv"

    def detect(self) -> ToolchainInfo:
        cargo_gpu = which("WB_CARGO_GPU", "cargo-gpu", os.path.expanduser("~/.cargo/bin/cargo-gpu"))
        cargo = which(None, "cargo", os.path.expanduser("~/.cargo/bin/cargo"))
        if not cargo_gpu or not cargo:
            return ToolchainInfo("rust-gpu", False, hint=HINT, details={"needs": "cargo-gpu on PATH"})
        env = {**os.environ, "PATH": os.path.dirname(cargo_gpu) + os.pathsep + os.environ.get("PATH", "")}
        version = version_of([cargo, "gpu", "--version"], env=env) or "cargo-gpu"
        return ToolchainInfo("rust-gpu", True, version, cargo_gpu, details={"cargo": cargo})

    def usable(self, project, toolchain) -> bool:
        return toolchain.found or prebuilt_dir(project) is not None

    def resolve_target(self, target: str | None) -> str:
        return target if target and target.startswith("spirv-") else DEFAULT_TARGET

    def flags(self, project, target, tunables, toolchain) -> list[str]:
        if prebuilt_dir(project) is not None:
            return ["--prebuilt"]
        return ["--target", target]

    def key_inputs(self, project) -> list[Path]:
        folder = prebuilt_dir(project)
        if folder is None or not folder.is_dir():
            return []
        return sorted(p for p in folder.iterdir() if p.suffix in (".spv", ".json"))

    def build(self, req: BuildRequest) -> AdapterOutput:
        folder = prebuilt_dir(req.project)
        if folder is not None:
            if not (folder / "manifest.json").is_file() and not list(folder.glob("*.spv")):
                req.diagnostic(error(f"[backends.rust-gpu] prebuilt: {folder} holds no manifest.json "
                                     "and no .spv files", self.name))  # fmt: skip
                return AdapterOutput(False)
            req.output(f"prebuilt SPIR-V from {folder}")
            return collect_output(req, folder)
        return self._cargo_gpu(req)

    def _cargo_gpu(self, req: BuildRequest) -> AdapterOutput:
        tc = req.toolchain
        out = req.target_dir / "out"
        out.mkdir(parents=True, exist_ok=True)
        for old in out.iterdir():  # never pick up a previous build's module
            if old.is_file():
                old.unlink()
        crate = req.project.manifest.crate_dir
        env = dict(os.environ)
        env["PATH"] = os.path.dirname(tc.path) + os.pathsep + env.get("PATH", "")
        env.update(req.tunable_env())
        cmd = [tc.details.get("cargo", "cargo"), "gpu", "build", "--shader-crate", str(crate),
               "-o", str(out), *req.flags, "--auto-install-rust-toolchain"]  # fmt: skip
        result = req.run(cmd, cwd=crate, env=env)
        text = "\n".join(result.stderr + result.stdout)
        # cargo-gpu prints rendered rustc diagnostics only (json-render-diagnostics).
        for diag in parse_rustc_text(text, crate, req.project.root, self.name):
            req.diagnostic(diag)
        if result.returncode != 0 or "Build failed!" in text:
            return AdapterOutput(False)
        return collect_output(req, out)


def read_manifest(folder: Path) -> list[dict[str, Any]]:
    path = folder / "manifest.json"
    if not path.is_file():
        return []
    try:
        data = json.loads(path.read_text())
    except ValueError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON array of {{source_path, entry_point, wgsl_entry_point}}")
    return [e for e in data if isinstance(e, dict)]


def map_entries(folder: Path, entries: list[str]) -> dict[str, dict[str, Any]]:
    """entry point -> {module, rule}: manifest.json first, else the module that declares it."""
    manifest = read_manifest(folder)
    declared = declared_entries(folder)
    found: dict[str, dict[str, Any]] = {}
    for entry in entries:
        for record in manifest:
            if entry in (record.get("entry_point"), record.get("wgsl_entry_point")):
                source = Path(str(record.get("source_path", "")))
                source = source if source.is_absolute() else folder / source
                if source.is_file():
                    found[entry] = {"module": source.name, "rule": "manifest.json", "path": source}
                break
        if entry in found:
            continue
        # The manifest's source_path may be missing (recorded elsewhere): look inside the modules.
        # rust-gpu keeps `::` in OpEntryPoint names; the wgsl form drops them.
        plain = entry.replace("::", "")
        for name, names in declared.items():
            if entry in names or plain in (n.replace("::", "") for n in names):
                found[entry] = {"module": name, "rule": "OpEntryPoint", "path": folder / name}
                break
    return found


def collect_output(req: BuildRequest, folder: Path) -> AdapterOutput:
    """Copy cargo-gpu output into the artifact folder and map each kernel to its module."""
    kernels = req.project.manifest.kernels
    try:
        mapping = map_entries(folder, [k.entry_for("rust-gpu") for k in kernels])
    except ValueError as exc:
        req.diagnostic(error(str(exc), "rust-gpu"))
        return AdapterOutput(False)
    missing = [k for k in kernels if k.entry_for("rust-gpu") not in mapping]
    present = sorted({n for names in declared_entries(folder).values() for n in names}) if missing else []
    for k in missing:
        req.diagnostic(error(
            f"kernel {k.name!r}: entry point {k.entry_for('rust-gpu')!r} is in no SPIR-V module of "
            f"{folder} (entry points there: {', '.join(present) or 'none'})", "rust-gpu"))  # fmt: skip
    if missing:
        return AdapterOutput(False)
    if (folder / "manifest.json").is_file():
        copy_into(folder / "manifest.json", req.out_dir)
    spirv_val, spirv_dis = which("WB_SPIRV_VAL", "spirv-val"), which("WB_SPIRV_DIS", "spirv-dis")
    record, resources, rules = {}, {}, {}
    for k in kernels:
        hit = mapping[k.entry_for("rust-gpu")]
        name = hit["module"]
        if not (req.out_dir / name).exists():
            copy_into(hit["path"], req.out_dir)
        record[k.name] = {"artifact": name, "entry": k.entry_for("rust-gpu"), "kind": "spirv"}
        rules[k.name] = hit["rule"]
        report = spirv_report(req.out_dir / name, spirv_val, spirv_dis)
        resources[k.name] = {"entry": k.entry_for("rust-gpu"), **report}
        if report.get("valid") is False:
            req.diagnostic(error(f"spirv-val rejects {name}: {report['spirv_val']}", "rust-gpu"))
        elif not spirv_val and not validate(req, req.out_dir / name, name, "spirv"):
            resources[k.name]["valid"] = False  # no spirv-val here: naga's validation, as wgpu would do it
    ok = all(r.get("valid") is not False for r in resources.values())
    return AdapterOutput(ok, record, resources, {"entry_rule": rules, "source": str(folder)})


def declared_entries(folder: Path) -> dict[str, list[str]]:
    """module file name -> the entry points it declares (none when it cannot be read)."""
    declared: dict[str, list[str]] = {}
    for spv in sorted(folder.glob("*.spv")):
        try:
            declared[spv.name] = [e["name"] for e in spirv_entry_points(spv.read_bytes())]
        except (OSError, ValueError):
            declared[spv.name] = []
    return declared
