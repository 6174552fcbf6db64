"""The host executor's fast paths keep GPU semantics (issue 37): a workgroup whose invocation 0
reaches no barrier runs as a plain loop, one that does as fibers switching straight from one
invocation to the next, workgroups handed to parked pool threads in chunks.

- Every example verifies on cpu against wgsl (llvmpipe: an independent reference) and on cpu-sim
  against cpu, with no finding, at sizes that are no multiple of the workgroup (partial last
  workgroups, the odd tail of every loop).
- A barrier only some invocations reach, on the plain build: the waiting are let go, every
  invocation runs once (whether invocation 0 waits or not).
- A kernel whose result depends on barrier ordering (a neighbour read after a barrier, a prefix
  sum with barriers inside a loop), on a 1-D and a 2-D workgroup, where some workgroups take a
  barrier-free path (the choice is per workgroup): its outputs equal numpy's exactly on cpu and
  cpu-sim, and cpu-sim finds nothing.
- A kernel recursing past its fiber's stack after a barrier: the run fails with the worker's
  SIGSEGV (the guard page below each stack), on cpu and cpu-sim; shallower, it verifies.
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from workbench.build.toolchains import detect
from workbench.project import Project, examples_dir
from workbench.run.service import RunService
from workbench.run.timing import TimingOptions

pytestmark = pytest.mark.slow

#: No multiple of any example's workgroup (256, 16 × 16, 32 × 8, 512 elements a workgroup, ...).
ODD_SIZES = {
    "saxpy": ["n=100003"],
    "reduction": ["n=1000003"],
    "matmul": ["m=101", "n=67", "k=45"],
    "bitonic": ["n=100003", "j=8", "k=16"],
    "histogram": ["n=100003"],
    "scan": ["n=100003"],
    "transpose": ["m=97", "n=131"],
    "stencil2d": ["width=301", "height=117"],
    "softmax": ["rows=37", "cols=1001"],
    "warp_reduce": ["n=100003"],
}

KERNELS = [
    (example, k.name)
    for example in sorted(ODD_SIZES)
    for k in Project.open(examples_dir() / example).manifest.kernels
]

ONE_SAMPLE = TimingOptions(min_n=1, min_time_s=0.0, warmup_max_n=0, warmup_max_s=0.0, max_time_s=0.1)


@pytest.fixture(autouse=True)
def host_cargo():
    if not detect("cpu").found:
        pytest.skip("no host cargo: run packaging/bootstrap.sh setup")


def test_every_bundled_example_has_odd_sizes():
    bundled = {p.name for p in examples_dir().iterdir() if (p / "workbench.toml").is_file()}
    assert bundled == set(ODD_SIZES)


@pytest.mark.parametrize(("example", "kernel"), KERNELS)
def test_example_verifies_on_cpu_and_cpu_sim_at_odd_sizes(example, kernel, shared_cache_dir):
    sizes = [arg for size in ODD_SIZES[example] for arg in ("--size", size)]
    proc = subprocess.run(
        [sys.executable, "-m", "workbench", "run", str(examples_dir() / example), "--backend", "cpu,cpu-sim,wgsl",
         "--kernel", kernel, "--cache-dir", str(shared_cache_dir), "--no-record", "--json", *sizes],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.stdout, proc.stderr
    results = {r["backend"]: r for r in json.loads(proc.stdout)["results"]}
    assert results["cpu"]["status"] == "ok", results["cpu"]["error"]
    # The cpu backend is every run's reference: llvmpipe's result of the WGSL checks it.
    assert results["wgsl"]["status"] == "ok", results["wgsl"]["error"]
    assert results["wgsl"]["verified"] is True, results["wgsl"]["check"]
    sim = results["cpu-sim"]
    assert sim["status"] == "ok", sim["error"]
    assert sim["verified"] is True, sim["check"]
    assert sim["findings"]["findings"] == [], sim["findings"]
    assert proc.returncode == 0, proc.stderr


ORDER_KERNEL = """
use gpu_kernel::prelude::*;

