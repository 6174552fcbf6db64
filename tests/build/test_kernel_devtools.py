"""rustfmt, clippy and kernel unit tests on real crates (issue 39): `workbench fmt`, `lint` and
`test` as a user runs them (child processes, real rustfmt / clippy / cargo test), on copies of the
bundled examples."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, REPO, cli
from tests.kernel_crate_tests import run_crate_tests
from tests.waits import FIRING_LIMIT_S, WORK_GUARD_S
from workbench.build.adapters import host_rust

TEMPLATE = REPO / "resources" / "templates" / "blank"

needs_rustfmt = pytest.mark.skipif(not host_rust.rustfmt(), reason="no rustfmt installed")
needs_clippy = pytest.mark.skipif(not host_rust.clippy(), reason="no cargo-clippy installed")
needs_cargo = pytest.mark.skipif(not host_rust.cargo(), reason="no cargo installed")


def line_of(path, text: str) -> int:
    """The 1-based line of the first line of `path` containing `text`."""
    return next(k for k, line in enumerate(path.read_text().splitlines(), 1) if text in line)


# ------------------------------------------------------------------------------------------ fmt
@needs_rustfmt
def test_fmt_fixes_a_misformatted_copy_that_check_refuses(example_copy):
    project = example_copy("saxpy")
    lib = project / "src" / "lib.rs"
    cli("fmt", project)  # the example as rustfmt writes it: only the line below differs then
    good = "    let i = ctx.group_linear() * block + ctx.local_id_x();"
    assert good in lib.read_text()
    lib.write_text(lib.read_text().replace(good, "    let i = ctx.group_linear()*block+ctx.local_id_x() ;"))

    checked = cli("fmt", project, "--check")
    assert checked.returncode == 1, checked.stderr
    assert checked.stdout.strip() == "would reformat src/lib.rs"
    assert good not in lib.read_text()  # --check writes nothing

    fixed = cli("fmt", project)
    assert fixed.returncode == 0, fixed.stderr
    assert fixed.stdout.strip() == "formatted src/lib.rs"
    assert good in lib.read_text()
    again = cli("fmt", project, "--check", "--json")
    assert again.returncode == 0
    report = json.loads(again.stdout)
    assert report["changed"] == [] and report["files"] == 2  # src/lib.rs, tests/kernel.rs


@needs_rustfmt
def test_fmt_reports_a_syntax_error_at_its_line_and_leaves_the_file(example_copy):
    project = example_copy("saxpy")
    lib = project / "src" / "lib.rs"
    line = line_of(lib, "let n = n as usize;")
    lib.write_text(lib.read_text().replace("let n = n as usize;", "let n = ;"))
    before = lib.read_text()
    out = cli("fmt", project, "--json")
    assert out.returncode == 1
    [diag] = json.loads(out.stdout)["diagnostics"]
    assert (diag["file"], diag["line"], diag["backend"]) == ("src/lib.rs", line, "rustfmt")
    assert "expected expression" in diag["message"]
    assert lib.read_text() == before


@needs_rustfmt
def test_fmt_names_a_file_that_is_not_utf8_and_formats_the_others(example_copy):
    project = example_copy("saxpy")
    source = project / "src" / "lib.rs"
    source.write_text(source.read_text().replace("let n = n as usize;", "let n=n   as usize ;"))
    (project / "tests" / "latin1.rs").write_bytes("// caf\xe9\n".encode("latin-1"))
    out = cli("fmt", project, "--json")
    assert out.returncode == 1
    report = json.loads(out.stdout)
    assert [(d["file"], d["backend"]) for d in report["diagnostics"]] == [("tests/latin1.rs", "rustfmt")]
    assert "UTF-8" in report["diagnostics"][0]["message"]
    assert report["changed"] == ["src/lib.rs"]  # the mis-formatted source, formatted
    # At its line and column, in words (was "tests/latin1.rs:None: cannot read it as UTF-8 text:
    # 'utf-8' codec can't decode byte 0xe9 in position 6: ...").
    (project / "tests" / "latin1.rs").write_bytes("// ok\n// caf\xe9\n".encode("latin-1"))
    out = cli("fmt", project, "--check")
    assert out.returncode == 1
    assert "error: tests/latin1.rs:2:7: not UTF-8 text: byte 0xe9 at line 2, column 7" in out.stderr, (
        out.stderr
    )
    assert "None" not in out.stderr


def test_fmt_without_rustfmt_says_so_in_one_line(example_copy):
    out = cli("fmt", example_copy("saxpy"), env={"WB_RUSTFMT": "/nonexistent/rustfmt"})
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0
    assert out.stderr.startswith("error: rustfmt is not installed: rustup component add rustfmt")


# ----------------------------------------------------------------------------------------- lint
CLIPPY_BAIT = """
/// Sums a vector by index (clippy: needless_range_loop).
pub fn by_index(v: &[f32]) -> f32 {
    let mut s = 0.0;
    for i in 0..v.len() {
        s += v[i];
    }
    s
}
"""


@needs_clippy
def test_lint_reports_a_clippy_lint_at_its_line_with_its_name_and_link(example_copy, shared_cache_dir):
    project = example_copy("saxpy")
    lib = project / "src" / "lib.rs"
    lib.write_text(lib.read_text() + CLIPPY_BAIT)
    line = line_of(lib, "for i in 0..v.len()")
    out = cli("lint", project, "--json", "--cache-dir", shared_cache_dir)
    assert out.returncode == 0, out.stderr  # warnings, as cargo clippy's exit status says
    report = json.loads(out.stdout)
    lints = [d for d in report["diagnostics"] if d["code"] == "clippy::needless_range_loop"]
    assert [(d["file"], d["line"]) for d in lints] == [("src/lib.rs", line)]  # both passes: one lint
    assert lints[0]["backend"] == "clippy"
    assert lints[0]["url"].endswith("#needless_range_loop")
    assert "[clippy::needless_range_loop]" in lints[0]["message"]

    text = cli("lint", project, "--cache-dir", shared_cache_dir)
    assert f"src/lib.rs:{line}:" in text.stdout

    # A lint denied in the crate is an error: the exit status says so.
    lib.write_text("#![deny(clippy::needless_range_loop)]\n" + lib.read_text())
    denied = cli("lint", project, "--json", "--cache-dir", shared_cache_dir)
    assert denied.returncode == 1
    assert [
        d["severity"]
        for d in json.loads(denied.stdout)["diagnostics"]
        if d["code"] == "clippy::needless_range_loop"
    ] == ["error"]
    assert "index.html#needless_range_loop" in text.stdout


@needs_clippy
def test_lint_of_a_crate_that_does_not_compile_counts_errors_not_lints(example_copy, shared_cache_dir):
    """A compile error is printed at its line, but it is no lint: the summary says the crate does
    not compile (it read "1 lint(s)"), and the exit status stays 1."""
    project = example_copy("saxpy")
    lib = project / "src" / "lib.rs"
    clean = lib.read_text()
    lib.write_text(clean + "\npub fn broken() -> (u32, u32) {\n    (1, 2]\n}\n")
    out = cli("lint", project, "--cache-dir", shared_cache_dir)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "error: mismatched closing delimiter" in out.stdout
    last = out.stdout.strip().splitlines()[-1]
    assert last.startswith("1 error (the crate does not compile): no lints checked in "), out.stdout
    assert "lint(s)" not in out.stdout
    # A type error (E0425) and a clippy lint's bait: still one error, no lint counted.
    lib.write_text(clean + CLIPPY_BAIT + "\npub fn unknown() -> f32 {\n    not_defined\n}\n")
    out = cli("lint", project, "--cache-dir", shared_cache_dir)
    assert out.returncode == 1 and "[E0425]" in out.stdout, out.stdout + out.stderr
    assert out.stdout.strip().splitlines()[-1].startswith("1 error (the crate does not compile): "), (
        out.stdout
    )


@needs_clippy
def test_lint_and_test_of_a_cp_r_copy_place_the_api_crate_and_report_only_the_users_code(
    tmp_path, shared_cache_dir
):
    """A copy made with `cp -r` keeps the example's `gpu_kernel` link, which then leads nowhere:
    `lint` and `test` place the workbench's crate first, as a build does (not cargo's "failed to
    read …/gpu_kernel/Cargo.toml"), and clippy's findings in that crate are not the user's."""
    copies = {}
    for command in ("lint", "test"):
        project = copies[command] = tmp_path / command / "saxpy"
        project.parent.mkdir()
        subprocess.run(["cp", "-r", str(EXAMPLES / "saxpy"), str(project)], check=True)
        assert (project / "gpu_kernel").is_symlink() and not (project / "gpu_kernel").exists()
    out = cli("lint", copies["lint"], "--json", "--cache-dir", shared_cache_dir)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "failed to read" not in out.stdout + out.stderr
    assert (copies["lint"] / "gpu_kernel" / "Cargo.toml").is_file()
    files = {d["file"] for d in json.loads(out.stdout)["diagnostics"]}
    assert not {f for f in files if f.startswith("gpu_kernel/")}, files
    out = cli("test", copies["test"], "--json", "--cache-dir", shared_cache_dir)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    tests = json.loads(out.stdout)["tests"]
    assert tests and all(t["status"] == "passed" for t in tests), tests


