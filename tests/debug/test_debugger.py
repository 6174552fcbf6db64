"""`workbench debug` (issue 40, items 2 and 3) with the real gdb on real debug builds of the
examples: a breakpoint in reduction's loop stops only in workgroup 3, local 17, whose locals are
what a hand computation of its partial sum gives; `next` steps on from it, and over a barrier,
while the workgroup's other invocations run (the shared array read before and after, each
stop's states of the workgroup's invocations); a watch on an element
of saxpy's y stops at the invocation that writes it with the old and new value; a kernel that
panics under the debugger is reported, and one that never ends is stopped at the time limit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import skip_without_debugger
from workbench.project import Project
from workbench.run.inputs import make_inputs

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _tools():
    skip_without_debugger()


def debug(root: Path, cache: Path, *extra: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "workbench", "debug", str(root), "--cache-dir", str(cache), *extra],
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def line_of(root: Path, snippet: str) -> int:
    text = (root / "src" / "lib.rs").read_text()
    assert text.count(snippet) == 1, snippet
    return text[: text.index(snippet)].count("\n") + 1


def inputs(root: Path, sizes: dict[str, int]) -> dict[str, np.ndarray]:
    """The buffers `workbench run` (and so `workbench debug`) starts from at these sizes."""
    kernel = Project.open(root).manifest.kernel(None)
    return make_inputs(kernel, kernel.evaluate(kernel.symbols(sizes, None)), None, root)


def local(stop: dict, name: str) -> str:
    values = [v["value"] for v in stop["locals"] if v["name"] == name]
    assert values, (name, stop["locals"])
    return values[0]


def test_a_breakpoint_stops_only_in_the_chosen_invocation_with_its_locals(
    example_copy, shared_cache_dir, tmp_path
):
    root = example_copy("reduction")
    line = line_of(root, "sum += load_sum(&x, vector, lo, n)")  # the loop's body
    commands = tmp_path / "commands"
    commands.write_text("print sum  # the partial sum so far\n" + "next\n" * 5)
    proc = debug(root, shared_cache_dir, "--invocation", "3/17", "--break", f"src/lib.rs:{line}",
                 "--size", "n=16384", "--commands", str(commands), "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    first, *steps = json.loads(proc.stdout)["stops"]
    assert (first["reason"], first["file"], first["line"]) == ("breakpoint", "src/lib.rs", line)
    assert first["invocation"] == {"group": [3, 0, 0], "local": [17, 0, 0]}
    assert first["function"] == "reduction::reduction_body"
    assert (local(first, "tid"), local(first, "block"), local(first, "groups")) == ("17", "3", "8")
    assert (local(first, "sum"), first["prints"]) == ("0", [{"expression": "sum", "value": "0"}])
    # The stack in Rust names, from the body down to its fiber's start (invocation 17 runs on a
    # fiber of its own once invocation 0 reached the first barrier).
    names = [f["function"] for f in first["stack"]]
    assert names[:2] == ["reduction::reduction_body", "reduction::reduction_cpu::{closure#0}"]
    assert "fiber" in names[-1] and any(name.startswith("gpu_kernel::host::exec::") for name in names)
    # `next` stepped on, in the same invocation, to the line after.
    assert steps and all(s["reason"] == "step" and s["invocation"] == first["invocation"] for s in steps)
    after = steps[0]  # the first `next` (gdb alone stopped inside the line after its inlined calls)
    assert (after["file"], after["line"]) == ("src/lib.rs", line + 1)
    # By hand: n = 16384, 8 workgroups of 512 · 4 elements; workgroup 3's only chunk starts at
    # 3 · 2048, invocation 17 loads 4 elements at 17 · 4 and 4 more 256 · 4 further on, each
    # load summed as (x0 + x1) + (x2 + x3), in float32 as the kernel adds.
    x = inputs(root, {"n": 16384})["x"]
    lo = 3 * 2048 + 17 * 4
    first_load = (x[lo] + x[lo + 1]) + (x[lo + 2] + x[lo + 3])
    second_load = (x[lo + 1024] + x[lo + 1025]) + (x[lo + 1026] + x[lo + 1027])
    assert local(after, "lo") == str(lo)
    assert np.float32(float(local(after, "sum"))) == np.float32(0.0) + (first_load + second_load)


def test_next_and_continue_leave_a_line_split_by_inlined_calls_for_the_next_line_or_round(
    example_copy, shared_cache_dir, tmp_path
):
    # reduction's fold line calls the kernel API's `get` twice and `set` once, all inlined: gdb's
    # line table has the line in three blocks, and gdb's own `next` from the breakpoint stopped
    # on the same line again (stride 128 still), a `next` onto the line stopped at its first
    # call's site, before the breakpoint's address, and `continue` from there hit the breakpoint
    # in the same round (stride 64 again).
    root = example_copy("reduction")
    fold = line_of(root, "scratch.set(tid, scratch.get(tid) + scratch.get(tid + stride));")
    barrier = line_of(root, "        ctx.barrier();\n        stride /= 2;")
    halve, loop, test = (
        line_of(root, "stride /= 2;"),
        line_of(root, "while stride > 0 {"),
        line_of(root, "if tid < stride {"),
    )
    commands = tmp_path / "commands"
    commands.write_text("next\n" * 5 + "continue\n" * 2)
    proc = debug(root, shared_cache_dir, "--invocation", "3/17", "--break", f"src/lib.rs:{fold}",
                 "--size", "n=16384", "--commands", str(commands), "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    stops = json.loads(proc.stdout)["stops"]
    assert all(s["invocation"] == {"group": [3, 0, 0], "local": [17, 0, 0]} for s in stops[:-1])
    seen = [(s["reason"], s.get("line"), s.get("locals") and local(s, "stride")) for s in stops]
    assert seen == [
        ("breakpoint", fold, "128"),
        # each `next` on to the next line: the barrier after the fold, the halving, the loop's
        # test with the next round's stride, the `if`, and the fold line of that round
        ("step", barrier, "128"),
        ("step", halve, "128"),
        ("step", loop, "64"),
        ("step", test, "64"),
        ("step", fold, "64"),
        # `continue` from the fold line: its breakpoint in the next round; invocation 17 folds
        # while stride > 17 (128, 64, 32), so the one after ends the launch
        ("breakpoint", fold, "32"),
        ("exited", None, None),
    ], seen


def test_a_watch_stops_where_an_invocation_writes_the_element(example_copy, shared_cache_dir):
    root = example_copy("saxpy")
    proc = debug(root, shared_cache_dir, "--watch", "y[1234]", "--size", "n=4096", "--json")
    assert proc.returncode == 0, proc.stderr
    (stop,) = json.loads(proc.stdout)["stops"]
    assert stop["reason"] == "watch"
    # 256 invocations a workgroup: element 1234 is workgroup 4's invocation 210.
    assert stop["invocation"] == {"group": [4, 0, 0], "local": [210, 0, 0]}
    assert (stop["file"], stop["line"]) == ("src/lib.rs", line_of(root, "        y[i] = a * x[i] + y[i];"))
    # The body's frame has ended with its store (it was inlined): the closure's locals show.
    assert "local: [210, 0, 0]" in local(stop, "ctx")
    data = inputs(root, {"n": 4096})
    old, new = data["y"][1234], np.float32(2.5) * data["x"][1234] + data["y"][1234]
    assert np.float32(float(stop["watch"]["old"])) == old
    assert np.float32(float(stop["watch"]["new"])) == new
    assert stop["watch"]["element"] == "y[1234]"


def test_a_step_off_the_kernel_s_last_line_reports_the_invocation_returned(
    example_copy, shared_cache_dir, tmp_path
):
    root = example_copy("saxpy")
    line = line_of(root, "        y[i] = a * x[i] + y[i];")  # the body's last statement
    commands = tmp_path / "commands"
    commands.write_text("next\nnext\n")
    proc = debug(root, shared_cache_dir, "--invocation", "4/210", "--break", f"src/lib.rs:{line}",
                 "--size", "n=4096", "--commands", str(commands), "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    first, returned, after = json.loads(proc.stdout)["stops"]
    assert (first["reason"], first["line"], first["function"]) == ("breakpoint", line, "saxpy::saxpy_body")
    # gdb's `next` at the body's end stops in its caller, the entry's closure (`sim_inline!(move |ctx|
    # saxpy_body(…))`), where the body's locals are gone: the session says the invocation
    # returned instead, with no line of the launcher and the invocation returned in its workgroup.
    assert returned["reason"] == "returned", returned
    assert returned["invocation"] == {"group": [4, 0, 0], "local": [210, 0, 0]}
    assert "file" not in returned and "line" not in returned and "locals" not in returned
    assert returned["detail"].startswith("saxpy::saxpy_body returned")
    states = {e["local"]: e["state"] for e in returned["workgroup"]["invocations"]}
    assert states[210] == "returned" and states[209] == "returned" and states[211] == "not started"
    # Nothing of the invocation is left to step: the next step runs the launch on, to its end.
    assert after["reason"] == "exited", after


def test_a_kernel_that_panics_under_the_debugger_is_reported(example_copy, shared_cache_dir):
    root = example_copy("saxpy")
    lib = root / "src" / "lib.rs"
    guard = "    let n = n as usize;\n"
    text = lib.read_text()
    assert text.count(guard) == 1
    lib.write_text(
        text.replace(guard, guard + '    if i == 300 {\n        panic!("invocation 300 gives up");\n    }\n')
    )
    proc = debug(root, shared_cache_dir, "--watch", "y[1234]", "--size", "n=4096", "--json")
    assert proc.returncode == 1, proc.stderr  # the kernel did not run as asked
    (stop,) = json.loads(proc.stdout)["stops"]
    assert stop["reason"] == "panic"
    assert (stop["file"], stop["line"]) == ("src/lib.rs", line_of(root, 'panic!("invocation 300 gives up");'))
    assert stop["invocation"] == {"group": [1, 0, 0], "local": [44, 0, 0]}
    assert stop["detail"].startswith("SIGABRT") and "invocation 300 gives up" in stop["detail"]


def test_a_kernel_that_never_ends_is_stopped_at_the_time_limit(example_copy, shared_cache_dir):
    root = example_copy("saxpy")
    lib = root / "src" / "lib.rs"
    guard = "    let n = n as usize;\n"
    text = lib.read_text()
    lib.write_text(
        text.replace(guard, guard + "    while i == 7 && n > 0 {\n        core::hint::spin_loop();\n    }\n")
    )
    proc = debug(root, shared_cache_dir, "--watch", "y[1234]", "--size", "n=4096", "--timeout", "5", "--json")
    assert proc.returncode == 1, proc.stderr
    (stop,) = json.loads(proc.stdout)["stops"]
    assert stop["reason"] == "timeout" and "5 s" in stop["detail"]


def test_stepping_over_a_barrier_lets_the_workgroup_s_other_invocations_run(
    example_copy, shared_cache_dir, tmp_path
):
    root = example_copy("reduction")
    text = (root / "src" / "lib.rs").read_text()
    barrier = text[: text.index("    ctx.barrier();\n")].count("\n") + 1  # the first one
    commands = tmp_path / "commands"
    commands.write_text("print *(scratch.ptr + 18)\nnext\nprint *(scratch.ptr + 18)\nprint *scratch.ptr@4\n")
    proc = debug(root, shared_cache_dir, "--invocation", "3:17", "--break", f"src/lib.rs:{barrier}",
                 "--size", "n=16384", "--commands", str(commands), "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    before, after = json.loads(proc.stdout)["stops"]
    assert (before["line"], after["line"]) == (barrier, barrier + 1)
    assert after["reason"] == "step" and after["invocation"] == {"group": [3, 0, 0], "local": [17, 0, 0]}
    # The workgroup's states (the executor's table): before, 0-16 wait at this barrier, 18-255 have
    # not started; after it opened, 0-16 wait at the tree's first barrier, 18-255 are on their way.
    tree = text[: text.index("        ctx.barrier();\n        stride /= 2;")].count("\n") + 1

    def states(stop: dict) -> list[tuple]:
        return [(e["state"], e.get("barrier"), e.get("line")) for e in stop["workgroup"]["invocations"]]

    assert (
        states(before)
        == [("waiting", 1, barrier)] * 17 + [("running", None, None)] + [("not started", None, None)] * 238
    )
    assert (
        states(after)
        == [("waiting", 2, tree)] * 17 + [("running", None, None)] + [("ready", None, None)] * 238
    )
    assert (before["workgroup"]["barriers_opened"], after["workgroup"]["barriers_opened"]) == (0, 1)
    # Between two barriers a workgroup's invocations run one after another: at the barrier,
    # invocation 18 has not stored its sum yet; once it opens, every invocation has.
    assert before["prints"] == [{"expression": "*(scratch.ptr + 18)", "value": "0"}]
    x = inputs(root, {"n": 16384})["x"]

    def partial_sum(t: int) -> np.float32:
        lo = 3 * 2048 + t * 4
        first = (x[lo] + x[lo + 1]) + (x[lo + 2] + x[lo + 3])
        second = (x[lo + 1024] + x[lo + 1025]) + (x[lo + 1026] + x[lo + 1027])
        return np.float32(0.0) + (first + second)

    one, four = after["prints"]
    # ... and the barrier opened in order: invocations 0-16 ran on to the next barrier before 17
    # resumed (each folded its upper partner, t + 128, into its own element), 18 did not yet.
    assert np.float32(float(one["value"])) == partial_sum(18)
    folded = [partial_sum(t) + partial_sum(t + 128) for t in range(4)]
    assert [np.float32(float(v)) for v in four["value"].strip("[]").split(",")] == folded
