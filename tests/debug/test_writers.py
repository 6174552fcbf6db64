"""cpu-sim's element → writer (issue 40, item 1), on real cpu-sim runs (host cargo builds of the
examples): `workbench run --writers` records, for every element of every output buffer, the
invocation and the Rust line of its last write and how many invocations wrote it. matmul's C has
one writer per element (the tile's own invocation), histogram's bins several (one atomic per
workgroup per bin); a wrong element of saxpy's y is traced back to the invocation that wrote it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.build.toolchains import detect

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _host_cargo():
    if not detect("cpu").found:
        pytest.skip("no host cargo: run packaging/bootstrap.sh setup")


def run(root: Path, cache: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "workbench", "run", str(root), "--cache-dir", str(cache), "--no-record", *extra],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def sim_result(proc: subprocess.CompletedProcess) -> dict:
    results = {r["backend"]: r for r in json.loads(proc.stdout)["results"]}
    assert "writers" not in results.get("cpu", {})  # the plain host build records none
    return results["cpu-sim"]


def line_of(root: Path, snippet: str) -> int:
    text = (root / "src" / "lib.rs").read_text()
    assert text.count(snippet) == 1
    return text[: text.index(snippet)].count("\n") + 1


def test_matmul_each_element_of_c_has_one_writer_its_own_invocation(example_copy, shared_cache_dir):
    root = example_copy("matmul")
    proc = run(root, shared_cache_dir, "--backend", "cpu,cpu-sim", "--size", "m=64,n=64,k=64",
               "--writers", "c[0],c[65],c[100],c[4095]", "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = sim_result(proc)
    assert result["verified"] is True and result["findings"]["findings"] == []
    c = result["writers"]["c"]
    assert (c["written"], c["unwritten"], c["single"], c["several"], c["max_writers"]) == (
        4096,
        0,
        4096,
        0,
        1,
    )
    line = line_of(root, "c[row * n + col] = acc;")
    # 16 × 16 tiles: element (row, col) is written by workgroup (col // 16, row // 16), local
    # (col % 16, row % 16).
    expected = {0: (0, 0), 65: (1, 1), 100: (1, 36), 4095: (63, 63)}
    elements = {e["index"]: e for e in c["elements"]}
    assert set(elements) == set(expected)
    for index, (row, col) in expected.items():
        e = elements[index]
        assert e["group"] == [col // 16, row // 16, 0] and e["local"] == [col % 16, row % 16, 0], e
        assert (e["file"], e["line"], e["writers"]) == ("src/lib.rs", line, 1)
        assert isinstance(e["value"], float)


def test_histogram_bins_have_one_atomic_writer_per_workgroup(example_copy, shared_cache_dir):
    root = example_copy("histogram")
    proc = run(root, shared_cache_dir, "--backend", "cpu,cpu-sim", "--size", "n=65536",
               "--writers", "bins[5],bins[255]", "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    result = sim_result(proc)
    assert result["verified"] is True
    bins = result["writers"]["bins"]
    # 65536 values, 512 invocations × 32 items a workgroup: 4 workgroups, each adds every
    # non-zero bin of its private histogram once (uniform random values: every bin is hit).
    assert (bins["written"], bins["several"], bins["single"], bins["max_writers"]) == (256, 256, 0, 4)
    line = line_of(root, "bins.atomic_add(b, count);")
    for e in bins["elements"]:
        # Bin b is added by invocation b of each workgroup (bins are spread over the invocations);
        # which workgroup came last depends on the threads' timing.
        assert e["local"] == [e["index"], 0, 0] and 0 <= e["group"][0] < 4 and e["group"][1:] == [0, 0]
        assert (e["line"], e["writers"]) == (line, 4)
    assert [e["index"] for e in bins["elements"]] == [5, 255]


def test_a_wrong_element_names_the_invocation_and_line_that_wrote_it(example_copy, shared_cache_dir):
    root = example_copy("saxpy")
    lib = root / "src" / "lib.rs"
    body = "        y[i] = a * x[i] + y[i];\n"
    text = lib.read_text()
    assert text.count("    } else if i < n {\n" + body) == 1
    wrong = "        if i == 1234 {\n            y[i] = 5.0;\n        } else {\n    " + body + "        }\n"
    lib.write_text(text.replace("    } else if i < n {\n" + body, "    } else if i < n {\n" + wrong))
    assert "y[i] = 5.0;" in lib.read_text()
    proc = run(root, shared_cache_dir, "--backend", "wgsl,cpu-sim", "--reference", "wgsl", "--size", "n=4096",
               "--writers")  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr  # a failed check
    line = line_of(root, "y[i] = 5.0;")
    expected = (
        f"cpu-sim:   y[1234] = 5, written by workgroup (4, 0, 0) local (210, 0, 0) at src/lib.rs:{line}"
    )
    assert expected in proc.stdout.splitlines(), proc.stdout
    assert "cpu-sim: writers of y: 4096 elements written (4096 by one invocation, 0 by several" in proc.stdout
