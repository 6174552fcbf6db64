"""Test-wide set-up: offscreen Qt, a private XDG runtime dir for Mesa, shared helpers, leak checks.

`no_leaked_threads_or_processes` (autouse) fails a test that leaves a Python thread (an executor's
too) or a child process (a run worker, a compiler, anything it started) alive after its
teardown. Fixtures wider than one test that legitimately own workers (a session `RunService`)
declare them with `long_lived.add(fn)`, fn() returning the pids and threads they own.
`tests/ui/conftest.py` adds the Qt side (QThreads, QTimers). `private_sessions_db` (autouse) keeps
every test's recordings in its own temporary folder.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from tests.waits import HANG_GUARD_S, WORK_GUARD_S, wait_until  # noqa: F401  wait_until: tests import it from here too
from workbench import childproc
from workbench.manifest import load_manifest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
if "XDG_RUNTIME_DIR" not in os.environ or not os.path.isdir(os.environ["XDG_RUNTIME_DIR"]):
    from workbench.build.scratch import runtime_dir

    os.environ["XDG_RUNTIME_DIR"] = runtime_dir()  # the user's one, reused: none left per test run

# GPU hosts (`workbench hosts`): tests never read or write the user's real hosts file.
if not os.environ.get("WB_HOSTS_FILE"):
    os.environ["WB_HOSTS_FILE"] = os.path.join(tempfile.mkdtemp(prefix="wb-hosts-"), "hosts.json")
# Settings and the trust list (`workbench new` trusts what it makes): never the user's real ones.
if not os.environ.get("WB_CONFIG_DIR"):
    os.environ["WB_CONFIG_DIR"] = tempfile.mkdtemp(prefix="wb-config-")

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "resources" / "examples"
SHARED_SPIRV = REPO.parent / "shared" / "data" / "rust-gpu-spirv"


def cli(
    *args: object, env: dict[str, str] | None = None, timeout: float = WORK_GUARD_S
) -> subprocess.CompletedProcess:
    """`python -m workbench ARGS` in a child process, as a user runs it: the output captured, a
    non-zero exit returned (not raised). This checkout's workbench, also in the processes the
    child starts (its run workers): run from the repository with it on PYTHONPATH; `env` adds
    variables to this process's environment."""
    return subprocess.run(
        [sys.executable, "-m", "workbench", *map(str, args)],
        capture_output=True, text=True, timeout=timeout, cwd=REPO, check=False,
        env=dict(os.environ, PYTHONPATH=str(REPO), **(env or {})),
    )  # fmt: skip


@pytest.fixture
def example_copy(tmp_path):
    """Copy a bundled example (without build outputs) into a temporary folder.

    Build keys do not contain the project's folder, so a copy of an example built before is a
    cache hit; `unique=True` appends a fresh comment to every source (Rust, CUDA, WGSL) so that
    the copy builds for real on every backend. `tunables=("threads",)` keeps only those tunables in
    the copy's `[kernel.tunables]` (the others take their defaults): the tuning tests sweep saxpy's
    `threads` alone, whatever else the example offers (the others at their defaults)."""

    def make(name: str, unique: bool = False, tunables: tuple[str, ...] | None = None) -> Path:
        dest = tmp_path / name
        shutil.copytree(EXAMPLES / name, dest, ignore=shutil.ignore_patterns("target"))
        if tunables is not None:
            # A dropped tunable is replaced by its default wherever an expression names it.
            manifest = dest / "workbench.toml"
            defaults = load_manifest(dest).kernel().default_tunables()
            text = manifest.read_text()
            for name, value in defaults.items():
                if name not in tunables:
                    text = re.sub(rf"(?m)^{name} = \[.*\n", "", text)
                    text = re.sub(rf"\b{name}\b", str(value), text)
            manifest.write_text(text)
        if unique:
            token = uuid.uuid4().hex
            for path in [
                *dest.glob("src/**/*.rs"),
                *dest.glob("reference/*.cu"),
                *dest.glob("reference/*.wgsl"),
            ]:
                path.write_text(path.read_text() + f"\n// test copy {token}\n")
        return dest

    return make


