"""The desktop packaging (packaging/build.sh, packaging/workbench.spec, the .desktop entry) is
consistent, and the frozen-bundle plumbing (`workbench.frozen`) works with the real CLI and worker.

The PyInstaller build itself is run by the README's test command before pytest (the one-folder
bundle, `build.sh --bundle-only`, then its self-test in a bare environment: packaging/bootstrap.sh);
here: that the command does so, and that the bundle check fails on what a project would miss.
"""

from __future__ import annotations

import ast
import configparser
import importlib.util
import json
import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

import workbench
from tests.waits import HANG_GUARD_S
from workbench import frozen
from workbench import project as project_module
from workbench.run.pool import WorkerProcess

REPO = Path(__file__).resolve().parent.parent
PACKAGING = REPO / "packaging"
BUILD_SH = PACKAGING / "build.sh"
SPEC = PACKAGING / "workbench.spec"
DESKTOP = REPO / "resources" / "rust-gpu-workbench.desktop"
ICONS = REPO / "resources" / "icons"
NAME = "rust-gpu-workbench"


def shell_value(name: str) -> str:
    match = re.search(rf"^{name}=(\S+)$", BUILD_SH.read_text(), re.M)
    assert match, f"build.sh does not set {name}"
    return match.group(1).strip("\"'")


