//! Tests of the kernel body on the host, with GPU semantics and cpu-sim's checks
//! (docs/kernel-tests.md): `cargo test`, or `workbench test .`.

use bitonic::bitonic_body;
use gpu_kernel::testing::Grid;

/// One launch of the step (stride j, stage k) over `data`, 256 invocations per workgroup.
fn step(data: &mut [u32], j: u32, k: u32) {
    let n = data.len();
    let grid = Grid::new([n.div_ceil(256) as u32, 1, 1], [256, 1, 1]);
    let d = grid.output(data);
    grid.run(|ctx| bitonic_body(ctx, 256, n as u32, j, k, d));
}

/// Every stage and stride: a full sort, as a run of the example does step by step.
fn sort(data: &mut [u32]) {
    let n = data.len().next_power_of_two() as u32;
    let mut k = 2;
    while k <= n {
        let mut j = k / 2;
        while j > 0 {
            step(data, j, k);
            j /= 2;
        }
        k *= 2;
    }
}

fn keys(n: usize) -> Vec<u32> {
    (0..n as u32)
        .map(|i| i.wrapping_mul(2_654_435_761) >> 7)
        .collect()
}

#[test]
fn full_sort_of_a_power_of_two() {
    let mut data = keys(1024);
    sort(&mut data);
    let mut expected = keys(1024);
    expected.sort();
    assert_eq!(data, expected);
}

#[test]
fn one_step_orders_each_pair() {
    // Stage k = 2, stride 1: pairs (0,1), (2,3), … ascending where i & 2 == 0, else descending.
    let mut data = vec![5, 3, 1, 2, 9, 8, 6, 7];
    step(&mut data, 1, 2);
    assert_eq!(data, [3, 5, 2, 1, 8, 9, 7, 6]);
}

#[test]
fn n_not_a_multiple_of_the_workgroup_size() {
    // 300 keys: the second workgroup has 44 live invocations, and pairs reaching past n are
    // left alone (the body's l < n).
    let mut data = keys(300);
    step(&mut data, 128, 256);
    let before = keys(300);
    for i in 0..300usize {
        let l = i ^ 128;
        if l > i && l < 300 {
            let (lo, hi) = (before[i].min(before[l]), before[i].max(before[l]));
            let ascending = i & 256 == 0;
            assert_eq!(
                (data[i], data[l]),
                if ascending { (lo, hi) } else { (hi, lo) },
                "pair {i}"
            );
        } else if l >= 300 {
            assert_eq!(data[i], before[i], "key {i} has no partner below n");
        }
    }
}