GATED_BUILD_RS = """fn main() {{
    println!("cargo:rerun-if-changed=build.rs");
    let target = std::env::var("TARGET").unwrap_or_default();
    let gate = if target.starts_with("nvptx") {{ "{nvptx}" }} else {{ "{host}" }};
    // A safety valve, not a measurement: the test opens the gate long before.
    for _ in 0..12000 {{
        if std::path::Path::new(gate).exists() {{
            // The build script's own /proc stat (its niceness among it), for tests of priority.
            if let Ok(stat) = std::fs::read_to_string("/proc/self/stat") {{
                let _ = std::fs::write(format!("{{}}.stat", gate), stat);
            }}
            return;
        }}
        std::thread::sleep(std::time::Duration::from_millis(50));
    }}
    panic!("gate {{}} was never opened", gate);
}}
"""


def niceness_of_stat(stat: str) -> int:
    """The niceness in a /proc/<pid>/stat line (field 19; the name in parentheses may hold spaces)."""
    return int(stat.rsplit(")", 1)[1].split()[16])


@pytest.fixture
def gated_saxpy(example_copy, tmp_path):
    """A saxpy copy (sources made unique: real builds) whose cargo builds wait in build.rs until
    the test opens their gate: `gates["host"]` (cpu) or `gates["nvptx"]`. Returns (root, gates).
    Once let go, each build script leaves its /proc/self/stat beside its gate (`<gate>.stat`).
    A slow build made certain: tests assert the order of events a gate forces, never durations."""
    root = example_copy("saxpy", unique=True)
    gates = {"host": tmp_path / "open-host", "nvptx": tmp_path / "open-nvptx"}
    (root / "build.rs").write_text(GATED_BUILD_RS.format(host=gates["host"], nvptx=gates["nvptx"]))
    yield root, gates
    for gate in gates.values():  # a test that failed half-way must not leave a build waiting
        gate.touch()


@pytest.fixture(autouse=True)
def private_sessions_db(tmp_path, monkeypatch):
    """The sessions database anything records into without `--db` (`workbench run`, the window,
    sweeps): a temporary folder of each test's, never the user's data folder."""
    monkeypatch.delenv("WB_SESSIONS_DB", raising=False)  # it would win over WB_DATA_DIR
    monkeypatch.setenv("WB_DATA_DIR", str(tmp_path / "wb-data"))
    return tmp_path / "wb-data" / "sessions.db"


@pytest.fixture(autouse=True)
def private_projects_dir(tmp_path, monkeypatch):
    """Where the window puts the user's copy of an example it opens (`user_folders.projects_dir`):
    each test's own folder, never ~/rust-gpu-workbench, and no test sees another's edits."""
    monkeypatch.setenv("WB_PROJECTS_DIR", str(tmp_path / "wb-projects"))
    return tmp_path / "wb-projects"


@pytest.fixture(scope="session")
def shared_cache_dir(tmp_path_factory):
    """One build cache for the whole test session, so `core` for nvptx is built once."""
    path = os.environ.get("WB_TEST_CACHE_DIR")
    if path:
        Path(path).mkdir(parents=True, exist_ok=True)
        return Path(path)
    return tmp_path_factory.mktemp("wb-cache")


#: How long teardown lets threads and child processes wind down before calling them leaked (a
#: hang guard: the check ends as soon as they are gone).
LEAK_GRACE_S = HANG_GUARD_S


class LongLived:
    """Owners of threads / processes that outlive single tests on purpose (session fixtures)."""

    def __init__(self) -> None:
        self._owners: list[Callable[[], Iterable[int | threading.Thread]]] = []

    def add(self, owner: Callable[[], Iterable[int | threading.Thread]]) -> None:
        self._owners.append(owner)

    def owned(self) -> tuple[set[int], set[threading.Thread]]:
        pids, threads = set(), set()
        for owner in self._owners:
            for item in owner():
                (threads if isinstance(item, threading.Thread) else pids).add(item)
        return pids, threads


_LONG_LIVED = LongLived()


def _wgpu_device_pollers() -> list[threading.Thread]:
    """The in-process wgpu runtime (a module singleton) caches one device per adapter for the
    process's life, and wgpu-py polls each device on its own thread: owned by the runtime."""
    module = sys.modules.get("workbench.run.runtimes.wgpu_runtime")
    devices = getattr(getattr(module, "RUNTIME", None), "_devices", {}) if module else {}
    return [p for d in devices.values() if isinstance(p := getattr(d, "_poller", None), threading.Thread)]


