"""SPIR-V modules shaped like rust-gpu's `--spirv-metadata full` output, assembled with the real
`spirv-as`, and the saxpy example set up to build them through the rust-gpu prebuilt path (cargo-gpu
cannot be installed here). Used by tests/build/test_spirv_lines.py and tests/ui/test_spirv_view.py.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

needs_tools = pytest.mark.skipif(
    not (shutil.which("spirv-as") and shutil.which("spirv-val") and shutil.which("spirv-dis")),
    reason="spirv-tools (spirv-as, spirv-val, spirv-dis) are not installed",
)
#: The Rust statement of the saxpy example the modules' OpLines point at.
STATEMENT = "y[i] = a * x[i] + y[i];"


def module_text(
    line: int, *, op_line: bool = True, float_iadd: bool = True, global_line: bool = False
) -> str:
    """A compute module shaped like rust-gpu's `--spirv-metadata full` output: y[i] = y[i] * 2
    (or, with `float_iadd`, an OpIAdd on floats, which spirv-val rejects) at src/lib.rs:`line`."""
    at = (lambda col: f"               OpLine %file {line} {col}\n") if op_line else (lambda col: "")
    add = "OpIAdd" if float_iadd else "OpFAdd"
    return (
        "               OpCapability Shader\n"
        "               OpMemoryModel Logical GLSL450\n"
        '               OpEntryPoint GLCompute %main "main_cs" %gid %y\n'
        "               OpExecutionMode %main LocalSize 64 1 1\n"
        '       %file = OpString "src/lib.rs"\n'
        '               OpName %main "main_cs"\n'
        '               OpName %y "y"\n'
        '               OpName %sum "sum"\n'
        '               OpName %x "x"\n'
        "               OpDecorate %gid BuiltIn GlobalInvocationId\n"
        "               OpDecorate %y DescriptorSet 0\n"
        "               OpDecorate %y Binding 2\n"
        "               OpDecorate %arr ArrayStride 4\n"
        "               OpMemberDecorate %blk 0 Offset 0\n"
        "               OpDecorate %blk Block\n"
        "       %void = OpTypeVoid\n"
        "       %uint = OpTypeInt 32 0\n"
        "         %v3 = OpTypeVector %uint 3\n"
        "     %ptr_in = OpTypePointer Input %v3\n"
        "        %gid = OpVariable %ptr_in Input\n"
        "      %float = OpTypeFloat 32\n"
        "        %arr = OpTypeRuntimeArray %float\n"
        "        %blk = OpTypeStruct %arr\n"
        "     %ptr_sb = OpTypePointer StorageBuffer %blk\n"
        "      %ptr_f = OpTypePointer StorageBuffer %float\n"
        + (f"               OpLine %file {line} 1\n" if global_line else "")
        + "          %y = OpVariable %ptr_sb StorageBuffer\n"
        "         %fn = OpTypeFunction %void\n"
        "     %uint_0 = OpConstant %uint 0\n"
        "       %main = OpFunction %void None %fn\n"
        "      %entry = OpLabel\n" + at(9) + "          %g = OpLoad %v3 %gid\n"
        "          %i = OpCompositeExtract %uint %g 0\n"
        "          %p = OpAccessChain %ptr_f %y %uint_0 %i\n"
        "          %x = OpLoad %float %p\n" + at(13) + f"        %sum = {add} %float %x %x\n"
        "               OpNoLine\n"
        "               OpStore %p %sum\n"
        "               OpReturn\n"
        "               OpFunctionEnd\n"
    )


def assemble(text: str, out: Path) -> Path:
    source = out.with_suffix(".spvasm")
    source.write_text(text)
    subprocess.run(["spirv-as", "--target-env", "vulkan1.2", str(source), "-o", str(out)], check=True)
    source.unlink()
    return out


def statement_line(root: Path) -> int:
    lines = (root / "src" / "lib.rs").read_text().splitlines()
    return next(i for i, text in enumerate(lines, 1) if STATEMENT in text)


def prebuilt_project(example_copy, **shape) -> tuple[Path, int]:
    """The saxpy example built from a prebuilt folder holding one assembled module."""
    root = example_copy("saxpy")
    manifest = root / "workbench.toml"
    text, count = re.subn(r'(?m)^rust-gpu = "[^"]*"$', 'rust-gpu = "main_cs"', manifest.read_text())
    assert count == 1, "the saxpy example no longer has a [kernel.entry] rust-gpu line"
    manifest.write_text(text + '\n[backends.rust-gpu]\nprebuilt = "spirv"\n')
    (root / "spirv").mkdir()
    line = statement_line(root)
    assemble(module_text(line, **shape), root / "spirv" / "saxpy.spv")
    return root, line
