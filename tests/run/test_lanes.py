"""`#[gpu_kernel::lanes]` (issue 37): a kernel body's host copy split at its barriers into loops over
the workgroup's invocations, run by `Kernel::run_lanes` on cpu and cpu-sim
(resources/crates/gpu_kernel/macros/src/lib.rs, host/lanes.rs).

Real cargo builds of small kernel crates and real runs through the workbench's services. Each body
is written once with `#[lanes]`; its entry runs it on fibers (`k.run`) or as lanes
(`k.run_lanes`) by a scalar (`mode`), so one build serves both and every line is the same line:

- Results: a tree reduction (a barrier in a `while`), a Hillis–Steele scan (barriers in a `while`
  and in an `if` / `else if` / `else` the workgroup agrees on) and a rotate-then-scan whose result
  depends on barrier ordering, each with an early `return;` after its last barrier, and a subgroup
  reduction by shuffles (warp_reduce's loop) give on cpu and cpu-sim exactly the fibers' output
  (and numpy's), at sizes no multiple of the workgroup, on 1-D and 2-D workgroups; cpu-sim finds
  nothing.
- cpu-sim's findings under lanes: a missing barrier's race and an out-of-bounds read are found at
  the lines the fibers' run finds them; a `return;` before a barrier (or a subgroup shuffle) that
  some invocations take is a barrier divergence at that barrier (shuffle); a `while` around a
  barrier whose condition the invocations disagree on is a divergence (between the barrier and
  the `while`), and the run ends.
- Compile errors: what the attribute cannot split fails the cpu build with a `#[lanes]:` message at
  the offending statement's line; a non-`Copy` local across a barrier names `Carried`'s message.
- Bodies the attribute's rules allow but its copy gets wrong, and diagnostics not at the statement:
  strict xfails, each with its cause (the macro and lanes.rs have their own owner).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import EXAMPLES
from tests.kernel_crate_tests import run_crate_test_files
from workbench.build import build_project
from workbench.build.toolchains import detect

pytestmark = pytest.mark.slow

#: Every kernel's entry: `mode` 0 runs the body on fibers, 1 its `#[lanes]` copy. A macro, so both
#: calls are at one line (the entry's macro call: where cpu-sim places a returned invocation).
ENTRY_MACRO = """
use gpu_kernel::prelude::*;

/// The most invocations of a workgroup these kernels take (their shared arrays' length).
const MAX: usize = 256;

macro_rules! entry {
    ($name:ident, $body:ident, $lanes:ident) => {
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            launch: *mut gpu_kernel::host::Launch, mode: u32, n: u32, x: *const u32, out: *mut u32,
        ) {
            let k = unsafe { gpu_kernel::host::Kernel::new(launch) };
            let (x, out) = unsafe { (k.input(0, x), k.output(1, out)) };
            if mode == 0 {
                k.run(move |ctx| {
                    let s = ctx.shared::<u32, MAX>();
                    $body(ctx, n, x, out, s)
                });
            } else {
                k.run_lanes(
                    move |ctx| {
                        let s = ctx.shared::<u32, MAX>();
                        $body(ctx, n, x, out, s)
                    },
                    move |wg| {
                        let s = wg.shared::<u32, MAX>();
                        $lanes(wg, n, x, out, s)
                    },
                );
            }
        }
    };
}
"""

KERNELS = """
/// Workgroup g's sum of x into sums[g]: a tree in shared memory (a barrier in a `while`).
#[inline(always)]
#[lanes]
pub fn tree_body(ctx: Ctx, n: u32, x: In<u32>, mut sums: Out<u32>, mut s: Shared<u32, MAX>) {
    let size = ctx.group_size_x() * ctx.group_size_y();
    let t = ctx.local_id_y() * ctx.group_size_x() + ctx.local_id_x();
    let g = ctx.group_linear();
    let i = g * size + t;
    let n = n as usize;
    s.set(t, if i < n { x.get(i) } else { 0 });
    ctx.barrier();
    let mut stride = size / 2;
    while stride > 0 {
        if t < stride {
            s.set(t, s.get(t).wrapping_add(s.get(t + stride)));
        }
        ctx.barrier();
        stride /= 2;
    }
    if t != 0 {
        return;
    }
    sums.set(g, s.get(0));
}
entry!(tree_cpu, tree_body, tree_body_lanes);