@needs_clippy
@pytest.mark.parametrize("features", [(), ("sim",), ("debug",)], ids=["plain", "sim", "debug"])
def test_the_kernel_api_crate_every_project_builds_with_is_clippy_clean(features, tmp_path, shared_cache_dir):
    """clippy lints a path dependency as the project's own code: a user's plain `cargo clippy` in a
    project made by `workbench new` shows whatever the shipped crate has (an `x != x` error stopped
    it). Linted in a copy, so no Cargo.lock or target folder lands in the shipped crate."""
    from workbench.build.clippy import lint_command
    from workbench.kernel_api import crate_dir

    crate = tmp_path / "gpu_kernel"
    shutil.copytree(crate_dir(), crate, ignore=shutil.ignore_patterns("target"))
    cmd, env = lint_command(crate, features, Path(shared_cache_dir) / "api-clippy")
    out = subprocess.run(cmd, cwd=crate, env=env, capture_output=True, text=True, timeout=WORK_GUARD_S)
    records = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    found = [
        r["message"]["rendered"]
        for r in records
        if r.get("reason") == "compiler-message" and r["message"]["level"] in ("warning", "error")
    ]
    assert out.returncode == 0 and not found, "".join(found)[:4000] + out.stderr[-2000:]


@needs_clippy
@pytest.mark.parametrize(
    "name", sorted(p.name for p in EXAMPLES.iterdir() if (p / "workbench.toml").is_file()) + ["new"]
)
def test_every_example_and_a_new_project_lint_clean(name, example_copy, tmp_path, shared_cache_dir):
    """What a user opens first shows no lint in the Diagnostics pane: `workbench lint` (both
    passes) of a copy of each bundled example, and of a project `workbench new` made (blank)."""
    if name == "new":
        project = tmp_path / "made" / "vadd"
        made = cli("new", "vadd", project)
        assert made.returncode == 0, made.stderr
    else:
        project = example_copy(name)
    out = cli("lint", project, "--json", "--cache-dir", shared_cache_dir)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    report = json.loads(out.stdout)
    found = [f"{d['file']}:{d['line']} {d['code']}" for d in report["diagnostics"]]
    assert report["ok"] and found == [], found


