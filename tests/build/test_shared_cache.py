"""Shared caches are safe with real processes: the ceiling kernels built by two at once, the
folders of a build killed with SIGKILL swept (never a live process's), no `wb-xdg-*` per run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from tests.waits import HANG_GUARD_S, WORK_GUARD_S, wait_until
from workbench.build.adapters.host_rust import rustc
from workbench.build.scratch import LINES_PREFIX, OWNER, STAGING_PREFIX, OwnedDir, runtime_dir, sweep
from workbench.build.toolchains import detect

REPO = Path(__file__).resolve().parents[2]


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), **extra}
    return env


def _twice_at_once(code: str, args: list[str], timeout_s: float) -> list[str]:
    """Run `python -c code args` in two processes at once; each must succeed. Their outputs, stripped."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, *args],
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=timeout_s) for p in procs]
    for proc, (_out, err) in zip(procs, outs, strict=True):
        assert proc.returncode == 0, err
    return [out.strip() for out, _ in outs]


def _kill_tree(pid: int) -> list[psutil.Process]:
    """SIGKILL `pid` first (as a crash would), then what it had started (orphans now); returns
    those, for the caller to wait until they are gone."""
    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        children = []
    os.kill(pid, signal.SIGKILL)
    for child in children:
        try:
            child.kill()
        except psutil.Error:
            pass
    return children


@pytest.mark.slow
def test_two_processes_build_the_cpu_ceiling_kernels_into_one_fresh_cache(tmp_path):
    """Before: one of them failed with "linking with cc failed" (rustc's objects beside the output)."""
    if not rustc():
        pytest.skip("no host rustc")
    code = (
        "import sys\nfrom workbench.run.ceilings_probes import cpu_library\nprint(cpu_library(sys.argv[1]))\n"
    )
    paths = set(_twice_at_once(code, [str(tmp_path)], timeout_s=WORK_GUARD_S))
    assert len(paths) == 1 and Path(paths.pop()).is_file()
    leftovers = [p for p in (tmp_path / "ceilings").rglob("*") if p.name.startswith(STAGING_PREFIX)]
    assert not leftovers


def test_sweep_removes_what_a_killed_process_owned_and_keeps_a_live_ones(tmp_path):
    """Two real processes make owned folders (a line-table folder, a work folder); one is killed
    with SIGKILL. The sweep removes the dead one's, not the live one's, nor anything fresh."""
    code = (
        "import sys, time\nfrom pathlib import Path\nfrom workbench.build.scratch import OwnedDir\n"
        "d = OwnedDir(Path(sys.argv[1]), sys.argv[2])\n(d.path / 'half.o').write_text('x')\n"
        "print(d.path, flush=True)\ntime.sleep(600)\n"
    )
    dead = subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "artifacts" / "nvptx"), LINES_PREFIX],
                            env=_env(), stdout=subprocess.PIPE, text=True)  # fmt: skip
    live = subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "work"), "cpu-"], env=_env(),
                            stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        dead_dir, live_dir = Path(dead.stdout.readline().strip()), Path(live.stdout.readline().strip())
        assert dead_dir.is_dir() and live_dir.is_dir()
        assert sweep(tmp_path, older_than_s=3600) == []  # both are fresh: nothing goes
        assert sweep(tmp_path, older_than_s=0) == []  # both owners are alive
        dead.kill()
        dead.wait(HANG_GUARD_S)
        assert sweep(tmp_path, older_than_s=0) == [dead_dir]
        assert not dead_dir.exists() and (live_dir / OWNER).is_file()
        with OwnedDir(tmp_path / "artifacts" / "cpu", STAGING_PREFIX) as mine:  # this process's own
            assert sweep(tmp_path, older_than_s=0) == [] and mine.path.is_dir()
        assert not mine.path.exists()
    finally:
        for proc in (dead, live):
            proc.kill()
            proc.wait(HANG_GUARD_S)
    assert sweep(tmp_path, older_than_s=0) == [live_dir]


def _in_build_script(pid: int) -> bool:
    """Whether a descendant of `pid` is a cargo build script (the gate holds it there)."""
    for proc in psutil.Process(pid).children(recursive=True):
        try:
            if "build-script-build" in " ".join(proc.cmdline()) or "build_script_build" in proc.name():
                return True
        except psutil.Error:
            continue
    return False


