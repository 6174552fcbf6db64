"""Shared memory between the run service and its workers (issue 15): buffers cross as memfd
descriptors, outputs come back in the same segments, and nothing outlives a killed run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.waits import HANG_GUARD_S, wait_until
from workbench.run import shm
from workbench.run.events import RunEvent, RunFinished
from workbench.run.pool import WorkerPool
from workbench.run.service import RunService

from .conftest import FAST_TIMING, REPO

N = {"n": 65536}


def _memfd_holders(tag: str) -> list[int]:
    """Pids of processes that map or hold open a memfd whose name contains `tag`."""
    holders = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if tag in (entry / "maps").read_text():
                holders.append(int(entry.name))
                continue
            for fd in (entry / "fd").iterdir():
                if tag in os.readlink(fd):
                    holders.append(int(entry.name))
                    break
        except OSError:  # gone, or not ours to read
            continue
    return holders


def _alive(pid: int) -> bool:
    """True while `pid` runs (a zombie waiting for its reaper has released everything)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def test_a_segment_crosses_to_another_process_by_descriptor():
    segment = shm.SharedArray(1000, np.float32, label="test")
    segment.array[:] = np.arange(1000, dtype=np.float32)
    channel, child = shm.FdChannel.pair()
    code = (
        "import socket, sys, numpy as np\n"
        "from workbench.run import shm\n"
        "ch = shm.FdChannel(socket.socket(fileno=int(sys.argv[1])))\n"
        "(fd,) = ch.receive()\n"
        "a = shm.map_fd(fd, 'float32', 1000)\n"
        "a *= 2\n"
        "print(float(a.sum()))\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(child.fileno())],
        pass_fds=(child.fileno(),), stdout=subprocess.PIPE, text=True, cwd=REPO,
    )  # fmt: skip
    child.close()
    channel.send([segment.fd])
    out, _ = proc.communicate(timeout=HANG_GUARD_S)
    channel.close()
    assert proc.returncode == 0
    # The child wrote into the caller's memory: no bytes were sent back.
    assert float(out) == pytest.approx(2 * 999 * 1000 / 2)
    np.testing.assert_array_equal(segment.array, 2 * np.arange(1000, dtype=np.float32))


def test_a_short_segment_is_refused():
    segment = shm.SharedArray(10, np.float32)
    with pytest.raises(ValueError, match="holds 40 bytes"):
        shm.map_fd(segment.fd, np.float32, 11)


