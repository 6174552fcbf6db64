"""What the compilers made of the kernel, side by side, and two builds compared by source line:
real cpu, nvptx and wgsl builds of the examples (workbench.build.ir_summary / ir_diff, `workbench ir`)."""

from __future__ import annotations

import json

import pytest

from workbench.build import build_project
from workbench.build.adapters import ADAPTERS
from workbench.build.ir_diff import IrDiffError, describe, diff_builds, ensure_line_maps
from workbench.build.ir_instructions import CLASSES
from workbench.build.ir_summary import ensure_listings, summarize, table
from workbench.cli import main
from workbench.project import Project

BODY = "y[i] = a * x[i] + y[i];"


def _nvptx() -> bool:
    return ADAPTERS["nvptx"].detect().found


def _backends() -> list[str]:
    return ["cpu", "wgsl", *(["nvptx"] if _nvptx() else [])]


def test_the_reduction_summary_counts_barriers_shared_memory_and_classes_per_backend(example_copy, cache):
    # Its own build: the listings it adds stay out of the pristine build other tests expect bare.
    root = example_copy("reduction", unique=True)
    project = Project.open(root)
    results = build_project(project, _backends(), cache_dir=cache)
    assert all(r.status == "ok" for r in results), [(r.backend, r.diagnostics) for r in results]
    folders = [r.artifact_dir for r in results]
    assert ensure_listings(project, folders) == {}
    rows = {row.backend: row for row in summarize(folders)}
    wgsl_text = (root / "reference" / "reduction.wgsl").read_text()
    barriers = sum(line.split("//")[0].count("workgroupBarrier()") for line in wgsl_text.splitlines())
    assert barriers >= 8
    wgsl = rows["wgsl"]
    assert wgsl.form == "WGSL" and wgsl.instructions["barrier"] == barriers
    assert wgsl.shared_bytes == 256 * 4  # var<workgroup> scratch: array<f32, 256>
    assert "not visible" in wgsl.note
    cpu = rows["cpu"]
    assert cpu.form == "x86-64" and cpu.source == "reduction.lines.asm"
    assert cpu.instructions["memory"] > 0 and cpu.instructions["arithmetic"] > 0
    # The host build runs the body's `#[lanes]` copy: each barrier statement is a call of the
    # kernel API's barrier between two loops over the invocations, so at least one call per
    # barrier the source writes (the tree's loop, its condition uniform and evaluated once, may
    # be unrolled into more).
    written = (root / "src" / "lib.rs").read_text().count("ctx.barrier();")
    assert written == 2
    assert cpu.instructions["control"] > 0 and cpu.instructions["barrier"] >= written
    for row in rows.values():
        assert row.total == sum(row.instructions[c] for c in CLASSES) > 0
    if "nvptx" in rows:
        ptx = rows["nvptx"]
        assert ptx.form in {"PTX", "SASS"}
        # bar.sync after each of the written-out strides, as many as the WGSL has barriers
        assert ptx.instructions["barrier"] >= barriers - 1
        if ptx.registers is not None:  # ptxas -v ran at build
            assert ptx.shared_bytes == 1024 and ptx.registers > 0 and ptx.spills == 0
    headers, cells = table(list(rows.values()))
    assert headers[:3] == ["backend", "kernel", "code"] and "barrier" in headers and "shared (B)" in headers
    wgsl_cells = dict(zip(headers, cells[list(rows).index("wgsl")], strict=True))
    assert wgsl_cells["barrier"] == str(barriers) and wgsl_cells["registers"] == "—"


