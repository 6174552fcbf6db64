"""The kernel API crate reaches every project without a link (issue 35, item 1).

Projects copied as `cp -r` copies (the relative `gpu_kernel` link kept, now leading nowhere) build
through the real workbench build, which places a copy of the workbench's crate and says so; a
crate that is there but broken or of another API version stops the build with one diagnostic
naming the cause and the fix, before cargo runs, and the user's files are left as they were.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.build import build_project
from workbench.kernel_api import KERNEL_API_VERSION, check_crate, crate_dir, ensure_crate
from workbench.project import Project, examples_dir

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p.parent.name for p in examples_dir().glob("*/workbench.toml"))


def cp_r(name: str, dest: Path) -> Path:
    """The example copied by the real `cp -r` (symbolic links copied as links)."""
    subprocess.run(["cp", "-r", str(examples_dir() / name), str(dest)], check=True)
    return dest


def digest(root: Path) -> str:
    """Every file and link under `root` (links not followed): "the user's files are as they were"."""
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        h.update(str(path.relative_to(root)).encode() + b"\0")
        if path.is_symlink():
            h.update(b"link:" + os.readlink(path).encode())
        elif path.is_file():
            h.update(path.read_bytes())
    return h.hexdigest()


def same_as_shipped(crate: Path) -> bool:
    shipped = crate_dir()
    files = sorted(
        p.relative_to(shipped) for p in shipped.rglob("*") if p.is_file() and "target" not in p.parts
    )
    return files == sorted(p.relative_to(crate) for p in crate.rglob("*") if p.is_file()) and all(
        (crate / f).read_bytes() == (shipped / f).read_bytes() for f in files
    )


@pytest.mark.slow
@pytest.mark.parametrize("name", EXAMPLES)
def test_every_example_copied_with_cp_r_builds_on_cpu(tmp_path, shared_cache_dir, name):
    root = cp_r(name, tmp_path / name)
    link = root / "gpu_kernel"
    assert link.is_symlink() and not link.exists()  # what `cp -r` leaves: a link leading nowhere
    (result,) = build_project(Project.open(root), ["cpu"], shared_cache_dir, timeout_s=900)
    assert result.status == "ok", [d["message"] for d in result.diagnostics]
    notes = [
        d["message"]
        for d in result.diagnostics
        if "placed a copy of the workbench's kernel API crate" in d["message"]
    ]
    assert len(notes) == 1 and "../../crates/gpu_kernel" in notes[0], result.diagnostics
    assert link.is_dir() and not link.is_symlink() and same_as_shipped(link)
    assert check_crate(root) is None


def test_a_missing_crate_is_placed_once_when_backends_build_together(tmp_path, shared_cache_dir):
    root = cp_r("saxpy", tmp_path / "saxpy")
    (root / "gpu_kernel").unlink()  # a zip or a clone without the crate: nothing there at all
    before = digest(root)
    results = build_project(Project.open(root), ["cpu", "cpu-sim"], shared_cache_dir, timeout_s=900)
    assert [r.status for r in results] == ["ok", "ok"], [r.diagnostics for r in results]
    placed = [d for r in results for d in r.diagnostics if "placed a copy" in d["message"]]
    assert len(placed) == 1 and "it was missing" in placed[0]["message"]
    # A note's text is said once as a note: `workbench build` prints `rendered` ("note: placed ..."),
    # never "note: note: placed ..." (the prefix in the message as well as in the rendering).
    assert placed[0]["severity"] == "note", placed[0]
    assert placed[0]["message"].startswith("placed a copy"), placed[0]["message"]
    assert placed[0]["rendered"] == f"note: {placed[0]['message']}", placed[0]["rendered"]
    assert same_as_shipped(root / "gpu_kernel")
    # Nothing else of the project changed (Cargo.lock included).
    (root / "gpu_kernel").rename(tmp_path / "placed")
    assert digest(root) == before


def broken(kind: str, crate: Path) -> str:
    """Break the project's crate at `crate` one way; returns what the diagnostic must say."""
    if kind == "file":
        crate.write_text("not a crate\n")
        return "it is a file, not the crate's folder"
    (crate / "src").mkdir(parents=True)
    (crate / "src" / "lib.rs").write_text("// mine\n")
    toml = crate / "Cargo.toml"
    if kind == "no Cargo.toml":
        return "it has no Cargo.toml"
    if kind == "unreadable":
        toml.write_bytes(b'[package]\nname = "gpu_kernel\xff"\n')  # not UTF-8: cargo cannot read it either
        return "its Cargo.toml cannot be read"
    if kind == "Cargo.toml a folder":
        toml.mkdir()
        return "its Cargo.toml cannot be read"
    if kind == "not TOML":
        toml.write_text("[package\n")
        return "its Cargo.toml is not valid TOML"
    if kind == "wrong name":
        toml.write_text('[package]\nname = "my_api"\nversion = "0.1.0"\n')
        return "its Cargo.toml is the package 'my_api', not 'gpu_kernel'"
    if kind == "no lib.rs":
        toml.write_text('[package]\nname = "gpu_kernel"\nversion = "0.1.0"\n')
        (crate / "src" / "lib.rs").unlink()
        return "it has no src/lib.rs"
    if kind == "newer":
        toml.write_text(
            f'[package]\nname = "gpu_kernel"\n[package.metadata.workbench]\nkernel-api = {KERNEL_API_VERSION + 1}\n'
        )
        return f"it is kernel API version {KERNEL_API_VERSION + 1}, and this workbench builds version {KERNEL_API_VERSION}; update the workbench"
    if kind == "older":
        toml.write_text('[package]\nname = "gpu_kernel"\n[package.metadata.workbench]\nkernel-api = 0\n')
        return f"it is kernel API version 0, and this workbench builds version {KERNEL_API_VERSION}; port the kernel"
    raise AssertionError(kind)