@needs_rustfmt
@pytest.mark.parametrize(
    "name", sorted(p.name for p in EXAMPLES.iterdir() if (p / "workbench.toml").is_file())
)
def test_every_example_is_as_rustfmt_writes_it(name, example_copy):
    """A user's first `workbench fmt --check` (or the editor's format on save) of a bundled example
    changes nothing: every .rs file of a copy of it is as rustfmt writes it (stencil2d's entry and
    warp_reduce's test were not, unseen until a run by hand)."""
    out = cli("fmt", example_copy(name), "--check", "--json")
    report = json.loads(out.stdout)
    assert out.returncode == 0 and report["files"] >= 2, out.stdout[-3000:] + out.stderr[-3000:]
    assert (report["changed"], report["diagnostics"]) == ([], []), report


def test_lint_without_clippy_says_so_in_one_line(example_copy):
    out = cli("lint", example_copy("saxpy"), env={"WB_CARGO_CLIPPY": "/nonexistent/cargo-clippy"})
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0
    assert out.stderr.startswith("error: clippy is not installed: rustup component add clippy")


# ----------------------------------------------------------------------------------------- test
@needs_cargo
@pytest.mark.parametrize(
    "name", sorted(p.name for p in EXAMPLES.iterdir() if (p / "tests").is_dir()) + ["blank"]
)
def test_every_example_ships_passing_kernel_tests_with_an_edge_case(name, tmp_path, shared_cache_dir):
    source = TEMPLATE if name == "blank" else EXAMPLES / name
    project = tmp_path / name
    shutil.copytree(source, project, ignore=shutil.ignore_patterns("target"))
    out = cli("test", project, "--json", "--cache-dir", shared_cache_dir)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    tests = json.loads(out.stdout)["tests"]
    assert tests and all(t["status"] == "passed" for t in tests), tests
    assert all(t["file"] == "tests/kernel.rs" and t["line"] for t in tests)
    assert "kernel::n_not_a_multiple_of_the_workgroup_size" in {t["id"] for t in tests}