/// The workgroup's inclusive Hillis–Steele scan of x; then odd workgroups reverse it, those with
/// g % 4 == 2 shift it by one (exclusive), the others keep it: a branch with barriers the whole
/// workgroup takes. y[i] = that value + 2 * x[i] (a tuple local kept across every barrier).
#[inline(always)]
#[lanes]
pub fn scan_body(ctx: Ctx, n: u32, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, MAX>) {
    let size = ctx.group_size_x() * ctx.group_size_y();
    let t = ctx.local_id_y() * ctx.group_size_x() + ctx.local_id_x();
    let g = ctx.group_linear();
    let i = g * size + t;
    let n = n as usize;
    let (own, twice) = if i < n { (x.get(i), x.get(i).wrapping_mul(2)) } else { (0, 0) };
    s.set(t, own);
    ctx.barrier();
    let mut offset = 1;
    while offset < size {
        let add = if t >= offset { s.get(t - offset) } else { 0 };
        ctx.barrier();
        s.set(t, s.get(t).wrapping_add(add));
        ctx.barrier();
        offset *= 2;
    }
    if g % 2 == 1 {
        let v = s.get(size - 1 - t);
        ctx.barrier();
        s.set(t, v);
        ctx.barrier();
    } else if g % 4 == 2 {
        let v = if t > 0 { s.get(t - 1) } else { 0 };
        ctx.barrier();
        s.set(t, v);
        ctx.barrier();
    } else {
        ctx.barrier();
    }
    if i >= n {
        return;
    }
    y.set(i, s.get(t).wrapping_add(twice));
}
entry!(scan_cpu, scan_body, scan_body_lanes);

/// Workgroups g with g % 3 == 1 return at once (all of them: no divergence) after a barrier-free
/// y[i] = 7 * x[i]; the others rotate x by one invocation through shared memory, times 3, and
/// prefix-sum that: every value read depends on which barrier ordered which write.
#[inline(always)]
#[lanes]
pub fn order_body(ctx: Ctx, n: u32, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, MAX>) {
    let size = ctx.group_size_x() * ctx.group_size_y();
    let t = ctx.local_id_y() * ctx.group_size_x() + ctx.local_id_x();
    let g = ctx.group_linear();
    let i = g * size + t;
    let n = n as usize;
    if g % 3 == 1 {
        if i < n {
            y.set(i, x.get(i).wrapping_mul(7));
        }
        return;
    }
    s.set(t, if i < n { x.get(i) } else { 0 });
    ctx.barrier();
    let right = s.get((t + 1) % size);
    ctx.barrier();
    s.set(t, right.wrapping_mul(3));
    ctx.barrier();
    let mut offset = 1;
    while offset < size {
        let add = if t >= offset { s.get(t - offset) } else { 0 };
        ctx.barrier();
        s.set(t, s.get(t).wrapping_add(add));
        ctx.barrier();
        offset *= 2;
    }
    if i >= n {
        return;
    }
    y.set(i, s.get(t));
}
entry!(order_cpu, order_body, order_body_lanes);

/// A missing barrier: each invocation reads its right neighbour's slot before that one stored it.
#[inline(always)]
#[lanes]
pub fn race_body(ctx: Ctx, n: u32, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, MAX>) {
    let size = ctx.group_size_x();
    let t = ctx.local_id_x();
    let i = ctx.group_linear() * size + t;
    let n = n as usize;
    s.set(t, if i < n { x.get(i) } else { 0 }); // RACE-STORE
    let right = s.get((t + 1) % size); // RACE-LOAD
    ctx.barrier();
    if i >= n {
        return;
    }
    y.set(i, right);
}
entry!(race_cpu, race_body, race_body_lanes);

/// An off-by-one after a barrier: the last invocation in range reads x[n].
#[inline(always)]
#[lanes]
pub fn oob_body(ctx: Ctx, n: u32, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, MAX>) {
    let size = ctx.group_size_x();
    let t = ctx.local_id_x();
    let i = ctx.group_linear() * size + t;
    let n = n as usize;
    s.set(t, if i < n { x.get(i) } else { 0 });
    ctx.barrier();
    if i >= n {
        return;
    }
    y.set(i, s.get(t).wrapping_add(x.get(i + 1))); // OOB
}
entry!(oob_cpu, oob_body, oob_body_lanes);

/// The out-of-range invocations of the last workgroup return before the barrier the others wait at.
#[inline(always)]
#[lanes]
pub fn early_body(ctx: Ctx, n: u32, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, MAX>) {
    let size = ctx.group_size_x();
    let t = ctx.local_id_x();
    let i = ctx.group_linear() * size + t;
    if i >= n as usize {
        return;
    }
    s.set(t, x.get(i));
    ctx.barrier(); // EARLY-BARRIER
    y.set(i, s.get(t));
}
entry!(early_cpu, early_body, early_body_lanes);

