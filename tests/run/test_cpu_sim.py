"""cpu-sim: the reduction example's one kernel body run on the CPU with GPU semantics, checked;
the histogram example's atomics (two atomics on one element are no race, a plain access in
their place or beside them is); warp_reduce's subgroup shuffles (every invocation must call one).

Real builds (host cargo, the kernel API crate with and without its `sim` feature) and real runs
through `workbench run --json`: faults injected into a copy of the example are reported at the
Rust line that holds them, with the invocations' coordinates; the example as shipped reports
nothing and gives the plain cpu backend's numbers bit for bit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.build.toolchains import detect

pytestmark = pytest.mark.slow

#: 65 workgroups of 256 at the default tunables (float4 loads, 2048 elements a chunk): the last
#: chunk holds n % 2048 = 256 elements, so exactly one invocation's first element is n itself:
#: workgroup 64, local id 64 (what the off-by-one test expects).
N = 131328


def run_json(root: Path, cache: Path, *extra: str) -> tuple[dict, int]:
    proc = subprocess.run(
        [sys.executable, "-m", "workbench", "run", str(root), "--backend", "cpu,cpu-sim", "--size", f"n={N}",
         "--cache-dir", str(cache), "--no-record", "--json", *extra],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.stdout, proc.stderr
    report = json.loads(proc.stdout)
    return {r["backend"]: r for r in report["results"]}, proc.returncode


def edit(root: Path, old: str, new: str) -> int:
    """Replace `old` (once) in src/lib.rs; the 1-based line where `new` begins."""
    path = root / "src" / "lib.rs"
    text = path.read_text()
    assert text.count(old) == 1, old
    at = text.index(old)
    path.write_text(text.replace(old, new))
    return text[:at].count("\n") + 1


def line_of(root: Path, snippet: str) -> int:
    text = (root / "src" / "lib.rs").read_text()
    assert text.count(snippet) == 1, snippet
    return text[: text.index(snippet)].count("\n") + 1


@pytest.fixture
def reduction(example_copy):
    if not detect("cpu").found:
        pytest.skip("no host cargo: run packaging/bootstrap.sh setup")
    return example_copy("reduction")


def only(results: dict, kind: str) -> dict:
    findings = results["cpu-sim"]["findings"]["findings"]
    chosen = [f for f in findings if f["kind"] == kind]
    assert chosen, findings
    return chosen[0]


def test_the_example_reports_nothing_and_matches_cpu_bit_for_bit(reduction, shared_cache_dir):
    results, code = run_json(reduction, shared_cache_dir)
    sim = results["cpu-sim"]
    assert sim["status"] == "ok", sim["error"]
    assert sim["verified"] is True and sim["check"]["max_abs_err"] == 0, sim["check"]
    assert sim["findings"] == {"findings": [], "dropped": 0, "diagnostics": []}
    assert "findings" not in results["cpu"]  # the plain host build runs no checks
    assert code == 0


def test_a_missing_barrier_is_a_race_on_workgroup_memory_at_its_lines(reduction, shared_cache_dir):
    # The barrier between the loads into `scratch` and the first folding step goes.
    edit(
        reduction,
        "        scratch.set(tid, sum);\n    }\n    ctx.barrier();\n",
        "        scratch.set(tid, sum);\n    }\n",
    )
    store = line_of(reduction, "scratch.set(tid, sum);")
    fold = line_of(reduction, "scratch.set(tid, scratch.get(tid) + scratch.get(tid + stride));")
    results, code = run_json(reduction, shared_cache_dir)
    race = only(results, "shared-race")
    assert race["array"] == "shared" and race["index"] >= 128
    # One finding for the whole launch, its array declared where the entry asks for it: the first
    # workgroup's array once named a line of the executor instead, and the race came twice.
    races = [f for f in results["cpu-sim"]["findings"]["findings"] if f["kind"] == "shared-race"]
    assert len(races) == 1, races
    declared = race["declared"]
    assert declared["file"] == "src/lib.rs" and declared["line"] == line_of(
        reduction, "wg.shared::<f32, BLOCK>()"
    )
    # Invocation 0's read of scratch[128] in the folding step and invocation 128's store of it,
    # with no barrier between them. Which the host ran first is its own order (on fibers
    # invocation 0 ran on into the fold before 128 stored; the body's `#[lanes]` copy runs every
    # store, then every fold): either way it is this race.
    read, write = sorted(race["accesses"], key=lambda a: a["access"])
    assert (read["access"], read["file"], read["line"], read["local"]) == (
        "read",
        "src/lib.rs",
        fold,
        [0, 0, 0],
    )
    assert (write["access"], write["line"], write["local"]) == ("write", store, [race["index"], 0, 0])
    assert read["group"] == write["group"] == [0, 0, 0]
    diagnostic = next(d for d in results["cpu-sim"]["findings"]["diagnostics"] if d["code"] == "shared-race")
    assert (diagnostic["severity"], diagnostic["file"], diagnostic["line"]) == ("error", "src/lib.rs", store)
    assert "no barrier between them" in diagnostic["message"]
    assert code == 1  # a finding fails the run, like a failed check


def test_an_off_by_one_is_out_of_bounds_at_its_line_with_the_invocation(reduction, shared_cache_dir):
    line = edit(reduction, "while j < n && j < i + vector {", "while j <= n && j < i + vector {") + 1
    results, _ = run_json(reduction, shared_cache_dir)
    oob = only(results, "out-of-bounds")
    assert (oob["name"], oob["index"], oob["length"]) == ("x", N, N)
    (access,) = oob["accesses"]
    assert (access["access"], access["file"], access["line"]) == ("read", "src/lib.rs", line)
    assert (access["group"], access["local"]) == ([N // 2048, 0, 0], [(N % 2048) // 4, 0, 0])
    assert results["cpu-sim"]["status"] == "ok"  # reported, not crashed: the read gave 0


def test_two_writers_of_one_element_are_a_race_on_a_global_buffer(reduction, shared_cache_dir):
    line = edit(
        reduction,
        "    if tid == 0 && block < groups {\n",
        "    if tid < 2 && block < groups {\n",
    )
    results, _ = run_json(reduction, shared_cache_dir)
    race = only(results, "global-race")
    assert race["name"] == "partial"
    first, second = race["accesses"]
    assert first["access"] == second["access"] == "write"
    assert first["line"] == second["line"] == line + 1
    assert sorted([first["local"], second["local"]]) == [[0, 0, 0], [1, 0, 0]]
    assert first["group"] == second["group"]


def test_a_barrier_only_some_invocations_reach_is_divergence_not_a_hang(reduction, shared_cache_dir):
    line = edit(
        reduction,
        "            scratch.set(tid, scratch.get(tid) + scratch.get(tid + stride));\n        }\n        ctx.barrier();\n",
        "            scratch.set(tid, scratch.get(tid) + scratch.get(tid + stride));\n        }\n        if tid < 32 {\n            ctx.barrier();\n        }\n",
    )
    results, _ = run_json(reduction, shared_cache_dir)
    assert results["cpu-sim"]["status"] == "ok", results["cpu-sim"]["error"]
    divergence = only(results, "barrier-divergence")
    waiting, other = divergence["accesses"]
    assert (waiting["access"], waiting["line"]) == ("barrier", line + 3)
    assert waiting["local"][0] < 32 and other["local"][0] >= 32
    assert other["access"] == "return"


# ---------------------------------------------------------------- atomics: the histogram example


@pytest.fixture
def histogram(example_copy):
    if not detect("cpu").found:
        pytest.skip("no host cargo: run packaging/bootstrap.sh setup")
    return example_copy("histogram")


def test_the_histograms_atomics_report_nothing_and_count_exactly(histogram, shared_cache_dir):
    results, code = run_json(histogram, shared_cache_dir)
    sim = results["cpu-sim"]
    assert sim["status"] == "ok", sim["error"]
    assert sim["verified"] is True and sim["check"]["max_abs_err"] == 0, sim["check"]
    assert sim["findings"] == {"findings": [], "dropped": 0, "diagnostics": []}
    assert code == 0


def test_a_plain_increment_of_a_shared_bin_is_a_race(histogram, shared_cache_dir):
    line = edit(
        histogram,
        "local.atomic_add((x.get(i) % BINS as u32) as usize, 1);",
        "let bin = (x.get(i) % BINS as u32) as usize;\n            local.set(bin, local.get(bin) + 1);",
    )
    results, code = run_json(histogram, shared_cache_dir)
    race = only(results, "shared-race")
    assert {a["access"] for a in race["accesses"]} <= {"read", "write"}
    assert {a["line"] for a in race["accesses"]} == {line + 1}
    assert code == 1


def test_a_plain_add_to_a_global_bin_is_a_race(histogram, shared_cache_dir):
    line = edit(histogram, "bins.atomic_add(b, count);", "bins[b] += count;")
    results, code = run_json(histogram, shared_cache_dir)
    race = only(results, "global-race")
    assert race["name"] == "bins"
    assert {a["line"] for a in race["accesses"]} == {line}
    assert code == 1


def test_a_plain_read_beside_other_workgroups_atomics_is_a_race(histogram, shared_cache_dir):
    line = edit(
        histogram,
        "bins.atomic_add(b, count);",
        "bins.atomic_add(b, count);\n            let _seen = bins.get(b);",
    )
    results, _ = run_json(histogram, shared_cache_dir)
    race = only(results, "global-race")
    accesses = {(a["access"], a["line"]) for a in race["accesses"]}
    assert accesses == {("atomic", line), ("read", line + 1)}
    assert race["accesses"][0]["group"] != race["accesses"][1]["group"]  # two workgroups


def test_a_plain_read_of_a_shared_bin_beside_other_invocations_atomics_is_a_race(histogram, shared_cache_dir):
    # Invocations of a workgroup run one after another here: a later one's atomic on a bin meets
    # an earlier one's read of it in the same epoch (the workgroup-memory shadow's atomic slot).
    line = edit(
        histogram,
        "local.atomic_add((x.get(i) % BINS as u32) as usize, 1);",
        "let bin = (x.get(i) % BINS as u32) as usize;\n"
        "            local.atomic_add(bin, 1);\n"
        "            let _seen = local.get(bin);",
    )
    results, code = run_json(histogram, shared_cache_dir)
    race = only(results, "shared-race")
    accesses = {(a["access"], a["line"]) for a in race["accesses"]}
    assert accesses == {("read", line + 2), ("atomic", line + 1)}
    assert race["accesses"][0]["local"] != race["accesses"][1]["local"]  # two invocations
    assert code == 1


def test_an_atomic_on_unzeroed_workgroup_memory_is_an_uninitialized_read(histogram, shared_cache_dir):
    edit(histogram, "        local.set(b, 0);\n", "")
    line = line_of(histogram, "local.atomic_add(")
    results, _ = run_json(histogram, shared_cache_dir)
    found = only(results, "uninitialized-read")
    (access,) = found["accesses"]
    assert (access["access"], access["line"]) == ("atomic", line)


# ---------------------------------------------------------------- subgroup shuffles: warp_reduce


def test_a_shuffle_some_invocations_skip_is_a_barrier_divergence_at_its_line(example_copy, shared_cache_dir):
    if not detect("cpu").found:
        pytest.skip("no host cargo: run packaging/bootstrap.sh setup")
    root = example_copy("warp_reduce")
    line = edit(
        root,
        "        value += ctx.subgroup_shuffle_down(value, offset as u32);",
        "        if t < 128 {\n            value += ctx.subgroup_shuffle_down(value, offset as u32);\n        }",
    )
    results, code = run_json(root, shared_cache_dir)
    divergence = only(results, "barrier-divergence")
    lines = {a["line"] for a in divergence["accesses"]}
    assert line + 1 in lines, divergence  # the shuffle's line: a shuffle waits for the workgroup on the host
    assert code == 1