def _ipython_history_saver() -> list[threading.Thread]:
    """The console's in-process kernel uses IPython's process-wide shell singleton, whose history
    manager saves on its own thread for the life of the shell (not of one console)."""
    module = sys.modules.get("IPython.core.interactiveshell")
    shell_class = getattr(module, "InteractiveShell", None)
    if shell_class is None or not shell_class.initialized():
        return []
    thread = getattr(getattr(shell_class.instance(), "history_manager", None), "save_thread", None)
    return [thread] if isinstance(thread, threading.Thread) else []


def _naga_validator() -> list:
    """The build's naga validator (`workbench.build.shader_check`) is one child kept for the
    process's life (starting wgpu costs most of a second a shader otherwise)."""
    module = sys.modules.get("workbench.build.shader_check")
    validator = getattr(module, "_VALIDATOR", None)
    return (
        [t for t in validator.owned() if not isinstance(t, threading.Thread) or t.is_alive()]
        if validator
        else []
    )


def _dask_process_singletons() -> list:
    """Once a Dask cluster was started in this process (the Tuning panel's cluster sweep), Dask's
    offload executor (one thread, `distributed.utils._offload_executor`) and multiprocessing's
    resource tracker (one child, started with the first spawned worker) live for the process's life."""
    owned: list = []
    executor = getattr(sys.modules.get("distributed.utils"), "_offload_executor", None)
    owned += list(getattr(executor, "_threads", ()))
    tracker = getattr(sys.modules.get("multiprocessing.resource_tracker"), "_resource_tracker", None)
    if getattr(tracker, "_pid", None):
        owned.append(tracker._pid)
    return owned


_LONG_LIVED.add(_wgpu_device_pollers)
_LONG_LIVED.add(_dask_process_singletons)
_LONG_LIVED.add(_naga_validator)
_LONG_LIVED.add(_ipython_history_saver)


@pytest.fixture(scope="session")
def long_lived() -> LongLived:
    return _LONG_LIVED


def _leaks(threads_before: set, pids_before: set) -> tuple[list[threading.Thread], list]:
    owned_pids, owned_threads = _LONG_LIVED.owned()
    threads = [
        t
        for t in threading.enumerate()
        if t not in threads_before and t not in owned_threads and t.is_alive()
    ]
    procs = [p for p in childproc.children_of() if p.pid not in pids_before and p.pid not in owned_pids]
    # A child of a long-lived worker belongs to it too.
    procs = [p for p in procs if not _descends_from(p, owned_pids)]
    return threads, procs


def _descends_from(proc, pids: set[int]) -> bool:
    try:
        return any(parent.pid in pids for parent in proc.parents())
    except Exception:  # noqa: BLE001  gone meanwhile
        return False


@pytest.fixture(autouse=True)
def no_leaked_threads_or_processes(request):
    """Fail the test if a Python thread or a child process it started is still alive after it.

    Autouse and in the root conftest: torn down after the test's own fixtures, so what is still
    running then was leaked. Leaked processes are killed, so one leak does not fail later tests."""
    threads_before = set(threading.enumerate())
    pids_before = {p.pid for p in childproc.children_of()}
    yield
    deadline = time.monotonic() + LEAK_GRACE_S
    threads, procs = _leaks(threads_before, pids_before)
    while (threads or procs) and time.monotonic() < deadline:
        time.sleep(0.05)
        threads, procs = _leaks(threads_before, pids_before)
    problems = []
    if threads:
        problems.append("Python threads still running: " + ", ".join(
            f"{t.name}{' (daemon)' if t.daemon else ''}" for t in threads))  # fmt: skip
    if procs:
        described = []
        for proc in procs:
            try:
                described.append(f"pid {proc.pid}: {' '.join(proc.cmdline())[:160]}")
                proc.kill()
            except Exception:  # noqa: BLE001  it ended meanwhile
                pass
        problems.append("child processes still running (killed now): " + "; ".join(described))
    if problems:
        pytest.fail("left running after the test:\n  " + "\n  ".join(problems))


def skip_without_debugger(needs_cargo: bool = True) -> None:
    """Skip a debugging test where its tools are missing (host cargo, gdb, pygdbmi), saying how
    to get each."""
    from workbench.build.toolchains import detect

    if needs_cargo and not detect("cpu").found:
        pytest.skip("no host cargo: run packaging/bootstrap.sh setup")
    if shutil.which("gdb") is None:
        pytest.skip("no gdb: apt-get install gdb (packaging/bootstrap.sh setup installs it)")
    pytest.importorskip("pygdbmi")
