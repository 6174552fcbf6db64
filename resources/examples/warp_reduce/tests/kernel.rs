//! Tests of the kernel body on the host, with GPU semantics and cpu-sim's checks
//! (docs/kernel-tests.md): `cargo test`, or `workbench test .`.

use gpu_kernel::testing::Grid;
use warp_reduce::{warp_reduce_body, warp_reduce_body_lanes, BLOCK, PER_BLOCK};

/// The workgroups' sums of `x`, PER_BLOCK elements each (subgroup shuffles, then shared memory).
fn partials(x: &[f32]) -> Vec<f32> {
    let groups = x.len().div_ceil(PER_BLOCK);
    let mut partial = vec![0.0f32; groups];
    let grid = Grid::new([groups as u32, 1, 1], [BLOCK as u32, 1, 1]);
    let (xb, pb) = (grid.input(x), grid.output(&mut partial));
    grid.run(|ctx| {
        let sums = ctx.shared::<f32, BLOCK>();
        warp_reduce_body(ctx, x.len() as u32, xb, pb, sums)
    });
    partial
}

#[test]
fn each_workgroup_sums_its_elements() {
    // Small integers: exact in any order of addition.
    let x: Vec<f32> = (0..4 * PER_BLOCK).map(|i| (i % 5) as f32).collect();
    let partial = partials(&x);
    for (k, p) in partial.iter().enumerate() {
        assert_eq!(
            *p,
            x[k * PER_BLOCK..(k + 1) * PER_BLOCK].iter().sum::<f32>(),
            "workgroup {k}"
        );
    }
}

#[test]
fn n_not_a_multiple_of_the_workgroup_size() {
    // 4396 = 4096 + 300: the second workgroup's loads past 300 read nothing (its first load
    // covers elements 0..256 of it, the second 256..300 for 44 invocations, the rest none).
    let x = vec![1.0f32; PER_BLOCK + 300];
    assert_eq!(partials(&x), [PER_BLOCK as f32, 300.0]);
}

/// The body's `#[lanes]` copy (what cpu and cpu-sim run: loops over the invocations between the
/// shuffles and the barrier) gives the fibers' sums bit for bit: the same shuffles, each lane's
/// values added in the same order.
#[test]
fn the_lanes_copy_gives_the_fibers_sums() {
    let x: Vec<f32> = (0..3 * PER_BLOCK + 77)
        .map(|i| ((i * 37) % 101) as f32 / 7.0)
        .collect();
    let groups = x.len().div_ceil(PER_BLOCK);
    let mut partial = vec![0.0f32; groups];
    let grid = Grid::new([groups as u32, 1, 1], [BLOCK as u32, 1, 1]);
    let (xb, pb) = (grid.input(&x), grid.output(&mut partial));
    grid.run_lanes(|wg| {
        let sums = wg.shared::<f32, BLOCK>();
        warp_reduce_body_lanes(wg, x.len() as u32, xb, pb, sums)
    });
    let fibers = partials(&x);
    let bits = |v: &[f32]| v.iter().map(|p| p.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&partial), bits(&fibers));
}
