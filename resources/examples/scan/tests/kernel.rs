//! Tests of the kernel body on the host, with GPU semantics and cpu-sim's checks
//! (docs/kernel-tests.md): `cargo test`, or `workbench test .`.

use gpu_kernel::testing::Grid;
use scan::{scan_add_body, scan_body, BLOCK, RAKERS, TILE};

/// The inclusive scan of `x` by the two passes (the manifest's two kernels), and the tiles' totals.
fn scan(x: &[u32]) -> (Vec<u32>, Vec<u32>) {
    let n = x.len();
    let tiles = n.div_ceil(TILE);
    let (mut y, mut sums) = (vec![0u32; n], vec![0u32; tiles]);
    let grid = Grid::new([tiles as u32, 1, 1], [BLOCK as u32, 1, 1]);
    let (xb, yb, sb) = (grid.input(x), grid.output(&mut y), grid.output(&mut sums));
    grid.run(|ctx| {
        let (items, runs) = (ctx.shared::<u32, TILE>(), ctx.shared::<u32, BLOCK>());
        let rakes = ctx.shared::<u32, RAKERS>();
        scan_body(ctx, n as u32, xb, yb, sb, items, runs, rakes)
    });
    let grid = Grid::new([tiles as u32, 1, 1], [BLOCK as u32, 1, 1]);
    let (sb, yb) = (grid.input(&sums), grid.output(&mut y));
    grid.run(|ctx| {
        let total = ctx.shared::<u32, BLOCK>();
        scan_add_body(ctx, n as u32, sb, yb, total)
    });
    (y, sums)
}

fn expected(x: &[u32]) -> Vec<u32> {
    x.iter()
        .scan(0u32, |acc, v| {
            *acc = acc.wrapping_add(*v);
            Some(*acc)
        })
        .collect()
}

#[test]
fn inclusive_scan_over_several_tiles() {
    let x: Vec<u32> = (0..4 * TILE as u32).map(|i| i % 7).collect();
    let (y, sums) = scan(&x);
    assert_eq!(y, expected(&x));
    assert_eq!(sums[0], x[..TILE].iter().sum::<u32>());
}

#[test]
fn n_not_a_multiple_of_the_workgroup_size() {
    // 2 * 2304 + 1001: the last tile partial, its last live invocation (t = 111) holding two of
    // its nine elements, the invocations after it none.
    let x: Vec<u32> = (0..(2 * TILE + 1001) as u32)
        .map(|i| (i * 13) % 11)
        .collect();
    assert_eq!(scan(&x).0, expected(&x));
}

#[test]
fn wraps_as_u32_arithmetic_does() {
    let x = vec![u32::MAX; 3];
    assert_eq!(scan(&x).0, [u32::MAX, u32::MAX - 1, u32::MAX - 2]);
}

#[test]
fn pass_two_over_more_tiles_than_invocations() {
    // BLOCK + 44 tiles: the workgroups past the 256th sum the totals before them in two rounds
    // of 256, the last tile partial (5 elements).
    let tiles = BLOCK + 44;
    let n = (tiles - 1) * TILE + 5;
    let sums: Vec<u32> = (0..tiles as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let mut y: Vec<u32> = (0..n as u32).map(|i| i % 5).collect();
    let mut before = vec![0u32; tiles];
    for k in 1..tiles {
        before[k] = before[k - 1].wrapping_add(sums[k - 1]);
    }
    let expected: Vec<u32> = y
        .iter()
        .enumerate()
        .map(|(i, v)| v.wrapping_add(before[i / TILE]))
        .collect();
    let grid = Grid::new([tiles as u32, 1, 1], [BLOCK as u32, 1, 1]);
    let (sb, yb) = (grid.input(&sums), grid.output(&mut y));
    grid.run(|ctx| {
        let total = ctx.shared::<u32, BLOCK>();
        scan_add_body(ctx, n as u32, sb, yb, total)
    });
    assert_eq!(y, expected);
}