def test_shared_and_framed_workers_compute_the_same_outputs(run_service, example_copy, shared_cache_dir):
    """The local worker maps the buffers; a worker without shared memory (as a remote one)
    gets them in frames; both produce y = a*x + y from the same cached inputs."""
    root = example_copy("saxpy")
    shared = run_service.run(root, backends=["cpu", "wgsl"], sizes=N, cache_dir=shared_cache_dir)
    assert run_service.pool.get("cpu").shared and run_service.pool.get("wgpu").shared
    # Workers started by a command of the caller's (as over ssh) get their arrays in frames.
    from workbench.frozen import python_command

    pool = WorkerPool(command_for=lambda runtime: python_command("workbench.run.worker", runtime))
    framed_service = RunService(timing=FAST_TIMING, pool=pool)
    try:
        framed = framed_service.run(root, backends=["cpu", "wgsl"], sizes=N, cache_dir=shared_cache_dir)
        assert not framed_service.pool.get("cpu").shared
    finally:
        framed_service.close()
    assert shared.ok and framed.ok
    kernel = run_service_kernel(root)
    values = kernel.evaluate(kernel.symbols(N, None))
    inputs = run_service.inputs.make(kernel, values, 0, root)  # the run's seed
    expected = np.float32(2.5) * inputs["x"] + inputs["y"]
    for report in (shared, framed):
        for backend in ("cpu", "wgsl"):
            np.testing.assert_allclose(report.outputs[backend]["y"], expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(shared.outputs["cpu"]["y"], framed.outputs["cpu"]["y"])
    # The reference's outputs are the shared segment the worker wrote, kept without a copy.
    y = shared.outputs["cpu"]["y"]
    assert not y.flags.writeable and not y.flags.owndata
    assert [r.verified for r in shared.results] == [None, True]


def run_service_kernel(root: Path):
    from workbench.project import Project

    return Project.open(root).manifest.kernel(None)


def test_inputs_are_made_once_per_seed_and_size(run_service, example_copy, shared_cache_dir):
    root = example_copy("saxpy")
    kernel = run_service_kernel(root)
    cache = run_service.inputs
    values = kernel.evaluate(kernel.symbols({"n": 4096}, None))
    first = cache.make(kernel, values, 7, root)
    hits = cache.hits
    again = cache.make(kernel, values, 7, root)
    assert cache.hits == hits + 2 and again["x"] is first["x"]
    other = cache.make(kernel, values, 8, root)
    assert not np.array_equal(other["x"], first["x"])
    assert not first["x"].flags.writeable  # every backend reads the same inputs


def test_workers_keep_a_runs_input_mappings_between_backends_then_let_go(
    run_service, example_copy, shared_cache_dir
):
    """An input segment is mapped once per worker for the whole run (a second backend on the same
    worker reuses the mapping, and the cuda runtime its page lock), and no longer than the run."""
    root = example_copy("saxpy")
    seen: dict[str, list[str]] = {}

    def input_maps(runtime: str) -> list[str]:
        pid = run_service.pool.get(runtime).pid
        return [line for line in Path(f"/proc/{pid}/maps").read_text().splitlines() if "-input-x" in line]

    def on_event(event: RunEvent) -> None:
        if isinstance(event, RunFinished):  # the backend's kernel is closed; the run goes on
            seen[event.backend] = input_maps(shm_runtime[event.backend])

    shm_runtime = {"cpu": "cpu", "wgsl": "wgpu"}
    report = run_service.run(
        root, backends=["cpu", "wgsl"], sizes={"n": 1 << 16}, seed=11, cache_dir=shared_cache_dir,
        on_event=on_event,
    )  # fmt: skip
    assert report.ok
    assert len(seen["cpu"]) == 1 and len(seen["wgsl"]) == 1  # kept past the kernel's close, once
    assert input_maps("cpu") == [] and input_maps("wgpu") == []  # and let go at the end of the run


def _killable_run_script(root: Path, cache_dir: Path) -> list[str]:
    code = (
        "import sys\n"
        "from workbench.run.service import RunService\n"
        "from workbench.run.timing import TimingOptions\n"
        "svc = RunService(timing=TimingOptions(min_n=3, min_time_s=0.01, warmup_max_n=2, max_time_s=1))\n"
        "while True:\n"
        f"    r = svc.run({str(root)!r}, backends=['cpu'], sizes={{'n': 1 << 20}}, cache_dir={str(cache_dir)!r})\n"
        "    print('ran', svc.pool.get('cpu').pid, r.results[0].status, flush=True)\n"
    )
    return [sys.executable, "-c", code]


def test_no_segment_outlives_killed_processes(example_copy, shared_cache_dir):
    """kill -9 the worker in a loop of runs, then kill -9 the process running them: no process
    maps or holds a segment afterwards, and /dev/shm gained nothing (memfds have no name there)."""
    root = example_copy("saxpy")
    dev_shm = set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen(
        _killable_run_script(root, shared_cache_dir),
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=REPO, env=env,
    )  # fmt: skip
    try:
        line = proc.stdout.readline().split()
        assert line[:1] == ["ran"] and line[2] == "ok", line
        worker = int(line[1])
        tag = f"memfd:{shm.NAME_PREFIX}{proc.pid}-"
        assert proc.pid in _memfd_holders(tag)  # the cached inputs live in segments
        os.kill(worker, signal.SIGKILL)
        statuses = []
        for _ in range(3):  # the run in flight fails or a fresh worker serves the next one
            line = proc.stdout.readline().split()
            statuses.append(line[2])
        assert statuses[-1] == "ok" and int(line[1]) != worker
        new_worker = int(line[1])
    finally:
        proc.kill()  # SIGKILL: no cleanup code of ours runs
        proc.wait(timeout=HANG_GUARD_S)
    assert wait_until(lambda: not _memfd_holders(tag)), _memfd_holders(tag)
    assert wait_until(lambda: not _alive(new_worker))  # the worker ended with its parent
    if os.path.isdir("/dev/shm"):
        assert set(os.listdir("/dev/shm")) <= dev_shm


def test_a_worker_stuck_in_a_launch_ends_with_its_killed_parent(saxpy_variant, shared_cache_dir):
    root = saxpy_variant("hang", on_call=2)  # the verification launch passes, timing hangs
    env = dict(os.environ, PYTHONPATH=str(REPO))
    code = (
        "import sys, threading\n"
        "from workbench.run.events import RunPhase\n"
        "from workbench.run.service import RunService\n"
        "svc = RunService()\n"
        "def report(e):\n"
        "    if isinstance(e, RunPhase) and e.phase == 'timing':\n"
        "        print('timing', svc.pool.get('cpu').pid, flush=True)\n"
        f"svc.run({str(root)!r}, backends=['cpu'], sizes={{'n': 4096}}, cache_dir={str(shared_cache_dir)!r},"
        " timeout_s=600, on_event=report)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        cwd=REPO, env=env,
    )  # fmt: skip
    try:
        line = proc.stdout.readline().split()
        assert line[:1] == ["timing"], line
        worker = int(line[1])
    finally:
        proc.kill()
        proc.wait(timeout=HANG_GUARD_S)
    if not wait_until(lambda: not _alive(worker)):
        os.kill(worker, signal.SIGKILL)
        pytest.fail("the worker outlived its killed parent")
    assert _memfd_holders(f"memfd:{shm.NAME_PREFIX}{proc.pid}-") == []


def test_a_run_that_cannot_fit_says_so_before_allocating(run_service, example_copy, monkeypatch):
    from workbench.run import buffers
    from workbench.run.service import RunError

    root = example_copy("saxpy")
    kernel = run_service_kernel(root)
    values = kernel.evaluate(kernel.symbols({"n": 1 << 20}))
    plan = buffers.memory_plan(kernel, values, available=10 << 20)
    # x and y (4 MiB each); y written: inputs + working copy + reference + timing copy.
    assert (plan.buffers, plan.written, plan.need) == (8 << 20, 4 << 20, 20 << 20)
    assert "needs about 20 MiB of host memory" in plan.problem and "10 MiB is available" in plan.problem
    monkeypatch.setattr(buffers, "_available_memory", lambda: 10 << 20)
    misses = run_service.inputs.misses
    with pytest.raises(RunError, match="kernel 'saxpy': the run needs about 20 MiB"):
        run_service.run(root, backends=["cpu"], sizes={"n": 1 << 20})
    assert run_service.inputs.misses == misses  # nothing was made


def test_an_input_mapped_read_only_faults_on_a_write_instead_of_changing():
    """A worker maps `in` buffers read-only: native code that writes one (a kernel writing its
    input) dies with SIGSEGV, reported like any crash, and every backend's inputs stay intact."""
    segment = shm.SharedArray(1024, np.float32, label="ro-test")
    segment.array[:] = 1.0
    channel, child = shm.FdChannel.pair()
    code = (
        "import ctypes, socket, sys\n"
        "from workbench.run import shm\n"
        "(fd,) = shm.FdChannel(socket.socket(fileno=int(sys.argv[1]))).receive()\n"
        "a = shm.map_fd(fd, 'float32', 1024, writable=False)\n"
        "print(a.flags.writeable, float(a[5]), flush=True)\n"
        "ctypes.memset(a.ctypes.data, 0, 16)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(child.fileno())],
        pass_fds=(child.fileno(),), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=REPO,
    )  # fmt: skip
    child.close()
    channel.send([segment.fd])
    out, _ = proc.communicate(timeout=HANG_GUARD_S)
    channel.close()
    assert out.split() == ["False", "1.0"]
    assert proc.returncode == -signal.SIGSEGV
    assert np.all(segment.array == 1.0)


def test_an_empty_buffer_has_a_segment_too():
    segment = shm.SharedArray(0, np.float64, label="empty")
    assert segment.array.size == 0
    assert shm.map_fd(segment.fd, np.float64, 0).size == 0


def test_a_device_backends_receive_segment_serves_the_next_backend(example_copy):
    """A device runtime uploads an inout buffer from the read-only input segment and gets a fresh
    `receive` segment for its output; once verified and let go, that segment (pages allocated and
    mapped) is the next backend's, not a new one."""
    from workbench.project import Project
    from workbench.run.buffers import BackendBuffers
    from workbench.run.inputs import InputCache

    kernel = Project.open(example_copy("saxpy")).manifest.kernel()
    cache = InputCache()
    inputs = cache.make(kernel, kernel.evaluate(kernel.symbols({"n": 1000}, None)), 0, ".")
    spare: dict = {}
    first = BackendBuffers(kernel, inputs, cache, shared=True, spare=spare)
    header, _arrays, fds = first.upload_request(binds=False)
    roles = [(e["name"], e["role"]) for e in header["shared"]]
    assert roles == [("x", "input"), ("y", "input"), ("y", "receive")]
    receive = first.working["y"]
    assert fds[2] == receive.fd and fds[1] == cache.segment_of(inputs["y"]).fd
    receive.array[:] = 7.0  # what the worker's download writes
    out = first.outputs(["y"], {"shared": ["y"]}, {})
    assert out["y"] is receive.array and not out["y"].flags.writeable
    del out
    first.recycle(spare)
    second = BackendBuffers(kernel, inputs, cache, shared=True, spare=spare)
    header, _arrays, fds = second.upload_request(binds=False)
    assert second.working["y"] is receive and fds[2] == receive.fd and spare == {}
    assert receive.array.flags.writeable  # the next download writes into it
    # A runtime that computes in host buffers (cpu) gets a writable copy of the input instead.
    cpu = BackendBuffers(kernel, inputs, cache, shared=True, spare=spare)
    header, _arrays, _fds = cpu.upload_request(binds=True)
    assert [(e["name"], e["role"]) for e in header["shared"]] == [("x", "input"), ("y", "buffer")]
    np.testing.assert_array_equal(cpu.working["y"].array, inputs["y"])
