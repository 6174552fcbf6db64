"""Bad input gets an exact location: `workbench check` (in-process `main`, as the command line runs it)
on copies of the saxpy example with one planted mistake: exit 2, `workbench.toml:LINE`, the
argument's name, TOML's own spelling, and never a traceback."""

from __future__ import annotations

import json
import re
import shutil
import tracemalloc
from pathlib import Path

import pytest

from workbench import expr
from workbench.cli import main
from workbench.manifest import parse_manifest
from workbench.project import examples_dir

SAXPY = examples_dir() / "saxpy"
#: What evaluating one expression may allocate at most: an exponent or repetition that escaped the
#: evaluator's bounds allocates far more (2 ** 10**8 alone is a 12 MB integer). Memory, unlike
#: time, does not depend on how loaded the machine is.
MAX_EXPRESSION_BYTES = 1 << 20


def peak_bytes(fn, *args):
    """(what `fn(*args)` returned or the exception it raised, the peak bytes Python allocated)."""
    tracemalloc.start()
    try:
        try:
            outcome = fn(*args)
        except Exception as exc:  # noqa: BLE001  the caller asserts which
            outcome = exc
        return outcome, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.fixture
def saxpy(tmp_path):
    """A copy of saxpy whose workbench.toml `edit(old, new)` changes; returns (root, edit)."""
    root = tmp_path / "saxpy"
    shutil.copytree(SAXPY, root, ignore=shutil.ignore_patterns("target"))
    manifest = root / "workbench.toml"

    def edit(old: str, new: str) -> int:
        """Replace `old` (once) and return the 1-based line where `new` starts."""
        text = manifest.read_text()
        assert old in text, old
        manifest.write_text(text.replace(old, new, 1))
        return text[: text.index(old)].count("\n") + 1

    return root, edit


def check(root: Path, capsys, *extra: str) -> tuple[int, str]:
    code = main(["check", str(root), *extra])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.err


def located(err: str) -> int:
    match = re.search(r"workbench\.toml:(\d+)", err)
    assert match, err
    return int(match.group(1))


def _in_arg(name: str, key: str, value: str) -> tuple[str, str]:
    """(old, new) replacing `key = ...` in the [[kernel.arg]] named `name`."""
    text = (SAXPY / "workbench.toml").read_text()
    block = text[text.index(f'name = "{name}"') :]
    line = next(line for line in block.splitlines() if line.startswith(f"{key} = "))
    return f'name = "{name}"' + block[len(f'name = "{name}"') : block.index(line)] + line, (
        f'name = "{name}"' + block[len(f'name = "{name}"') : block.index(line)] + f"{key} = {value}"
    )


@pytest.mark.parametrize(
    ("arg", "key", "value", "words"),
    [
        ("x", "length", "-5", ["buffer 'x'", "is -5", "must not be negative"]),
        ("x", "length", '"n - 2000000"', ["buffer 'x'", "is -951424 at n=1048576", "must not be negative"]),
        ("y", "length", '"n * 0"', ["buffer 'y'", "is 0 at n=1048576", "writes it (direction inout)"]),
        ("x", "length", '"n * 2**40"', ["buffer 'x'", "more than the", "of memory here"]),
        ("n", "value", '"n - 2000000"', ["scalar 'n'", "does not fit a u32"]),
        ("n", "value", '"2**32"', ["scalar 'n'", "4294967296", "does not fit a u32"]),
        ("a", "value", '"1e300"', ["scalar 'a'", "does not fit a finite f32"]),
        ("n", "value", '"n / 3"', ["scalar 'n'", "not a whole number for a u32"]),
        ("x", "length", '"n / 0"', ["buffer 'x'", "division by zero"]),
        ("x", "length", '"pow2(100000000)"', ["buffer 'x'", "pow2", "between 0 and 64"]),
        ("x", "length", '"2 ** 10 ** 10"', ["buffer 'x'", "exponent", "too large"]),
    ],
)
def test_check_rejects_bad_values_at_the_arguments_line(saxpy, capsys, arg, key, value, words):
    root, edit = saxpy
    old, new = _in_arg(arg, key, value)
    edit(old, new)
    expected_line = next(
        number
        for number, line in enumerate((root / "workbench.toml").read_text().splitlines(), start=1)
        if line == f"{key} = {value}"
    )
    code, err = check(root, capsys)
    assert code == 2, err
    assert located(err) == expected_line, err
    for word in words:
        assert word in err, (word, err)


