"""SASS from the real CUDA tools (ptxas -lineinfo, nvdisasm -gp): run where the toolkit has nvdisasm
(the H200 host), skipped elsewhere. The PTX is the committed saxpy line-table PTX (no Rust there)."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.build.ptx_lines import PtxLines
from workbench.build.sass import SassLines, disassemble, nvdisasm

DATA = Path(__file__).resolve().parents[1] / "build" / "data" / "sass"


def test_real_nvdisasm_links_saxpy_sass_to_the_multiply_add_line(tmp_path):
    if nvdisasm() is None:
        pytest.skip("no nvdisasm in this CUDA toolkit")
    lines_ptx = tmp_path / "saxpy.lines.ptx"
    lines_ptx.write_text((DATA / "saxpy.lines.ptx").read_text())
    sass = disassemble(lines_ptx, "sm_90", tmp_path, "saxpy")
    assert (tmp_path / "saxpy.sass.ptx").read_text() == (DATA / "saxpy.sass.ptx").read_text()
    parsed = SassLines.parse(sass.read_text(), PtxLines.parse(lines_ptx.read_text()))
    ops = {parsed.opcode_of[n] for n in parsed.ptx_lines_for("/x/saxpy/src/lib.rs", 36)}
    assert {"FMUL", "FADD", "STG.E"} <= ops, ops
    # The same instructions as the fixture captured on the H200 (nvdisasm 13.0).
    fixture = SassLines.parse((DATA / "saxpy.gp.sass").read_text())
    assert sorted(parsed.opcode_of.values()) == sorted(fixture.opcode_of.values())
