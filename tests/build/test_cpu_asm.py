"""The cpu backend's assembly with line tables, built on demand, linked to Rust lines (real cargo)."""

from __future__ import annotations

import re

import pytest

from workbench.build import build_project
from workbench.build.artifacts import read_build
from workbench.build.line_info import LineInfoError, ensure_line_table
from workbench.build.ptx_lines import PtxLines
from workbench.project import Project


def test_cpu_assembly_maps_the_kernel_line_to_its_instructions_both_ways(example_copy, cache):
    # Its own build: the listings it adds stay out of the pristine build other tests expect bare.
    root = example_copy("saxpy", unique=True)
    project = Project.open(root)
    [result] = build_project(project, ["cpu"], cache_dir=cache)
    assert result.status == "ok", result
    listing = ensure_line_table(project, result.artifact_dir)
    assert listing.name == "saxpy.lines.asm" and str(listing.parent) == result.artifact_dir
    info = read_build(result.artifact_dir)["line_info"]
    assert info["artifact"] == "saxpy.lines.asm" and "debuginfo=line-tables-only" in info["flags"]
    text = listing.read_text()
    lines = PtxLines.parse(text)
    source = root / "src" / "lib.rs"
    body = source.read_text().splitlines()
    # `y[i] = a * x[i] + y[i];` made the multiply and add in the cdylib's saxpy_cpu.
    target = next(n for n, ln in enumerate(body, 1) if "y[i] = a * x[i] + y[i]" in ln)
    asm = text.splitlines()
    hits = lines.ptx_lines_for(source, target)
    assert any("mulss" in asm[n - 1] for n in hits) and any("addss" in asm[n - 1] for n in hits)
    # Four elements at a time too: the cpu build's loop passes (`LOOP_FLAGS`) split the bounds
    # and `i < n` checks out of the workgroup's loop, and its middle vectorises.
    assert any("mulps" in asm[n - 1] for n in hits) and any("addps" in asm[n - 1] for n in hits)
    # And back: each of those instructions names that Rust line (the DWARF 5 `.file N "dir" "name"`).
    for n in hits:
        file, line = lines.source_for(n)
        assert file.endswith("src/lib.rs") and line == target
    # A second ask reads what the first built: no second cargo run, the same file.
    assert ensure_line_table(project, result.artifact_dir) == listing


def _in_a_one_block_loop(asm: list[str], n: int) -> bool:
    """Whether the instruction on listing line `n` (1-based) is in a loop of one basic block: its
    block starts at a label and its first jump is a conditional one back to that label."""
    label = None
    for text in reversed(asm[: n - 1]):
        text = text.strip()
        if re.fullmatch(r"\.LBB\w+:", text):
            label = text[:-1]
            break
        if re.match(r"j[a-z]+\s", text):
            return False  # the block starts after a jump, with no label: not a loop's head
    for text in asm[n:]:
        text = text.strip()
        if re.fullmatch(r"\.LBB\w+:", text):
            return False  # it falls through into another block
        if re.match(r"j[a-z]+\s", text):
            op, target = text.split()[:2]
            return op != "jmp" and target == label
    return False


def test_a_lanes_loop_over_a_row_runs_its_middle_without_the_kernels_checks(example_copy, cache):
    """`#[lanes]` marks the end of each loop over a row of lanes cold (`Lanes::row_end`), so the cpu
    build's range check elimination (`LOOP_FLAGS`) splits it as it splits the executor's own loop:
    histogram's counting loop has a middle of one block, the count's load and increment and the
    loop's own compare, with neither the kernel's `if i < n` nor `x.get(i)`'s bounds check."""
    root = example_copy("histogram", unique=True)
    project = Project.open(root)
    [result] = build_project(project, ["cpu"], cache_dir=cache)
    assert result.status == "ok", result
    text = ensure_line_table(project, result.artifact_dir).read_text()
    lines = PtxLines.parse(text)
    source = root / "src" / "lib.rs"
    body = source.read_text().splitlines()
    target = next(n for n, ln in enumerate(body, 1) if "local.atomic_add((x.get(i) % BINS as u32)" in ln)
    asm = text.splitlines()
    hits = [n for n in lines.ptx_lines_for(source, target) if not asm[n - 1].strip().startswith(".")]
    assert hits, "no instruction of the counting line"
    # The checked iterations around the middle keep both checks (an index past the end still
    # stops at its line): the line's instructions are in more than one loop.
    assert any(_in_a_one_block_loop(asm, n) for n in hits), [asm[n - 1] for n in hits]
    assert not all(_in_a_one_block_loop(asm, n) for n in hits)


def test_a_changed_source_gets_no_assembly_of_the_old_build(example_copy, cache):
    root = example_copy("saxpy", unique=True)  # a build of its own, not one with a listing already
    project = Project.open(root)
    [result] = build_project(project, ["cpu"], cache_dir=cache)
    source = root / "src" / "lib.rs"
    source.write_text(source.read_text() + "\n// edited\n")
    with pytest.raises(LineInfoError, match="sources changed"):
        ensure_line_table(Project.open(root), result.artifact_dir)


def test_a_relative_cache_folder_gets_this_builds_assembly(example_copy, tmp_path, monkeypatch):
    """`--cache-dir .wb-cache` as a user types it: cargo runs in the crate's folder, so a relative
    target dir landed inside the project while the listing was looked for from the working
    directory, where an earlier build's `saxpy.s` was shown as this build's assembly."""
    monkeypatch.chdir(tmp_path)
    stale = tmp_path / "rel-cache" / "targets" / "cpu-asm" / "release" / "deps" / "saxpy.s"
    stale.parent.mkdir(parents=True)
    stale.write_text("an earlier build's listing\n")
    root = example_copy("saxpy", unique=True)
    project = Project.open(root)
    [result] = build_project(project, ["cpu"], cache_dir="rel-cache")
    assert result.status == "ok", result
    listing = ensure_line_table(project, result.artifact_dir)
    assert "saxpy_cpu" in listing.read_text()
    assert not (root / "rel-cache").exists()  # nothing of the cache inside the project


def test_the_entrys_code_includes_the_executor_instances_that_hold_its_body(example_copy, cache):
    # The kernel body is inlined into gpu_kernel's run_invocations::<closure> (and call_body::<…>,
    # on a fiber after a barrier): the IR views read those too, and nothing instantiated for
    # another entry.
    from workbench.build.ir_instructions import _holds_entry_code, x86_instructions

    root = example_copy("saxpy", unique=True)
    project = Project.open(root)
    [result] = build_project(project, ["cpu"], cache_dir=cache)
    text = ensure_line_table(project, result.artifact_dir).read_text()
    labels = [ln[:-1] for ln in text.splitlines() if ln.endswith(":") and not ln.startswith((".", " ", "\t"))]
    held = [label for label in labels if _holds_entry_code(label, "saxpy_cpu")]
    assert "saxpy_cpu" in held
    assert any("15run_invocations" in label for label in held)
    assert not any(_holds_entry_code(label, "saxpy") for label in held if label != "saxpy")
    # The multiply-add of the body line is among the entry's instructions.
    assert any(i.opcode == "mulss" for i in x86_instructions(text, "saxpy_cpu"))
