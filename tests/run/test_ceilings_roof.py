"""Every result against the roof its arithmetic intensity selects (`ceilings_roof`), and no
non-zero number printed as zero (`units.format_fixed`)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from workbench.result_text import format_gbps, format_percent
from workbench.run.ceilings import Ceilings
from workbench.run.ceilings_roof import (
    SUSPECT_ABOVE,
    binding,
    datasheet,
    rate_cell,
    read_roof,
    roof_cell,
    roof_fields,
    roof_line,
)
from workbench.units import format_fixed, format_rate

REPO = Path(__file__).resolve().parents[2]
CPU = {"runtime": "cpu", "spec": "cpu", "name": "AMD EPYC", "peak_gbps": None, "peak_gflops": None}


def _ceilings(copy=20.0, read=30.0, fma=400.0) -> Ceilings:
    return Ceilings("cpu", "AMD EPYC", copy, fma, None, "2026-12-05T08:00:00Z", "test", read_gbps=read)


def test_no_non_zero_value_reads_as_zero():
    for value in np.logspace(-12, 6, 400):
        for text in (format_rate(value), format_gbps(value), format_percent(value).removesuffix(" %")):
            assert float(text) != 0, (value, text)
        assert float(format_rate(value)) == pytest.approx(value, rel=5e-3)  # 3 significant digits at least
    assert format_rate(12.3456) == "12.35" and format_rate(0.004123) == "0.00412" and format_rate(0) == "0.00"
    assert format_percent(0.4123) == "41.2 %" and format_percent(0.0004) == "0.0400 %"
    assert format_fixed(3e-7, 2) == "3.00e-07" and format_rate(None, "-") == "-"


def test_the_intensity_selects_the_roof():
    # saxpy: 2 FLOP per 12 bytes, far below a ridge of 400/20 = 20 FLOP/byte: memory-bound.
    assert binding(gbps=12.0, gflops=2.0, bandwidth=20.0, compute=400.0) == "memory"
    # matmul at n=96: 2*96^3 FLOP over 4*3*96^2 bytes = 16 FLOP/byte ... and at n=512, 85: compute.
    assert binding(gbps=0.5, gflops=0.5 * 512 / 6, bandwidth=20.0, compute=400.0) == "compute"
    assert binding(gbps=1.0, gflops=None, bandwidth=20.0, compute=400.0) == "memory"  # no flops metric
    assert binding(gbps=None, gflops=3.0, bandwidth=20.0, compute=400.0) == "compute"
    assert binding(gbps=1.0, gflops=1.0, bandwidth=None, compute=None) is None


def test_a_memory_bound_result_against_its_copy_or_read_roof():
    saxpy = {"gbps": 15.0, "gflops": 2.5, "memory_roof": "copy"}
    reading = read_roof(saxpy, CPU, _ceilings())
    assert (reading["bound"], reading["roof"], reading["unit"], reading["source"]) == (
        "memory",
        "copy",
        "GB/s",
        "measured",
    )
    assert reading["fraction"] == pytest.approx(15.0 / 20.0) and not reading["suspect"]
    assert roof_cell(reading) == "75.0 % copy"
    assert roof_line(reading) == "75.0 % of the measured copy roof (memory-bound: 15.00 of 20.00 GB/s)"
    assert rate_cell(saxpy, reading) == "15.00"
    # A read stream (a reduction) is held to the read ceiling; without one, to the copy ceiling.
    reduction = {"gbps": 27.0, "gflops": 6.75, "memory_roof": "read"}
    assert read_roof(reduction, CPU, _ceilings())["roof"] == "read"
    assert read_roof(reduction, CPU, _ceilings())["fraction"] == pytest.approx(0.9)
    no_read = read_roof(reduction, CPU, _ceilings(read=None))
    assert no_read["roof"] == "copy" and no_read["suspect"]  # 27 GB/s over a 20 GB/s copy ceiling
    # An in-place kernel (bitonic) is held to the update ceiling, named in every text.
    bitonic = {"gbps": 22.0, "gflops": None, "memory_roof": "update"}
    ceilings = _ceilings()
    ceilings.update_gbps = 25.0
    update = read_roof(bitonic, CPU, ceilings)
    assert (update["roof"], update["ceiling"], update["suspect"]) == ("update", 25.0, False)
    assert roof_cell(update) == "88.0 % update"
    assert roof_line(update) == "88.0 % of the measured update roof (memory-bound: 22.00 of 25.00 GB/s)"
    assert roof_cell(read_roof(bitonic, CPU, _ceilings())) == "⚠ 110.0 % copy"  # not measured: copy


def test_a_compute_bound_result_reads_in_gflops_against_the_fma_roof():
    matmul = {"gbps": 0.00412, "gflops": 0.00412 * 85.3, "memory_roof": "copy"}
    slow = read_roof(matmul, CPU, _ceilings(fma=0.2))  # ridge 0.01 FLOP/byte: compute binds
    assert (slow["bound"], slow["roof"], slow["unit"]) == ("compute", "compute", "GFLOP/s")
    assert slow["fraction"] == pytest.approx(0.00412 * 85.3 / 0.2)
    assert rate_cell(matmul, slow) == "0.351 GFLOP/s"  # never "GB/s 0.00"
    assert roof_cell(slow) == "⚠ 175.7 % FMA f32" and slow["suspect"]
    assert "FMA f32 roof (compute-bound" in roof_line(slow) and "measurement problem" in roof_line(slow)


def test_more_than_three_percent_above_a_ceiling_is_a_measurement_problem():
    ceilings = _ceilings(copy=100.0)
    at = read_roof({"gbps": 100.0 * SUSPECT_ABOVE, "gflops": None}, CPU, ceilings)
    above = read_roof({"gbps": 100.0 * SUSPECT_ABOVE + 0.01, "gflops": None}, CPU, ceilings)
    assert not at["suspect"] and above["suspect"]
    assert roof_line(above).startswith("⚠ 103.0 % of the measured copy roof")
    assert "more than 3.0 % above a ceiling is a measurement problem" in roof_line(above)


def test_the_datasheet_where_nothing_was_measured_and_beside_what_was():
    h200 = {
        "runtime": "cuda",
        "spec": "cuda:0",
        "name": "NVIDIA H200",
        "peak_gbps": 4915.0,
        "peak_gflops": 60000.0,
    }
    assert datasheet(h200) == (4800.0, 67000.0)  # the published figure wins over the clocks' estimate
    assert datasheet({"name": "Some GPU", "peak_gbps": 900.0, "peak_gflops": None}) == (900.0, None)
    # A CPU: no memory figure; its FMA peak estimated from what it reports (threads, clock, vector width).
    from workbench.run.datasheets import cpu_estimate

    estimate = cpu_estimate(int(CPU.get("cores") or 0) or None)
    assert datasheet(CPU) == (None, estimate.fp32_gflops if estimate else None)
    saxpy = {"gbps": 4274.0, "gflops": 712.0, "memory_roof": "copy"}
    sheet_only = read_roof(saxpy, h200, None)
    assert sheet_only["source"] == "datasheet" and sheet_only["fraction"] == pytest.approx(4274 / 4800)
    measured = read_roof(saxpy, h200, Ceilings("cuda:0", "NVIDIA H200", 4044.0, 60000.0, None, "", ""))
    assert measured["suspect"] and measured["fraction_of_datasheet"] == pytest.approx(4274 / 4800)
    assert "89.0 % of the datasheet's 4800.00 GB/s" in roof_line(measured)
    assert read_roof(saxpy, CPU, None) is None and roof_cell(None) == "" and roof_line(None) == ""
    assert roof_fields(saxpy, CPU, None) == {"roof": None, "fraction_of_peak": None}


@pytest.mark.slow
def test_run_json_and_table_give_every_result_its_roof(tmp_path, example_copy, shared_cache_dir):
    """Real cpu ceilings, then real runs of saxpy (memory-bound) and matmul (compute-bound at a size
    where its intensity passes the cpu's ridge) from the command line: --json and the table."""
    env = {**os.environ, "WB_CACHE_DIR": str(shared_cache_dir)}

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "workbench", *args], capture_output=True, text=True,
                              cwd=REPO, env=env, timeout=900)  # fmt: skip

    measured = cli("ceilings", "--device", "cpu", "--json")
    assert measured.returncode == 0, measured.stderr
    (cpu,) = json.loads(measured.stdout)["devices"]
    ridge = cpu["fma_gflops_f32"] / cpu["copy_gbps"]
    readings = {}
    for example, sizes in (("saxpy", ["n=65536"]), ("matmul", ["m=256", "n=256", "k=256"])):
        root = example_copy(example)
        size_args = [a for size in sizes for a in ("--size", size)]
        done = cli("run", str(root), "--backend", "cpu", *size_args, "--json", "--no-record")
        assert done.returncode == 0, done.stderr
        (result,) = json.loads(done.stdout)["results"]
        readings[example] = result["throughput"]
        table = cli("run", str(root), "--backend", "cpu", *size_args, "--no-record")
        assert table.returncode == 0, table.stderr
        lines = table.stdout.splitlines()
        at = next(i for i, line in enumerate(lines) if line.startswith("backend "))
        header, row = lines[at : at + 2]
        # The table is another run with its own reading: a row flagged suspect ("⚠") is said whole
        # under the table, and only then (saxpy at this size is cache-resident, so it may beat the copy roof).
        said_under = any("measurement problem" in line for line in lines[at + 2 :])
        assert said_under == ("⚠" in row), (row, lines[at + 2 :])
        assert "% peak" in header
        readings[example]["row"] = row
    saxpy, matmul = readings["saxpy"], readings["matmul"]
    assert saxpy["roof"]["bound"] == "memory" and saxpy["roof"]["roof"] == "copy"
    assert saxpy["fraction_of_peak"] == pytest.approx(saxpy["gbps"] / cpu["copy_gbps"])
    # The table is another run (its own figures): the same roof, named in its cell.
    assert re.search(r" \d[\d.]* % copy ", saxpy["row"]), saxpy["row"]
    intensity = matmul["gflops"] / matmul["gbps"]
    assert matmul["roof"]["bound"] == ("compute" if intensity >= ridge else "memory")
    if matmul["roof"]["bound"] == "compute":
        assert matmul["fraction_of_peak"] == pytest.approx(matmul["gflops"] / cpu["fma_gflops_f32"])
        assert " GFLOP/s " in matmul["row"] and "FMA f32" in matmul["row"]
    assert " 0.00 " not in saxpy["row"] + matmul["row"]