/// Workgroups g with g % 3 == 1 take a barrier-free path; the others rotate their values by one
/// invocation through workgroup memory and prefix-sum them (barriers inside a loop).
#[inline(always)]
pub fn order_body(ctx: Ctx, n: u32, a: f32, x: In<f32>, mut y: Out<f32>, mut s: Shared<f32, 1024>) {
    let size = ctx.group_size_x() * ctx.group_size_y();
    let t = ctx.local_id_y() * ctx.group_size_x() + ctx.local_id_x();
    let g = ctx.group_linear();
    let i = g * size + t;
    let n = n as usize;
    if g % 3 == 1 {
        if i < n {
            y[i] = 3.0 * x[i] + y[i];
        }
        return;
    }
    s.set(t, if i < n { x[i] } else { 0.0 });
    ctx.barrier();
    let right = s.get((t + 1) % size);
    ctx.barrier();
    s.set(t, right * a);
    ctx.barrier();
    let mut offset = 1;
    while offset < size {
        let add = if t >= offset { s.get(t - offset) } else { 0.0 };
        ctx.barrier();
        s.set(t, s.get(t) + add);
        ctx.barrier();
        offset *= 2;
    }
    if i < n {
        y[i] = s.get(t) + y[i];
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn order_cpu(launch: *mut gpu_kernel::host::Launch, n: u32, a: f32, x: *const f32, y: *mut f32) {
    let k = unsafe { gpu_kernel::host::Kernel::new(launch) };
    let (x, y) = unsafe { (k.input(0, x), k.output(1, y)) };
    k.run(|ctx| {
        let s = ctx.shared::<f32, 1024>();
        order_body(ctx, n, a, x, y, s)
    });
}
"""

ORDER_MANIFEST = """
[project]
name = "saxpy"
crate = "."

[[kernel]]
name = "order"
description = "results that depend on barrier ordering"

[kernel.entry]
cpu = "order_cpu"

[kernel.sizes]
n = 1000

[[kernel.arg]]
name = "n"
kind = "scalar"
type = "u32"
value = "n"

[[kernel.arg]]
name = "a"
kind = "scalar"
type = "f32"
value = "2.5"

[[kernel.arg]]
name = "x"
kind = "buffer"
type = "f32"
length = "n"
direction = "in"
init = { kind = "npy", path = "x.npy" }

[[kernel.arg]]
name = "y"
kind = "buffer"
type = "f32"
length = "n"
direction = "inout"
init = { kind = "npy", path = "y.npy" }

[kernel.launch]
threads = THREADS
grid = ["ceil_div(n, GROUP)"]

[kernel.check]
reference = "cpu"
rtol = 0
atol = 0
"""


def expected(x: np.ndarray, y: np.ndarray, a: float, group: int) -> np.ndarray:
    """numpy's result of `order_body` (small integers and halves: every sum is exact in f32)."""
    n = len(x)
    out = y.astype(np.float64).copy()
    for g in range((n + group - 1) // group):
        lo, hi = g * group, min((g + 1) * group, n)
        if g % 3 == 1:
            out[lo:hi] = 3.0 * x[lo:hi] + y[lo:hi]
            continue
        v = np.zeros(group)
        v[: hi - lo] = x[lo:hi]
        prefix = np.cumsum(np.roll(v, -1) * a)
        out[lo:hi] = prefix[: hi - lo] + y[lo:hi]
    return out.astype(np.float32)


def run_with(root, manifest: str, x: np.ndarray, y: np.ndarray, backends: list[str], cache_dir):
    """`root` (a copy of saxpy with its kernel replaced) run with `manifest`, inputs x and y, on
    `backends` through the run service, one timed sample each."""
    (root / "workbench.toml").write_text(manifest)
    np.save(root / "x.npy", x)
    np.save(root / "y.npy", y)
    service = RunService(timing=ONE_SAMPLE)
    try:
        return service.run(root, backends=backends, sizes={"n": len(x)}, cache_dir=cache_dir)
    finally:
        service.close()


@pytest.mark.parametrize("threads", [[256], [16, 4]])
def test_a_kernel_that_depends_on_barrier_ordering_matches_numpy(example_copy, shared_cache_dir, threads):
    root = example_copy("saxpy")
    group = int(np.prod(threads))
    (root / "src" / "lib.rs").write_text(ORDER_KERNEL)
    manifest = ORDER_MANIFEST.replace("THREADS", json.dumps(threads)).replace("GROUP", str(group))
    n = 7 * group + 45  # eight workgroups, the last partial; 2, 5 barrier-free
    rng = np.random.default_rng(37)
    x = rng.integers(0, 8, n).astype(np.float32)
    y = rng.integers(0, 8, n).astype(np.float32)
    report = run_with(root, manifest, x, y, ["cpu", "cpu-sim"], shared_cache_dir)
    results = {r.backend: r for r in report.results}
    assert results["cpu"].status == "ok", results["cpu"].error
    np.testing.assert_array_equal(report.outputs["cpu"]["y"], expected(x, y, 2.5, group))
    sim = results["cpu-sim"]
    assert sim.status == "ok", sim.error
    assert sim.verified is True, sim.check
    assert sim.findings["findings"] == [], sim.findings


DIVERGENT_KERNEL = """
use gpu_kernel::prelude::*;

/// Workgroup g: invocations with (t + g) % 2 == 1 wait at a barrier, the others do not (a GPU's
/// behaviour is undefined; the host lets the waiting go). In even workgroups invocation 0 returns
/// without waiting (the barrier-free loop then meets the barriers), in odd ones it waits first
/// (fibers, some returning while others wait).
#[inline(always)]
pub fn divergent_body(ctx: Ctx, n: u32, x: In<f32>, mut y: Out<f32>) {
    let t = ctx.local_id_x();
    let g = ctx.group_linear();
    let i = g * ctx.group_size_x() + t;
    if (t + g) % 2 == 1 {
        ctx.barrier();
    }
    if i < n as usize {
        y[i] += x[i] + 1.0; // once per invocation: run twice, it would show
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn divergent_cpu(launch: *mut gpu_kernel::host::Launch, n: u32, x: *const f32, y: *mut f32) {
    let k = unsafe { gpu_kernel::host::Kernel::new(launch) };
    let (x, y) = unsafe { (k.input(0, x), k.output(1, y)) };
    k.run(move |ctx| divergent_body(ctx, n, x, y));
}
"""


def test_a_divergent_barrier_on_plain_cpu_lets_the_waiting_go(example_copy, shared_cache_dir):
    """The plain build knows a divergent barrier without bookkeeping in its loop (issue 37): it
    finishes, and every invocation runs once."""
    root = example_copy("saxpy")
    (root / "src" / "lib.rs").write_text(DIVERGENT_KERNEL)
    manifest = (
        ORDER_MANIFEST.replace('name = "order"', 'name = "divergent"')
        .replace('cpu = "order_cpu"', 'cpu = "divergent_cpu"')
        .replace('[[kernel.arg]]\nname = "a"\nkind = "scalar"\ntype = "f32"\nvalue = "2.5"\n\n', "")
        .replace("THREADS", "[64]")
        .replace("GROUP", "64")
    )
    n = 5 * 64 + 17
    x = np.arange(n, dtype=np.float32)
    report = run_with(root, manifest, x, np.ones(n, np.float32), ["cpu"], shared_cache_dir)
    (result,) = report.results
    assert result.status == "ok", result.error
    np.testing.assert_array_equal(report.outputs["cpu"]["y"], x + 2.0)


DEEP_KERNEL = """
use gpu_kernel::prelude::*;

/// `depth` frames of a little over 1 KiB each: about 210 KiB at depth 200, past a fiber's
/// 128 KiB stack and short of two (without a guard page it would write into its neighbour's).
#[inline(never)]
fn deep(depth: u32) -> f32 {
    let pad = core::hint::black_box([depth as u8; 1024]);
    if depth == 0 {
        return 0.0;
    }
    deep(depth - 1) + pad[depth as usize % 1024] as f32
}

#[inline(always)]
pub fn deep_body(ctx: Ctx, n: u32, depth: u32, x: In<f32>, mut y: Out<f32>) {
    let i = ctx.global_id_x();
    ctx.barrier(); // from here every invocation but the first runs on a fiber's stack
    if i < n as usize {
        y[i] = x[i] + deep(depth);
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn deep_cpu(launch: *mut gpu_kernel::host::Launch, n: u32, depth: u32, x: *const f32, y: *mut f32) {
    let k = unsafe { gpu_kernel::host::Kernel::new(launch) };
    let (x, y) = unsafe { (k.input(0, x), k.output(1, y)) };
    k.run(move |ctx| deep_body(ctx, n, depth, x, y));
}
"""


@pytest.mark.parametrize("depth", [8, 200])
def test_a_kernel_past_its_fiber_stack_faults_on_the_guard_page(example_copy, shared_cache_dir, depth):
    """Stack overflow on a fiber: the run reports the worker's SIGSEGV on cpu and cpu-sim (the
    `PROT_NONE` page below each fiber's stack, `host/fiber.rs`), never a result; at depth 8 the
    same kernel verifies (x + 1 + 2 + ... + 8)."""
    root = example_copy("saxpy")
    (root / "src" / "lib.rs").write_text(DEEP_KERNEL)
    manifest = (
        ORDER_MANIFEST.replace('name = "order"', 'name = "deep"')
        .replace('cpu = "order_cpu"', 'cpu = "deep_cpu"')
        .replace('name = "a"\nkind = "scalar"\ntype = "f32"\nvalue = "2.5"', f'name = "depth"\nkind = "scalar"\ntype = "u32"\nvalue = "{depth}"')
        .replace("THREADS", "[64]")
        .replace("GROUP", "64")
    )  # fmt: skip
    n = 3 * 64 + 5
    x = np.arange(n, dtype=np.float32)
    report = run_with(root, manifest, x, np.zeros(n, np.float32), ["cpu", "cpu-sim"], shared_cache_dir)
    results = {r.backend: r for r in report.results}
    if depth == 8:
        assert results["cpu"].status == "ok", results["cpu"].error
        np.testing.assert_array_equal(report.outputs["cpu"]["y"], x + 36.0)
        assert results["cpu-sim"].verified is True, results["cpu-sim"].check
        return
    for backend in ("cpu", "cpu-sim"):
        result = results[backend]
        assert result.status == "error" and result.timing is None, (backend, result.status)
        assert "died with SIGSEGV" in result.error, (backend, result.error)
