//! What the fibers-against-lanes test files share (`lanes_while.rs`, `lanes_macros.rs`,
//! `lanes_warp.rs`): each kernel runs as written on fibers and as its `NAME_lanes` copy, both under
//! cpu-sim, on the same input, and the two runs' outputs and findings are compared. A folder
//! module, so cargo does not take it for a test file of its own.
// Each test file uses what it needs of this.
#![allow(dead_code)]

use gpu_kernel::host::Lanes;
use gpu_kernel::prelude::*;
use gpu_kernel::testing::{Findings, Grid};

/// Room for one workgroup's values in shared memory.
pub const S: usize = 256;

/// Each finding as text, sorted, without where the shared array was declared (the fibers' and the
/// lanes' `shared()` calls in `run_both` are at two lines).
pub fn text(findings: &Findings) -> Vec<String> {
    let mut out: Vec<String> = findings
        .items
        .iter()
        .map(|f| {
            let s = f.to_string();
            match (s.find(" (declared at "), s.find(")[")) {
                (Some(a), Some(b)) if a < b => format!("{}{}", &s[..a], &s[b + 1..]),
                _ => s,
            }
        })
        .collect();
    out.sort();
    out
}

/// The kernel on fibers and as its lanes copy on `grid` x `threads`, an input of `len` values, one
/// worker (the workgroups one after the other: a shared ticket restarts in each): each run's
/// output and findings.
pub fn run_both(
    grid: [u32; 3],
    threads: [u32; 3],
    len: usize,
    fibers: impl Fn(Ctx, In<u32>, Out<u32>, Shared<u32, S>) + Sync,
    lanes: impl Fn(&Lanes, In<u32>, Out<u32>, Shared<u32, S>) + Sync,
) -> [(Vec<u32>, Vec<String>); 2] {
    let x: Vec<u32> = (0..len as u32).map(|i| i.wrapping_mul(2_654_435_761) % 1000).collect();
    let mut on_fibers = vec![0u32; len];
    let mut on_lanes = vec![0u32; len];
    let g = Grid::with_workers(grid, threads, 1);
    let (xb, yb) = (g.input(&x), g.output(&mut on_fibers));
    let f = g.check(|ctx| fibers(ctx, xb, yb, ctx.shared::<u32, S>()));
    let g = Grid::with_workers(grid, threads, 1);
    let (xb, yb) = (g.input(&x), g.output(&mut on_lanes));
    let l = g.check_lanes(|wg| lanes(wg, xb, yb, wg.shared::<u32, S>()));
    [(on_fibers, text(&f)), (on_lanes, text(&l))]
}