@pytest.mark.slow
def test_a_build_killed_mid_way_leaves_folders_the_sweep_removes(gated_saxpy, tmp_path):
    """A real `workbench build`, SIGKILLed while cargo waits in the build script: its staging and
    work folders stay behind; the sweep (here without an age bound) removes them."""
    if not detect("cpu").found:
        pytest.skip(f"cpu toolchain missing: {detect('cpu').hint}")
    root, _gates = gated_saxpy
    cache = tmp_path / "cache"
    build = subprocess.Popen(
        [sys.executable, "-m", "workbench", "build", str(root), "--backend", "cpu", "--cache-dir", str(cache)],
        env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip

    def folders() -> list[Path]:
        return sorted([*cache.glob(f"artifacts/cpu/{STAGING_PREFIX}*"), *cache.glob("work/cpu-*")])

    orphans: list[psutil.Process] = []
    try:
        assert wait_until(lambda: len(folders()) == 2 and _in_build_script(build.pid), WORK_GUARD_S), (
            "the build never reached its build script"
        )
    finally:
        orphans = _kill_tree(build.pid)
        build.wait(HANG_GUARD_S)
    left = folders()
    assert len(left) == 2  # what a killed build leaves
    # cargo and its build script die with it: once gone, nothing writes into the folders any more.
    _gone, alive = psutil.wait_procs(orphans, timeout=HANG_GUARD_S)
    assert not alive, alive
    assert sorted(sweep(cache, older_than_s=0)) == left
    assert folders() == []


@pytest.mark.slow
def test_no_wb_xdg_folder_per_run(tmp_path, shared_cache_dir):
    """Two real `workbench run`s without XDG_RUNTIME_DIR leave one folder, the user's, reused."""
    env = _env(TMPDIR=str(tmp_path), WB_CACHE_DIR=str(shared_cache_dir))
    env.pop("XDG_RUNTIME_DIR", None)
    example = REPO / "resources" / "examples" / "saxpy"
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-m", "workbench", "run", str(example), "--backend", "cpu", "--no-record"],
            env=env, capture_output=True, text=True, timeout=WORK_GUARD_S,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
    assert [p.name for p in tmp_path.glob("wb-xdg-*")] == [f"wb-xdg-{os.getuid()}"]
    assert (tmp_path / f"wb-xdg-{os.getuid()}").stat().st_mode & 0o777 == 0o700


def test_runtime_dir_refuses_a_folder_open_to_others(tmp_path, monkeypatch):
    """A `wb-xdg-<uid>` someone made readable by others is not used: a private one instead."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    shared = tmp_path / f"wb-xdg-{os.getuid()}"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)
    monkeypatch.setattr("workbench.build.scratch._fallback", [])
    private = Path(runtime_dir())
    assert private != shared and private.is_dir() and private.stat().st_mode & 0o777 == 0o700


@pytest.mark.slow
def test_two_processes_build_one_line_table_both_get_it(example_copy, shared_cache_dir):
    """Two real processes ask for the cpu listing of one cached build at once: both answer the
    same file, build.json names it, and nothing of their private folders is left."""
    from workbench.build.line_info import line_table_path
    from workbench.build.service import build_project

    if not detect("cpu").found:
        pytest.skip(f"cpu toolchain missing: {detect('cpu').hint}")
    root = example_copy("saxpy", unique=True)
    (built,) = build_project(root, ["cpu"], cache_dir=shared_cache_dir)
    assert built.status == "ok", built.log
    code = (
        "import sys\nfrom workbench.build.line_info import ensure_line_table\n"
        "from workbench.project import Project\nprint(ensure_line_table(Project.open(sys.argv[1]), sys.argv[2]))\n"
    )
    (path,) = set(_twice_at_once(code, [str(root), built.artifact_dir], timeout_s=max(900, WORK_GUARD_S)))
    assert Path(path) == line_table_path(built.artifact_dir) and Path(path).stat().st_size > 0
    folder = Path(built.artifact_dir)
    assert not list(folder.parent.glob(f"{LINES_PREFIX}*")) and not list(folder.glob("*.tmp"))