@needs_cargo
def test_a_seeded_race_fails_its_test_at_the_race_line(example_copy, shared_cache_dir):
    project = example_copy("reduction")
    lib = project / "src" / "lib.rs"
    text = lib.read_text()
    seeded = "        scratch.set(tid, sum);\n    }\n    ctx.barrier();\n"
    assert seeded in text
    lib.write_text(text.replace(seeded, "        scratch.set(tid, sum);\n    }\n"))  # the first barrier gone
    write_line = line_of(lib, "scratch.set(tid, sum);")
    read_line = line_of(lib, "scratch.set(tid, scratch.get(tid) + scratch.get(tid + stride));")

    out = cli(
        "test", project, "kernel::the_partials_add_up_to_the_sum", "--json", "--cache-dir", shared_cache_dir
    )
    assert out.returncode == 1, out.stderr
    report = json.loads(out.stdout)
    ran = [t for t in report["tests"] if t["status"] != "not run"]
    assert [t["name"] for t in ran] == ["the_partials_add_up_to_the_sum"]  # one test asked, one run
    assert ran[0]["status"] == "failed"
    assert "cpu-sim found" in ran[0]["message"]
    races = [d for d in report["diagnostics"] if d["code"] == "shared-race"]
    assert [(d["file"], d["line"]) for d in races] == [("src/lib.rs", write_line)]
    assert f"src/lib.rs:{read_line}:" in races[0]["message"]  # the other side of the race
    panic = [d for d in report["diagnostics"] if d["code"] == "test"]
    assert panic[0]["file"] == "tests/kernel.rs"  # the launch that failed
    assert "error[shared-race]" in ran[0]["output"]  # the captured output


HANGING_TEST = """
#[test]
fn hangs() {
    loop {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[test]
fn fails_an_assertion() {
    let x = 1 + 1;
    assert_eq!(x, 3, "arithmetic");
}
"""


@needs_cargo
def test_a_hanging_test_is_stopped_and_a_failed_assertion_is_at_its_line(example_copy, shared_cache_dir):
    project = example_copy("saxpy")
    extra = project / "tests" / "extra.rs"
    extra.write_text(HANGING_TEST)
    # The limit stops the hanging test; the other binaries' tests must finish under it, loaded or not.
    out = cli("test", project, "--json", "--timeout", FIRING_LIMIT_S, "--cache-dir", shared_cache_dir)
    assert out.returncode == 1
    by_id = {t["id"]: t for t in json.loads(out.stdout)["tests"]}
    assert by_id["extra::hangs"]["status"] == "timed out"
    failed = by_id["extra::fails_an_assertion"]
    assert failed["status"] == "failed"
    assert "arithmetic" in failed["message"] or "arithmetic" in failed["output"]
    assertion = [d for d in failed["diagnostics"] if d["code"] == "test"][0]
    assert (assertion["file"], assertion["line"]) == ("tests/extra.rs", line_of(extra, "assert_eq!"))
    assert by_id["kernel::every_element_once"]["status"] == "passed"


LOUD_TEST = """
#[test]
fn prints_a_lot() {
    println!("FIRST LINE");
    for k in 0..200_000 {
        println!("line {k:>8}");
    }
    assert_eq!(1 + 1, 3, "loud arithmetic");
}
"""


@needs_cargo
def test_a_test_that_prints_megabytes_keeps_its_head_and_tail_and_its_line(example_copy, shared_cache_dir):
    """A failing test that printed 100 MB froze the window for 16 s when the run ended (its report
    read on the GUI thread) and 12 s when it was selected (its output shown): the report keeps the
    output's first and last characters, says what it left out, and the failure is at its line."""
    project = example_copy("saxpy")
    extra = project / "tests" / "loud.rs"
    extra.write_text(LOUD_TEST)
    out = cli("test", project, "loud::prints_a_lot", "--json", "--cache-dir", shared_cache_dir)
    assert out.returncode == 1, out.stderr
    loud = {t["id"]: t for t in json.loads(out.stdout)["tests"]}["loud::prints_a_lot"]
    assert loud["status"] == "failed"
    output = loud["output"]
    assert len(output) < 70_000  # it printed 2.6 MB; kept: 16,000 + 48,000 characters and a note
    assert output.startswith("FIRST LINE\nline        0\n") and "line   199999" in output
    assert "loud arithmetic" in output  # the panic, at the end
    assert "of this test's output left out; `cargo test` in the crate shows all of it" in output
    assertion = [d for d in loud["diagnostics"] if d["code"] == "test"][0]
    assert (assertion["file"], assertion["line"]) == ("tests/loud.rs", line_of(extra, "assert_eq!"))
    assert len(assertion["rendered"]) < 70_000
    assert len(out.stdout) < 300_000  # what the window reads