/// Each subgroup's sum of x by shuffles (warp_reduce's loop: a `while` the workgroup agrees on),
/// put in shared memory by the subgroup's lane 0; y[i] = its subgroup's sum + 2 * the workgroup's.
#[inline(always)]
#[lanes]
pub fn warp_body(ctx: Ctx, n: u32, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, MAX>) {
    let size = ctx.group_size_x() * ctx.group_size_y();
    let t = ctx.local_id_y() * ctx.group_size_x() + ctx.local_id_x();
    let i = ctx.group_linear() * size + t;
    let n = n as usize;
    let mut value = if i < n { x.get(i) } else { 0 };
    let lanes = ctx.subgroup_size();
    let mut offset = lanes / 2;
    while offset > 0 {
        let other = ctx.subgroup_shuffle_down(value, offset as u32);
        value = value.wrapping_add(other);
        offset /= 2;
    }
    if ctx.subgroup_invocation_id() == 0 {
        s.set(t / lanes, value);
    }
    ctx.barrier();
    let mut total = 0u32;
    let mut k = 0;
    while k < size.div_ceil(lanes) {
        total = total.wrapping_add(s.get(k));
        k += 1;
    }
    if i < n {
        y.set(i, s.get(t / lanes).wrapping_add(total.wrapping_mul(2)));
    }
}
entry!(warp_cpu, warp_body, warp_body_lanes);

/// The out-of-range invocations of the last workgroup return before the shuffle the others reach
/// (inactive lanes: on the host every invocation of the workgroup takes part in a shuffle).
#[inline(always)]
#[lanes]
pub fn shuffle_early_body(ctx: Ctx, n: u32, x: In<u32>, mut y: Out<u32>, s: Shared<u32, MAX>) {
    let _ = s;
    let t = ctx.local_id_x();
    let i = ctx.group_linear() * ctx.group_size_x() + t;
    if i >= n as usize {
        return;
    }
    let v = ctx.subgroup_shuffle_down(x.get(i), 1); // EARLY-SHUFFLE
    y.set(i, v);
}
entry!(shuffle_early_cpu, shuffle_early_body, shuffle_early_body_lanes);

/// Odd invocations would loop around the barrier for ever, even ones never enter: run as lanes,
/// the workgroup disagrees on the `while` and stops.
#[inline(always)]
#[lanes]
pub fn spin_body(ctx: Ctx, n: u32, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, MAX>) {
    let t = ctx.local_id_x();
    let i = ctx.group_linear() * ctx.group_size_x() + t;
    let mut rounds = 0u32;
    while t % 2 == 1 { // SPIN-WHILE
        s.set(t, rounds);
        ctx.barrier(); // SPIN-BARRIER
        rounds += 1;
    }
    if i < n as usize {
        y.set(i, x.get(i).wrapping_add(rounds));
    }
}
entry!(spin_cpu, spin_body, spin_body_lanes);
"""

KERNEL_TOML = """
[[kernel]]
name = "{name}"

[kernel.entry]
cpu = "{name}_cpu"

[kernel.sizes]
n = 1000
mode = 0
tx = 64
ty = 1

[[kernel.arg]]
name = "mode"
kind = "scalar"
type = "u32"
value = "mode"

[[kernel.arg]]
name = "n"
kind = "scalar"
type = "u32"
value = "n"

[[kernel.arg]]
name = "x"
kind = "buffer"
type = "u32"
length = "n"
direction = "in"
init = {{ kind = "npy", path = "x.npy" }}

[[kernel.arg]]
name = "out"
kind = "buffer"
type = "u32"
length = "{out_length}"
direction = "out"

[kernel.launch]
threads = ["tx", "ty"]
grid = ["ceil_div(n, tx * ty)"]

