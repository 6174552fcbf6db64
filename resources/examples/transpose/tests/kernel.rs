//! Tests of the kernel body on the host, with GPU semantics and cpu-sim's checks
//! (docs/kernel-tests.md): `cargo test`, or `workbench test .`.

use gpu_kernel::testing::Grid;
use transpose::{transpose_body, TILE_ELEMENTS};

/// The transpose of the m × n matrix `a`: tiles of `tile` padded by `pad`, workgroups of
/// tile × rows invocations.
fn transpose(a: &[f32], m: usize, n: usize, tile: usize, pad: usize, rows: usize) -> Vec<f32> {
    let mut b = vec![0.0f32; m * n];
    let grid = Grid::new(
        [n.div_ceil(tile) as u32, m.div_ceil(tile) as u32, 1],
        [tile as u32, rows as u32, 1],
    );
    let (ab, bb) = (grid.input(a), grid.output(&mut b));
    grid.run(|ctx| {
        let t = ctx.shared::<f32, TILE_ELEMENTS>();
        transpose_body(ctx, tile, pad, m as u32, n as u32, ab, bb, t)
    });
    b
}

fn expected(a: &[f32], m: usize, n: usize) -> Vec<f32> {
    (0..n * m).map(|k| a[(k % m) * n + k / m]).collect()
}

#[test]
fn square_tiles_padded() {
    let (m, n) = (64, 96);
    let a: Vec<f32> = (0..m * n).map(|i| i as f32).collect();
    assert_eq!(transpose(&a, m, n, 32, 1, 8), expected(&a, m, n));
}

#[test]
fn without_padding() {
    let (m, n) = (32, 32);
    let a: Vec<f32> = (0..m * n).map(|i| i as f32).collect();
    assert_eq!(transpose(&a, m, n, 32, 0, 8), expected(&a, m, n));
}

#[test]
fn n_not_a_multiple_of_the_workgroup_size() {
    // 45 × 70 on 16-wide tiles: the last tiles of each row and column are partial.
    let (m, n) = (45, 70);
    let a: Vec<f32> = (0..m * n).map(|i| (i * 3) as f32).collect();
    assert_eq!(transpose(&a, m, n, 16, 1, 4), expected(&a, m, n));
}
