//! Tests of the kernel body on the host, with GPU semantics and cpu-sim's checks
//! (docs/kernel-tests.md): `cargo test`, or `workbench test .`.

use gpu_kernel::testing::Grid;
use reduction::{reduction_body, BLOCK};

/// The workgroups' partial sums of `x` (the manifest's grid: min(ceil(n / 512 vector), groups)).
fn partials(x: &[f32], vector: usize, max_groups: usize) -> Vec<f32> {
    let n = x.len();
    let groups = n.div_ceil(2 * BLOCK * vector).min(max_groups);
    let mut partial = vec![0.0f32; groups];
    let grid = Grid::new([groups as u32, 1, 1], [BLOCK as u32, 1, 1]);
    let (xb, pb) = (grid.input(x), grid.output(&mut partial));
    grid.run(|ctx| {
        let scratch = ctx.shared::<f32, BLOCK>();
        reduction_body(ctx, vector, max_groups, n as u32, xb, pb, scratch)
    });
    partial
}

// Small integers: every order of the additions gives the exact sum.
fn ones_and_twos(n: usize) -> Vec<f32> {
    (0..n).map(|i| (1 + i % 2) as f32).collect()
}

#[test]
fn the_partials_add_up_to_the_sum() {
    let x = ones_and_twos(1 << 16);
    let partial = partials(&x, 4, 2048);
    assert_eq!(partial.len(), 32);
    assert_eq!(partial.iter().sum::<f32>(), x.iter().sum::<f32>());
    assert_eq!(partial[0], 3072.0); // chunk 0: 2048 elements, half ones, half twos
}

#[test]
fn grid_stride_loop_when_groups_are_capped() {
    let x = ones_and_twos(20_000);
    let partial = partials(&x, 1, 3);
    assert_eq!(partial.len(), 3);
    assert_eq!(partial.iter().sum::<f32>(), 30_000.0);
}

#[test]
fn n_not_a_multiple_of_the_workgroup_size() {
    // 1001 elements, 4 per load: the last chunk ends inside a 16-byte load (scalar tail).
    let x = ones_and_twos(1001);
    let partial = partials(&x, 4, 2048);
    assert_eq!(partial, [1501.0]);
}
