//! Tests of the kernel body on the host, with GPU semantics and cpu-sim's checks
//! (docs/kernel-tests.md): `cargo test`, or `workbench test .`.

use gpu_kernel::testing::Grid;
use saxpy::saxpy_body;

/// y = a * x + y over `n` elements, `vector` per invocation, workgroups of `block`.
fn saxpy(n: usize, block: usize, vector: usize) -> (Vec<f32>, Vec<f32>) {
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
    let mut y: Vec<f32> = (0..n).map(|i| 1.0 - i as f32).collect();
    let groups = n.div_ceil(block * vector) as u32;
    let grid = Grid::new([groups, 1, 1], [block as u32, 1, 1]);
    let (xb, yb) = (grid.input(&x), grid.output(&mut y));
    grid.run(|ctx| saxpy_body(ctx, block, vector, n as u32, 2.5, xb, yb));
    let expected = (0..n)
        .map(|i| 2.5 * (i as f32 * 0.5) + (1.0 - i as f32))
        .collect();
    (y, expected)
}

#[test]
fn every_element_once() {
    let (y, expected) = saxpy(4096, 256, 1);
    assert_eq!(y, expected);
}

#[test]
fn n_not_a_multiple_of_the_workgroup_size() {
    // 1000 = 3 * 256 + 232: the last workgroup's last 24 invocations have no element.
    let (y, expected) = saxpy(1000, 256, 1);
    assert_eq!(y, expected);
}

#[test]
fn vector_form_with_a_scalar_tail() {
    // 4 elements per invocation, and n % 4 = 3 left to the last one.
    let (y, expected) = saxpy(1027, 64, 4);
    assert_eq!(y, expected);
}