@needs_cargo
def test_list_names_each_test_at_its_function(example_copy, shared_cache_dir):
    project = example_copy("saxpy")
    out = cli("test", project, "--list", "--cache-dir", shared_cache_dir)
    assert out.returncode == 0, out.stderr
    line = line_of(project / "tests" / "kernel.rs", "fn every_element_once")
    assert f"kernel::every_element_once  tests/kernel.rs:{line}" in out.stdout.splitlines()


@needs_cargo
def test_the_harness_own_tests_pass_with_the_sim_feature(tmp_path):
    """gpu_kernel::testing's own tests: a clean launch, a seeded race found at its line, an
    out-of-bounds index and a divergent barrier failing the launch, launches long enough to share
    their workgroups with the pool's helper (each run once, a workgroup's panic raised), fibers
    running later workgroups after a divergent one, shuffles in a row, the JSON reader."""
    names = (
        "barrier_and_shared_memory_are_checked_clean", "a_race_on_shared_memory_is_found_at_its_line",
        "out_of_bounds_and_divergence_fail_the_test", "shared_launches_run_every_workgroup_once_and_raise_a_panic",
        "fibers_run_each_later_workgroup_with_its_own_ids_and_memory",
        "shuffles_in_a_row_each_give_their_own_values", "json_reader_reads_the_report_shapes",
    )  # fmt: skip
    run_crate_tests(tmp_path, "testing", names)


# --------------------------------------------------------------------------------------- doctor
def test_doctor_lists_rustfmt_and_clippy_with_the_readme_hints():
    from tests.test_cli_doctor import readme_hints  # README's table, as doctor's own test reads it
    from workbench.build.install_hints import TOOL_HINTS

    rows = readme_hints()
    assert {tool: rows.get(tool) for tool in ("rustfmt", "clippy")} == {
        t: TOOL_HINTS[t] for t in ("rustfmt", "clippy")
    }
    out = cli("doctor", "--json", env={"WB_CARGO_CLIPPY": "/nonexistent/cargo-clippy"})
    tools = {t["tool"]: t for t in json.loads(out.stdout)["tools"]}
    assert tools["clippy"]["found"] is False and tools["clippy"]["hint"] == TOOL_HINTS["clippy"]
    if host_rust.rustfmt():
        assert tools["rustfmt"]["found"] and tools["rustfmt"]["version"].startswith("rustfmt ")


PANICS = """use gpu_kernel::testing::Grid;

#[test]
fn asserts_after_a_barrier() {
    let grid = Grid::new([1, 1, 1], [64, 1, 1]);
    grid.run(|ctx| {
        ctx.barrier();
        assert!(ctx.local_id_x() < 10, "invocation {} too far", ctx.local_id_x());
    });
}

#[test]
fn asserts_before_any_barrier() {
    let grid = Grid::new([1, 1, 1], [64, 1, 1]);
    grid.run(|ctx| {
        assert!(ctx.local_id_x() < 10, "invocation {} too far", ctx.local_id_x());
    });
}
"""


@needs_cargo
def test_a_panic_in_a_kernel_body_is_at_its_line_even_when_it_aborts(tmp_path, shared_cache_dir):
    """After a barrier a body runs on a fiber: its panic aborts the test process. The crashed test
    is run again alone, so its assertion's line is known, and the test beside it keeps its own."""
    project = tmp_path / "blank"
    shutil.copytree(TEMPLATE, project, ignore=shutil.ignore_patterns("target"))
    panics = project / "tests" / "panics.rs"
    panics.write_text(PANICS)
    out = cli("test", project, "--json", "--cache-dir", shared_cache_dir)
    assert out.returncode == 1
    by_id = {t["id"]: t for t in json.loads(out.stdout)["tests"]}
    after, before = by_id["panics::asserts_after_a_barrier"], by_id["panics::asserts_before_any_barrier"]
    assert after["status"] == "crashed" and "invocation 10 too far" in after["message"]
    assert before["status"] == "failed" and "too far" in (before["message"] + before["output"])
    line = [k for k, ln in enumerate(PANICS.splitlines(), 1) if "assert!" in ln]
    assert [(d["file"], d["line"]) for d in after["diagnostics"]] == [("tests/panics.rs", line[0])]
    assert [(d["file"], d["line"]) for d in before["diagnostics"]] == [("tests/panics.rs", line[1])]
    assert by_id["kernel::every_element_updated"]["status"] == "passed"