KINDS = [
    "file",
    "no Cargo.toml",
    "unreadable",
    "Cargo.toml a folder",
    "not TOML",
    "wrong name",
    "no lib.rs",
    "newer",
    "older",
]


@pytest.mark.parametrize("kind", KINDS)
def test_a_broken_crate_is_one_diagnostic_with_the_fix_and_nothing_is_written(tmp_path, kind):
    root = cp_r("saxpy", tmp_path / "saxpy")
    (root / "gpu_kernel").unlink()
    says = broken(kind, root / "gpu_kernel")
    before = digest(root)
    results = build_project(Project.open(root), ["cpu", "cpu-sim", "nvptx"], tmp_path / "cache")
    for result in results:
        assert result.status == "error"
        errors = [d for d in result.diagnostics if d["severity"] == "error"]
        assert len(errors) == 1, errors
        message = errors[0]["message"]
        assert says in message and str(root / "gpu_kernel") in message, message
        assert "move it aside" in message or "correct" in message  # the fix
        assert (errors[0]["file"], errors[0]["line"]) == ("Cargo.toml", 23)  # `gpu_kernel = { path = ...}`
        assert "failed to read" not in result.log and "$ " not in result.log  # cargo never ran
    assert digest(root) == before  # the user's files, as they were


def test_workbench_check_says_what_a_build_will_do(tmp_path):
    def check(root: Path) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "workbench", "check", str(root)], capture_output=True,
                              text=True, timeout=120, cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)))  # fmt: skip

    root = cp_r("saxpy", tmp_path / "saxpy")
    done = check(root)
    assert done.returncode == 0, done.stderr
    assert "note: " in done.stderr and "which does not exist here" in done.stderr
    assert "a build replaces the link with a copy of the workbench's crate" in done.stderr
    assert (root / "gpu_kernel").is_symlink()  # check writes nothing
    (root / "gpu_kernel").unlink()
    broken("wrong name", root / "gpu_kernel")
    done = check(root)
    assert done.returncode == 2 and "error: " in done.stderr and "'my_api'" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_path_outside_the_project_is_not_written_to(tmp_path):
    root = cp_r("saxpy", tmp_path / "saxpy")
    toml = root / "Cargo.toml"
    toml.write_text(toml.read_text().replace('path = "gpu_kernel"', 'path = "../nowhere/gpu_kernel"'))
    problem = ensure_crate(root)
    assert problem is not None and not problem.placeable
    assert "its folder" in problem.message and "correct `path`" in problem.message
    assert not (tmp_path / "nowhere").exists()


def test_a_crate_that_declares_no_version_is_version_1(tmp_path):
    """Projects copied before versions were declared hold a crate without the key: still built."""
    root = cp_r("saxpy", tmp_path / "saxpy")
    (root / "gpu_kernel").unlink()
    assert ensure_crate(root) is None
    toml = root / "gpu_kernel" / "Cargo.toml"
    toml.write_text(toml.read_text().replace("kernel-api = ", "# kernel-api = "))
    assert (check_crate(root) is None) == (KERNEL_API_VERSION == 1)
