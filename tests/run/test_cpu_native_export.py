"""benchmarks/cpu_native.py on a host without Rust (issue 37 item 2 on the GPU host): `--export`
builds and checks the variants here; `--from-artifacts` measures them where no cargo or rustc can
start (every Python process of the run refuses to start one, which the test first shows it does),
pinned by `--cores`; evidence.py assembles its step and results_table.py prints it. A missing
artifact is named."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "cpu_native.py"

#: A sitecustomize for the "host": any process start of cargo, rustc or rustup is logged and fails,
#: in this Python process and in every one it starts (cpu_native keeps PYTHONPATH for its children).
NO_RUST = """
import os
import subprocess

_init = subprocess.Popen.__init__


def _no_rust(self, args, *rest, **kwargs):
    argv = [args] if isinstance(args, (str, bytes, os.PathLike)) else list(args)
    program = os.path.basename(os.fsdecode(argv[0]).split()[0]) if argv else ""
    if program.split("-")[0] in ("cargo", "rustc", "rustup"):
        with open(os.environ["NO_RUST_LOG"], "a") as log:
            log.write(" ".join(map(os.fsdecode, argv)) + "\\n")
        raise FileNotFoundError(f"no Rust toolchain on this host: {argv[0]}")
    _init(self, args, *rest, **kwargs)


