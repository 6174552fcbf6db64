"""`rust-gpu`: cargo-gpu -> SPIR-V + manifest.json, or a prebuilt folder of that output.

cargo-gpu cannot be installed on the project's CI machines; this adapter follows the contract of
its source (Rust-GPU/cargo-gpu, `crates/cargo-gpu/src/build.rs` and `linkage.rs`):

- command line: `cargo gpu build --shader-crate DIR --output-dir OUT --target spirv-...
  --auto-install-rust-toolchain` (clap flags of `Build` = `Install` + `BuildArgs` + the
  flattened `SpirvBuilder`);
- output: each module copied into OUT under its own file name, and OUT/manifest.json: a JSON
  array, sorted, of {source_path, entry_point, wgsl_entry_point}, where `source_path` is the
  copied module's path *relative to the (canonicalized) shader crate* with `/` separators
  (`../../out/saxpy.spv` when OUT is outside the crate; `main_cs.spv` when OUT is the crate),
  absolute only when no relative path exists; `wgsl_entry_point` is the entry without `::`.

`map_entries` resolves a `source_path` the same way: against the shader crate; since cargo-gpu
writes the manifest into OUT beside the modules, a manifest moved with its modules (a prebuilt
folder copied from elsewhere) is resolved by file name in its own folder.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from workbench.backends import backend_row
from workbench.build import depinfo, shader_check
from workbench.build.adapters import host_rust
from workbench.build.adapters.base import Adapter, AdapterOutput, BuildRequest, copy_into, version_of, which
from workbench.build.diagnostics import error, parse_rustc_text
from workbench.build.install_hints import TOOLCHAIN_HINTS
from workbench.build.resources import spirv_disassembly, spirv_report, spirv_target_env
from workbench.build.spirv_diagnostics import (
    RustPaths,
    link_diagnostics,
    link_validation_errors,
    naga_spirv_diagnostics,
    spirv_val_diagnostics,
)
from workbench.build.spirv_lines import SpirvLines
from workbench.records import ToolchainInfo
from workbench.spirv import entry_points as spirv_entry_points

HINT = TOOLCHAIN_HINTS["rust-gpu"]  # README.md's words (install_hints)
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
    builds_crate = True

    def prepare(self, project, say):
        # Prebuilt SPIR-V is copied, not built: the crate is not needed.
        return None if prebuilt_dir(project) is not None else super().prepare(project, say)

    def detect(self) -> ToolchainInfo:
        cargo_gpu = which("WB_CARGO_GPU", "cargo-gpu", os.path.expanduser("~/.cargo/bin/cargo-gpu"))
        cargo = host_rust.cargo()  # cargo-gpu is reached as `cargo gpu` through the same cargo
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
            output = collect_output(req, folder)
            output.inputs = self.key_inputs(req.project)
            return output
        return self._cargo_gpu(req)

    def _cargo_gpu(self, req: BuildRequest) -> AdapterOutput:
        tc = req.toolchain
        # This build's own output folder: a concurrent build (another project, or a cancelled one
        # still winding down) never writes here, and no previous build's module can be in it.
        out = (req.work_dir or req.out_dir) / "cargo-gpu-out"
        out.mkdir(parents=True)
        crate = req.project.manifest.crate_dir
        env = dict(os.environ)
        env["PATH"] = os.path.dirname(tc.path) + os.pathsep + env.get("PATH", "")
        env.update(req.tunable_env())
        started = time.time()
        cmd = [tc.details.get("cargo", "cargo"), "gpu", "build", "--shader-crate", str(crate),
               "--output-dir", str(out), *req.flags, "--auto-install-rust-toolchain"]  # fmt: skip
        result = req.run(cmd, cwd=crate, env=env)
        text = "\n".join(result.stderr + result.stdout)
        # cargo-gpu prints rendered rustc diagnostics only (json-render-diagnostics); rust-gpu's
        # own spirv-val failures among them are placed at the Rust line of their instruction.
        mapped = link_errors(req, text)
        for diag in parse_rustc_text(text, crate, req.project.root, self.name):
            if diag.file is not None or diag.message not in mapped:
                req.diagnostic(diag)
        if result.returncode != 0 or "Build failed!" in text:
            return AdapterOutput(False)
        output = collect_output(req, out)
        output.inputs = spirv_builder_inputs(crate, started)
        return output


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


def resolve_source_path(source_path: str, shader_crate: Path, folder: Path) -> Path | None:
    """The module a manifest record names, found as cargo-gpu wrote it: an absolute path as is,
    a relative one against the shader crate; else (a moved manifest) by name in `folder`."""
    if not source_path:
        return None
    path = Path(source_path)
    candidates = [path] if path.is_absolute() else [shader_crate / path]
    candidates.append(folder / path.name)
    return next((c for c in candidates if c.is_file()), None)


def map_entries(
    folder: Path, entries: list[str], shader_crate: Path | None = None
) -> dict[str, dict[str, Any]]:
    """entry point -> {module, rule}: manifest.json first, else the module that declares it."""
    manifest = read_manifest(folder)
    declared = declared_entries(folder)
    found: dict[str, dict[str, Any]] = {}
    for entry in entries:
        for record in manifest:
            if entry in (record.get("entry_point"), record.get("wgsl_entry_point")):
                source = resolve_source_path(
                    str(record.get("source_path", "")), shader_crate or folder, folder
                )
                if source is not None:
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
        mapping = map_entries(folder, [k.entry_for("rust-gpu") for k in kernels],
                              req.project.manifest.crate_dir.resolve())  # fmt: skip
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
    record, resources, rules, checked = {}, {}, {}, {}
    kind = backend_row(req.backend).artifact_kind
    for k in kernels:
        hit = mapping[k.entry_for("rust-gpu")]
        name = hit["module"]
        if not (req.out_dir / name).exists():
            copy_into(hit["path"], req.out_dir)
        record[k.name] = {"artifact": name, "entry": k.entry_for("rust-gpu"), "kind": kind}
        rules[k.name] = hit["rule"]
        if name not in checked:
            report = spirv_report(req.out_dir / name, spirv_val, spirv_dis, spirv_target_env(req.target))
            if not validate_module(req, req.out_dir / name, report):
                report["valid"] = False
            checked[name] = report
        resources[k.name] = {"entry": k.entry_for("rust-gpu"), **checked[name]}
    ok = all(r.get("valid") is not False for r in resources.values())
    return AdapterOutput(ok, record, resources, {"entry_rule": rules, "source": str(folder)})


def link_errors(req: BuildRequest, text: str) -> set[str]:
    """rust-gpu's linker's spirv-val failures in `text` as diagnostics at Rust lines (the module
    it names, written despite the failure, disassembled); the rustc messages they replace."""
    replaced: set[str] = set()
    paths = RustPaths(req.project.manifest.crate_dir, req.project.root)
    spirv_dis = which("WB_SPIRV_DIS", "spirv-dis")
    for found in link_validation_errors(text):
        asm = spirv_disassembly(spirv_dis, Path(found["module"]))
        lines = SpirvLines.parse(asm) if asm is not None else None
        for diag in link_diagnostics(found, lines, req.backend, paths):
            req.diagnostic(diag)
        replaced.add(found["head"])
    return replaced


def validate_module(req: BuildRequest, path: Path, report: dict[str, Any]) -> bool:
    """spirv-val's verdict (in `report`), then naga's on the device the run will use (wgpu does the
    same at pipeline creation); each refusal a diagnostic at the Rust line of the instruction."""
    lines = None
    if report.get("spvasm"):
        try:
            lines = SpirvLines.parse((path.parent / report["spvasm"]).read_text(errors="replace"))
        except OSError:
            pass
    report["line_info"] = bool(lines and lines.has_lines)
    paths = RustPaths(req.project.manifest.crate_dir, req.project.root)
    if report.get("valid") is False:
        for diag in spirv_val_diagnostics(report["spirv_val"], lines, path.name, req.backend, paths):
            req.diagnostic(diag)
        return False
    req.budget.check()
    answer = shader_check.validate("spirv", path)
    if answer["shader_check"] == "error":
        for diag in naga_spirv_diagnostics(answer.get("message", ""), lines, path.name, req.backend, paths):
            req.diagnostic(diag)
        return False
    state = "is valid" if answer["shader_check"] == "ok" else f"not validated: {answer.get('reason', '')}"
    req.output(f"naga: {path.name} {state}")
    return True


def spirv_builder_inputs(crate: Path, since: float) -> list[Path]:
    """The files rustc read for the shader crate, from the dep-info that spirv-builder's cargo run
    left in `<crate>/target/spirv-builder` during this build (none found: the sources key it)."""
    files: list[Path] = []
    for dep_file in sorted((crate / "target" / "spirv-builder").glob("*/release/*.d")):
        try:
            if dep_file.stat().st_mtime >= since:
                files.extend(depinfo.read(dep_file))
        except OSError:
            continue
    return list(dict.fromkeys(files))


def declared_entries(folder: Path) -> dict[str, list[str]]:
    """module file name -> the entry points it declares (none when it cannot be read)."""
    declared: dict[str, list[str]] = {}
    for spv in sorted(folder.glob("*.spv")):
        try:
            declared[spv.name] = [e["name"] for e in spirv_entry_points(spv.read_bytes())]
        except (OSError, ValueError):
            declared[spv.name] = []
    return declared
