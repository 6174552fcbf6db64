"""SPIR-V ↔ Rust lines: OpString / OpLine read into the PTX view's line map, and validation errors
(spirv-val's, naga's) reported at the Rust line behind the failing instruction.

cargo-gpu cannot be installed here; the modules are assembled with the real `spirv-as` in the
shape rust-gpu writes with `--spirv-metadata full` (`OpString "src/lib.rs"`, `OpName`s, `OpLine`
before the instructions of each Rust line) and built through the real rust-gpu prebuilt path.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.build.spirv_modules import STATEMENT, assemble, module_text, needs_tools, prebuilt_project
from workbench.build import build_project
from workbench.build.spirv_lines import SpirvLines
from workbench.project import Project


def errors_and_notes(result) -> tuple[list[dict], list[dict]]:
    diags = result.diagnostics
    return [d for d in diags if d["severity"] == "error"], [d for d in diags if d["severity"] == "note"]


@needs_tools
def test_a_spirv_val_error_lands_on_the_rust_line_with_the_instruction_named(example_copy, cache):
    root, line = prebuilt_project(example_copy)
    (result,) = build_project(Project.open(root), ["rust-gpu"], cache)
    assert result.status == "error"
    (error,), (note,) = errors_and_notes(result)
    assert (error["file"], error["line"], error["column"]) == ("src/lib.rs", line, 13)
    assert error["message"].startswith("spirv-val: Expected int scalar or vector type as Result Type")
    assert error["message"].endswith("%sum = OpIAdd %float %x %x")  # rendered with its OpNames
    # The SPIR-V place is kept: spirv-val's instruction index and the disassembly line it is on.
    index = int(re.search(r"instruction (\d+) \(disassembly line (\d+)\)", note["message"]).group(1))
    module = root / "spirv" / "saxpy.spv"  # a failed build keeps no artifact folder: disassemble it here
    disassembly = subprocess.run(
        ["spirv-dis", str(module)], capture_output=True, text=True
    ).stdout.splitlines()
    number = int(re.search(r"disassembly line (\d+)", note["message"]).group(1))
    assert "OpIAdd %float %x %x" in disassembly[number - 1]
    assert SpirvLines.parse("\n".join(disassembly)).text_line(index) == number


@needs_tools
def test_a_module_without_op_line_says_it_has_no_line_information(example_copy, cache):
    root, _ = prebuilt_project(example_copy, op_line=False)
    (result,) = build_project(Project.open(root), ["rust-gpu"], cache)
    assert result.status == "error"
    (error,), (note,) = errors_and_notes(result)
    assert error["file"] is None and error["line"] is None
    assert "%sum = OpIAdd %float %x %x" in error["message"]
    assert "no line information (no OpLine)" in note["message"]
    assert "--spirv-metadata full" in note["message"] and "SpirvMetadata::Full" in note["message"]
    assert result.resources["saxpy"]["line_info"] is False


@needs_tools
def test_naga_refusing_a_module_spirv_val_accepts_lands_on_the_rust_line(example_copy, cache):
    pytest.importorskip("wgpu")
    # Valid SPIR-V (spirv-val accepts it), but naga reads no OpLine among the globals, so wgpu would
    # refuse the module when the run creates it: the build says so, at that OpLine's Rust line.
    root, line = prebuilt_project(example_copy, float_iadd=False, global_line=True)
    (result,) = build_project(Project.open(root), ["rust-gpu"], cache)
    errors, notes = errors_and_notes(result)
    if not errors and "not validated" in result.log:
        pytest.skip("no wgpu adapter to validate with")
    assert result.status == "error"
    (error,) = errors
    assert (error["file"], error["line"]) == ("src/lib.rs", line)
    assert "unsupported instruction Line at Type" in error["message"]
    assert re.search(rf": OpLine %\w+ {line} 1$", error["message"]), error["message"]  # the instruction


@needs_tools
def test_a_valid_module_with_lines_builds_and_its_map_links_op_line_to_rust(example_copy, cache):
    root, line = prebuilt_project(example_copy, float_iadd=False)
    (result,) = build_project(Project.open(root), ["rust-gpu"], cache)
    assert result.status == "ok", result.diagnostics
    assert result.resources["saxpy"]["line_info"] is True
    text = (Path(result.artifact_dir) / "saxpy.spvasm").read_text()
    lines = SpirvLines.parse(text)
    numbered = text.splitlines()
    fadd = next(i for i, x in enumerate(numbered, 1) if "OpFAdd" in x)
    load = next(i for i, x in enumerate(numbered, 1) if "OpLoad %v3uint" in x or "OpLoad %v3" in x)
    store = next(i for i, x in enumerate(numbered, 1) if "OpStore" in x)
    assert lines.source_for(fadd) == ("src/lib.rs", line)
    assert lines.source_for(load) == ("src/lib.rs", line)
    assert lines.source_for(store) is None  # after OpNoLine
    hits = lines.ptx_lines_for(root / "src" / "lib.rs", line)  # the PTX view's call
    assert fadd in hits and load in hits and store not in hits
    assert lines.column_of[fadd] == 13
    assert lines.source_lines(root / "src" / "lib.rs") == {line}


@needs_tools
def test_debug_info_100_debug_line_is_read_into_the_same_map(tmp_path):
    text = (
        'OpCapability Shader\nOpExtension "SPV_KHR_non_semantic_info"\n'
        '%ds = OpExtInstImport "NonSemantic.Shader.DebugInfo.100"\nOpMemoryModel Logical GLSL450\n'
        'OpEntryPoint GLCompute %main "main_cs"\nOpExecutionMode %main LocalSize 64 1 1\n'
        '%file = OpString "src/lib.rs"\n%void = OpTypeVoid\n%uint = OpTypeInt 32 0\n'
        "%uint_12 = OpConstant %uint 12\n%uint_5 = OpConstant %uint 5\n%fn = OpTypeFunction %void\n"
        "%src = OpExtInst %void %ds DebugSource %file\n%main = OpFunction %void None %fn\n%entry = OpLabel\n"
        "%s = OpExtInst %void %ds DebugLine %src %uint_12 %uint_12 %uint_5 %uint_5\n"
        "%a = OpIAdd %uint %uint_5 %uint_5\n%c = OpExtInst %void %ds DebugNoLine\n"
        "%b = OpIAdd %uint %a %uint_5\nOpReturn\nOpFunctionEnd\n"
    )
    module = assemble(text, tmp_path / "dbg.spv")
    dis = subprocess.run(["spirv-dis", str(module)], capture_output=True, text=True, check=True).stdout
    lines = SpirvLines.parse(dis)
    numbered = dis.splitlines()
    first = next(i for i, x in enumerate(numbered, 1) if "OpIAdd %uint %uint_5 %uint_5" in x)
    second = next(i for i, x in enumerate(numbered, 1) if "OpIAdd" in x and i != first)
    assert lines.source_for(first) == ("src/lib.rs", 12)
    assert lines.source_for(second) is None


@needs_tools
def test_rust_gpus_own_spirv_val_failure_at_error_0_0_lands_on_the_rust_line(example_copy, cache, cargo_gpu):
    # rust-gpu#323: its linker's validator gives no position ("error:0:0 - …"); the module it names
    # (kept on disk) is disassembled and the instruction found there, at its OpLine's Rust line.
    root = example_copy("saxpy")
    line = next(
        i for i, x in enumerate((root / "src" / "lib.rs").read_text().splitlines(), 1) if STATEMENT in x
    )
    assemble(module_text(line), root / "stand-in.spv")
    (result,) = build_project(Project.open(root), ["rust-gpu"], cache)
    assert result.status == "error"
    assert "error: error:0:0 - Expected int scalar" in result.log  # what cargo-gpu printed
    (error,), (note,) = errors_and_notes(result)
    assert (error["file"], error["line"], error["column"]) == ("src/lib.rs", line, 13)
    assert error["message"] == (
        "spirv-val: Expected int scalar or vector type as Result Type: IAdd: %sum = OpIAdd %float %x %x"
    )
    assert note["message"].startswith("SPIR-V saxpy.spv: instruction ")
    assert "target/spirv-builder" in error["rendered"]  # the module rust-gpu kept
