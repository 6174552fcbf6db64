"""`workbench run --counters` without a GPU: the real worker and the real launch child over the
pycuda double (fake_pycuda.py on PYTHONPATH, as in test_cuda_fault_fake.py), `ncu` missing from
PATH, and `ncu` stand-ins (no Nsight Compute can run here): one that answers ERR_NVGPUCTRPERM as
the real one does, one that runs the launch child it is given and writes the real H200 capture
(tests/run/data/ncu-h200.csv) to its --log-file. The records go into a real sessions database,
out through the JSON bundle and CSV, and into a second database."""

from __future__ import annotations

import csv
import io
import json
import os
import stat
import sys
from pathlib import Path

import pytest

from tests.run_runtimes.test_cuda_fault_fake import PTX, _export, fake_pycuda_on_path  # noqa: F401
from workbench.run.counters import absence
from workbench.run.counters.nsight import collect

CAPTURE = Path(__file__).resolve().parents[1] / "run" / "data" / "ncu-h200.csv"
PERMISSION = (
    "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters "
    "on the target device 0. For instructions on enabling permissions and to get more information see "
    "https://developer.nvidia.com/ERR_NVGPUCTRPERM"
)


@pytest.fixture
def cuda_report(fake_pycuda_on_path, saxpy_cdylib, saxpy_dir, tmp_path, shared_cache_dir):  # noqa: F811
    from workbench.project import Project
    from workbench.run import RunService

    artifacts = tmp_path / "artifacts"
    ptx = tmp_path / "clean" / "saxpy.ptx"
    ptx.parent.mkdir()
    ptx.write_text(PTX.format(marker=""))
    _export(artifacts, "cpu", "cdylib", saxpy_cdylib, "saxpy_cpu")
    _export(artifacts, "nvptx", "ptx", ptx, "saxpy")
    service = RunService()
    try:
        report = service.run(
            saxpy_dir, backends=["cpu", "nvptx"], sizes={"n": 4096}, artifacts_dir=artifacts,
            cache_dir=shared_cache_dir, devices=["cpu", "cuda:0"],
        )  # fmt: skip
    finally:
        service.close()
    assert [r.status for r in report.results] == ["ok", "ok"], [r.error for r in report.results]
    return report, Project.open(saxpy_dir)