@pytest.mark.parametrize(
    ("arg", "key", "value", "words"),
    [
        ("x", "length", "-5", ["buffer 'x'", "must not be negative"]),
        ("a", "value", '"1e39"', ["scalar 'a'", "does not fit a finite f32"]),  # the same on every backend
    ],
)
def test_bad_values_also_stop_a_run_before_building(saxpy, capsys, arg, key, value, words):
    root, edit = saxpy
    old, new = _in_arg(arg, key, value)
    edit(old, new)
    code = main(["run", str(root), "--backend", "cpu", "--cache-dir", str(root / "no-cache")])
    err = capsys.readouterr().err
    assert code == 2 and located(err) and all(word in err for word in words), err
    assert not (root / "no-cache").exists()  # nothing was built


def test_a_crate_folder_that_does_not_exist_is_named_at_its_line(saxpy, capsys):
    """`crate = "nope"` passed `check`, and every build then failed with "cpu build could not run:
    [Errno 2] No such file or directory: PosixPath('.../nope')"."""
    root, edit = saxpy
    line = edit('crate = "."', 'crate = "nope"')
    code, err = check(root, capsys)
    assert code == 2 and located(err) == line, err
    assert "project.crate: folder 'nope' does not exist" in err
    code = main(["build", str(root), "--backend", "cpu", "--cache-dir", str(root / "no-cache")])
    err = capsys.readouterr().err
    assert code == 2 and located(err) == line and "Errno" not in err, err
    assert not (root / "no-cache").exists()  # nothing was built


@pytest.mark.parametrize(
    ("target", "says"),
    [
        ("reference", "'reference' is a folder, not a file"),
        ("/dev/null", "'/dev/null' is not a regular file"),
    ],
)
def test_a_reference_that_is_a_folder_or_a_device_is_named_as_such(saxpy, capsys, target, says):
    """It exists: "file 'reference' does not exist" sent the user looking for a missing file."""
    root, edit = saxpy
    line = edit('wgsl = "reference/saxpy.wgsl"', f'wgsl = "{target}"')
    code, err = check(root, capsys)
    assert code == 2 and located(err) == line, err
    assert f"kernel[0].reference.wgsl: {says}" in err and "does not exist" not in err, err


@pytest.mark.parametrize(("where", "says"), [("/dev/null", "is not a folder"), ("nowhere", "does not exist")])
def test_an_artifacts_path_that_is_no_folder_says_which(saxpy, capsys, tmp_path, where, says):
    """`run --artifacts /dev/null` said "does not exist" of a path that exists."""
    root, _edit = saxpy
    path = where if where.startswith("/") else str(tmp_path / where)
    code = main(["run", str(root), "--backend", "cpu", "--artifacts", path, "--no-record"])
    err = capsys.readouterr().err
    assert code == 2 and f"artifact folder {path} {says}" in err, err


def test_a_manifest_that_is_not_utf8_is_reported_at_its_line(saxpy, capsys):
    """Was "workbench.toml: not UTF-8 text (invalid continuation byte at byte 1626)": no line."""
    root, _edit = saxpy
    manifest = root / "workbench.toml"
    lines = manifest.read_bytes().count(b"\n")
    manifest.write_bytes(manifest.read_bytes() + "# caf\xe9\n".encode("latin-1"))
    code, err = check(root, capsys)
    assert code == 2 and located(err) == lines + 1, err
    assert "not UTF-8 text: byte 0xe9 at column 6" in err, err


@pytest.mark.parametrize("kind", ["folder", "fifo", "device"])
def test_a_workbench_toml_that_is_no_file_is_named_as_such(tmp_path, capsys, kind):
    """A folder, FIFO or device named workbench.toml was "not a kernel project: it has no
    workbench.toml"; it is named for what it is, and a FIFO is never opened (that would wait)."""
    import os

    root = tmp_path / "p"
    root.mkdir()
    manifest = root / "workbench.toml"
    if kind == "folder":
        manifest.mkdir()
    elif kind == "fifo":
        os.mkfifo(manifest)
    else:
        manifest.symlink_to("/dev/zero")
    code, err = check(root, capsys)
    what = "a folder" if kind == "folder" else "not a regular file"
    assert code == 2 and f"{manifest} is {what}; a kernel project's workbench.toml is a text file" in err, err


def test_an_unclosed_array_is_reported_where_it_opened(saxpy, capsys):
    root, edit = saxpy
    line = edit(
        'threads = ["threads"]\ngrid = ["ceil_div(n, threads * vector)"]',
        'threads = ["threads"\ngrid = ["ceil_div(n, threads * vector)"]',
    )
    code, err = check(root, capsys)
    assert code == 2 and located(err) == line, err
    assert "not valid TOML" in err and f"opened at line {line}" in err


