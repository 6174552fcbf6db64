//! Tests of the kernel body on the host, with GPU semantics and cpu-sim's checks
//! (docs/kernel-tests.md): `cargo test`, or `workbench test .`.

use gpu_kernel::testing::Grid;
use softmax::{softmax_body, BLOCK};

/// Each row of the rows × cols matrix `x` softmaxed by the kernel (one workgroup per row).
fn softmax(x: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut y = vec![0.0f32; rows * cols];
    let grid = Grid::new([rows as u32, 1, 1], [BLOCK as u32, 1, 1]);
    let (xb, yb) = (grid.input(x), grid.output(&mut y));
    grid.run(|ctx| {
        let red = ctx.shared::<f32, BLOCK>();
        softmax_body(ctx, rows as u32, cols as u32, xb, yb, red)
    });
    y
}

fn close(a: f32, b: f32) -> bool {
    (a - b).abs() <= 1e-6 + 1e-5 * b.abs()
}

#[test]
fn rows_sum_to_one_and_follow_exp() {
    let (rows, cols) = (3, 1024);
    let x: Vec<f32> = (0..rows * cols)
        .map(|i| ((i * 37) % 101) as f32 / 25.0 - 2.0)
        .collect();
    let y = softmax(&x, rows, cols);
    for r in 0..rows {
        let row = &x[r * cols..(r + 1) * cols];
        let max = row.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let total: f64 = row.iter().map(|v| ((v - max) as f64).exp()).sum();
        for (j, v) in row.iter().enumerate() {
            let expected = (((v - max) as f64).exp() / total) as f32;
            assert!(
                close(y[r * cols + j], expected),
                "row {r} column {j}: {} vs {expected}",
                y[r * cols + j]
            );
        }
    }
}

#[test]
fn large_values_do_not_overflow() {
    // exp(1000) is inf in f32: the kernel subtracts the row's maximum first.
    let x = vec![1000.0f32, 999.0, 998.0];
    let y = softmax(&x, 1, 3);
    assert!(y.iter().all(|v| v.is_finite()), "{y:?}");
    assert!(close(y.iter().sum::<f32>(), 1.0));
}

#[test]
fn n_not_a_multiple_of_the_workgroup_size() {
    // 300 columns for 256 invocations: 44 invocations take a second column, the rest one.
    let x: Vec<f32> = (0..2 * 300).map(|i| (i % 17) as f32 * 0.1).collect();
    let y = softmax(&x, 2, 300);
    for r in 0..2 {
        let sum: f32 = y[r * 300..(r + 1) * 300].iter().sum();
        assert!(close(sum, 1.0), "row {r} sums to {sum}");
    }
    assert!(close(y[0] / y[1], (-0.1f32).exp()));
}