[kernel.check]
reference = "cpu"
rtol = 0
atol = 0
"""

#: Kernel name -> its output's length.
OUTPUTS = {
    "tree": "ceil_div(n, tx * ty)",
    "scan": "n",
    "order": "n",
    "race": "n",
    "oob": "n",
    "early": "n",
    "spin": "n",
    "warp": "n",
    "shuffle_early": "n",
}


def kernel_project(root: Path, crate: str, source: str, manifest: str) -> Path:
    """A crate at `root` made from the saxpy example's (a copy of the kernel API crate its
    `gpu_kernel` links to, its lock file and profiles) with its own name (cargo's target dir is
    shared between projects), `source` as src/lib.rs and `manifest` as workbench.toml."""
    shutil.copytree(EXAMPLES / "saxpy", root, ignore=shutil.ignore_patterns("target"))
    cargo = root / "Cargo.toml"
    cargo.write_text(cargo.read_text().replace('name = "saxpy"', f'name = "{crate}"', 1))
    lock = root / "Cargo.lock"
    lock.write_text(lock.read_text().replace('name = "saxpy"', f'name = "{crate}"', 1))
    (root / "src" / "lib.rs").write_text(source)
    (root / "workbench.toml").write_text(manifest)
    np.save(root / "x.npy", np.zeros(1000, np.uint32))  # the manifest's input, replaced by each run
    return root


def line_of(root: Path, marker: str) -> int:
    """The 1-based line of src/lib.rs that holds `marker` (once)."""
    lines = (root / "src" / "lib.rs").read_text().splitlines()
    found = [k + 1 for k, line in enumerate(lines) if marker in line]
    assert len(found) == 1, (marker, found)
    return found[0]


@pytest.fixture(scope="module")
def host_cargo():
    if not detect("cpu").found:
        pytest.skip("no host cargo: run packaging/bootstrap.sh setup")


@pytest.fixture(scope="module")
def lanes_project(host_cargo, tmp_path_factory) -> Path:
    manifest = '[project]\nname = "lanes"\ncrate = "."\n' + "".join(
        KERNEL_TOML.format(name=name, out_length=length) for name, length in OUTPUTS.items()
    )
    return kernel_project(
        tmp_path_factory.mktemp("lanes") / "lanes", "lanes_kernels", ENTRY_MACRO + KERNELS, manifest
    )


def fibers_and_lanes(service, root: Path, kernel: str, x: np.ndarray, threads: tuple[int, int], cache_dir):
    """`kernel` of `root` with input `x` on cpu and cpu-sim, on fibers (mode 0) and as lanes (1):
    every run ok, cpu-sim verified against cpu with no finding. Its outputs, by (mode, backend)."""
    np.save(root / "x.npy", x)
    outputs = {}
    for mode in (0, 1):
        sizes = {"n": len(x), "mode": mode, "tx": threads[0], "ty": threads[1]}
        report = service.run(
            root, kernel=kernel, backends=["cpu", "cpu-sim"], sizes=sizes, cache_dir=cache_dir
        )
        results = {r.backend: r for r in report.results}
        for backend, result in results.items():
            assert result.status == "ok", (kernel, mode, backend, result.error)
            outputs[mode, backend] = report.outputs[backend]["out"]
        sim = results["cpu-sim"]
        assert sim.verified is True, (mode, sim.check)
        assert sim.findings["findings"] == [], (mode, sim.findings)
    return outputs


def assert_all_equal(outputs: dict, expected: np.ndarray) -> None:
    for (mode, backend), out in outputs.items():
        np.testing.assert_array_equal(out, expected, err_msg=f"{backend}, {('fibers', 'lanes')[mode]}")


# ---------------------------------------------------------------- numpy's results of the bodies


def groups_of(x: np.ndarray, size: int) -> list[np.ndarray]:
    """x in workgroups of `size`, the last padded with zeros (as the bodies load it)."""
    padded = np.zeros(-(-len(x) // size) * size, np.uint64)
    padded[: len(x)] = x
    return list(padded.reshape(-1, size))


def tree_expected(x: np.ndarray, size: int) -> np.ndarray:
    return np.array([v.sum() % 2**32 for v in groups_of(x, size)], np.uint32)


def scan_expected(x: np.ndarray, size: int) -> np.ndarray:
    out = []
    for g, v in enumerate(groups_of(x, size)):
        scan = np.cumsum(v)
        if g % 2 == 1:
            scan = scan[::-1]
        elif g % 4 == 2:
            scan = np.concatenate([[0], scan[:-1]])
        out.append(scan + 2 * v)
    return (np.concatenate(out)[: len(x)] % 2**32).astype(np.uint32)


def order_expected(x: np.ndarray, size: int) -> np.ndarray:
    out = []
    for g, v in enumerate(groups_of(x, size)):
        out.append(7 * v if g % 3 == 1 else np.cumsum(3 * np.roll(v, -1)))
    return (np.concatenate(out)[: len(x)] % 2**32).astype(np.uint32)


def warp_expected(x: np.ndarray, size: int) -> np.ndarray:
    """Each invocation: its subgroup's sum (subgroups of 32 linear ids) + 2 * its workgroup's."""
    out = []
    for v in groups_of(x, size):
        subgroups = v.reshape(-1, 32).sum(axis=1)
        out.append(np.repeat(subgroups, 32) + 2 * v.sum())
    return (np.concatenate(out)[: len(x)] % 2**32).astype(np.uint32)


EXPECTED = {"tree": tree_expected, "scan": scan_expected, "order": order_expected, "warp": warp_expected}


@pytest.mark.parametrize("threads", [(64, 1), (8, 4)], ids=["1d", "2d"])
@pytest.mark.parametrize("kernel", sorted(EXPECTED))
def test_lanes_give_the_fibers_output_on_cpu_and_cpu_sim(
    lanes_project, run_service, shared_cache_dir, kernel, threads
):
    size = threads[0] * threads[1]
    n = 9 * size + 21  # ten workgroups, the last partial: every branch of the bodies taken
    x = np.random.default_rng(37).integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)  # sums wrap
    outputs = fibers_and_lanes(run_service, lanes_project, kernel, x, threads, shared_cache_dir)
    # The fibers' output is numpy's (the body means what it says); the lanes' is the fibers'.
    assert_all_equal(outputs, EXPECTED[kernel](x, size))


# ---------------------------------------------------------------- cpu-sim's findings under lanes

#: Three workgroups of 64, the last with 21 invocations in range.
FAULT_N = 2 * 64 + 21


def findings(service, root: Path, kernel: str, mode: int, cache_dir) -> tuple[list[dict], str | None]:
    """cpu-sim's findings of `kernel` (x = 0, 1, 2, ...) on fibers (mode 0) or as lanes (1), and the
    plain cpu run's error where it failed (None where it was ok)."""
    np.save(root / "x.npy", np.arange(FAULT_N, dtype=np.uint32))
    sizes = {"n": FAULT_N, "mode": mode, "tx": 64, "ty": 1}
    report = service.run(root, kernel=kernel, backends=["cpu", "cpu-sim"], sizes=sizes, cache_dir=cache_dir)
    results = {r.backend: r for r in report.results}
    sim, cpu = results["cpu-sim"], results["cpu"]
    assert sim.status == "ok", (kernel, mode, sim.error)
    return sim.findings["findings"], (None if cpu.status == "ok" else cpu.error)