def _fake_ncu(folder: Path, body: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "ncu"
    script.write_text(f"#!{sys.executable}\n{body}")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def test_no_ncu_on_path_and_a_cpu_backend_each_say_why_in_one_line(cuda_report, tmp_path, monkeypatch):
    report, project = cuda_report
    monkeypatch.delenv("WB_NCU", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    records = collect(report, project)
    assert records[("nvptx", "cuda:0")] == {
        "status": "absent", "message": absence.NO_NCU, "backend": "nvptx", "metrics": {}, "stalls": []
    }  # fmt: skip
    assert records[("cpu", "cpu")]["message"] == absence.not_cuda("cpu", "cpu")
    monkeypatch.setenv("WB_NCU", str(tmp_path / "no-ncu-here"))
    assert collect(report, project)[("nvptx", "cuda:0")]["message"] == (
        f"no counters: $WB_NCU names {tmp_path / 'no-ncu-here'}, which is not a file; point it at the ncu program "
        "or unset it"
    )
    assert "\n" not in absence.NO_NCU and "$WB_NCU" in absence.NO_NCU
    wgpu = absence.not_cuda("wgsl", "wgpu")
    assert (
        wgpu.startswith("no counters for wgsl: wgpu reaches the GPU through Vulkan")
        and "nvptx, cuda-c" in wgpu
    )


def test_a_permission_refusal_is_named_with_its_fix(cuda_report, tmp_path, monkeypatch):
    report, project = cuda_report
    _fake_ncu(tmp_path / "bin", f"import sys\nprint({PERMISSION!r})\nsys.exit(1)\n")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("WB_NCU", raising=False)
    record = collect(report, project)[("nvptx", "cuda:0")]
    assert (record["status"], record["message"]) == ("absent", absence.NOT_PERMITTED)
    assert "NVreg_RestrictProfilingToAdminUsers=0" in record["message"]


def test_counters_of_the_launch_child_are_recorded_exported_and_imported(cuda_report, tmp_path, monkeypatch):
    """The stand-in runs the program ncu is given (the launch child, over the pycuda double) and
    writes the real H200 capture where ncu would."""
    from workbench.profile.sessions.export import import_bundle, render
    from workbench.profile.sessions.record import record_report
    from workbench.profile.sessions.store import SessionStore

    report, project = cuda_report
    seen = tmp_path / "seen.json"
    body = f"""import json, shutil, subprocess, sys
args = sys.argv[1:]
log = args[args.index("--log-file") + 1]
program = args[args.index("--log-file") + 2:]
done = subprocess.run(program, capture_output=True, text=True)
json.dump({{"args": args, "exit": done.returncode, "out": done.stdout, "err": done.stderr[-2000:]}}, open({str(seen)!r}, "w"))
shutil.copy({str(CAPTURE)!r}, log)
"""
    monkeypatch.setenv("WB_NCU", str(_fake_ncu(tmp_path / "bin", body)))
    records = collect(report, project)
    ran = json.loads(seen.read_text())
    assert ran["exit"] == 0, ran["err"]
    assert ran["out"].strip() == "launched saxpy once"  # the launch child ran the nvptx artifact
    assert ran["args"][ran["args"].index("-k") + 1] == "regex:^saxpy$"
    assert ["--launch-count", "1"] == ran["args"][ran["args"].index("--launch-count") :][:2]
    record = records[("nvptx", "cuda:0")]
    assert record["status"] == "ok"
    assert record["metrics"]["duration_s"] == pytest.approx(61952e-9)
    assert record["stalls"][0] == ["long_scoreboard", 43.95]
    assert record["event_median_s"] == report.results[1].timing["median_s"]
    assert record["message"].startswith("ncu 61.952 µs at 1.47 GHz (event median ")
    assert "DRAM 61% · L2 75% · SM 44% of peak" in record["message"]

    report.counters = records
    with SessionStore(tmp_path / "a.db") as store:
        ids = record_report(store, report)
        runs = {store.get_run(i)["backend"]: store.get_run(i) for i in ids}
        assert runs["nvptx"]["counters"]["metrics"]["dram_pct"] == 61.43
        assert runs["cpu"]["counters"]["status"] == "absent"
        bundle = tmp_path / "bundle.json"
        bundle.write_text(render(store, "json", ids))
        csv_rows = list(csv.reader(io.StringIO(render(store, "csv", ids))))
    header = csv_rows[0]  # read as CSV: the tunables' JSON holds commas (saxpy has two tunables)
    nvptx_line = next(row for row in csv_rows[1:] if "nvptx" in row)
    assert nvptx_line[header.index("counters_status")] == "ok"
    assert float(nvptx_line[header.index("ncu_l2_pct")]) == 75.13
    with SessionStore(tmp_path / "b.db") as other:
        added, _skipped = import_bundle(other, bundle)
        assert added == 2
        imported = [other.get_run(r["id"]) for r in other.list_runs(limit=None)]
        assert {r["backend"]: r["counters"]["status"] for r in imported} == {"nvptx": "ok", "cpu": "absent"}


def test_workbench_run_counters_prints_records_and_adds_them_to_json(saxpy_cdylib, saxpy_dir, tmp_path):
    """The CLI end to end on a real cpu run: one line per result on stderr, `counters` added to
    --json (the rest of the shape unchanged), the record stored with the run."""
    import subprocess

    from workbench.profile.sessions.store import SessionStore

    artifacts = tmp_path / "artifacts"
    _export(artifacts, "cpu", "cdylib", saxpy_cdylib, "saxpy_cpu")
    base = [sys.executable, "-m", "workbench", "run", str(saxpy_dir), "--backend", "cpu", "--size", "n=4096",
            "--artifacts", str(artifacts), "--counters", "--db", str(tmp_path / "s.db")]  # fmt: skip
    text = subprocess.run(base, capture_output=True, text=True, timeout=300)
    assert text.returncode == 0, text.stderr
    assert f"counters cpu @ cpu: {absence.not_cuda('cpu', 'cpu')}" in text.stderr.splitlines()
    done = subprocess.run([*base, "--json"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["counters"] == [{
        "status": "absent", "message": absence.not_cuda("cpu", "cpu"), "backend": "cpu", "device": "cpu",
        "metrics": {}, "stalls": [],
    }]  # fmt: skip
    assert {"project", "kernel", "results"} <= set(data)
    with SessionStore(tmp_path / "s.db") as store:
        runs = [store.get_run(r["id"]) for r in store.list_runs(limit=None)]
    assert [r["counters"]["status"] for r in runs] == ["absent", "absent"]
    show = subprocess.run([sys.executable, "-m", "workbench", "sessions", "show", str(runs[0]["id"]), "--db",
                           str(tmp_path / "s.db")], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert f"  counters (absent): {absence.not_cuda('cpu', 'cpu')}" in show.stdout.splitlines()