def test_an_unclosed_inline_table_and_string_are_reported_where_they_opened():
    text = 'a = 1\nb = """never closed\nc = 2\n\n[x]\n'
    with pytest.raises(Exception, match=r"workbench\.toml:2: not valid TOML: Unterminated string"):
        parse_manifest(text, "workbench.toml")
    text = "[project]\nname = [1,\n\n[[kernel]]\nname = 'k'\n"
    with pytest.raises(Exception, match=r"workbench\.toml:2: not valid TOML"):
        parse_manifest(text, "workbench.toml")


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        ("rtol = 1e-6", "rtol = true", ["check.rtol", "got true"]),
        ("max_ulp = 1", "max_ulp = false", ["got false"]),
        ('direction = "in"', "direction = [1, true]", ['got [1, true]']),
        ("init = { kind = \"random\", low = -1.0, high = 1.0 }", "init = { kind = \"random\", low = nan, high = 1.0 }",
         ["init.low", "expected a finite number, got nan"]),
        ("init = { kind = \"random\", low = -1.0, high = 1.0 }", "init = { kind = \"linspace\", start = 0.0, stop = inf }",
         ["init.stop", "got inf"]),
    ],
)  # fmt: skip
def test_messages_use_tomls_spelling(saxpy, capsys, old, new, words):
    root, edit = saxpy
    line = edit(old, new)
    code, err = check(root, capsys)
    assert code == 2 and located(err) == line, err
    assert "True" not in err and "False" not in err
    for word in words:
        assert word in err, (word, err)


def test_size_that_is_not_an_integer_expression_shows_the_kernels_sizes(capsys):
    code = main(["run", str(SAXPY), "--size", "n=abc"])
    err = capsys.readouterr().err
    assert code == 2 and "sizes are integer expressions" in err and "kernel 'saxpy' has sizes: n" in err


def test_check_lists_a_prebuilt_only_rust_gpu_backend(tmp_path, capsys):
    root = tmp_path / "prebuilt"
    (root / "spirv").mkdir(parents=True)
    (root / "main.wgsl").write_text(
        "@group(0) @binding(0) var<storage, read_write> y: array<u32>;\n"
        "@compute @workgroup_size(64) fn main() { y[0] = 1u; }\n"
    )
    (root / "workbench.toml").write_text(
        '[project]\nname = "p"\n[backends.rust-gpu]\nprebuilt = "spirv"\n'
        '[[kernel]]\nname = "k"\n[kernel.sizes]\nn = 64\n'
        '[[kernel.arg]]\nname = "y"\nkind = "buffer"\ntype = "u32"\nlength = "n"\ndirection = "out"\n'
        'binding = 0\n[kernel.launch]\nthreads = [64]\ngrid = [1]\n[kernel.reference]\nwgsl = "main.wgsl"\n'
    )
    code = main(["check", str(root), "--json"])
    info = json.loads(capsys.readouterr().out)
    assert code == 0 and info["kernels"][0]["backends"] == ["rust-gpu", "wgsl"] and info["problems"] == []
    # Without its binding the buffer cannot reach the WGSL or the SPIR-V: an error, in --json too.
    manifest = root / "workbench.toml"
    manifest.write_text(manifest.read_text().replace("binding = 0\n", ""))
    code = main(["check", str(root), "--json"])
    info = json.loads(capsys.readouterr().out)
    assert code == 2 and len(info["problems"]) == 1 and "binding" in info["problems"][0]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("pow2(10**9)", ["pow2", "between 0 and 64"]),
        ("2**10**9", ["exponent", "too large"]),
        ("(10**64)**64", ["too large"]),
        ("int(1e308 * 10)", ["inf"]),
        ("ceil(1e400)", ["inf"]),
        ("n % 0", ["division by zero"]),
        ("ceil_div(n, 0.5)", ["division by zero"]),
        ("0 ** -1", ["division by zero"]),
        ("-" * 200 + "1", ["nested more than"]),
        ("(" * 300 + "1" + ")" * 300, ["nested"]),
        ("1" * 2000, ["characters long"]),
        ("(-8) ** 0.5", ["fractional power"]),
    ],
)
def test_expressions_are_bounded(text, words):
    error, peak = peak_bytes(expr.evaluate, text, {"n": 5})
    assert isinstance(error, expr.ExprError), error
    assert peak < MAX_EXPRESSION_BYTES, peak  # refused before computing anything large
    for word in words:
        assert word in str(error), (word, str(error))
    assert len(str(error)) < 300