def same(a: list[dict], b: list[dict]) -> bool:
    """The same findings, in any order (workgroups report from several threads)."""
    return sorted(json.dumps(f, sort_keys=True) for f in a) == sorted(
        json.dumps(f, sort_keys=True) for f in b
    )


def accesses(finding: dict) -> list[tuple]:
    return [(a["access"], a["file"], a["line"], a["group"], a["local"]) for a in finding["accesses"]]


def test_a_missing_barrier_is_the_same_race_as_on_fibers(lanes_project, run_service, shared_cache_dir):
    fibers, fibers_cpu = findings(run_service, lanes_project, "race", 0, shared_cache_dir)
    lanes, lanes_cpu = findings(run_service, lanes_project, "race", 1, shared_cache_dir)
    assert fibers_cpu is None and lanes_cpu is None, (fibers_cpu, lanes_cpu)
    assert same(lanes, fibers), (lanes, fibers)
    store, load = line_of(lanes_project, "RACE-STORE"), line_of(lanes_project, "RACE-LOAD")
    # Invocation 0 read its neighbour's slot, invocation 1 wrote it after: no barrier between them.
    race = next(f for f in lanes if f["kind"] == "shared-race" and f["index"] == 1)
    assert accesses(race) == [
        ("read", "src/lib.rs", load, [0, 0, 0], [0, 0, 0]),
        ("write", "src/lib.rs", store, [0, 0, 0], [1, 0, 0]),
    ]


def test_an_out_of_bounds_read_is_found_where_fibers_find_it(lanes_project, run_service, shared_cache_dir):
    fibers, fibers_cpu = findings(run_service, lanes_project, "oob", 0, shared_cache_dir)
    lanes, lanes_cpu = findings(run_service, lanes_project, "oob", 1, shared_cache_dir)
    assert same(lanes, fibers), (lanes, fibers)
    (oob,) = lanes
    assert (oob["kind"], oob["name"], oob["index"], oob["length"]) == ("out-of-bounds", "x", FAULT_N, FAULT_N)
    # The last invocation in range: workgroup 2, local id 20.
    line = line_of(lanes_project, "// OOB")
    assert accesses(oob) == [("read", "src/lib.rs", line, [2, 0, 0], [20, 0, 0])]
    # The plain cpu build stops at the same read, its panic at the kernel's line (the copy keeps spans).
    for cpu in (fibers_cpu, lanes_cpu):
        assert cpu.startswith(f"the kernel panicked at src/lib.rs:{line}:"), cpu
        assert f"index {FAULT_N} is out of bounds (length {FAULT_N})" in cpu, cpu


@pytest.mark.parametrize(
    ("kernel", "marker"), [("early", "EARLY-BARRIER"), ("shuffle_early", "EARLY-SHUFFLE")]
)
def test_a_return_before_a_barrier_some_invocations_take_is_divergence(
    lanes_project, run_service, shared_cache_dir, kernel, marker
):
    """A shuffle is a barrier on the host: a return before it that some invocations take is a
    divergence there, as before a barrier."""
    fibers, fibers_cpu = findings(run_service, lanes_project, kernel, 0, shared_cache_dir)
    lanes, lanes_cpu = findings(run_service, lanes_project, kernel, 1, shared_cache_dir)
    assert fibers_cpu is None and lanes_cpu is None, (fibers_cpu, lanes_cpu)
    assert same(lanes, fibers), (lanes, fibers)
    (divergence,) = lanes
    assert divergence["kind"] == "barrier-divergence"
    (waiting, returned) = accesses(divergence)
    # Workgroup 2: local ids 0..20 wait at the barrier, 21..63 returned (where: the entry's call).
    assert waiting[:4] == ("barrier", "src/lib.rs", line_of(lanes_project, marker), [2, 0, 0])
    assert waiting[4][0] < 21
    assert returned[0] == "return" and returned[3] == [2, 0, 0] and returned[4][0] >= 21


