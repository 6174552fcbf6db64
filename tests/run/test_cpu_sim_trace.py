"""cpu-sim's trace of one invocation (issue 23, item 4): a copy of saxpy whose body calls
`ctx.trace`, built for real (cpu and cpu-sim, host cargo) and run with `workbench run --trace`;
the values come back in `--json` (results[].trace) and under the table, and are what the kernel
computes for that invocation (checked against the traced inputs in float32 and the cpu output)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from workbench.build.toolchains import detect

pytestmark = pytest.mark.slow

BODY = "        y[i] = a * x[i] + y[i];\n"
TRACED = (
    "        let before = y[i];\n"
    "        y[i] = a * x[i] + before;\n"
    '        ctx.trace("x", x[i]);\n'
    '        ctx.trace("before", before);\n'
    '        ctx.trace("after", y[i]);\n'
    '        ctx.trace("last", i + 1 == n as usize);\n'
)
GUARD = "    let n = n as usize;\n"  # right after the index: every invocation traces it


@pytest.fixture
def traced_saxpy(example_copy):
    if not detect("cpu").found:
        pytest.skip("no host cargo: run packaging/bootstrap.sh setup")
    root = example_copy("saxpy")
    lib = root / "src" / "lib.rs"
    text = lib.read_text()
    assert text.count(BODY) == 1 and text.count(GUARD) == 1
    lib.write_text(text.replace(BODY, TRACED).replace(GUARD, GUARD + '    ctx.trace("i", i);\n'))
    return root


def run(root: Path, cache: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "workbench", "run", str(root), "--backend", "cpu,cpu-sim", "--size", "n=4096",
         "--cache-dir", str(cache), "--no-record", *extra],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def line_of(root: Path, snippet: str) -> int:
    text = (root / "src" / "lib.rs").read_text()
    return text[: text.index(snippet)].count("\n") + 1


def test_the_traced_invocation_s_values_are_what_the_kernel_computes(traced_saxpy, shared_cache_dir):
    proc = run(traced_saxpy, shared_cache_dir, "--trace", "3:17", "--json")
    assert proc.returncode == 0, proc.stderr
    results = {r["backend"]: r for r in json.loads(proc.stdout)["results"]}
    assert "trace" not in results["cpu"]  # the plain host build traces nothing
    trace = results["cpu-sim"]["trace"]
    assert (trace["group"], trace["local"], trace["dropped"]) == ([3, 0, 0], [17, 0, 0], 0)
    records = trace["records"]
    assert [r["name"] for r in records] == ["i", "x", "before", "after", "last"]
    values = {r["name"]: r for r in records}
    i = 3 * 256 + 17  # 256 threads a workgroup (the manifest's default)
    assert (values["i"]["value"], values["i"]["type"]) == (i, "usize")
    assert values["last"] == {**values["last"], "type": "bool", "value": False}
    x, before, after = (np.float32(values[k]["value"]) for k in ("x", "before", "after"))
    assert {values[k]["type"] for k in ("x", "before", "after")} == {"f32"}
    assert after == np.float32(2.5) * x + before  # the manifest's a = 2.5, in float32 like the kernel
    assert after != before
    # Each record at its line, before any barrier (saxpy has none).
    assert values["after"]["line"] == line_of(traced_saxpy, 'ctx.trace("after"')
    assert values["i"]["file"] == "src/lib.rs" and {r["epoch"] for r in records} == {0}
    assert results["cpu-sim"]["findings"]["findings"] == []  # tracing is no finding
    assert results["cpu-sim"]["verified"] is True  # and changes nothing the kernel computes

    # The last invocation of the grid: `last` is true; one past n traces only its index.
    last = json.loads(run(traced_saxpy, shared_cache_dir, "--trace", "15:255", "--json").stdout)
    records = next(r for r in last["results"] if r["backend"] == "cpu-sim")["trace"]["records"]
    assert records[-1]["name"] == "last" and records[-1]["value"] is True


def test_the_trace_is_printed_under_the_table_and_bad_points_are_named(traced_saxpy, shared_cache_dir):
    proc = run(traced_saxpy, shared_cache_dir, "--trace", "0:5")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    head = out.index("cpu-sim: cpu-sim trace of workgroup (0, 0, 0) local id (5, 0, 0): 5 values")
    line = line_of(traced_saxpy, 'ctx.trace("i", i)')
    assert out[head + 1].startswith(f"cpu-sim:   src/lib.rs:{line}:")
    assert out[head + 1].endswith(": i = 5 (usize, before any barrier)")

    bad = run(traced_saxpy, shared_cache_dir, "--trace", "0,x:5")
    assert bad.returncode == 2 and "'x' in the workgroup is not a whole number" in bad.stderr
    no_sim = subprocess.run(
        [sys.executable, "-m", "workbench", "run", str(traced_saxpy), "--backend", "cpu", "--trace", "0:5"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert no_sim.returncode == 2 and "only cpu-sim traces" in no_sim.stderr
