//! Tests of the kernel body on the host, with GPU semantics and cpu-sim's checks
//! (docs/kernel-tests.md): `cargo test`, or `workbench test .`.

use gpu_kernel::testing::Grid;
use matmul::{matmul_blocked_body, matmul_body, MAX_TILE_ELEMENTS};

/// C = A · B for A m × k and B k × n: workgroups of tile × tile, `per_thread` × `per_thread`
/// elements of C each (1: the tiled form, 4: register blocking), as the manifest launches.
fn matmul(
    a: &[f32],
    b: &[f32],
    m: usize,
    n: usize,
    k: usize,
    tile: usize,
    per_thread: usize,
) -> Vec<f32> {
    let mut c = vec![0.0f32; m * n];
    let edge = tile * per_thread;
    let grid = Grid::new(
        [n.div_ceil(edge) as u32, m.div_ceil(edge) as u32, 1],
        [tile as u32, tile as u32, 1],
    );
    let (ab, bb, cb) = (grid.input(a), grid.input(b), grid.output(&mut c));
    let (m, n, k) = (m as u32, n as u32, k as u32);
    // One closure per form: an unoptimized build gives a body's frame room for everything it
    // inlines, and a fiber's stack is 128 KiB (docs/kernel-tests.md).
    match per_thread {
        4 => grid.run(|ctx| {
            let (a_tile, b_tile) = (
                ctx.shared::<f32, MAX_TILE_ELEMENTS>(),
                ctx.shared::<f32, MAX_TILE_ELEMENTS>(),
            );
            matmul_blocked_body::<4, MAX_TILE_ELEMENTS>(
                ctx, tile, m, n, k, ab, bb, cb, a_tile, b_tile,
            )
        }),
        _ => grid.run(|ctx| {
            let (a_tile, b_tile) = (
                ctx.shared::<f32, MAX_TILE_ELEMENTS>(),
                ctx.shared::<f32, MAX_TILE_ELEMENTS>(),
            );
            matmul_body::<MAX_TILE_ELEMENTS>(ctx, tile, m, n, k, ab, bb, cb, a_tile, b_tile)
        }),
    }
    c
}

/// Each element's chain k ascending, one fused multiply-add per step: what every backend computes.
fn expected(a: &[f32], b: &[f32], m: usize, n: usize, k: usize) -> Vec<f32> {
    let mut c = vec![0.0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..k).fold(0.0f32, |acc, t| a[i * k + t].mul_add(b[t * n + j], acc));
        }
    }
    c
}

fn matrix(rows: usize, cols: usize, seed: usize) -> Vec<f32> {
    (0..rows * cols)
        .map(|i| ((i * 7 + seed) % 13) as f32 / 4.0 - 1.5)
        .collect()
}

#[test]
fn tiled_form() {
    let (m, n, k) = (32, 48, 64);
    let (a, b) = (matrix(m, k, 1), matrix(k, n, 2));
    assert_eq!(matmul(&a, &b, m, n, k, 16, 1), expected(&a, &b, m, n, k));
}

#[test]
fn register_blocked_form_agrees_bit_for_bit() {
    let (m, n, k) = (64, 64, 32);
    let (a, b) = (matrix(m, k, 3), matrix(k, n, 4));
    assert_eq!(matmul(&a, &b, m, n, k, 8, 4), expected(&a, &b, m, n, k));
}

#[test]
fn n_not_a_multiple_of_the_workgroup_size() {
    // 37 × 29 by 29 × 45 on 16 × 16 tiles: partial tiles along every axis (missing elements 0).
    let (m, n, k) = (37, 45, 29);
    let (a, b) = (matrix(m, k, 5), matrix(k, n, 6));
    assert_eq!(matmul(&a, &b, m, n, k, 16, 1), expected(&a, &b, m, n, k));
}
