//! Tests of the kernel body on the host, with GPU semantics and cpu-sim's checks
//! (docs/kernel-tests.md): `cargo test`, or `workbench test .`.

use gpu_kernel::testing::Grid;
use stencil2d::{stencil2d_body, HALO_ELEMENTS};

/// One step on a width × height grid, workgroups of bx × by invocations.
fn step(x: &[f32], width: usize, height: usize, bx: usize, by: usize) -> Vec<f32> {
    let mut out = vec![-1.0f32; width * height];
    let groups = [width.div_ceil(bx) as u32, height.div_ceil(by) as u32, 1];
    let grid = Grid::new(groups, [bx as u32, by as u32, 1]);
    let (xb, ob) = (grid.input(x), grid.output(&mut out));
    grid.run(|ctx| {
        let tile = ctx.shared::<f32, HALO_ELEMENTS>();
        stencil2d_body(ctx, bx, by, width as u32, height as u32, xb, ob, tile)
    });
    out
}

fn expected(x: &[f32], width: usize, height: usize) -> Vec<f32> {
    let mut out = x.to_vec();
    for y in 1..height - 1 {
        for i in 1..width - 1 {
            let c = y * width + i;
            out[c] = (x[c] + x[c - 1] + x[c + 1] + x[c + width] + x[c - width]) / 5.0;
        }
    }
    out
}

fn field(width: usize, height: usize) -> Vec<f32> {
    (0..width * height)
        .map(|i| ((i * 31) % 97) as f32)
        .collect()
}

#[test]
fn interior_averaged_boundary_kept() {
    let (w, h) = (64, 16);
    let x = field(w, h);
    assert_eq!(step(&x, w, h, 32, 8), expected(&x, w, h));
}

#[test]
fn n_not_a_multiple_of_the_workgroup_size() {
    // 70 × 13 on 32 × 8 workgroups: the right and bottom workgroups hang over the grid.
    let (w, h) = (70, 13);
    let x = field(w, h);
    assert_eq!(step(&x, w, h, 32, 8), expected(&x, w, h));
}

#[test]
fn largest_workgroup_fills_the_halo_tile() {
    // 64 × 16: the workgroup HALO_ELEMENTS is sized for.
    let (w, h) = (130, 40);
    let x = field(w, h);
    assert_eq!(step(&x, w, h, 64, 16), expected(&x, w, h));
}
