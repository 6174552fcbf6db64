"""naga validation at build time, through the real wgpu (llvmpipe) in a child process."""

from __future__ import annotations

import json
import subprocess

import pytest

from workbench.build.shader_check import child_command, naga_diagnostics, parse_child_output

pytest.importorskip("wgpu")


def _check(kind: str, path) -> dict:
    proc = subprocess.run(child_command(kind, path), capture_output=True, text=True, timeout=120)
    answers = [a for a in map(parse_child_output, proc.stdout.splitlines()) if a]
    assert answers, proc.stdout + proc.stderr
    return answers[-1]


def test_a_wgsl_type_error_is_located_at_its_line_and_column(example_copy):
    shader = example_copy("saxpy") / "reference" / "saxpy.wgsl"
    text = shader.read_text()
    assert _check("wgsl", shader)["shader_check"] in ("ok", "skipped")
    shader.write_text(text.replace("params.a * x[i]", "params.a * x"))
    answer = _check("wgsl", shader)
    if answer["shader_check"] == "skipped":
        pytest.skip(answer["reason"])
    assert answer["shader_check"] == "error"
    (diag,) = naga_diagnostics(answer["message"], "reference/saxpy.wgsl", "wgsl")
    line = next(i for i, x in enumerate(text.splitlines(), 1) if "params.a * x[i]" in x)
    column = text.splitlines()[line - 1].index("params.a * x[i]") + len("params.a * ") + 1
    assert (diag.file, diag.line, diag.column) == ("reference/saxpy.wgsl", line, column)
    assert diag.message.startswith("naga validation error:") and "is invalid" in diag.message


def test_a_broken_spirv_module_is_rejected_without_a_location(tmp_path):
    module = tmp_path / "broken.spv"
    module.write_bytes(bytes.fromhex("03022307") + bytes(40))
    answer = _check("spirv", module)
    if answer["shader_check"] == "skipped":
        pytest.skip(answer["reason"])
    assert answer["shader_check"] == "error", json.dumps(answer)
    (diag,) = naga_diagnostics(answer["message"], "broken.spv", "rust-gpu")
    assert diag.line is None and diag.message.startswith("naga validation error:") and len(diag.message) > 30
