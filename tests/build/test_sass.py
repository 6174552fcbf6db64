"""SASS linked to PTX and Rust lines: the parser against real nvdisasm 13.0 output captured on an
H200 host (tests/build/data/sass/README.md), and what the view says where nvdisasm is missing."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from workbench.build import build_project
from workbench.build.adapters.base import cuda_bin
from workbench.build.ptx_lines import PtxLines
from workbench.build.sass import MISSING, SassError, SassLines, ensure_sass, nvdisasm, ptx_for_lineinfo
from workbench.project import Project

DATA = Path(__file__).with_name("data") / "sass"


def _read(name: str) -> str:
    return (DATA / name).read_text()


def test_ptx_for_lineinfo_is_the_ptx_that_was_disassembled_and_keeps_line_numbers():
    for example in ("saxpy", "matmul"):
        lines_ptx = _read(f"{example}.lines.ptx")
        made = ptx_for_lineinfo(lines_ptx)
        assert made == _read(f"{example}.sass.ptx")  # what ptxas -lineinfo was given on the H200
        assert ".target sm_90\n" in made and ".section" not in made and ", debug" not in made
        kept, original = made.splitlines(), lines_ptx.splitlines()
        changed = [n for n, (a, b) in enumerate(zip(kept, original, strict=False), 1) if a != b]
        assert changed == [6] and original[5] == ".target sm_90, debug"  # only the target line


def test_sass_instructions_link_to_their_ptx_line_and_rust_line():
    ptx = PtxLines.parse(_read("saxpy.lines.ptx"))
    sass_text = _read("saxpy.gp.sass")
    sass = SassLines.parse(sass_text, ptx)
    assert sass.has_lines
    lines = sass_text.splitlines()
    ptx_lines = _read("saxpy.lines.ptx").splitlines()
    fmul = next(n for n, t in enumerate(lines, 1) if " FMUL " in t)
    assert sass.opcode_of[fmul] == "FMUL"
    assert "mul.rn.f32" in ptx_lines[sass.ptx_line_of[fmul] - 1]
    file, line = sass.source_for(fmul)
    assert file.endswith("saxpy/src/lib.rs") and line == 36  # `y[i] = a * x[i] + y[i];`
    # Both ways: the Rust line's SASS holds the loads, the multiply, the add and the store.
    here = Path("/anywhere/saxpy/src/lib.rs")
    ops = {sass.opcode_of[n] for n in sass.ptx_lines_for(here, 36)}
    assert {"FMUL", "FADD", "LDG.E", "STG.E"} <= ops
    assert fmul in sass.sass_lines_for_ptx(sass.ptx_line_of[fmul])
    guarded = next(n for n, t in enumerate(lines, 1) if "@P0 EXIT" in t)
    assert sass.opcode_of[guarded] == "EXIT"


def test_gp_output_through_the_ptx_map_agrees_with_nvdisasm_g_for_every_instruction():
    """`-gp` (PTX lines) + the PTX's `.loc` must land on the Rust lines nvdisasm `-g` names itself."""
    for example in ("saxpy", "matmul"):
        ptx = PtxLines.parse(_read(f"{example}.lines.ptx"))
        via_ptx = SassLines.parse(_read(f"{example}.gp.sass"), ptx)
        direct = SassLines.parse(_read(f"{example}.g.sass"))
        ops_gp = [via_ptx.opcode_of[n] for n in sorted(via_ptx.opcode_of)]
        ops_g = [direct.opcode_of[n] for n in sorted(direct.opcode_of)]
        assert ops_gp == ops_g and len(ops_g) > 20
        rust_gp = [via_ptx.source_for(n) for n in sorted(via_ptx.opcode_of)]
        rust_g = [direct.source_for(n) for n in sorted(direct.opcode_of)]
        both = [(a, b) for a, b in zip(rust_gp, rust_g, strict=True) if a is not None and b is not None]
        # Where both name a Rust line it is the same line, file included.
        assert all(a[1] == b[1] and Path(a[0]).name == Path(b[0]).name for a, b in both), example
        # The rest are instructions of PTX lines under `.loc F 0 C` ("no particular line", which
        # ptxas fills with the line before) or before the function's first `.loc` (its `{`):
        ptx_text = _read(f"{example}.lines.ptx").splitlines()
        for n in sorted(via_ptx.opcode_of):
            if via_ptx.source_for(n) is None and n in via_ptx.ptx_line_of:
                at = via_ptx.ptx_line_of[n]
                before = [t for t in ptx_text[:at] if t.lstrip().startswith((".loc", "{"))]
                assert before[-1].strip() == "{" or before[-1].split()[2] == "0", (example, at, before[-1])
        assert len(both) >= 0.6 * sum(b is not None for b in rust_g)