def test_a_while_the_invocations_disagree_on_is_divergence_and_ends(
    lanes_project, run_service, shared_cache_dir
):
    """On fibers the odd invocations would loop for ever; as lanes the `while`'s vote splits, cpu-sim
    reports it (once per workgroup) and every lane stops: the run ends, on cpu too."""
    found, cpu = findings(run_service, lanes_project, "spin", 1, shared_cache_dir)
    assert cpu is None, cpu
    (divergence,) = found
    assert divergence["kind"] == "barrier-divergence" and divergence["count"] == 3
    inside, outside = accesses(divergence)
    assert inside[:3] == ("barrier", "src/lib.rs", line_of(lanes_project, "SPIN-BARRIER"))
    # The invocation that left the loop is worded as fibers word one that did not reach the
    # barrier: "returned without reaching it" (no line of its own: the entry's).
    assert outside[0] == "return"
    assert inside[3] == outside[3]
    assert inside[4][0] % 2 == 1 and outside[4][0] % 2 == 0


# ---------------------------------------------------------------- what the attribute refuses

REFUSED = """
use gpu_kernel::prelude::*;

#[inline(always)]
fn helper(ctx: Ctx, mut y: Out<u32>) {
    ctx.barrier();
    y.set(ctx.local_id_x(), 1);
}

#[lanes]
pub fn for_body(ctx: Ctx, mut y: Out<u32>) {
    let t = ctx.local_id_x();
    for _ in 0..2 { // FOR
        ctx.barrier();
    }
    y.set(t, 1);
}

#[lanes]
pub fn helper_body(ctx: Ctx, y: Out<u32>) {
    ctx.barrier();
    helper(ctx, y); // HELPER
}

#[lanes]
pub fn subgroup_body(ctx: Ctx, mut y: Out<u32>) {
    let t = ctx.local_id_x();
    ctx.barrier();
    let v = 2 * ctx.subgroup_shuffle_down(t as u32, 1); // SUBGROUP
    y.set(t, v);
}

#[lanes]
pub fn param_body<'a>(ctx: Ctx, mut y: Out<'a, u32>, z: Out<'a, u32>) {
    let t = ctx.local_id_x();
    ctx.barrier();
    y = z; // PARAM
    y.set(t, 1);
}
"""

#: Each refused statement's marker and the start of its message.
REFUSALS = {
    "FOR": "#[lanes]: a barrier here is not supported",
    "HELPER": "#[lanes]: the invocation's `ctx` is passed on here",
    "SUBGROUP": "#[lanes]: a subgroup shuffle is supported as a statement of its own",
    "PARAM": "#[lanes]: the parameter `y` is assigned in the body",
}

CARRIED = """
use gpu_kernel::prelude::*;

pub struct Sum {
    pub v: u32,
}

#[lanes]
pub fn carried_body(ctx: Ctx, mut y: Out<u32>) {
    let t = ctx.local_id_x();
    let sum = Sum { v: t as u32 }; // CARRIED
    ctx.barrier();
    y.set(t, sum.v);
}
"""


def failed_cpu_build(root: Path, crate: str, source: str, cache_dir) -> list[dict]:
    """The cpu build's error diagnostics of a crate holding `source` (it must fail)."""
    manifest = f'[project]\nname = "{crate}"\ncrate = "."\n' + KERNEL_TOML.format(name="tree", out_length="n")
    (result,) = build_project(kernel_project(root, crate, source, manifest), ["cpu"], cache_dir)
    assert result.status == "error", result.log[-3000:]
    return [d for d in result.diagnostics if d["severity"] == "error"]


@pytest.fixture(scope="module")
def refused(host_cargo, tmp_path_factory, shared_cache_dir) -> tuple[Path, list[dict]]:
    """One build of the crate of every refused body: each is its own error."""
    root = tmp_path_factory.mktemp("refused") / "refused"
    return root, failed_cpu_build(root, "lanes_refused", REFUSED, shared_cache_dir)


@pytest.mark.parametrize("marker", sorted(REFUSALS))
def test_what_lanes_cannot_split_fails_the_build_at_its_statement(refused, marker):
    root, errors = refused
    (error,) = [e for e in errors if e["message"].startswith(REFUSALS[marker])]
    assert (error["file"], error["line"]) == ("src/lib.rs", line_of(root, f"// {marker}"))


def test_the_refused_bodies_fail_only_for_lanes(refused):
    """The bodies as written compile (they run on fibers without the attribute): every error is
    one of the attribute's, one per body."""
    root, errors = refused
    assert sorted(e["line"] for e in errors) == sorted(line_of(root, f"// {m}") for m in REFUSALS), errors
    assert all(e["message"].startswith("#[lanes]: ") for e in errors), errors


@pytest.fixture(scope="module")
def carried(host_cargo, tmp_path_factory, shared_cache_dir) -> tuple[Path, list[dict]]:
    root = tmp_path_factory.mktemp("carried") / "carried"
    return root, failed_cpu_build(root, "lanes_carried", CARRIED, shared_cache_dir)


