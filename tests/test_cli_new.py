"""`workbench new`: a project made from a template is renamed throughout, builds and verifies."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from workbench.errors import WorkbenchError
from workbench.profile.sessions.store import SessionStore
from workbench.templates import create_project, rename, template_names
from workbench.trust_store import is_trusted

REPO = Path(__file__).resolve().parent.parent

#: Small enough for a quick run on cpu and llvmpipe, large enough for several workgroups.
SIZE = "n=4096"


@pytest.fixture
def config_dir(tmp_path_factory, monkeypatch):
    """A private trust list (a new project is trusted): never the user's."""
    path = tmp_path_factory.mktemp("config")
    monkeypatch.setenv("WB_CONFIG_DIR", str(path))
    return path


def workbench(*args, cwd=None, timeout=600):
    return subprocess.run(
        [sys.executable, "-m", "workbench", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
        env=dict(os.environ),
    )


def files_naming(root: Path, word: str) -> list[str]:
    """Every file or line under `root` that contains `word` in any case (as `grep -ri` finds it),
    outside the kernel API crate (placed as the workbench ships it, never renamed)."""
    found = []
    for path in root.rglob("*"):
        if (root / "gpu_kernel") in [path, *path.parents]:
            continue
        if word in path.name.lower():
            found.append(str(path))
        if path.is_file():
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if word in line.lower():
                    found.append(f"{path}:{n}: {line}")
    return found


def run_verified(project: Path, db: Path, backends: str = "cpu,wgsl") -> dict:
    result = workbench("run", project, "--backend", backends, "--size", SIZE, "--json", "--db", db)
    assert result.returncode == 0, result.stderr + result.stdout
    report = json.loads(result.stdout)
    rows = {r["backend"]: r for r in report["results"]}
    assert set(rows) == set(backends.split(","))
    for backend, row in rows.items():
        assert row["status"] == "ok", (backend, row.get("error"))
        assert row["verified"] or row["check"]["is_reference"], (backend, row["check"])
    return report


def test_new_from_saxpy_is_vadd_everywhere_and_builds_and_verifies(tmp_path, config_dir):
    result = workbench("new", "vadd", "--template", "saxpy", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    root = tmp_path / "vadd"
    assert str(root) in result.stdout
    assert files_naming(root, "saxpy") == []
    manifest = tomllib.loads((root / "workbench.toml").read_text())
    kernel = manifest["kernel"][0]
    assert manifest["project"]["name"] == kernel["name"] == "vadd"
    assert kernel["entry"] == {"cpu": "vadd_cpu", "rust-gpu": "spirv_entry::vadd_spirv", "wgsl": "main"}
    assert kernel["reference"] == {"cuda-c": "reference/vadd.cu", "wgsl": "reference/vadd.wgsl"}
    assert tomllib.loads((root / "Cargo.toml").read_text())["package"]["name"] == "vadd"
    assert sorted(p.name for p in (root / "reference").iterdir()) == ["vadd.cu", "vadd.wgsl"]
    assert 'extern "C" __global__ void vadd(' in (root / "reference" / "vadd.cu").read_text()
    lib = (root / "src" / "lib.rs").read_text()
    assert 'extern "C" fn vadd_cpu(' in lib and 'extern "ptx-kernel" fn vadd(' in lib
    assert is_trusted(root)  # our own template: the window builds it without asking

    check = workbench("check", root, "--json")
    assert check.returncode == 0, check.stderr
    assert json.loads(check.stdout)["project"] == "vadd"

    report = run_verified(root, tmp_path / "sessions.db")
    assert report["project"] == "vadd"
    # The library cargo built is the new crate's (a saxpy library would be named libsaxpy.so).
    cpu = next(r for r in report["results"] if r["backend"] == "cpu")
    assert Path(cpu["provenance"]["artifact"]["path"]).name == "libvadd.so"


def test_the_blank_template_builds_and_verifies(tmp_path, config_dir):
    result = workbench("new", "scale", cwd=tmp_path)  # blank is the default
    assert result.returncode == 0, result.stderr
    root = tmp_path / "scale"
    assert files_naming(root, "blank") == []
    manifest = tomllib.loads((root / "workbench.toml").read_text())
    assert manifest["project"]["name"] == "scale" and len(manifest["kernel"][0]["arg"]) == 2
    assert set(manifest["kernel"][0]["reference"]) == {"cuda-c", "wgsl"}
    run_verified(root, tmp_path / "sessions.db")


def test_two_projects_of_one_name_are_recorded_apart(tmp_path, config_dir):
    db = tmp_path / "sessions.db"
    roots = [tmp_path / "a" / "vadd", tmp_path / "b" / "vadd"]
    for root in roots:
        assert workbench("new", "vadd", root).returncode == 0
        run_verified(root, db, backends="cpu")
    with SessionStore(db) as store:
        runs = [store.get_run(row["id"], samples=False) for row in store.list_runs()]
    assert {run["project"] for run in runs} == {"vadd"}
    assert {run["detail"]["provenance"]["project_dir"] for run in runs} == {str(r.resolve()) for r in roots}


@pytest.mark.parametrize("template", template_names())
def test_every_template_is_renamed_throughout(tmp_path, config_dir, template):
    root = create_project("my_kernel", template, tmp_path / "mine")
    assert root == (tmp_path / "mine").resolve()
    assert files_naming(root, template) == []
    manifest = tomllib.loads((root / "workbench.toml").read_text())
    assert manifest["project"]["name"] == manifest["kernel"][0]["name"] == "my_kernel"
    assert [p.name for p in tmp_path.iterdir()] == ["mine"]  # no staging folder left behind


def test_rename_keeps_the_case_of_each_occurrence():
    text = "// SAXPY: saxpy_at, Saxpy and REDUCTION_SCRATCH"
    assert rename(text, "saxpy", "vadd") == "// VADD: vadd_at, Vadd and REDUCTION_SCRATCH"


@pytest.mark.parametrize("order", ["option between", "option last", "option first"])
def test_dir_may_follow_the_template_option_as_the_usage_says(tmp_path, config_dir, order):
    """`workbench new NAME [--template T] [DIR]`: with the option between NAME and DIR, Python
    3.11's argparse called DIR an unrecognized argument and made nothing."""
    dest = tmp_path / "here"
    args = {
        "option between": ["vadd", "--template", "saxpy", dest],
        "option last": ["vadd", dest, "--template", "saxpy"],
        "option first": ["--template", "saxpy", "vadd", dest],
    }[order]
    done = workbench("new", *args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"created vadd (from the saxpy template) in {dest}" in done.stdout
    assert (dest / "workbench.toml").is_file() and not (tmp_path / "vadd").exists()
    done = workbench("new", "vsub", tmp_path / "there", "extra", cwd=tmp_path)  # one DIR at most
    # Said with the sub-command's usage (was `usage: workbench [-h] [--version] [--self-test] COMMAND ...`).
    assert done.returncode == 2 and "workbench new: error: unrecognized arguments: extra" in done.stderr, (
        done.stderr
    )
    assert "usage: workbench new " in done.stderr


def test_a_read_only_install_makes_a_writable_project(tmp_path, config_dir):
    """The workbench installed where its files are read-only (a tarball unpacked and made
    read-only, a packaged store): `new` copied those modes, so the rename failed for a user
    ("Permission denied" on the copy's src/lib.rs) and, for root, the new project could not be
    edited. Every file and folder of the new project is its owner's to write."""
    import shutil
    import stat

    install = tmp_path / "install"
    skip = shutil.ignore_patterns("target", "__pycache__")
    shutil.copytree(REPO / "workbench", install / "workbench", ignore=skip)
    shutil.copytree(REPO / "resources", install / "resources", ignore=skip, symlinks=True)
    read_only = ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    installed = [install, *install.rglob("*")]
    for path in installed:
        if not path.is_symlink():
            path.chmod(path.stat().st_mode & read_only)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "workbench", "new", "vsub", "--template", "saxpy", str(tmp_path / "vsub")],
            capture_output=True, text=True, cwd=tmp_path, timeout=300,
            env=dict(os.environ, PYTHONPATH=str(install)),
        )  # fmt: skip
    finally:
        for path in installed:
            if not path.is_symlink():
                path.chmod(path.stat().st_mode | stat.S_IWUSR)
    assert done.returncode == 0, done.stderr
    project = tmp_path / "vsub"
    not_writable = [
        str(p.relative_to(project))
        for p in [project, *project.rglob("*")]
        if not p.is_symlink() and not p.stat().st_mode & stat.S_IWUSR
    ]
    assert not_writable == []
    assert "vsub_cpu" in (project / "src" / "lib.rs").read_text()  # renamed, as ever


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("Vadd", "snake case"),
        ("my-kernel", "e.g. 'my_kernel'"),
        ("1st", "starting with a letter"),
        ("fn", "a Rust keyword"),
        ("std", "a name Cargo reserves"),
        ("core", "a name Cargo reserves"),
        ("alloc", "a name Cargo reserves"),
        ("test", "a name Cargo reserves"),
        ("proc_macro", "a name Cargo reserves"),
        ("gpu_kernel", "the kernel API crate's name"),
        ("match", "a Rust keyword"),
        ("float", "C/CUDA keyword"),
        ("x" * 65, "longer than 64"),
    ],
)
def test_an_invalid_name_is_refused_and_nothing_is_made(tmp_path, config_dir, name, says):
    result = workbench("new", name, "--template", "saxpy", cwd=tmp_path)
    assert result.returncode == 2
    assert says in result.stderr and "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_an_existing_folder_with_files_is_refused_and_left_alone(tmp_path, config_dir):
    mine = tmp_path / "vadd"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    result = workbench("new", "vadd", cwd=tmp_path)
    assert result.returncode == 2
    assert f"{mine} already exists and is not empty" in result.stderr
    assert [p.name for p in mine.iterdir()] == ["notes.txt"] and (mine / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["vadd"]

    (tmp_path / "file").write_text("")
    result = workbench("new", "vadd", tmp_path / "file")
    assert result.returncode == 2 and "is not a folder" in result.stderr


def test_an_empty_folder_is_used(tmp_path, config_dir):
    empty = tmp_path / "here"
    empty.mkdir()
    inode = empty.stat().st_ino
    assert create_project("vadd", "blank", empty) == empty.resolve()
    assert (empty / "workbench.toml").is_file()
    assert empty.stat().st_ino == inode  # the same folder (a shell inside it is still inside it)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["here"]  # no staging folder left


def test_an_unknown_template_lists_the_known_ones(tmp_path, config_dir):
    result = workbench("new", "vadd", "--template", "nope", cwd=tmp_path)
    assert result.returncode == 2 and "blank" in result.stderr and "saxpy" in result.stderr
    with pytest.raises(WorkbenchError, match=re.escape("unknown template 'nope'; choose one of: blank, ")):
        create_project("vadd", "nope", tmp_path / "x")


@pytest.mark.parametrize(
    ("template", "name"), [("blank", "vadd"), ("saxpy", "aaa")]
)  # after / before gpu_kernel
def test_the_first_build_leaves_the_new_cargo_lock_as_it_is(tmp_path, config_dir, template, name):
    """Cargo keeps Cargo.lock's packages sorted by name: a renamed package left where the
    template's name was made the first build rewrite the file, which the window's folder watch
    took for an edit, restarting (cancelling) the new project's first Run."""
    from workbench.build import build_project
    from workbench.project import Project

    root = create_project(name, template, tmp_path / name)
    before = (root / "Cargo.lock").read_text()
    (result,) = build_project(Project.open(root), ["cpu"], tmp_path / "cache")
    assert result.status == "ok", result.diagnostics
    assert (root / "Cargo.lock").read_text() == before


@pytest.mark.parametrize(
    ("where", "says"),
    [
        ("x" * 300, "over this file system's NAME_MAX of 255"),
        ("x" * 250, "a hidden folder named after it"),
        ("/".join(["x" * 200] * 25), "over this system's PATH_MAX of 4096"),
    ],
)
def test_a_path_over_path_max_or_a_name_over_name_max_is_refused_clearly(tmp_path, config_dir, where, says):
    result = workbench("new", "vadd", tmp_path / where)
    assert result.returncode == 2, result.stderr
    assert says in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert list(tmp_path.iterdir()) == []  # nothing made


@pytest.mark.slow
@pytest.mark.parametrize("template", ["blank", "saxpy"])
def test_the_kernel_api_crate_is_a_real_copy_and_plain_cargo_builds_and_tests(tmp_path, config_dir, template):
    """The project holds the workbench's own crate, as shipped (not renamed: its sources name the
    examples), so `cargo build` / `cargo test` work in it without the workbench, wherever it goes."""
    from workbench.kernel_api import crate_dir

    root = create_project("vadd", template, tmp_path / "vadd")
    crate = root / "gpu_kernel"
    assert crate.is_dir() and not crate.is_symlink()
    shipped = crate_dir()
    copied = sorted(p.relative_to(crate) for p in crate.rglob("*") if p.is_file())
    assert copied == sorted(
        p.relative_to(shipped) for p in shipped.rglob("*") if p.is_file() and "target" not in p.parts
    )
    assert all((crate / rel).read_bytes() == (shipped / rel).read_bytes() for rel in copied)
    moved = tmp_path / "elsewhere" / "vadd"  # a copy made without the workbench builds as well
    moved.parent.mkdir()
    subprocess.run(["cp", "-r", str(root), str(moved)], check=True)
    env = dict(os.environ, CARGO_TARGET_DIR=str(tmp_path / "target"))
    for command in (["cargo", "build", "--offline"], ["cargo", "test", "--offline"]):
        done = subprocess.run(command, cwd=moved, capture_output=True, text=True, timeout=600, env=env)
        assert done.returncode == 0, done.stderr[-3000:]
    assert "test result: ok" in done.stdout