def test_the_gpu_host_results_table_prints_every_measured_stream(tmp_path):
    """`benchmarks/gpu_host/results_table.py` (what evidence.sh prints) lists each device's measured
    ceilings, one column per stream: the H100 run from before the update stream says "not
    measured", and a run that has it prints its figure."""
    from workbench.run.ceilings_kernels import STREAMS

    source = REPO / "benchmarks" / "results" / "h100-2026-12-05" / "h100-2026-12-05.json"
    script = REPO / "benchmarks" / "gpu_host" / "results_table.py"

    def ceilings_rows(data: dict) -> dict[str, list[str]]:
        path = tmp_path / "results.json"
        path.write_text(json.dumps(data))
        done = subprocess.run([sys.executable, str(script), str(path), "--out", str(tmp_path / "README.md")],
                              capture_output=True, text=True, cwd=REPO, timeout=60,
                              env={**os.environ, "PYTHONPATH": str(REPO)})  # fmt: skip
        assert done.returncode == 0, done.stderr
        lines = (tmp_path / "README.md").read_text().splitlines()
        at = lines.index("## Measured ceilings (`workbench ceilings`: each the best of its kernel variants)")
        header = [cell.strip() for cell in lines[at + 2].strip("|").split("|")]
        assert header[2 : 2 + len(STREAMS)] == [f"{s} GB/s" for s in STREAMS]
        end = lines.index("", at + 4)  # the section's table ends at its blank line
        rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[at + 4 : end]]
        return {row[0]: row for row in rows}

    data = json.loads(source.read_text())
    before = ceilings_rows(data)
    update = 2 + STREAMS.index("update")
    assert before["cuda:0"][2] == "2,948" and before["cuda:0"][update] == "not measured"
    data["ceilings_by_device"]["cuda:0"]["update_gbps"] = 3301.4
    assert ceilings_rows(data)["cuda:0"][update] == "3,301"