def test_a_local_across_a_barrier_that_is_not_copy_names_carried(carried):
    _, errors = carried
    message = "`Sum` lives across a barrier in a #[lanes] body, and only `Copy` values can"
    (error,) = [e for e in errors if e["message"] == message]
    assert error["code"] == "E0277" and error["file"] == "src/lib.rs", error
    assert "compute it again after the barrier, or remove #[lanes]" in error["rendered"]


def test_the_carried_error_points_at_the_local(carried):
    root, errors = carried
    (error,) = [e for e in errors if e["code"] == "E0277"]
    assert (error["file"], error["line"]) == ("src/lib.rs", line_of(root, "// CARRIED"))


# ---------------------------------------------------------------- bodies the rules allow, found wrong

#: A `while` block whose last statement has no `;` (valid Rust: an assignment is a `()`
#: expression): total = 4 + 2 + 1.
TAIL = """
#[inline(always)]
#[lanes]
pub fn tail_body(ctx: Ctx, n: u32, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, MAX>) {
    let size = ctx.group_size_x();
    let t = ctx.local_id_x();
    let i = ctx.group_linear() * size + t;
    let mut stride = 4u32;
    let mut total = 0u32;
    while stride > 0 {
        s.set(t, stride);
        ctx.barrier();
        total += s.get((t + 1) % size);
        ctx.barrier();
        stride /= 2
    }
    if i < n as usize {
        y.set(i, x.get(i) + total);
    }
}
entry!(tail_cpu, tail_body, tail_body_lanes);
"""

#: A `return` inside a closure: the closure's own, not the invocation's.
CLOSURE = """
#[inline(always)]
#[lanes]
pub fn closure_body(ctx: Ctx, n: u32, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, MAX>) {
    let t = ctx.local_id_x();
    let i = ctx.group_linear() * ctx.group_size_x() + t;
    let n = n as usize;
    let load = |k: usize| -> u32 {
        if k >= n {
            return 0;
        }
        x.get(k)
    };
    s.set(t, load(i).wrapping_add(load(i + 1)));
    ctx.barrier();
    if i < n {
        y.set(i, s.get(t));
    }
}
entry!(closure_cpu, closure_body, closure_body_lanes);
"""

#: A 10 KiB `Copy` local kept across a barrier (an invocation's fiber has 128 KiB of stack).
BIG = """
#[inline(always)]
#[lanes]
pub fn big_body(ctx: Ctx, n: u32, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, MAX>) {
    let t = ctx.local_id_x();
    let i = ctx.group_linear() * ctx.group_size_x() + t;
    let mut big = [0u32; 2560];
    if i < n as usize {
        big[t] = x.get(i);
    }
    s.set(t, 1);
    ctx.barrier();
    if i < n as usize {
        y.set(i, big[t] + s.get(t));
    }
}
entry!(big_cpu, big_body, big_body_lanes);
"""

#: A local of a parameter's name in an inner block, assigned there: the parameter is not.
INNER_NAME = """
#[inline(always)]
#[lanes]
pub fn inner_name_body(ctx: Ctx, n: u32, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, MAX>) {
    let t = ctx.local_id_x();
    let i = ctx.group_linear() * ctx.group_size_x() + t;
    s.set(t, 1);
    ctx.barrier();
    if i < n as usize {
        let mut n = x.get(i);
        n += s.get(t);
        y.set(i, n);
    }
}
entry!(inner_name_cpu, inner_name_body, inner_name_body_lanes);
"""

#: An item (a `const`) declared in the body: Rust's items are seen by the whole block.
ITEM = """
#[inline(always)]
#[lanes]
pub fn item_body(ctx: Ctx, n: u32, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, MAX>) {
    const SHIFT: usize = 3;
    let size = ctx.group_size_x();
    let t = ctx.local_id_x();
    let i = ctx.group_linear() * size + t;
    s.set(t, 1);
    ctx.barrier();
    if i < n as usize {
        y.set(i, x.get(i) + s.get((t + SHIFT) % size));
    }
}
entry!(item_cpu, item_body, item_body_lanes);
"""

#: A statement macro that binds a name it is given in a form no look at its tokens can tell from a
#: read (`v <- t` is `v < -t`), read after a barrier: the uniform `v` was kept once, set by every
#: lane from the macro's binding (every lane read lane 63's: x + 64, fibers x + t + 1). The copy
#: now keeps a name a statement macro holds per lane, from the binding in scope at its run's end.
MACRO_ARROW = """
macro_rules! bind {
    ($n:ident <- $v:expr) => {
        let $n = $v;
    };
}

#[inline(always)]
#[lanes]
pub fn macro_arrow_body(ctx: Ctx, n: u32, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, MAX>) {
    let t = ctx.local_id_x();
    let i = ctx.group_linear() * ctx.group_size_x() + t;
    let v = 5u32;
    bind!(v <- t as u32);
    s.set(t, 1);
    ctx.barrier();
    if i < n as usize {
        y.set(i, x.get(i) + v + s.get(t));
    }
}
entry!(macro_arrow_cpu, macro_arrow_body, macro_arrow_body_lanes);
"""


