//! Tests of the kernel body on the host, with GPU semantics and cpu-sim's checks
//! (docs/kernel-tests.md): `cargo test`, or `workbench test .`.

use gpu_kernel::testing::Grid;
use stencil2d::{stencil2d_body, HALO_ELEMENTS, TILE_SIZE_Y};

/// One step on a width × height grid, workgroups of bx × by invocations (each TILE_SIZE_Y points
/// of a column: a workgroup covers bx × by · TILE_SIZE_Y points, the manifest's grid).
fn step(x: &[f32], width: usize, height: usize, bx: usize, by: usize) -> Vec<f32> {
    let mut out = vec![-1.0f32; width * height];
    let rows = by * TILE_SIZE_Y as usize;
    let groups = [width.div_ceil(bx) as u32, height.div_ceil(rows) as u32, 1];
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
    let (w, h) = (128, 32);
    let x = field(w, h);
    assert_eq!(step(&x, w, h, 64, 4), expected(&x, w, h));
}

#[test]
fn n_not_a_multiple_of_the_workgroup_size() {
    // 70 × 13 on 64 × 4 workgroups of 16 rows: the right and bottom workgroups hang over the
    // grid (the last one by 58 columns and 3 rows), a column's points partly below it.
    let (w, h) = (70, 13);
    let x = field(w, h);
    assert_eq!(step(&x, w, h, 64, 4), expected(&x, w, h));
}

#[test]
fn other_workgroup_shapes() {
    // The old default 32 × 8, a one-row workgroup and a narrow one (the tile's whole passes
    // and partial pass differ: rows % by is 2, 0 and 2), each at a size no multiple of them.
    let (w, h) = (101, 75);
    let x = field(w, h);
    for (bx, by) in [(32, 8), (64, 1), (16, 2)] {
        assert_eq!(step(&x, w, h, bx, by), expected(&x, w, h), "{bx} × {by}");
    }
}

#[test]
fn largest_tile_fills_the_halo_tile() {
    // 64 wide, 16 rows a workgroup (64 × 4 with TILE_SIZE_Y 4): (64 + 2) × (16 + 2) floats, the
    // HALO_ELEMENTS it is sized for.
    let by = 16 / TILE_SIZE_Y as usize;
    assert_eq!((64 + 2) * (by * TILE_SIZE_Y as usize + 2), HALO_ELEMENTS);
    let (w, h) = (130, 40);
    let x = field(w, h);
    assert_eq!(step(&x, w, h, 64, by), expected(&x, w, h));
}