def test_the_summary_command_prints_one_table_and_json(example_copy, cache, capsys):
    # Its own build: the listings it adds stay out of the pristine build other tests expect bare.
    root = example_copy("saxpy", unique=True)
    code = main(["ir", "summary", str(root), "--backend", "cpu,wgsl", "--cache-dir", str(cache), "--json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["backend"] for r in data["rows"]] == ["cpu", "wgsl"]
    assert all(r["instructions"]["barrier"] == 0 for r in data["rows"])
    assert main(["ir", "summary", str(root), "--backend", "cpu,wgsl", "--cache-dir", str(cache)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[:4] == ["backend", "kernel", "code", "memory"]
    assert "saxpy.lines.asm" in out


def test_two_tunable_values_change_only_the_line_that_reads_the_tunable(example_copy, cache, capsys):
    if not _nvptx():
        pytest.skip("no rustc with the nvptx64 target here")
    # Its own build: the listings it adds stay out of the pristine build other tests expect bare.
    root = example_copy("saxpy", unique=True)
    code = main(["ir", "diff", str(root), "--backend", "nvptx", "--a", "threads=64", "--b", "threads=256",
                 "--cache-dir", str(cache), "--json"])  # fmt: skip
    assert code == 0
    diff = json.loads(capsys.readouterr().out)
    assert diff["a"] == "threads=64 vector=1" and diff["b"] == "threads=256 vector=1"  # vector: its default
    lines = (root / "src" / "lib.rs").read_text().splitlines()
    index_line = next(n for n, t in enumerate(lines, 1) if "* block +" in t)  # the body's global index
    assert [(c["file"], c["line"]) for c in diff["changed"]] == [("src/lib.rs", index_line)]
    [change] = diff["changed"]

    # The block size as an immediate, decimal in PTX, hex in SASS (where nvdisasm is present), or
    # as its shift (x64 = << 6): a multiply by a power of two may become either.
    def has_block(side, size):
        shift = size.bit_length() - 1
        forms = (f" {size}", hex(size), f" {shift}", hex(shift))
        return any(k.endswith(forms) or any(f"{form}," in k for form in forms) for k in side)

    assert has_block(change["before"], 64), change
    assert has_block(change["after"], 256), change
    assert diff["classes_before"] == diff["classes_after"]
    assert diff["note"] == ""  # same sources
    assert (
        main(["ir", "diff", str(root), "--backend", "nvptx", "--a", "block=3", "--cache-dir", str(cache)])
        == 2
    )
    assert "'block' is not a tunable of saxpy (tunables: threads, vector)" in capsys.readouterr().err


def test_an_edit_shows_the_rust_line_whose_cpu_instructions_changed(example_copy, cache):
    root = example_copy("saxpy", unique=True)
    project = Project.open(root)
    [before] = build_project(project, ["cpu"], cache_dir=cache)
    ensure_line_maps(project, [before.artifact_dir])
    lib = root / "src" / "lib.rs"
    body = next(n for n, t in enumerate(lib.read_text().splitlines(), 1) if BODY in t)
    lib.write_text(lib.read_text().replace(BODY, "y[i] = a * x[i] * x[i] + y[i];"))
    project = Project.open(root)
    [after] = build_project(project, ["cpu"], cache_dir=cache)
    ensure_line_maps(project, [after.artifact_dir])
    diff = diff_builds(before.artifact_dir, after.artifact_dir)
    assert diff.form == "x86-64"
    changed = {(c.file, c.line): c for c in diff.changed}
    assert ("src/lib.rs", body) in changed
    change = changed[("src/lib.rs", body)]
    muls = lambda side: sum(n for k, n in side.items() if k.startswith("mulss"))  # noqa: E731
    assert muls(change.after) > muls(change.before) > 0
    assert "sources differ" in diff.note
    text = "\n".join(describe(diff))
    assert f"src/lib.rs:{body}:" in text and "mulss" in text


def test_a_wgsl_edit_is_shown_at_its_wgsl_line_and_backends_are_not_mixed(example_copy, cache):
    root = example_copy("saxpy", unique=True)
    project = Project.open(root)
    [before, cpu] = build_project(project, ["wgsl", "cpu"], cache_dir=cache)
    shader = root / "reference" / "saxpy.wgsl"
    text = shader.read_text()
    target = next(n for n, t in enumerate(text.splitlines(), 1) if "params.a *" in t or "* x[" in t)
    lines = text.splitlines()
    lines[target - 1] = lines[target - 1].replace("x[", "2.0 * x[", 1)
    shader.write_text("\n".join(lines) + "\n")
    [after] = build_project(Project.open(root), ["wgsl"], cache_dir=cache)
    diff = diff_builds(before.artifact_dir, after.artifact_dir)
    assert [(c.file, c.line) for c in diff.changed] == [("saxpy.wgsl", target)]
    assert diff.classes_after["arithmetic"] == diff.classes_before["arithmetic"] + 1
    with pytest.raises(IrDiffError, match="two builds of one backend"):
        diff_builds(before.artifact_dir, cpu.artifact_dir)