def next_or_zero(x: np.ndarray) -> np.ndarray:
    return np.append(x[1:], 0)


ALLOWED = {
    "tail": (TAIL, lambda x: x + 7),
    "closure": (CLOSURE, lambda x: x + next_or_zero(x)),
    "big": (BIG, lambda x: x + 1),
    "inner_name": (INNER_NAME, lambda x: x + 1),
    "item": (ITEM, lambda x: x + 1),
    "macro_arrow": (MACRO_ARROW, lambda x: x + np.arange(len(x), dtype=np.uint32) % 64 + 1),
}


@pytest.mark.parametrize(
    "kernel",
    [
        "tail",
        "closure",
        pytest.param("big", marks=pytest.mark.xfail(strict=True, reason=(
            "LaneVar<T> holds MAX_LANES (1024) values whatever the workgroup's size, in the "
            "inlined copy's frame on the worker's stack: a 10 KiB local would need 10 MiB there "
            "(the worker died with SIGSEGV); Lanes::var refuses a local over 128 bytes when the "
            "kernel is built (fibers: the invocation's own 10 KiB of its 128 KiB stack)"))),
        "inner_name",
        "item",
        "macro_arrow",
    ],
)  # fmt: skip
def test_a_body_the_rules_allow_runs_as_lanes_as_on_fibers(
    host_cargo, run_service, tmp_path, shared_cache_dir, kernel
):
    source, expected = ALLOWED[kernel]
    manifest = '[project]\nname = "allowed"\ncrate = "."\n' + KERNEL_TOML.format(name=kernel, out_length="n")
    root = kernel_project(tmp_path / kernel, f"lanes_{kernel}", ENTRY_MACRO + source, manifest)
    x = np.arange(2 * 64 + 21, dtype=np.uint32) * 3
    outputs = fibers_and_lanes(run_service, root, kernel, x, (64, 1), shared_cache_dir)
    assert_all_equal(outputs, expected(x))


#: `if let` around a barrier: its pattern's bindings are the branch's.
IF_LET = """
#[inline(always)]
#[lanes]
pub fn if_let_body(ctx: Ctx, n: u32, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, MAX>) {
    let t = ctx.local_id_x();
    let i = ctx.group_linear() * ctx.group_size_x() + t;
    let first = if n > 0 { Some(0usize) } else { None };
    s.set(t, 1);
    if let Some(k) = first { // IF-LET
        ctx.barrier();
        s.set(t, s.get(k));
    }
    if i < n as usize {
        y.set(i, x.get(i) + s.get(t));
    }
}
entry!(if_let_cpu, if_let_body, if_let_body_lanes);
"""


def test_if_let_around_a_barrier_builds_or_is_refused_at_its_line(host_cargo, tmp_path, shared_cache_dir):
    manifest = '[project]\nname = "if_let"\ncrate = "."\n' + KERNEL_TOML.format(name="if_let", out_length="n")
    root = kernel_project(tmp_path / "if_let", "lanes_if_let", ENTRY_MACRO + IF_LET, manifest)
    (result,) = build_project(root, ["cpu"], shared_cache_dir)
    errors = [d for d in result.diagnostics if d["severity"] == "error"]
    assert result.status == "ok" or errors, result.log[-3000:]
    for error in errors:
        assert error["message"].startswith("#[lanes]: "), error["rendered"]
        assert (error["file"], error["line"]) == ("src/lib.rs", line_of(root, "// IF-LET"))


# ---------------------------------------------------------------- the crate's own tests of the copy


@pytest.mark.parametrize("features", ["sim", "debug"])
def test_the_crates_lanes_tests_pass(tmp_path, features):
    """`resources/crates/gpu_kernel/tests/lanes.rs` (each body on fibers and as lanes, the same
    outputs; `Grid::run_lanes`), `lanes_while.rs` (the uniform barrier-free `while`: outputs and
    cpu-sim's findings), `lanes_macros.rs` (names a statement macro may bind: the same),
    `lanes_warp.rs` (uniform-delta shuffles and uniform loops over per-lane accumulators: the
    same) and `lanes_builds.rs` (small crates built with cargo: what the attribute refuses, and a
    body it takes built under clippy with warnings denied)."""
    counts = run_crate_test_files(
        tmp_path, ("lanes", "lanes_while", "lanes_macros", "lanes_warp", "lanes_builds"), features
    )
    assert counts["lanes"] >= 16 and counts["lanes_while"] >= 4 and counts["lanes_builds"] >= 8, counts
    assert counts["lanes_macros"] >= 7 and counts["lanes_warp"] >= 9, counts
