//! Tests of the kernel body on the host, with GPU semantics and cpu-sim's checks
//! (docs/kernel-tests.md): `cargo test`, or `workbench test .`.

use blank::blank_body;
use gpu_kernel::testing::Grid;

/// The kernel over `x`, workgroups of `block` invocations.
fn blank(x: &mut [f32], block: usize) {
    let n = x.len();
    let grid = Grid::new([n.div_ceil(block) as u32, 1, 1], [block as u32, 1, 1]);
    let xb = grid.output(x);
    grid.run(|ctx| blank_body(ctx, block, n as u32, xb));
}

#[test]
fn every_element_updated() {
    let mut x: Vec<f32> = (0..1024).map(|i| i as f32).collect();
    blank(&mut x, 256);
    assert!(x
        .iter()
        .enumerate()
        .all(|(i, v)| *v == 2.0 * i as f32 + 1.0));
}

#[test]
fn n_not_a_multiple_of_the_workgroup_size() {
    // 1000 = 3 * 256 + 232: the last workgroup's last 24 invocations must touch nothing (an
    // index past n is an out-of-bounds finding, which fails the test).
    let mut x = vec![1.0f32; 1000];
    blank(&mut x, 256);
    assert!(x.iter().all(|v| *v == 3.0));
}