def test_the_saxpy_ptx_made_here_is_what_ptxas_lineinfo_takes(tmp_path):
    ptxas = cuda_bin("ptxas")
    if ptxas is None:
        pytest.skip("no ptxas here")
    (tmp_path / "k.ptx").write_text(ptx_for_lineinfo(_read("saxpy.lines.ptx")))
    proc = subprocess.run([ptxas, "-arch=sm_90", "-lineinfo", "k.ptx", "-o", "k.cubin"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "k.cubin").stat().st_size > 1000


def test_without_nvdisasm_the_sass_view_says_what_is_missing_and_what_would_make_it_work(
    example_copy, cache, monkeypatch
):
    if nvdisasm() is not None:
        monkeypatch.setenv("WB_NVDISASM", "/nonexistent/nvdisasm")  # as on a machine without it
    assert nvdisasm() is None
    project = Project.open(example_copy("saxpy"))
    [cpu] = build_project(project, ["cpu"], cache_dir=cache)
    with pytest.raises(SassError, match="cpu builds have no SASS"):
        ensure_sass(project, cpu.artifact_dir)
    folder = shutil.copytree(
        cpu.artifact_dir, Path(cache).parent / "fake-nvptx" / "x" / "y", dirs_exist_ok=True
    )
    data = (folder / "build.json").read_text().replace('"backend": "cpu"', '"backend": "nvptx"')
    (folder / "build.json").write_text(data)
    with pytest.raises(SassError) as err:
        ensure_sass(project, folder)
    assert str(err.value) == MISSING
    assert "nvdisasm" in MISSING and "$WB_NVDISASM" in MISSING and "PTX and Rust lines" in MISSING


def test_real_nvdisasm_makes_the_saxpy_sass_linked_to_ptx_and_rust(example_copy, cache):
    """Where nvdisasm is present (the CUDA toolkit, or NVIDIA's nvidia-cuda-nvdisasm wheel): a real
    nvptx build of saxpy, its line tables, ptxas -lineinfo and nvdisasm -gp, end to end."""
    from workbench.build.adapters import ADAPTERS
    from workbench.build.ir_summary import summarize_folder

    if nvdisasm() is None or cuda_bin("ptxas") is None:
        pytest.skip("no nvdisasm / ptxas here")
    if not ADAPTERS["nvptx"].detect().found:
        pytest.skip("no rustc with the nvptx64 target here")
    # Its own build: the listings it adds stay out of the pristine build other tests expect bare.
    root = example_copy("saxpy", unique=True)
    project = Project.open(root)
    [result] = build_project(project, ["nvptx"], cache_dir=cache)
    sass = ensure_sass(project, result.artifact_dir)
    folder = Path(result.artifact_dir)
    assert sass.parent == folder and (folder / "saxpy.sass.ptx").is_file()
    lines_ptx = (folder / "saxpy.lines.ptx").read_text()
    parsed = SassLines.parse(sass.read_text(), PtxLines.parse(lines_ptx))
    lib = root / "src" / "lib.rs"
    body = next(n for n, t in enumerate(lib.read_text().splitlines(), 1) if "y[i] = a * x[i] + y[i]" in t)
    made = parsed.ptx_lines_for(lib, body)
    assert {"FMUL", "FADD", "STG.E"} <= {parsed.opcode_of[n] for n in made} or "FFMA" in {
        parsed.opcode_of[n] for n in made
    }
    fmul = next(n for n in made if parsed.opcode_of[n] in {"FMUL", "FFMA"})
    assert "mul.rn.f32" in lines_ptx.splitlines()[parsed.ptx_line_of[fmul] - 1]
    # The summary reads the SASS now (ptxas -v's registers stay in the row).
    [row] = summarize_folder(folder)
    assert row.form == "SASS" and row.source == "saxpy.sass" and row.instructions["memory"] >= 3