subprocess.Popen.__init__ = _no_rust
"""


def _run(args: list, env: dict, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True, cwd=REPO,
                          env=env, timeout=timeout)  # fmt: skip


def _host_env(tmp_path: Path) -> dict[str, str]:
    """No cargo or rustc on PATH, a HOME without ~/.cargo, an empty build cache, the guard above."""
    host = tmp_path / "host"
    (host / "bin").mkdir(parents=True)
    (host / "sitecustomize.py").write_text(NO_RUST)
    keep = {k: os.environ[k] for k in ("WB_DATA_DIR", "WB_PROJECTS_DIR", "LANG") if k in os.environ}
    return {**keep, "PATH": str(host / "bin"), "HOME": str(host), "PYTHONPATH": f"{REPO}{os.pathsep}{host}",
            "WB_CACHE_DIR": str(tmp_path / "empty-cache"), "NO_RUST_LOG": str(tmp_path / "rust-calls.log")}  # fmt: skip


@pytest.mark.slow
def test_exported_variants_run_where_no_rust_can_start(tmp_path, shared_cache_dir):
    export = tmp_path / "export"
    here = {**os.environ, "PYTHONPATH": str(REPO), "WB_CACHE_DIR": str(shared_cache_dir)}
    done = _run(
        [SCRIPT, "--export", export, "--examples", "saxpy", "--variants", "cpu,plain,plain-threads"], here
    )
    assert done.returncode == 0, done.stderr[-3000:]
    index = json.loads((export / "cpu_native.json").read_text())
    assert (
        index["variants"] == ["cpu", "plain", "plain-threads"]
        and index["examples"]["saxpy"]["saxpy"]["ok"] is True
    )
    builds = sorted(export.rglob("build.json"))
    assert sorted(p.relative_to(export).as_posix() for p in builds) == [
        "saxpy/example/cpu/build.json", "saxpy/plain-threads/cpu/build.json", "saxpy/plain/cpu/build.json"]  # fmt: skip
    for build in builds:  # only what a run needs travels: build.json and the cdylib it names
        named = {k["artifact"] for k in json.loads(build.read_text())["kernels"].values()}
        assert {p.name for p in build.parent.iterdir()} - {"build.json"} <= named, build
        assert all((build.parent / n).is_file() for n in named), named
    # plain-threads is plain's crate with other entries: it names plain's cdylib, no copy of its own
    threads = json.loads((export / "saxpy/plain-threads/cpu/build.json").read_text())["kernels"]["saxpy"]
    assert threads["artifact"] == "../../plain/cpu/libsaxpy.so" and threads["entry"] == "saxpy_threads"
    assert not list(export.rglob("target"))

    env = _host_env(tmp_path)
    log = Path(env["NO_RUST_LOG"])
    # The guard works: a process that starts cargo (by absolute path, as the cpu adapter finds it) fails.
    tried = _run(["-c", "import subprocess; subprocess.run(['/usr/bin/cargo', '--version'])"], env, 60)
    assert tried.returncode != 0 and "no Rust toolchain on this host" in tried.stderr
    assert log.read_text() == "/usr/bin/cargo --version\n"
    log.unlink()

    out = tmp_path / "cpu_native.json"
    done = _run([SCRIPT, "--from-artifacts", export, "--sizes", "default", "--rounds", "1", "--cores", "1",
                 "--out", out], env)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert not log.exists(), log.read_text()
    data = json.loads(out.read_text())
    assert data["cores"]["pinned"] == 1 and len(data["cores"]["cpus"]) == 1, data["cores"]
    (row,) = data["rows"]
    assert (row["example"], row["kernel"], row["size"]) == ("saxpy", "saxpy", "default")
    assert row["plain_check"]["ok"] is True, row["plain_check"]
    assert row["median_s"]["cpu"] > 0 and row["median_s"]["plain"] > 0, row["runs"]
    assert row["cpu_over_plain"] == pytest.approx(row["median_s"]["cpu"] / row["median_s"]["plain"])
    assert row["median_s"]["plain-threads"] > 0, row["runs"]
    for variant in ("cpu", "plain", "plain-threads"):
        (run,) = row["runs"][variant]
        assert run["status"] == "ok" and run["cores"] == 1, run  # each measuring process was pinned

    # evidence.py's cpu-native step as the GPU host writes it, assembled and printed
    steps = tmp_path / "evidence" / "steps"
    steps.mkdir(parents=True)
    (steps / "cpu-native.json").write_text(json.dumps({"cores-1": {"exit": 0, "result": data}}))
    results = tmp_path / "results.json"
    here = {**os.environ, "PYTHONPATH": str(REPO)}
    done = _run(
        [REPO / "benchmarks/gpu_host/evidence.py", "assemble", steps.parent, "--json", results], here, 60
    )
    assert done.returncode == 0, done.stderr
    assembled = json.loads(results.read_text())["cpu_native"]["cores-1"]
    assert assembled["rows"][0]["plain_ok"] is True and assembled["cores"]["cpus"] == data["cores"]["cpus"]
    table = tmp_path / "README.md"
    done = _run([REPO / "benchmarks/gpu_host/results_table.py", results, "--out", table], here, 60)
    assert done.returncode == 0, done.stderr
    text = table.read_text()
    assert "## The cpu backend against plain Rust, wall clock (cores-1: 1 CPUs;" in text
    (line,) = [line for line in text.splitlines() if line.startswith("| saxpy | default |")]
    ratios = f"| {row['cpu_over_plain']:.2f} | {row['cpu_over_plain_threads']:.2f} | passed |"
    assert line.endswith(ratios), line


def test_a_missing_artifact_is_named(tmp_path):
    export = tmp_path / "export"
    export.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = _run([SCRIPT, "--from-artifacts", export], env, 60)
    assert done.returncode != 0 and f"{export / 'cpu_native.json'} is missing" in done.stderr
    (export / "cpu_native.json").write_text(json.dumps({"format": 1, "variants": ["cpu", "plain"],
                                                        "examples": {"saxpy": {}}}))  # fmt: skip
    done = _run([SCRIPT, "--from-artifacts", export, "--variants", "cpu,plain,plain-threads"], env, 60)
    assert done.returncode != 0
    for missing in ("saxpy/example/cpu/build.json", "saxpy/plain/project/workbench.toml",
                    "saxpy/plain/cpu/build.json", "saxpy/plain-threads/cpu/build.json"):  # fmt: skip
        assert f"{export / missing} (" in done.stderr, done.stderr


def _script():
    spec = importlib.util.spec_from_file_location("cpu_native", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def test_kernels_that_share_a_cdylib_share_plains_copy(tmp_path):
    """scan's two kernels live in one cdylib: plain-threads' build.json points both at plain's copy
    (and `workbench run --artifacts` reads it); a file that differs keeps its own copy."""
    from workbench.build.artifacts import read_build

    kernels = {
        k: {"artifact": "libscan.so", "entry": f"{k}_threads", "kind": "cdylib"} for k in ("scan", "scan_add")
    }
    plain, threads = tmp_path / "plain" / "cpu", tmp_path / "plain-threads" / "cpu"
    for folder, body in ((plain, b"\x7fELF same"), (threads, b"\x7fELF same")):
        folder.mkdir(parents=True)
        (folder / "libscan.so").write_bytes(body)
        (folder / "build.json").write_text(json.dumps({"format": 1, "backend": "cpu", "kernels": kernels}))
    _script().share(threads, plain)
    assert not (threads / "libscan.so").exists()
    shared = read_build(threads)["kernels"]
    assert {k: r["artifact"] for k, r in shared.items()} == {"scan": "../../plain/cpu/libscan.so",
                                                           "scan_add": "../../plain/cpu/libscan.so"}  # fmt: skip
    assert shared["scan_add"]["entry"] == "scan_add_threads"

    (threads / "libscan.so").write_bytes(b"\x7fELF other")
    (threads / "build.json").write_text(json.dumps({"format": 1, "backend": "cpu", "kernels": kernels}))
    _script().share(threads, plain)
    assert (threads / "libscan.so").read_bytes() == b"\x7fELF other"
    assert {r["artifact"] for r in read_build(threads)["kernels"].values()} == {"libscan.so"}
