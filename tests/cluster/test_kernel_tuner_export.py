"""`workbench tune --export-kt FILE`: the sweep as Kernel Tuner's cache JSON (schema cache/1.0.0),
one file per backend x device, read back as Kernel Tuner reads it; here from a cluster sweep."""

from __future__ import annotations

import json
import re

from .conftest import recorded_rows

REQUIRED = ["schema_version", "device_name", "kernel_name", "problem_size", "tune_params_keys", "tune_params",
            "objective", "cache"]  # fmt: skip
ENTRY_REQUIRED = ["time", "compile_time", "verification_time", "benchmark_time", "strategy_time",
                  "framework_time", "timestamp"]  # fmt: skip


def _break_wgsl_at(root, threads: int) -> None:
    """saxpy's WGSL writes a wrong value when built with `threads` (a failing configuration)."""
    wgsl = root / "reference" / "saxpy.wgsl"
    line = "        y[i] = params.a * x[i] + y[i];"
    text = wgsl.read_text()
    assert line in text
    wgsl.write_text(text.replace(line, line + f"\n        if (threads == {threads}u) {{ y[i] = 0.5; }}"))


def _slow_wgsl_at(root, threads: int, iterations: int = 2000) -> None:
    """saxpy's WGSL does `iterations` extra sines per element when built with `threads`: still
    correct, much slower (a clear winner, so the leaders are re-timed side by side)."""
    wgsl = root / "reference" / "saxpy.wgsl"
    line = "        y[i] = params.a * x[i] + y[i];"
    slow = (
        f"\n        if (threads == {threads}u) {{\n            var acc = 0.0;\n"
        f"            for (var k = 0u; k < {iterations}u; k++) {{ acc = acc + sin(f32(k) + x[i]); }}\n"
        "            if (acc == 12345.0) { y[i] = 0.0; }\n        }"
    )
    wgsl.write_text(wgsl.read_text().replace(line, line + slow))


def test_cluster_sweep_exports_kernel_tuner_caches_with_the_failed_configuration_marked(
    example_copy, tune_cli, tmp_path
):
    project, db = example_copy("saxpy", unique=True, tunables=("threads",)), tmp_path / "s.db"
    _break_wgsl_at(project, 128)
    _slow_wgsl_at(project, 256)
    proc = tune_cli(str(project), "--backend", "cpu,wgsl", "--size", "n=4096", "--rounds", "2", "--confirm", "1",
                    "--param", "threads=64,128,256", "--db", str(db), "--cluster", "local:1",
                    "--export-kt", str(tmp_path / "kt.json"), "--json")  # fmt: skip
    out, err = proc.communicate(timeout=900)
    assert proc.returncode == 1, err  # one configuration failed: listed, never ranked
    data = json.loads(out)
    assert sorted(data["kernel_tuner"]) == [
        str(tmp_path / "kt.cpu@cpu.json"),
        str(tmp_path / "kt.wgsl@wgpu-0.json"),
    ]
    entries = {(e["backend"], e["config"]["threads"]): e for e in data["configs"]}

    wgsl = json.loads((tmp_path / "kt.wgsl@wgpu-0.json").read_text())
    assert [k for k in REQUIRED if k not in wgsl] == []
    assert (
        wgsl["schema_version"] == "1.0.0" and wgsl["kernel_name"] == "saxpy" and wgsl["objective"] == "time"
    )
    assert wgsl["problem_size"] == [4096] and wgsl["tune_params_keys"] == ["threads"]
    assert wgsl["tune_params"] == {"threads": [64, 128, 256]}
    assert wgsl["device_name"] == entries[("wgsl", 64)]["device_name"]
    assert sorted(wgsl["cache"]) == ["128", "256", "64"]
    assert all(re.fullmatch(r"\d+(,\d+)*", key) for key in wgsl["cache"])
    assert wgsl["cache"]["128"]["time"] == "RuntimeFailedConfig" and wgsl["cache"]["128"]["threads"] == 128
    for threads in (64, 256):
        record, entry = wgsl["cache"][str(threads)], entries[("wgsl", threads)]
        assert [k for k in ENTRY_REQUIRED if k not in record] == []
        assert record["threads"] == threads
        assert record["time"] == entry["timing"]["median_s"] * 1e3  # ms, the sweep's median
        assert record["times"] == [s * 1e3 for s in entry["timing"]["samples_s"]] and record["times"]
    cpu = json.loads((tmp_path / "kt.cpu@cpu.json").read_text())
    assert sorted(cpu["cache"]) == ["128", "256", "64"]  # cpu is compared with itself: all three verified
    assert all(isinstance(r["time"], float) for r in cpu["cache"].values())
    # The side-by-side re-timing (round 3) ran on the one worker, recorded with it.
    confirm = [r for r in recorded_rows(db) if r["tuning"].get("confirm")]
    assert confirm and {r["cluster"]["worker"] for r in confirm} == {
        w["worker"] for w in data["cluster"]["workers"]
    }
