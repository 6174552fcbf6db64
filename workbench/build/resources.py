"""Resource reports: ptxas -v per PTX entry; SPIR-V entry points, spirv-val and spirv-dis."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from workbench import childproc, spirv
from workbench.build.diagnostics import parse_ptxas
from workbench.records import Diagnostic

_ENTRY = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.entry\s+([\w$.]+)", re.M)


def ptx_entries(ptx_text: str) -> list[str]:
    """Names of the `.entry` functions of a PTX module."""
    return _ENTRY.findall(ptx_text)


def ptxas_report(
    ptxas: str, ptx: Path, arch: str, backend: str = ""
) -> tuple[dict[str, dict[str, Any]], list[Diagnostic], str]:
    """Run `ptxas -arch=ARCH -v`: ({entry: resources}, diagnostics, output text)."""
    try:
        proc = childproc.capture([ptxas, f"-arch={arch}", "-v", ptx.name, "-o", "/dev/null"],
                                 cwd=ptx.parent, timeout_s=120)  # fmt: skip
    except (OSError, TimeoutError) as exc:
        return {}, [Diagnostic("warning", f"ptxas could not run: {exc}", backend=backend)], ""
    text = "\n".join(proc.stdout + proc.stderr).strip()
    diags = parse_ptxas(text, ptx.name, backend)
    if proc.returncode != 0 and not any(d.severity == "error" for d in diags):
        diags.append(Diagnostic("error", f"ptxas failed (exit {proc.returncode})", rendered=text))
    return parse_ptxas_verbose(text), diags, text


def parse_ptxas_verbose(text: str) -> dict[str, dict[str, Any]]:
    """`ptxas -v` info lines -> {entry: {registers, spills, spill_stores, ...}}."""
    report: dict[str, dict[str, Any]] = {}
    current: dict[str, Any] | None = None
    for line in text.splitlines():
        m = re.search(r"(?:Compiling entry function|Function properties for) '?([\w$.]+)'?", line)
        if m:
            current = report.setdefault(
                m[1],
                {"registers": None, "spills": 0, "spill_stores": 0, "spill_loads": 0,
                 "shared_bytes": 0, "stack_bytes": 0, "constant_bytes": 0},
            )  # fmt: skip
            continue
        if current is None:
            continue
        if m := re.search(r"(\d+) bytes stack frame", line):
            current["stack_bytes"] = int(m[1])
        if m := re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line):
            current["spill_stores"], current["spill_loads"] = int(m[1]), int(m[2])
            current["spills"] = int(m[1]) + int(m[2])
        if m := re.search(r"Used (\d+) registers", line):
            current["registers"] = int(m[1])
        if m := re.search(r"(\d+) bytes smem", line):
            current["shared_bytes"] = int(m[1])
        cmem = [int(x) for x in re.findall(r"(\d+) bytes cmem\[\d+\]", line)]
        if cmem:
            current["constant_bytes"] = sum(cmem)
    return report


# ----------------------------------------------------------------------------- SPIR-V


def spirv_target_env(target: str) -> str | None:
    """spirv-val's `--target-env` for a rust-gpu target (`spirv-unknown-vulkan1.2` -> `vulkan1.2`)."""
    env = target.removeprefix("spirv-unknown-")
    return env if env != target and re.fullmatch(r"(vulkan|spv|opengl)\d+\.\d+", env) else None


def spirv_report(
    spv: Path, spirv_val: str | None, spirv_dis: str | None, target_env: str | None = None
) -> dict[str, Any]:
    """spirv-val verdict (for `target_env`, the environment the module is built for, when given)
    and a .spvasm disassembly written next to the module."""
    report: dict[str, Any] = {"module": spv.name}
    try:
        report["entry_points"] = spirv.entry_points(spv.read_bytes())
    except (OSError, ValueError) as exc:
        report["entry_points"] = []
        report["error"] = str(exc)
    if spirv_val:
        try:
            env = ["--target-env", target_env] if target_env else []
            proc = childproc.capture([spirv_val, *env, spv.name], cwd=spv.parent, timeout_s=60)
            report["target_env"] = target_env
            report["valid"] = proc.returncode == 0
            report["spirv_val"] = "\n".join(proc.stdout + proc.stderr).strip() or "ok"
        except (OSError, TimeoutError) as exc:
            report["valid"], report["spirv_val"] = None, f"spirv-val could not run: {exc}"
    if spirv_dis:
        asm = spv.with_suffix(".spvasm")
        try:
            proc = childproc.capture([spirv_dis, spv.name, "-o", asm.name], cwd=spv.parent, timeout_s=60)
            if proc.returncode == 0:
                report["spvasm"] = asm.name
        except (OSError, TimeoutError):
            pass
    return report


def spirv_disassembly(spirv_dis: str | None, spv: Path) -> str | None:
    """spirv-dis's text of a module (OpName names, one instruction a line), or None."""
    if not spirv_dis or not spv.is_file():
        return None
    try:
        proc = childproc.capture([spirv_dis, str(spv), "-o", "-"], timeout_s=60)
    except (OSError, TimeoutError):
        return None
    return "\n".join(proc.stdout) if proc.returncode == 0 else None