def spec_constant(name: str) -> str:
    tree = ast.parse(SPEC.read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError(f"the spec does not set {name}")


def desktop_entry() -> configparser.SectionProxy:
    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str  # keys are case-sensitive
    parser.read_string(DESKTOP.read_text())
    return parser["Desktop Entry"]


def test_spec_bundles_what_the_workbench_reads_at_run_time():
    text = SPEC.read_text()
    ast.parse(text)  # valid Python
    assert spec_constant("NAME") == NAME == shell_value("NAME")
    # Every source of a datas entry exists, and the examples land where examples_dir() looks.
    sources = re.findall(r'\(str\(ROOT / (.+?)\), "([^"]+)"\)', text)
    assert sources, "no data entries found in the spec"
    for expr, _dest in sources:
        parts = re.findall(r'"([^"]+)"', expr)
        assert (REPO.joinpath(*parts)).exists(), f"spec data {parts} does not exist"
    assert ('"resources" / "examples"', "resources/examples") in [(e, d) for e, d in sources]
    here = Path(project_module.__file__).resolve().parent.parent
    assert project_module.examples_dir() == here / "resources" / "examples"
    entry = re.search(r'ROOT / "packaging" / "(\w+\.py)"', text).group(1)
    assert (PACKAGING / entry).is_file()
    assert 'collect_submodules("workbench")' in text  # sub-commands and runtimes load by name
    for needed in ('"wgpu"', '"pycuda"'):
        assert needed in text


def test_build_script_is_valid_bash_and_matches_the_desktop_entry():
    subprocess.run(["bash", "-n", str(BUILD_SH)], check=True)
    assert os.access(BUILD_SH, os.X_OK), "packaging/build.sh must be executable"
    text = BUILD_SH.read_text()
    assert shell_value("INSTALL_DIR") == "/opt/$NAME"
    assert 'ln -s "$INSTALL_DIR/workbench" "$stage/usr/bin/workbench"' in text
    assert "resources/$NAME.desktop" in text and "resources/icons/$NAME.svg" in text
    # The version comes from workbench.__version__, which pyproject's dynamic version reads.
    assert '__version__ = "([^"]+)"' in text
    assert re.search(r'^__version__ = "([^"]+)"', Path(workbench.__file__).read_text(), re.M)
    assert 'version = { attr = "workbench.__version__" }' in (REPO / "pyproject.toml").read_text()
    # PyInstaller goes into its own venv, never into .venv or the test extra.
    assert "WB_BUILD_VENV" in text and ".venv/bin" not in text
    assert "pyinstaller" not in (REPO / "pyproject.toml").read_text().lower()
    # The README's test command builds the bundle alone (no .deb) and self-tests it bare; a
    # failure stops it (set -e; the self-test's status is kept and exited with).
    bootstrap = (PACKAGING / "bootstrap.sh").read_text()
    assert "bash packaging/build.sh --bundle-only" in bootstrap
    assert 'env -i PATH=/usr/bin:/bin HOME="$bare_home" QT_QPA_PLATFORM=offscreen' in bootstrap
    assert "dist/rust-gpu-workbench/workbench --self-test || status=$?" in bootstrap
    assert 'exit "$status"' in bootstrap and "set -euo pipefail" in bootstrap
    assert 'packaging/check_bundle.py "$bundle"' in text  # the build fails on a missing resource

    entry = desktop_entry()
    assert entry["Type"] == "Application"
    assert entry["Exec"].split()[0] == "workbench"
    assert entry["Icon"] == NAME
    assert (ICONS / f"{NAME}.svg").is_file()
    png = (ICONS / f"{NAME}.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    assert (width, height) == (256, 256)  # installed under hicolor/256x256
    assert "hicolor/256x256/apps" in text


def test_unquoted_here_documents_run_no_commands():
    """In `<<EOF` (unquoted) text, a backtick would run a command while writing the file."""
    text = BUILD_SH.read_text()
    bodies = re.findall(r"<<EOF\n(.*?)\nEOF\n", text, re.S)
    assert bodies, "build.sh writes DEBIAN/control from an unquoted here-document"
    for body in bodies:
        assert not re.search(r"(?<!\\)(`|\$\()", body), body  # escaped ones are written as is


def test_build_script_help_runs_without_building(tmp_path):
    done = subprocess.run(
        ["bash", str(BUILD_SH), "--help"], capture_output=True, text=True, timeout=HANG_GUARD_S
    )
    assert done.returncode == 0 and "--with-cuda" in done.stdout
    bad = subprocess.run(
        ["bash", str(BUILD_SH), "--bogus"], capture_output=True, text=True, timeout=HANG_GUARD_S
    )
    assert bad.returncode == 2 and "unknown option --bogus" in bad.stderr


def fake_bundle(root: Path) -> Path:
    """What the spec puts into `_internal/resources`: the folders `check_bundle.py` checks
    (examples, templates, crates, ceilings), links made real copies (as the spec's datas do)."""
    internal = root / NAME / "_internal" / "resources"
    tree = ast.parse((PACKAGING / "check_bundle.py").read_text())
    folders = next(
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "FOLDERS" for t in node.targets)
    )
    for folder in folders:
        shutil.copytree(
            REPO / "resources" / folder, internal / folder, ignore=shutil.ignore_patterns("target")
        )
    return root / NAME


def check_bundle(bundle: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(PACKAGING / "check_bundle.py"), str(bundle)],
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_the_bundle_check_fails_on_a_missing_crate_or_file(tmp_path):
    bundle = fake_bundle(tmp_path)
    done = check_bundle(bundle)
    assert done.returncode == 0, done.stderr
    projects = len(list((REPO / "resources").glob("*/*/workbench.toml")))
    assert f"{projects} projects with their kernel API crate" in done.stdout
    # PyInstaller dropping the links (issue 35): every project without its crate, each named.
    resources = bundle / "_internal" / "resources"
    for crate in resources.glob("*/*/gpu_kernel"):
        shutil.rmtree(crate)
    done = check_bundle(bundle)
    assert done.returncode == 1
    assert (
        f"missing from the bundle: {resources / 'examples' / 'saxpy' / 'gpu_kernel' / 'Cargo.toml'}"
        in done.stderr
    )
    assert "bundled project blank: the kernel API crate" in done.stderr
    assert "it does not exist" in done.stderr and "a project needs" in done.stderr
    # One file of the shipped crate missing is enough to fail.
    bundle = fake_bundle(tmp_path / "again")
    (bundle / "_internal" / "resources" / "crates" / "gpu_kernel" / "src" / "lib.rs").unlink()
    done = check_bundle(bundle)
    assert done.returncode == 1 and "crates/gpu_kernel/src/lib.rs" in done.stderr


def test_the_spec_turns_links_into_copies():
    """PyInstaller drops symbolic links to folders: the spec adds what each link leads to."""
    text = SPEC.read_text()
    assert "p.is_symlink()" in text and "datas.append((str(target), str(link.relative_to(ROOT))))" in text
    links = [p for p in (REPO / "resources").rglob("*") if p.is_symlink()]
    assert links and all(p.resolve().is_dir() for p in links)


def test_desktop_file_validates():
    validator = shutil.which("desktop-file-validate")
    if validator is None:
        pytest.skip("desktop-file-validate not installed (apt-get install desktop-file-utils)")
    done = subprocess.run([validator, str(DESKTOP)], capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert done.returncode == 0 and not done.stdout.strip(), done.stdout + done.stderr


# ------------------------------------------------------------------ workbench.frozen


def test_python_command_normal_and_frozen(monkeypatch):
    assert frozen.python_command("workbench.run.worker", "cpu") == [
        sys.executable, "-m", "workbench.run.worker", "cpu"
    ]  # fmt: skip
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", "/opt/rust-gpu-workbench/workbench")
    assert frozen.python_command("workbench.run.worker", "cpu") == [
        "/opt/rust-gpu-workbench/workbench", frozen.CHILD_FLAG, "workbench.run.worker", "cpu"
    ]  # fmt: skip
    assert frozen.install_dir() == Path("/opt/rust-gpu-workbench")


def test_children_get_the_users_library_path_back(monkeypatch):
    env = {"LD_LIBRARY_PATH": "/opt/b/_internal", "LD_LIBRARY_PATH_ORIG": "/usr/local/cuda/lib64"}
    frozen.restore_library_path(env)  # not frozen: untouched
    assert env["LD_LIBRARY_PATH"] == "/opt/b/_internal"
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    frozen.restore_library_path(env)
    assert env == {"LD_LIBRARY_PATH": "/usr/local/cuda/lib64"}
    env = {"LD_LIBRARY_PATH": "/opt/b/_internal"}
    frozen.restore_library_path(env)
    assert env == {}


def test_the_bundle_says_how_to_get_cuda_without_a_venv(monkeypatch):
    """The installed bundle told its user to run `.venv/bin/pip install -e '.[cuda]'` (doctor, the
    device list, a skipped nvptx run): a bundle has no .venv; pycuda comes with --with-cuda."""
    if importlib.util.find_spec("pycuda") is not None:
        pytest.skip("pycuda is installed here: its absence cannot be reported")
    from workbench.run.runtimes import cuda

    with pytest.raises(cuda.RuntimeFailure, match=r"\.venv/bin/pip install"):
        cuda._driver()  # from a checkout: the venv's way
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    with pytest.raises(cuda.RuntimeFailure) as failure:
        cuda._driver()
    assert ".venv" not in str(failure.value)
    assert "packaging/build.sh --with-cuda" in str(failure.value), failure.value


def test_child_module_dispatch_runs_the_device_probe_through_the_cli():
    """What a bundle does for `list_devices()`: `workbench --_child-module workbench.run.devices`."""
    done = subprocess.run(
        [sys.executable, "-m", "workbench", frozen.CHILD_FLAG, "workbench.run.devices", "--json"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["cpu"]["available"] and report["cpu"]["devices"]
    refused = subprocess.run(
        [sys.executable, "-m", "workbench", frozen.CHILD_FLAG, "json.tool"], capture_output=True, text=True
    )
    assert refused.returncode == 2 and "workbench module" in refused.stderr


def test_a_worker_started_through_the_dispatch_speaks_the_protocol():
    """The frozen worker command line, with this Python standing in for the bundle program."""
    worker = WorkerProcess(
        "cpu", command=[sys.executable, "-m", "workbench", frozen.CHILD_FLAG, "workbench.run.worker", "cpu"]
    )
    try:
        info = worker.request({"op": "devices"}, timeout_s=HANG_GUARD_S)[0]
        assert worker.alive and worker.info["runtime"] == "cpu" and worker.info["pid"] == worker.pid
        assert info["available"] and info["devices"][0]["spec"] == "cpu"
    finally:
        worker.shutdown()
