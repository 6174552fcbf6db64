//! Tests of the kernel body on the host, with GPU semantics and cpu-sim's checks
//! (docs/kernel-tests.md): `cargo test`, or `workbench test .`.

use gpu_kernel::testing::Grid;
use histogram::{histogram_body, BINS};

/// The histogram of `x` by the kernel: workgroups of `threads`, `items` elements per invocation.
fn histogram(x: &[u32], threads: usize, items: usize) -> Vec<u32> {
    let mut bins = vec![0u32; BINS];
    let groups = x.len().div_ceil(threads * items) as u32;
    let grid = Grid::new([groups, 1, 1], [threads as u32, 1, 1]);
    let (xb, bb) = (grid.input(x), grid.output(&mut bins));
    grid.run(|ctx| {
        let local = ctx.shared::<u32, BINS>();
        histogram_body(ctx, items, x.len() as u32, xb, bb, local)
    });
    bins
}

fn expected(x: &[u32]) -> Vec<u32> {
    let mut bins = vec![0u32; BINS];
    for v in x {
        bins[*v as usize % BINS] += 1;
    }
    bins
}

#[test]
fn counts_every_value() {
    let x: Vec<u32> = (0..65_536u32)
        .map(|i| i.wrapping_mul(2_654_435_761) >> 5)
        .collect();
    assert_eq!(histogram(&x, 256, 16), expected(&x));
}

#[test]
fn atomics_lose_no_update_when_every_value_is_one_bin() {
    let x = vec![7u32; 10_000];
    let bins = histogram(&x, 256, 4);
    assert_eq!(bins[7], 10_000);
    assert_eq!(bins.iter().sum::<u32>(), 10_000);
}

#[test]
fn n_not_a_multiple_of_the_workgroup_size() {
    // 1000 elements, 64 invocations of 16 items: one workgroup, its last 24 elements missing;
    // 64 invocations zero and add 256 bins, 4 each.
    let x: Vec<u32> = (0..1000u32).map(|i| i * 7).collect();
    assert_eq!(histogram(&x, 64, 16), expected(&x));
}
