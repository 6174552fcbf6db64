"""PTX `.file` / `.loc` parsing for the Rust <-> PTX view."""

from __future__ import annotations

from workbench.build.ptx_lines import PtxLines

PTX = """\
.visible .entry saxpy(
{
\t.loc\t2 29 0
$L__func_begin1:
\tld.param.b32 \t%r3, [saxpy_param_0];
\t.loc\t2 0 8
\tld.param.b32 \t%r2, [saxpy_param_1];
\t.loc\t2 11 16
\tmul.rn.f32 \t%r8, %r2, %r7;
$L__tmp6:
\t.loc\t1 62 5
\tmov.u32 \t%r5, %ntid.x;
\t.loc\t2 11 9
\tadd.rn.f32 \t%r10, %r8, %r9;
}
\t.file\t1 "/usr/lib/rustlib/src/rust/library/core/src/nvptx/mod.rs"
\t.file\t2 "/build/elsewhere/saxpy/src/lib.rs"
\t.section\t.debug_info
\t{
.b32 44
\t}
"""


def test_loc_lines_map_both_ways_and_skip_labels_line_zero_and_sections(tmp_path):
    lines = PtxLines.parse(PTX)
    assert lines.has_lines
    # Built in another copy of the project: matched by the path's tail (src/lib.rs).
    here = tmp_path / "saxpy" / "src" / "lib.rs"
    assert lines.ptx_lines_for(here, 11) == [9, 14]
    assert lines.ptx_lines_for(here, 29) == [5]
    assert lines.source_for(9) == ("/build/elsewhere/saxpy/src/lib.rs", 11)
    assert lines.source_for(7) is None  # under `.loc 2 0 8`: no particular line
    assert lines.source_for(10) is None  # a label
    assert lines.source_for(12)[1] == 62 and "core" in lines.source_for(12)[0]
    assert lines.source_lines(here) == {11, 29}
    assert not PtxLines.parse(PTX.replace(".loc", "// loc")).has_lines


def test_a_copy_is_matched_by_its_longest_common_tail_never_another_crates_lib_rs(tmp_path):
    """A listing built from another copy names two `src/lib.rs`: the kernel's and the kernel API
    crate's inside it. A file of this copy is the one with most trailing path parts in common."""
    text = PTX.replace(
        '\t.file\t1 "/usr/lib/rustlib/src/rust/library/core/src/nvptx/mod.rs"',
        '\t.file\t1 "/build/elsewhere/saxpy/gpu_kernel/src/lib.rs"',
    )
    lines = PtxLines.parse(text)
    assert lines.ptx_lines_for(tmp_path / "saxpy" / "src" / "lib.rs", 11) == [9, 14]
    assert lines.ptx_lines_for(tmp_path / "saxpy" / "gpu_kernel" / "src" / "lib.rs", 62) == [12]
    assert lines.ptx_lines_for(tmp_path / "saxpy" / "gpu_kernel" / "src" / "lib.rs", 11) == []
    assert lines.ptx_lines_for(tmp_path / "other" / "main.rs", 11) == []  # a file name alone is not enough
