"""naga validation at build time, through the real wgpu (llvmpipe) in a child process."""

from __future__ import annotations

import subprocess

import pytest

from workbench.build import shader_check
from workbench.build.shader_check import child_command, naga_diagnostics, parse_child_output

pytest.importorskip("wgpu")


def _checked(answer: dict) -> dict:
    if answer["shader_check"] == "skipped":
        pytest.skip(answer["reason"])
    return answer


def test_a_wgsl_type_error_is_located_at_its_line_and_column(example_copy):
    shader = example_copy("saxpy") / "reference" / "saxpy.wgsl"
    text = shader.read_text()
    assert _checked(shader_check.validate("wgsl", shader))["shader_check"] == "ok"
    shader.write_text(text.replace("params.a * x[i]", "params.a * x"))
    answer = _checked(shader_check.validate("wgsl", shader))
    assert answer["shader_check"] == "error"
    (diag,) = naga_diagnostics(answer["message"], "reference/saxpy.wgsl", "wgsl")
    line = next(i for i, x in enumerate(text.splitlines(), 1) if "params.a * x[i]" in x)
    column = text.splitlines()[line - 1].index("params.a * x[i]") + len("params.a * ") + 1
    assert (diag.file, diag.line, diag.column) == ("reference/saxpy.wgsl", line, column)
    assert diag.message.startswith("naga validation error:") and "is invalid" in diag.message
    # The one-shot command line gives the same verdict.
    proc = subprocess.run(child_command("wgsl", shader), capture_output=True, text=True, timeout=120)
    (one_shot,) = [a for a in map(parse_child_output, proc.stdout.splitlines()) if a]
    assert one_shot == answer


def test_a_broken_spirv_module_is_rejected_and_a_dead_validator_is_replaced(tmp_path, example_copy):
    module = tmp_path / "broken.spv"
    module.write_bytes(bytes.fromhex("03022307") + bytes(40))
    answer = _checked(shader_check.validate("spirv", module))
    assert answer["shader_check"] == "error"
    (diag,) = naga_diagnostics(answer["message"], "broken.spv", "rust-gpu")
    assert diag.line is None and diag.message.startswith("naga validation error:") and len(diag.message) > 30
    # The persistent child dies (a driver crash, say): the next shader gets a fresh one.
    first = shader_check._VALIDATOR._proc
    first.kill()
    first.wait()
    shader = example_copy("saxpy") / "reference" / "saxpy.wgsl"
    assert shader_check.validate("wgsl", shader)["shader_check"] == "ok"
    assert shader_check._VALIDATOR._proc is not first
