//! `#[lanes]` against fibers: each kernel below runs as written (one fiber per invocation, GPU
//! semantics) and as its `NAME_lanes` copy (loops over the invocations between barriers), both
//! with cpu-sim's checks, on the same input; the outputs must be equal element for element. A
//! copy that compiles and computes something else is the transformation's worst failure.
#![cfg(feature = "sim")]
// The kernels are written the ways a user might write them, not the ways clippy prefers.
#![allow(
    clippy::manual_is_multiple_of,
    clippy::needless_late_init,
    clippy::single_match,
    clippy::assign_op_pattern,
    clippy::match_single_binding
)]

use gpu_kernel::host::Lanes;
use gpu_kernel::prelude::*;
use gpu_kernel::testing::Grid;

/// Room for one workgroup's values in shared memory.
const S: usize = 256;

/// The kernel on fibers and as its lanes copy, on `grid` x `threads` and an input of `len`
/// values: the two outputs (`len` values each), asserted equal; the output is returned for the
/// test's own checks.
#[track_caller]
fn same(
    grid: [u32; 3],
    threads: [u32; 3],
    len: usize,
    fibers: impl Fn(Ctx, In<u32>, Out<u32>, Shared<u32, S>) + Sync,
    lanes: impl Fn(&Lanes, In<u32>, Out<u32>, Shared<u32, S>) + Sync,
) -> Vec<u32> {
    let x: Vec<u32> = (0..len as u32).map(|i| i.wrapping_mul(2_654_435_761) % 1000).collect();
    let mut on_fibers = vec![0u32; len];
    let mut on_lanes = vec![0u32; len];
    // One worker: the workgroups one after the other on the same workgroup state.
    let g = Grid::with_workers(grid, threads, 1);
    let (xb, yb) = (g.input(&x), g.output(&mut on_fibers));
    g.run(|ctx| {
        let s = ctx.shared::<u32, S>();
        fibers(ctx, xb, yb, s)
    });
    let g = Grid::with_workers(grid, threads, 1);
    let (xb, yb) = (g.input(&x), g.output(&mut on_lanes));
    g.run_lanes(|wg| {
        let s = wg.shared::<u32, S>();
        lanes(wg, xb, yb, s)
    });
    assert_eq!(on_fibers, on_lanes, "fibers (left) and lanes (right) differ");
    on_fibers
}

/// 0, whatever `v`: a kernel reads a value (a shared element after a barrier, a parameter) that
/// the result does not depend on.
fn ignore(v: u32) -> u32 {
    let _ = v;
    0
}

/// `same` for a kernel of the shape `NAME(ctx, x, y, s)`.
macro_rules! same {
    ($name:ident, $lanes:ident, $grid:expr, $threads:expr, $len:expr) => {
        same($grid, $threads, $len, |c, x, y, s| $name(c, x, y, s), |w, x, y, s| $lanes(w, x, y, s))
    };
}

// ------------------------------------------------------------------ what the copy gets right

/// A mutable local changed in every segment, a loop counter, a tree reduction.
#[lanes]
fn tree(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let t = ctx.local_id_x();
    let i = ctx.global_id_x();
    let mut acc = x[i];
    s.set(t, acc);
    ctx.barrier();
    let mut stride = ctx.group_size_x() / 2;
    while stride > 0 {
        if t < stride {
            acc += s.get(t + stride);
            s.set(t, acc);
        }
        ctx.barrier();
        stride /= 2;
    }
    y[i] = acc + s.get(0) * 1000;
}

#[test]
fn a_tree_reduction_matches() {
    let out = same!(tree, tree_lanes, [3, 1, 1], [64, 1, 1], 192);
    let x: Vec<u32> = (0..192u32).map(|i| i.wrapping_mul(2_654_435_761) % 1000).collect();
    let total: u32 = x[64..128].iter().sum();
    assert_eq!(out[64], total * 1001, "invocation 0 holds the workgroup's sum, and reads it");
    // Fewer invocations than a power of two.
    same!(tree, tree_lanes, [2, 1, 1], [24, 1, 1], 48);
}

/// Shadowing across segments: a local shadowed after a barrier by one of the same name and
/// another type, a parameter shadowed by a local, tuple patterns, a `let` without a value.
#[lanes]
fn shadows(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let t = ctx.local_id_x();
    let i = ctx.global_id_x();
    let v = x[i];
    let (a, mut b) = (v + 1, v * 2);
    let c;
    if t % 2 == 0 {
        c = 5u32;
    } else {
        c = 7;
    }
    s.set(t, v);
    ctx.barrier();
    b += a;
    let v = s.get((t + 1) % ctx.group_size_x()) as u64; // a new `v`, another type
    let s2 = { let t = 3; t + 1 };
    ctx.barrier();
    let x = v as u32 + b + c + s2 as u32; // shadows the parameter
    y[i] = x;
}

#[test]
fn shadowing_and_tuples_match() {
    same!(shadows, shadows_lanes, [2, 1, 1], [32, 1, 1], 64);
}

/// A 2-D workgroup: every invocation writes its neighbour's value along y.
#[lanes]
fn two_d(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let (tx, ty) = (ctx.local_id_x(), ctx.local_id_y());
    let (w, h) = (ctx.group_size_x(), ctx.group_size_y());
    let g = ctx.group_id_x() * w * h;
    let me = ty * w + tx;
    s.set(me, x[g + me] + ty as u32 * 10_000);
    ctx.barrier();
    y[g + me] = s.get(((ty + 1) % h) * w + tx);
}

#[test]
fn a_2d_workgroup_matches() {
    let out = same!(two_d, two_d_lanes, [2, 1, 1], [8, 4, 1], 64);
    assert!(out[0] >= 10_000 && out[0] < 20_000, "{}", out[0]);
}

/// A `return` in a nested loop after the last barrier, `while` and `if` with barriers, an
/// assignment in a condition, labels, closures, macros.
#[lanes]
fn control(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let t = ctx.local_id_x();
    let i = ctx.global_id_x();
    let n = ctx.group_size_x();
    let mut rounds = 0u32;
    let add = |a: u32, b: u32| a.wrapping_add(b);
    s.set(t, x[i]);
    ctx.barrier();
    while ((rounds += 1), rounds).1 <= 3 {
        let v = add(s.get((t + 1) % n), rounds);
        ctx.barrier();
        s.set(t, v);
        ctx.barrier();
    }
    debug_assert!(rounds == 4, "{rounds}");
    if n > 8 {
        let w = s.get(t);
        ctx.barrier();
        s.set((t + 3) % n, w);
        ctx.barrier();
    } else {
        ctx.barrier();
    }
    let mut out = s.get(t);
    'outer: for a in 0..4u32 {
        for b in 0..4u32 {
            if a * b > t as u32 {
                break 'outer;
            }
            out = out.wrapping_add(a * b);
        }
    }
    match t % 3 {
        0 => out += 1,
        _ => {}
    }
    for k in 0..n {
        if k == t && t % 5 == 4 {
            y[i] = 99;
            return;
        }
    }
    y[i] = out;
}

#[test]
fn control_flow_matches() {
    same!(control, control_lanes, [2, 1, 1], [16, 1, 1], 32);
}

/// A `let` of a pattern the copy does not keep (`let [a, _]`) shadowing a kept `mut` local of the
/// same block: the run's changes before it are the last the local sees.
#[lanes]
fn pattern_in_block(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let t = ctx.local_id_x();
    let mut count = x[ctx.global_id_x()];
    s.set(t, count);
    ctx.barrier();
    count += s.get(0);
    let [count, _] = [count + 1, 0];
    y[ctx.global_id_x()] = count;
}

#[test]
fn a_pattern_shadowing_in_the_same_block_matches() {
    same!(pattern_in_block, pattern_in_block_lanes, [2, 1, 1], [16, 1, 1], 32);
}

fn bump(v: &mut u32) {
    *v += 1;
}

#[derive(Clone, Copy)]
struct Pair {
    a: u32,
    b: u32,
}

/// `mut` parameters changed by each invocation (through `&mut`, an index, a field, `+=`), before
/// and after a barrier: on fibers each invocation has its own copy, so every one sees its own
/// changes only (the copy shared one value among the lanes: 24 where fibers give 10).
#[lanes]
#[allow(clippy::too_many_arguments)]
fn mut_params(
    ctx: Ctx,
    x: In<u32>,
    mut y: Out<u32>,
    mut s: Shared<u32, S>,
    mut k: u32,
    mut arr: [u32; 2],
    mut pair: Pair,
    mut n: u32,
) {
    let t = ctx.local_id_x();
    bump(&mut k);
    arr[0] += 1;
    pair.a += 2;
    n += t as u32;
    s.set(t, x[ctx.global_id_x()]);
    ctx.barrier();
    bump(&mut k);
    pair.b = pair.a + n;
    y[ctx.global_id_x()] = k + arr[0] * 100 + pair.b * 1000 + ignore(s.get(t));
}

#[test]
fn mut_parameters_are_each_invocations_own() {
    let p = Pair { a: 1, b: 0 };
    let out = same(
        [2, 1, 1],
        [8, 1, 1],
        16,
        |c, x, y, s| mut_params(c, x, y, s, 7, [1, 2], p, 10),
        |w, x, y, s| mut_params_lanes(w, x, y, s, 7, [1, 2], p, 10),
    );
    assert_eq!(out[3], 9 + 200 + (3 + 10 + 3) * 1000);
}

macro_rules! nothing {
    () => {};
}

/// Statements that end without a `;`: an item (`fn`, `struct`), a macro called with braces, and
/// a `let` with an attribute, each before a `let` that shadows a kept local. Read to the next
/// `;`, the item took the `let` along: the copy did not see it bind `v`, and the next run read
/// the `v` from before (1 where fibers give 42).
#[lanes]
fn items(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    #![allow(clippy::identity_op)]
    let t = ctx.local_id_x();
    let v = x[ctx.global_id_x()];
    s.set(t, v);
    ctx.barrier();
    fn twice(a: u32) -> u32 {
        a * 2
    }
    let v = twice(21) + ignore(v);
    struct Unit;
    let w = v + ignore(s.get(t));
    let _ = Unit;
    ctx.barrier();
    nothing! {}
    let w = w * 100 + v;
    ctx.barrier();
    #[allow(unused_parens)]
    let v = (w + 1);
    ctx.barrier();
    y[ctx.global_id_x()] = v;
}

#[test]
fn items_and_brace_macros_end_their_statement() {
    let out = same!(items, items_lanes, [2, 1, 1], [8, 1, 1], 16);
    assert_eq!(out, vec![42 * 100 + 42 + 1; 16]);
}

/// Nested loops and branches with barriers in a 3-D workgroup, workgroups that return as a whole
/// (uniformly) before the first barrier, invocations that return after the last, `else if`.
#[lanes]
fn nested(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let t = (ctx.local_id_z() * ctx.group_size_y() + ctx.local_id_y()) * ctx.group_size_x() + ctx.local_id_x();
    let n = ctx.group_size_x() * ctx.group_size_y() * 2;
    let base = ctx.group_id_x() * n;
    if ctx.group_id_x() % 3 == 2 {
        y[base + t] = 7;
        return;
    }
    let mut acc = x[base + t];
    let mut outer = 0;
    while outer < 3 {
        let mut inner = outer;
        while inner < 3 {
            s.set(t, acc);
            ctx.barrier();
            acc = acc.wrapping_mul(3).wrapping_add(s.get((t + inner + 1) % n));
            ctx.barrier();
            inner += 1;
        }
        if outer == 0 {
            s.set(t, acc);
            ctx.barrier();
            acc ^= s.get(n - 1 - t);
            ctx.barrier();
        } else if outer == 1 {
            ctx.barrier();
            acc += 1;
        } else {
            acc += 2;
        }
        outer += 1;
    }
    if t % 4 == 1 {
        y[base + t] = 1;
        return;
    }
    y[base + t] = acc;
}

#[test]
fn nested_loops_in_3d_workgroups_match() {
    same!(nested, nested_lanes, [5, 1, 1], [4, 2, 2], 5 * 16);
}

/// The module's `TOP`, which the body's own hides (so nothing reads it: the test is that the
/// copy does not either).
#[allow(dead_code)]
const TOP: u32 = 10;

/// Items of the body (a `const`, a `fn`, a `use`) are visible in the whole body, after a barrier
/// too. In the copy they stood in the first loop over the lanes, hidden from the next: there
/// `TOP` was the module's (10 where fibers give 3, no error).
#[lanes]
fn body_items(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    const TOP: u32 = 3;
    use core::num::Wrapping as W;
    let t = ctx.local_id_x();
    s.set(t, x[ctx.global_id_x()] % TOP);
    ctx.barrier();
    fn square(a: u32) -> u32 {
        a * a
    }
    ctx.barrier();
    y[ctx.global_id_x()] = (W(TOP) + W(ignore(square(s.get(t))))).0;
}

#[test]
fn the_bodys_items_are_seen_after_a_barrier() {
    let out = same!(body_items, body_items_lanes, [1, 1, 1], [8, 1, 1], 8);
    assert_eq!(out, vec![3; 8]);
}

/// A `macro_rules!` of the body names the local before it (`n`, which shadows the parameter):
/// moved first with the items, it named the parameter (a value other than the local's).
#[lanes]
fn body_macro(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>, n: u32) {
    let n = x[ctx.global_id_x()] / 2 + n;
    macro_rules! half {
        () => {
            n
        };
    }
    s.set(ctx.local_id_x(), half!());
    ctx.barrier();
    y[ctx.global_id_x()] = s.get(ctx.local_id_x());
}

#[test]
fn a_bodys_macro_names_the_local_before_it() {
    same([1, 1, 1], [8, 1, 1], 8, |c, x, y, s| body_macro(c, x, y, s, 1), |w, x, y, s| body_macro_lanes(w, x, y, s, 1));
}

/// A kept local named only in a format string after a barrier (`"{n}"`, captured by the macro):
/// the copy did not take it from its lane there, and `n` was the parameter it shadows.
#[lanes]
fn format_capture(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>, n: u32) {
    let n = x[ctx.global_id_x()] + n;
    s.set(ctx.local_id_x(), 1);
    ctx.barrier();
    let text = format!("{n}");
    y[ctx.global_id_x()] = text.parse::<u32>().unwrap() + ignore(s.get(ctx.local_id_x()));
}

#[test]
fn a_local_named_in_a_format_string_is_kept() {
    same([1, 1, 1], [8, 1, 1], 8, |c, x, y, s| format_capture(c, x, y, s, 1), |w, x, y, s| format_capture_lanes(w, x, y, s, 1));
}

/// `return` in closures (with a block, with a return type) and in a function of a nested block:
/// each returns from its own, not the invocation (the copy made them leave the loop over the
/// lanes: a compile error).
#[lanes]
fn own_returns(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let clamp = |v: u32| {
        if v > 500 {
            return 500;
        }
        v
    };
    let t = ctx.local_id_x();
    s.set(t, clamp(x[ctx.global_id_x()]));
    ctx.barrier();
    let neg = |v: i64| -v;
    let odd = |v: u32| -> bool {
        if v % 2 == 1 {
            return true;
        }
        false
    };
    let mut out = s.get((t + 1) % 8) + u32::from(odd(s.get(t))) * 1000;
    if neg(out.into()) < -600 {
        fn halve(v: u32) -> u32 {
            if v == 0 {
                return 0;
            }
            v / 2
        }
        out = halve(out);
    }
    if t == 3 {
        y[ctx.global_id_x()] = 7;
        return;
    }
    y[ctx.global_id_x()] = out;
}

#[test]
fn returns_of_closures_and_functions_are_their_own() {
    let out = same!(own_returns, own_returns_lanes, [1, 1, 1], [8, 1, 1], 8);
    assert_eq!(out[3], 7);
}

/// Returns when `$c` holds: a `return` the copy cannot see.
macro_rules! stop_if {
    ($c:expr) => {
        if $c {
            return;
        }
    };
}

/// A `return` in a macro's expansion, after the last barrier: the copy cannot rewrite it, and it
/// returned from the whole copy, leaving the lanes after the first that returned without their
/// writes (fibers write 5 at every even invocation; the copy at invocation 0 only, no error).
/// The copy now stops the run, naming the body.
#[lanes]
fn macro_return(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let t = ctx.local_id_x();
    s.set(t, x[ctx.global_id_x()]);
    ctx.barrier();
    stop_if!(t % 2 == 1);
    y[ctx.global_id_x()] = 5 + ignore(s.get(t));
}

#[test]
fn a_return_in_a_macro_stops_the_copy() {
    let x = vec![0u32; 8];
    let mut y = vec![0u32; 8];
    let g = Grid::new([1, 1, 1], [8, 1, 1]);
    let (xb, yb) = (g.input(&x), g.output(&mut y));
    g.run(|ctx| macro_return(ctx, xb, yb, ctx.shared::<u32, S>()));
    assert_eq!(y, [5, 0, 5, 0, 5, 0, 5, 0]);
    let g = Grid::new([1, 1, 1], [8, 1, 1]);
    let (xb, yb) = (g.input(&x), g.output(&mut y));
    let stopped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        g.run_lanes(|wg| macro_return_lanes(wg, xb, yb, wg.shared::<u32, S>()))
    }));
    let message = stopped.expect_err("the copy stops").downcast::<String>().map(|m| *m).unwrap_or_default();
    let line = 1 + include_str!("lanes.rs").lines().position(|l| l.starts_with("fn macro_return(")).unwrap();
    assert!(message.contains(&format!("tests/lanes.rs:{line} ")), "{message}");
    assert!(message.contains("returned before its end"), "{message}");
}

/// A block's last statement without its `;` (`stride /= 2`, valid Rust: a `()` expression) in a
/// run that changes a kept local: the copy put the local back right after it, a syntax error at
/// `#[lanes]`.
#[lanes]
fn tail(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let t = ctx.local_id_x();
    let mut stride = 4u32;
    let mut total = x[ctx.global_id_x()];
    while stride > 0 {
        s.set(t, stride);
        ctx.barrier();
        total += s.get((t + 1) % 8);
        ctx.barrier();
        stride /= 2
    }
    y[ctx.global_id_x()] = total
}

#[test]
fn a_last_statement_without_its_semicolon_matches() {
    let out = same!(tail, tail_lanes, [1, 1, 1], [8, 1, 1], 8);
    assert_eq!(out[0], 7);
}

/// A local of a parameter's name in an inner block, assigned there: the parameter is not (the
/// copy refused it as "the parameter `n` is assigned in the body").
#[lanes]
fn inner_name(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>, n: u32) {
    let t = ctx.local_id_x();
    s.set(t, 1);
    ctx.barrier();
    if t < n as usize {
        let mut n = x[ctx.global_id_x()];
        n += s.get(t);
        y[ctx.global_id_x()] = n;
    }
}

#[test]
fn a_local_of_a_parameters_name_in_an_inner_block_matches() {
    same([1, 1, 1], [8, 1, 1], 8, |c, x, y, s| inner_name(c, x, y, s, 5), |w, x, y, s| inner_name_lanes(w, x, y, s, 5));
}

/// Statements that begin with a block or end with one: a block statement, an `unsafe` block, a
/// labeled block, `let x = if ..`, `match` as a value with a method after it, each beside a
/// `let` that shadows a kept local.
#[lanes]
fn blocks(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let t = ctx.local_id_x();
    let mut v = x[ctx.global_id_x()];
    s.set(t, v);
    ctx.barrier();
    {
        v += s.get((t + 1) % 8);
    }
    let v = v * 2;
    let w = if v > 900 { 1u32 } else { 2 };
    let p = core::ptr::addr_of!(w);
    let q;
    unsafe {
        q = *p;
    }
    let v = v + w + q;
    let m = match t % 3 {
        0 => 10u32,
        _ => 20,
    }
    .max(w);
    'out: {
        if m > 15 {
            break 'out;
        }
    }
    ctx.barrier();
    y[ctx.global_id_x()] = v + m;
}

#[test]
fn statements_with_blocks_match() {
    same!(blocks, blocks_lanes, [2, 1, 1], [8, 1, 1], 16);
}

// ------------------------------------------------------------------ uniform locals and conditions

macro_rules! set_to {
    ($name:ident, $value:expr) => {
        $name = $value
    };
}

macro_rules! rebind {
    ($name:ident, $value:expr) => {
        let $name = $value;
    };
}

/// `mut` locals that start the same in every lane but that some lanes change (in a branch, a loop
/// without a barrier, through `&mut`, a closure, a macro, a destructuring assignment, a field):
/// each is per lane. Taken as uniform, every lane would see the last lane's value after the
/// barrier (the lanes at t % 3 == 0 set 10; the last one, 15, is one of them).
#[lanes]
fn some_lanes_assign(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let t = ctx.local_id_x();
    let (mut a, mut b, mut c, mut d, mut e, mut f) = (1u32, 1u32, 1u32, 1u32, 1u32, 1u32);
    let mut g = (1u32, 1u32);
    let mut same = 1u32;
    s.set(t, x[ctx.global_id_x()]);
    ctx.barrier();
    if t % 3 == 0 {
        a = 10;
    }
    let mut k = 0;
    while k < t % 4 {
        b += 1;
        k += 1;
    }
    if t % 2 == 0 {
        bump(&mut c);
    }
    let mut add = |v: u32| d += v;
    add(t as u32);
    if t % 5 == 0 {
        set_to!(e, 7);
    }
    (f, _) = (t as u32 + f, 0);
    g.0 += t as u32;
    same += 1;
    ctx.barrier();
    a += 1;
    y[ctx.global_id_x()] = a + b * 10 + c * 100 + d * 1000 + e * 10_000 + f * 100_000 + g.0 * 1_000_000 + same + ignore(s.get(t));
}

#[test]
fn a_local_some_lanes_change_stays_per_lane() {
    let out = same!(some_lanes_assign, some_lanes_assign_lanes, [2, 1, 1], [16, 1, 1], 32);
    assert_eq!(out[1] % 10, 2 + 2, "a: 1 + 1 at t = 1, plus `same` (2)");
    assert_eq!(out[3] % 10, 1 + 10 + 2 - 10, "a: 10 + 1 at t = 3, plus `same` (2)");
}

/// A uniform local shadowed by a per-lane one and the other way round, in the same run, after a
/// barrier and in an inner block, and a name a macro binds (unseen by the attribute: what follows
/// is taken as per lane).
#[lanes]
fn uniform_shadows(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>, n: u32) {
    let t = ctx.local_id_x();
    let g = ctx.group_id_x() as u32 * 7 + n;
    let v = g + 1;
    let w = t as u32;
    s.set(t, x[ctx.global_id_x()] + ignore(w));
    ctx.barrier();
    let g = g + t as u32; // per lane now
    let w = v * 2; // uniform now
    {
        let v = t as u32 * 3;
        s.set(t, s.get(t) + v);
    }
    rebind!(v, t as u32 + 100);
    let z = v + 1;
    ctx.barrier();
    let n = n + g;
    y[ctx.global_id_x()] = g + w * 10 + z * 1000 + n * 100_000 + s.get(t) % 10;
}

#[test]
fn shadowing_uniform_and_per_lane_locals_matches() {
    let out = same(
        [3, 1, 1],
        [8, 1, 1],
        24,
        |c, x, y, s| uniform_shadows(c, x, y, s, 5),
        |w, x, y, s| uniform_shadows_lanes(w, x, y, s, 5),
    );
    // Workgroup 1, lane 2: g = 7 + 5 + 2, w = (7 + 5 + 1) * 2, z = 2 + 100 + 1, n = 5 + 14.
    let xs: Vec<u32> = (0..24u32).map(|i| i.wrapping_mul(2_654_435_761) % 1000).collect();
    assert_eq!(out[10], 14 + 26 * 10 + 103 * 1000 + 19 * 100_000 + (xs[10] + 6) % 10);
}

/// Uniform conditions (a counter, a workgroup's id, a parameter, a `mut` parameter changed by
/// every lane the same way) around barriers, with a uniform `mut` local doubled in a run that
/// does per-lane work too (each lane starts from the value before the run), `else if`, and a
/// count that differs between workgroups.
#[lanes]
fn uniform_conditions(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>, n: u32, mut bias: u32) {
    let t = ctx.local_id_x();
    let size = ctx.group_size_x();
    bias += 1;
    let rounds = ctx.group_id_x() as u32 + n;
    let mut acc = x[ctx.global_id_x()];
    let mut offset = 1usize;
    let mut round = 0u32;
    while round < rounds {
        s.set(t, acc);
        offset *= 2;
        ctx.barrier();
        acc = acc.wrapping_add(s.get((t + offset) % size));
        ctx.barrier();
        round += 1;
    }
    if rounds > 2 && bias == n + 1 {
        s.set(t, acc);
        ctx.barrier();
        acc += s.get(size - 1 - t);
    } else if ctx.num_groups_x() > 1 {
        ctx.barrier();
        acc += 1000;
    } else {
        acc += 7;
    }
    ctx.barrier();
    y[ctx.global_id_x()] = acc + offset as u32 * 1_000_000 + round * 100_000_000;
}

#[test]
fn uniform_conditions_match() {
    let out = same(
        [3, 1, 1],
        [16, 1, 1],
        48,
        |c, x, y, s| uniform_conditions(c, x, y, s, 1, 1),
        |w, x, y, s| uniform_conditions_lanes(w, x, y, s, 1, 1),
    );
    assert_eq!(out[0] / 100_000_000, 1, "workgroup 0: one round");
    assert_eq!(out[47] / 100_000_000, 3, "workgroup 2: three rounds");
    assert_eq!(out[47] / 1_000_000 % 100, 8, "offset doubled once a round, not once a lane");
}

/// Conditions around barriers that are the same in every lane at run time but not provably so
/// (a value read from memory, a per-lane local that lanes agree on, a `mut` local one branch
/// changes): voted per lane, as before.
#[lanes]
fn per_lane_conditions(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let t = ctx.local_id_x();
    s.set(t, x[ctx.global_id_x()] % 3);
    ctx.barrier();
    let mut r = s.get(0);
    let mut steps = 0u32;
    let half = t / 64; // 0 in every lane of these workgroups
    ctx.barrier();
    while r < 4 && half == 0 {
        steps += 1;
        ctx.barrier();
        r += 1;
    }
    let mut flag = 0u32;
    if t > 100 {
        flag = 1; // no lane of these workgroups
    }
    if flag == 0 {
        ctx.barrier();
        steps += 10;
    }
    y[ctx.global_id_x()] = steps * 1000 + r;
}

#[test]
fn per_lane_conditions_match() {
    let out = same!(per_lane_conditions, per_lane_conditions_lanes, [2, 1, 1], [16, 1, 1], 32);
    assert!(out.iter().all(|v| v % 1000 == 4), "{out:?}");
}

// ------------------------------------------------------------------ lane-pure locals

/// A constant the kernel below names in a lane-pure local; a block of the body declares its own
/// of that name.
const K: u32 = 3;
const TABLE: [u32; 4] = [10, 20, 30, 40];

fn inc(v: u32) -> u32 {
    v + 1
}

/// Locals computed from the lane's ids only (`t`, `r`, `p`, `bit`, `kk`, ...) are not kept but
/// computed again in each loop that reads them; these are the cases where that must not change
/// what they hold, or where they must be kept per lane after all: a local that shadows a
/// parameter another one reads, a parameter a uniform local shadows, a local whose uniform
/// operand the run shadows afterwards, a literal whose type a later use gives (u64: as an i32
/// `1 << 39` overflows), an item another block declares too, values read from memory (a shared
/// element another lane changes after the barrier, an input), a `mut` local, a uniform `mut`
/// local changed after the barrier, a call, and a lane that returns.
#[lanes]
fn lane_pure(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>, n: u32) {
    let t = ctx.local_id_x();
    let i = ctx.global_id_x();
    s.set(t, x[i]);
    ctx.barrier();
    let active = t < 12;
    let r = if active { t } else { 11 };
    let p = t as u32 + n; // the parameter `n`
    let n = n * 2; // a uniform `n`
    let q = t as u32 + n; // that one
    let u = n + 1;
    let w = t as u32 * u;
    let u = 5u32; // `w`'s `u` is not this one
    let bit = 1 << (t % 40);
    let kk = t as u32 + K;
    let read = s.get(t); // memory: kept
    let input = x[i];
    let mut m = t as u32;
    m += 1;
    let mm = m * 2; // from a `mut` local: kept
    let mut base = 10u32;
    let e = base + t as u32; // from a uniform `mut` local changed below: kept
    let called = inc(t as u32);
    let n2 = t as u32 + n;
    let n = t as u32 * 100; // shadows the uniform `n` that `n2` reads
    let g = ctx.group_id_x() as u32 * 3;
    let gl = g + t as u32; // `g`'s slot
    let (tx, gx) = (t as u32 * 2, (i < 20) as u32); // a tuple: each name its value
    let (ty, _) = (t as u32 + 1, 0); // kept
    let tr = &TABLE[t % 4]; // a reference (to a promoted constant)
    let odd = t & 1; // `&` of two values
    ctx.barrier();
    base += 1000;
    s.set((t + 1) % ctx.group_size_x(), 77); // every element `read` read changes
    ctx.barrier();
    let hi: u64 = bit;
    let mut acc = s.get(r) + p + q * 3 + w * 5 + u + kk * 7 + read + mm + e + called + n2 + n + base;
    if ctx.group_id_x() < 100 {
        const K: u32 = 1000;
        ctx.barrier();
        acc += kk * K + (hi >> 20) as u32 + input + gl * 100_000 + (tx + gx + ty) * 10_000_000;
    }
    let mut k = 0;
    while k < 2 {
        acc += r as u32 + *tr * 1000 + odd as u32 * 7; // in a loop of the run: taken opaquely
        k += 1;
    }
    if t == 5 {
        return;
    }
    y[i] = acc;
}

#[test]
fn lane_pure_locals_match() {
    let out = same(
        [3, 1, 1],
        [16, 1, 1],
        48,
        |c, x, y, s| lane_pure(c, x, y, s, 4),
        |w, x, y, s| lane_pure_lanes(w, x, y, s, 4),
    );
    let xs: Vec<u32> = (0..48u32).map(|i| i.wrapping_mul(2_654_435_761) % 1000).collect();
    // Workgroup 1, lane 2 (i = 18): s[r] = 77, p = 6, n = 8, q = 10, w = 2 * 9, u = 5, kk = 5,
    // read = x[18], mm = 6, e = 12, called = 3, n2 = 10, n = 200, base = 1010; then kk * 1000,
    // bit >> 20 = 0, input = x[18], gl = 3 + 2, tx = 4, gx = 1, ty = 3; r, TABLE[2] and t & 1
    // twice in a loop.
    let acc = 77 + 6 + 10 * 3 + 18 * 5 + 5 + 5 * 7 + xs[18] + 6 + 12 + 3 + 10 + 200 + 1010;
    assert_eq!(out[18], acc + 5 * 1000 + xs[18] + 5 * 100_000 + (4 + 1 + 3) * 10_000_000 + 2 * (2 + 30 * 1000));
    assert_eq!(out[16 + 5], 0, "lane 5 returned");
    // Lane 39 of a wider workgroup: bit = 1 << 39, which an i32 cannot hold (a u64 by `hi`).
    let wide = same(
        [1, 1, 1],
        [40, 1, 1],
        40,
        |c, x, y, s| lane_pure(c, x, y, s, 4),
        |w, x, y, s| lane_pure_lanes(w, x, y, s, 4),
    );
    assert!(wide[39] > 1 << 19, "{}", wide[39]);
}

/// Runs that are one `if t < bound { .. }` (`t` the lane's x id, `bound` uniform) loop only over
/// the lanes below the bound, in a 2-D workgroup: a bound half the row, one past it, zero, a
/// uniform `mut` one a loop halves, with a per-lane `mut` local changed and a `return` inside;
/// and conditions that look alike but must run every lane: `<=`, `&&`, the y id, a bound read
/// from memory, an `else`.
#[lanes]
fn bounded(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>, n: u32) {
    let t = ctx.local_id_x();
    let ty = ctx.local_id_y();
    let row = ty * ctx.group_size_x();
    let i = ctx.group_linear() * ctx.group_size_x() * ctx.group_size_y() + row + t;
    let half = ctx.group_size_x() / 2;
    let zero = n as usize - 4;
    let mut acc = x[i] % 100;
    s.set(row + t, acc);
    ctx.barrier();
    if t < half {
        acc += s.get(row + t + half);
    }
    ctx.barrier();
    if ctx.local_id_x() < 100 {
        acc += 1000;
    }
    ctx.barrier();
    if t < zero {
        acc += 1_000_000;
    }
    ctx.barrier();
    if t <= half {
        acc += 10_000;
    }
    ctx.barrier();
    if t < half && ty == 1 {
        acc += 100_000;
    }
    ctx.barrier();
    if ty < half {
        acc += 10_000_000;
    }
    ctx.barrier();
    if t < (x[i] % 8) as usize {
        acc += 300_000_000; // a bound per lane
    }
    ctx.barrier();
    if t < half {
        acc += 20_000_000;
    } else {
        acc += 40_000_000;
    }
    ctx.barrier();
    let mut stride = ctx.group_size_x() / 2;
    while stride > 0 {
        if t < stride {
            s.set(row + t, s.get(row + t) + s.get(row + t + stride));
        }
        ctx.barrier();
        stride /= 2;
    }
    if t < half {
        if t == 1 {
            return;
        }
        acc += s.get(row) * 1000;
    }
    y[i] = acc;
}

#[test]
fn a_run_bounded_by_the_lane_id_matches() {
    let out = same(
        [2, 1, 1],
        [8, 3, 1],
        48,
        |c, x, y, s| bounded(c, x, y, s, 4),
        |w, x, y, s| bounded_lanes(w, x, y, s, 4),
    );
    let xs: Vec<u32> = (0..48u32).map(|i| i.wrapping_mul(2_654_435_761) % 1000).collect();
    // Workgroup 1, row 1, lane 2 (i = 24 + 8 + 2): x % 100 plus the element half a row on, +1000,
    // +10_000 (2 <= 4), +100_000 (row 1), +10_000_000 (1 < 4), +20_000_000, and the row's sum.
    let row: u32 = (0..8).map(|k| xs[32 + k] % 100).sum();
    let per_lane = |i: usize, t: u32| if t < xs[i] % 8 { 300_000_000 } else { 0 };
    assert_eq!(out[34], xs[34] % 100 + xs[38] % 100 + 1000 + 10_000 + 100_000 + 30_000_000 + per_lane(34, 2) + row * 1000);
    assert_eq!(out[33], 0, "lane 1 returned: its output untouched");
    // Lane 4 of that row: not below half, but `4 <= 4`; the `else`.
    assert_eq!(out[36], xs[36] % 100 + 1000 + 10_000 + 10_000_000 + 40_000_000 + per_lane(36, 4));
}

// ------------------------------------------------------------------ subgroup shuffles

/// `same` for a kernel of the shape `NAME(ctx, x, y, s, n)`, `n` the input's length.
macro_rules! same_n {
    ($name:ident, $lanes:ident, $grid:expr, $threads:expr, $len:expr) => {
        same($grid, $threads, $len, |c, x, y, s| $name(c, x, y, s, $len), |w, x, y, s| $lanes(w, x, y, s, $len))
    };
}

/// warp_reduce's shape: a subgroup reduction by shuffles under a `while` the workgroup agrees on
/// (uniform: `subgroup_size` and a halved offset), lane 0 of each subgroup puts the sum in
/// shared memory, a barrier, every invocation adds them. Each invocation writes its own value
/// after the shuffles too: those of lanes whose source was past the subgroup's or the
/// workgroup's end (their own value then) are compared with the fibers', not only lane 0's.
#[lanes]
fn warp_sum(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>, n: usize) {
    // The linear local id, and the workgroup's size (1-D or 2-D workgroups).
    let (t, size) = (ctx.local_id_y() * ctx.group_size_x() + ctx.local_id_x(), ctx.group_size_x() * ctx.group_size_y());
    let i = ctx.group_linear() * size + t;
    let mut value = if i < n { x[i] } else { 0 };
    let lanes = ctx.subgroup_size();
    let mut offset = lanes / 2;
    while offset > 0 {
        value += ctx.subgroup_shuffle_down(value, offset as u32);
        offset /= 2;
    }
    if ctx.subgroup_invocation_id() == 0 {
        s.set(t / lanes, value);
    }
    ctx.barrier();
    let mut total = 0u32;
    let mut k = 0;
    while k < size.div_ceil(lanes) {
        total += s.get(k);
        k += 1;
    }
    if i < n {
        y[i] = total.wrapping_mul(100_000).wrapping_add(value);
    }
}

#[test]
fn a_subgroup_reduction_by_shuffles_matches() {
    let x: Vec<u32> = (0..200u32).map(|i| i.wrapping_mul(2_654_435_761) % 1000).collect();
    let out = same_n!(warp_sum, warp_sum_lanes, [4, 1, 1], [64, 1, 1], 200);
    assert_eq!(out[0] % 100_000, x[..32].iter().sum::<u32>(), "lane 0 holds its subgroup's sum");
    assert_eq!(out[0] / 100_000, x[..64].iter().sum::<u32>(), "the workgroup's sum");
    // Workgroups that end inside a subgroup (100 = 3 x 32 + 4), smaller than one (24), 2-D
    // (8 x 6: subgroups across rows), sizes no multiple of the workgroup.
    same_n!(warp_sum, warp_sum_lanes, [3, 1, 1], [100, 1, 1], 290);
    same_n!(warp_sum, warp_sum_lanes, [3, 1, 1], [24, 1, 1], 70);
    same_n!(warp_sum, warp_sum_lanes, [3, 1, 1], [8, 6, 1], 130);
    same_n!(warp_sum, warp_sum_lanes, [1, 1, 1], [256, 1, 1], 256);
}

/// Every supported shape: a `let` (with a type, `mut`), an assignment, a compound one; per-lane
/// deltas (a local of the shuffle's own run, one shadowing a kept uniform local there) and
/// constant ones (0, past the subgroup's end: `40`), shuffles one after another in a run, f32 and i32
/// values, a shuffle in a uniform `if` and in an `else` branch, in a `while` the lanes vote on
/// (a value read from memory), and shared memory written before a shuffle and read after it (the
/// shuffle is a barrier on the host: no race, on fibers or as lanes).
#[lanes]
fn shuffle_shapes(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>, n: usize) {
    // The linear local id, and the workgroup's size (1-D or 2-D workgroups).
    let (t, size) = (ctx.local_id_y() * ctx.group_size_x() + ctx.local_id_x(), ctx.group_size_x() * ctx.group_size_y());
    let i = ctx.group_linear() * size + t;
    let v = if i < n { x[i] } else { 7 };
    s.set(t, v);
    let step = 2u32; // uniform, kept
    let d = (t % 3) as u32; // the run's own, per lane
    let e = ctx.subgroup_shuffle_down(v + 5, d);
    let a = ctx.subgroup_shuffle_down(v + 1, 1);
    let right = s.get((t + 1) % size);
    let mut b: u32 = ctx.subgroup_shuffle_down(a * 2, (t % 5) as u32);
    b = ctx.subgroup_shuffle_down(b, 0);
    b ^= ctx.subgroup_shuffle_down(b + right, 40);
    let f = ctx.subgroup_shuffle_down(v as f32 * 0.5, 3);
    let neg = ctx.subgroup_shuffle_down(-(v as i32), step);
    let step = (t % 4) as u32; // shadows the uniform one in this run: per lane
    let g = ctx.subgroup_shuffle_down(e, step);
    let mut c = 0u32;
    if size > 40 {
        c += ctx.subgroup_shuffle_down(b, 16);
    } else if size > 20 {
        c = ctx.subgroup_shuffle_down(a, 8)
    } else {
        c = ctx.subgroup_shuffle_down(a, 1);
    }
    let mut rounds = s.get(0) % 3; // the same in every lane, not provably: voted
    ctx.barrier();
    while rounds < 4 {
        c = c.wrapping_mul(3);
        let d = ctx.subgroup_shuffle_down(c, rounds);
        c = c.wrapping_add(d);
        rounds += 1;
    }
    if i < n {
        y[i] = a ^ b.rotate_left(7) ^ (f as u32).rotate_left(13) ^ (neg as u32).rotate_left(19) ^ c.rotate_left(3) ^ g.rotate_left(23);
    }
}

#[test]
fn every_shuffle_shape_matches() {
    same_n!(shuffle_shapes, shuffle_shapes_lanes, [3, 1, 1], [64, 1, 1], 190);
    same_n!(shuffle_shapes, shuffle_shapes_lanes, [3, 1, 1], [36, 1, 1], 100);
    same_n!(shuffle_shapes, shuffle_shapes_lanes, [2, 1, 1], [12, 1, 1], 20);
    same_n!(shuffle_shapes, shuffle_shapes_lanes, [2, 1, 1], [16, 3, 1], 90);
}

/// Some invocations return before a shuffle (inactive lanes): on the host every invocation of the
/// workgroup must reach it, so it is a barrier divergence at the shuffle, as on fibers.
#[lanes]
fn shuffle_after_return(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let t = ctx.local_id_x();
    let v = x[ctx.global_id_x()];
    s.set(t, v);
    ctx.barrier();
    if ctx.group_id_x() == 1 && t >= 40 {
        return;
    }
    let w = ctx.subgroup_shuffle_down(v, 1); // DIVERGES
    y[ctx.global_id_x()] = w;
}

#[test]
fn a_return_before_a_shuffle_is_a_divergence_there() {
    let x: Vec<u32> = (0..192).collect();
    let line = 1 + include_str!("lanes.rs").lines().position(|l| l.ends_with("// DIVERGES")).unwrap() as u64;
    let mut found = Vec::new();
    for lanes in [false, true] {
        let mut y = vec![0u32; 192];
        let g = Grid::with_workers([3, 1, 1], [64, 1, 1], 1);
        let (xb, yb) = (g.input(&x), g.output(&mut y));
        let findings = if lanes {
            g.check_lanes(|wg| {
                let s = wg.shared::<u32, S>();
                shuffle_after_return_lanes(wg, xb, yb, s)
            })
        } else {
            g.check(|ctx| {
                let s = ctx.shared::<u32, S>();
                shuffle_after_return(ctx, xb, yb, s)
            })
        };
        assert_eq!(findings.kinds(), ["barrier-divergence"], "{findings:?}");
        let f = &findings.items[0];
        assert!(f.file.ends_with("lanes.rs") && f.line == line, "lanes {lanes}: {f}");
        assert!(f.message.contains("workgroup (1, 0, 0)"), "lanes {lanes}: {f}");
        // The workgroups before and after the divergent one are whole.
        for g in [0usize, 2] {
            let want: Vec<u32> = (0..64).map(|t| if t % 32 < 31 { (g * 64 + t + 1) as u32 } else { (g * 64 + t) as u32 }).collect();
            assert_eq!(y[g * 64..(g + 1) * 64], want[..], "lanes {lanes}: workgroup {g}");
        }
        found.push((f.column, f.message.clone()));
    }
    assert_eq!(found[0], found[1], "fibers (first) and lanes (second) report the same divergence");
}

// ------------------------------------------------------------------ shuffles, adversarial review

/// `same_n` for a kernel of the shape `NAME(ctx, x, y, s, n, sz)`, `sz` the workgroup's size along z.
macro_rules! same_nz {
    ($name:ident, $lanes:ident, $grid:expr, $threads:expr, $len:expr) => {{
        let sz = $threads[2] as usize;
        same($grid, $threads, $len, |c, x, y, s| $name(c, x, y, s, $len, sz), |w, x, y, s| $lanes(w, x, y, s, $len, sz))
    }};
}

/// The shuffle's operands with effects and odd values: a value and a delta that change a per-lane
/// local and write shared memory, `x op=` whose value changes `x` first, a delta from a local
/// assigned earlier in the run, the shuffle's own name shadowed in its value, deltas of
/// `u32::MAX`, `1 << 31`, 31, 32 and past the workgroup's end, `<<=`, `let _`, a NaN's payload
/// and -0.0, a labeled block and an `if` as the value, a whole workgroup returning inside the
/// value (no divergence: none is left), `assert!` / `debug_assert!` around shuffles. Linear ids
/// of 1-D, 2-D and 3-D workgroups (x fastest, as the fibers' subgroups).
#[lanes]
fn shuffle_effects(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>, n: usize, sz: usize) {
    let (sx, sy) = (ctx.group_size_x(), ctx.group_size_y());
    let size = sx * sy * sz; // `Ctx` has no group_size_z
    let t = (ctx.local_id_z() * sy + ctx.local_id_y()) * sx + ctx.local_id_x();
    let i = ctx.group_linear() * size + t;
    let v = if i < n { x[i] } else { 3 };
    let mut k = v % 7;
    let a = ctx.subgroup_shuffle_down(
        {
            k += 1;
            s.set(t, k * 3);
            k * 10 + v
        },
        {
            k += 2;
            k % 4
        },
    );
    let mut w = v;
    w += ctx.subgroup_shuffle_down(
        {
            w *= 2;
            w
        },
        1,
    );
    let mut z = v;
    z = z.wrapping_mul(3);
    let d = z % 5;
    debug_assert!(d < 5);
    z ^= ctx.subgroup_shuffle_down(z, d);
    assert!(z != u32::MAX, "z {z}");
    let v2 = v;
    let v2 = ctx.subgroup_shuffle_down(v2 + 1, 2);
    let big = ctx.subgroup_shuffle_down(v, u32::MAX);
    let big2 = ctx.subgroup_shuffle_down(v, 1 << 31);
    let last = ctx.subgroup_shuffle_down(v + k, 31);
    let whole = ctx.subgroup_shuffle_down(v, 32);
    let past = ctx.subgroup_shuffle_down(v * 3, (size - t) as u32);
    let mut sh = 1u32 + t as u32 % 3;
    sh <<= ctx.subgroup_shuffle_down(t as u32 % 4, 1);
    let _ = ctx.subgroup_shuffle_down(v, 1);
    let nan: f32 = ctx.subgroup_shuffle_down(f32::from_bits(0x7fc0_0000 | (v & 0xffff)), 3);
    let negz = ctx.subgroup_shuffle_down(if v % 2 == 0 { -0.0f32 } else { v as f32 }, 1);
    let lab = ctx.subgroup_shuffle_down(
        'b: {
            if v % 3 == 0 {
                break 'b 1u32;
            }
            2
        },
        1,
    );
    let r = s.get((t + 1) % size); // the neighbour's element, written before the shuffle's barrier
    let q = ctx.subgroup_shuffle_down(
        if ctx.group_id_x() == 1 {
            return;
        } else {
            v + r
        },
        4,
    );
    assert!(q < 1 << 30);
    if i < n {
        y[i] = a ^ w.rotate_left(3) ^ z.rotate_left(5) ^ v2.rotate_left(7) ^ big.rotate_left(9) ^ big2.rotate_left(11)
            ^ last.rotate_left(13)
            ^ whole.rotate_left(15)
            ^ past.rotate_left(17)
            ^ sh.rotate_left(19)
            ^ nan.to_bits().rotate_left(21)
            ^ negz.to_bits()
            ^ lab.rotate_left(23)
            ^ q.rotate_left(25)
            ^ k.rotate_left(27);
    }
}

#[test]
fn shuffles_with_effects_and_odd_deltas_match() {
    let out = same_nz!(shuffle_effects, shuffle_effects_lanes, [3, 1, 1], [64, 1, 1], 190);
    assert!(out[64..128].iter().all(|&v| v == 0), "workgroup 1 returned before writing");
    assert!(out[..64].iter().any(|&v| v != 0));
    same_nz!(shuffle_effects, shuffle_effects_lanes, [3, 1, 1], [40, 1, 1], 110);
    // 2-D and 3-D workgroups, some no multiple of 32: subgroups across rows and planes.
    same_nz!(shuffle_effects, shuffle_effects_lanes, [3, 1, 1], [8, 6, 1], 130);
    same_nz!(shuffle_effects, shuffle_effects_lanes, [3, 1, 1], [5, 3, 2], 80);
    same_nz!(shuffle_effects, shuffle_effects_lanes, [2, 1, 1], [4, 4, 4], 128);
    same_nz!(shuffle_effects, shuffle_effects_lanes, [3, 1, 1], [7, 3, 3], 170);
    same_nz!(shuffle_effects, shuffle_effects_lanes, [2, 1, 1], [8, 8, 4], 500);
    // One invocation (every source past the end), and one past a subgroup.
    same_nz!(shuffle_effects, shuffle_effects_lanes, [3, 1, 1], [1, 1, 1], 3);
    same_nz!(shuffle_effects, shuffle_effects_lanes, [3, 1, 1], [33, 1, 1], 99);
}

/// Shuffles and uniform locals: a uniform `mut` local, a kept uniform local shadowed, and one
/// assigned in a uniform `if`, each from a shuffle (per lane from then on: a copy that kept one
/// value would give every lane the last lane's); a local set from a shuffle of a uniform value
/// (the same in every lane, not provably) in the condition of a `while` (voted) whose body
/// shuffles it again and halves a uniform offset; a uniform `if` around a voted `while` around a
/// uniform `if` with a shuffle; a uniform `let` after a shuffle in its run; a `mut` local halved
/// in a shuffle's delta, the condition of the `while` around it.
#[lanes]
fn shuffle_uniforms(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>, n: usize, sz: usize) {
    let (sx, sy) = (ctx.group_size_x(), ctx.group_size_y());
    let size = sx * sy * sz; // `Ctx` has no group_size_z
    let t = (ctx.local_id_z() * sy + ctx.local_id_y()) * sx + ctx.local_id_x();
    let i = ctx.group_linear() * size + t;
    let v = if i < n { x[i] } else { 5 };
    s.set(t, v);
    let g = ctx.group_id_x() as u32;
    let mut u = g + 1;
    let mut off = ctx.subgroup_size() as u32 / 2;
    let w = g * 3;
    ctx.barrier();
    u += ctx.subgroup_shuffle_down(t as u32 + v, 1);
    let w = ctx.subgroup_shuffle_down(w + t as u32, off);
    let h = g * 2 + 1;
    ctx.barrier();
    let mut m = 0u32;
    if g < 100 {
        m = ctx.subgroup_shuffle_down(u * 7, 3);
    }
    ctx.barrier();
    let mut c = g + 2;
    c = ctx.subgroup_shuffle_down(c, 5);
    let mut acc = v;
    while c > g {
        off /= 2;
        c = ctx.subgroup_shuffle_down(c, off + 1);
        c -= 1;
        acc += ctx.subgroup_shuffle_down(acc, off);
    }
    let mut rounds = s.get(0) % 3 + 1; // the same in every lane, not provably: voted
    if size > 8 {
        while rounds > 0 {
            if off < 100 {
                m ^= ctx.subgroup_shuffle_down(m + rounds, rounds);
            }
            rounds -= 1;
        }
    }
    // A uniform-looking offset changed in a shuffle's delta (each lane's own from then on).
    let mut o2 = ctx.subgroup_size() as u32;
    while o2 > 1 {
        acc ^= ctx.subgroup_shuffle_down(
            acc.rotate_left(1),
            {
                o2 = o2 / 2 + t as u32 / 4096; // + 0, not provably
                o2
            },
        );
    }
    ctx.barrier();
    if i < n {
        y[i] = o2 ^ u ^ w.rotate_left(4) ^ m.rotate_left(8) ^ acc.rotate_left(12) ^ c.rotate_left(16) ^ off.rotate_left(20) ^ h.rotate_left(24);
    }
}

#[test]
fn shuffles_and_uniform_locals_match() {
    let out = same_nz!(shuffle_uniforms, shuffle_uniforms_lanes, [3, 1, 1], [64, 1, 1], 190);
    // `u` per lane: lanes of a workgroup differ (a uniform `u` would be one value).
    assert!(out[..64].windows(2).any(|p| p[0] != p[1]));
    same_nz!(shuffle_uniforms, shuffle_uniforms_lanes, [3, 1, 1], [24, 1, 1], 70);
    same_nz!(shuffle_uniforms, shuffle_uniforms_lanes, [3, 1, 1], [6, 5, 3], 250);
    same_nz!(shuffle_uniforms, shuffle_uniforms_lanes, [2, 1, 1], [4, 2, 4], 60);
}

/// The findings of a faulty body on fibers and as lanes (each kind, line, column and message),
/// asserted equal. A divergence's message up to its `;`: where lanes split at a vote, the copy
/// words the lanes outside as "returned without reaching it" where fibers name the barrier they
/// wait at later (`Vote::diverged`; the same for a barrier as for a shuffle).
#[track_caller]
fn same_findings(
    threads: [u32; 3],
    fibers: impl Fn(Ctx, In<u32>, Out<u32>, Shared<u32, S>) + Sync,
    lanes: impl Fn(&Lanes, In<u32>, Out<u32>, Shared<u32, S>) + Sync,
) -> Vec<(String, u64, u64, String)> {
    let x: Vec<u32> = (0..192).collect();
    let mut found = Vec::new();
    for on_lanes in [false, true] {
        let mut y = vec![0u32; 192];
        let g = Grid::with_workers([3, 1, 1], threads, 1);
        let (xb, yb) = (g.input(&x), g.output(&mut y));
        let findings = if on_lanes {
            g.check_lanes(|wg| {
                let s = wg.shared::<u32, S>();
                lanes(wg, xb, yb, s)
            })
        } else {
            g.check(|ctx| {
                let s = ctx.shared::<u32, S>();
                fibers(ctx, xb, yb, s)
            })
        };
        let items: Vec<_> = findings
            .items
            .iter()
            .map(|f| {
                let message = if f.kind == "barrier-divergence" { f.message.split(';').next().unwrap() } else { &f.message };
                // Less the shared array's declaration: each run's closure above declares it.
                let message = match (message.find(" (declared at "), message.find(")[")) {
                    (Some(a), Some(b)) if a < b => format!("{}{}", &message[..a], &message[b + 1..]),
                    _ => message.to_string(),
                };
                (f.kind.clone(), f.line, f.column, message)
            })
            .collect();
        found.push((items, y));
    }
    assert_eq!(found[0].0, found[1].0, "findings: fibers (left) and lanes (right) differ");
    found.swap_remove(0).0
}

/// The line of this file ending with `marker`.
fn line_of(marker: &str) -> u64 {
    1 + include_str!("lanes.rs").lines().position(|l| l.ends_with(marker)).unwrap() as u64
}

/// A per-lane `if` around a shuffle that the lanes of workgroup 1 disagree on.
#[lanes]
fn shuffle_in_split_if(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let t = ctx.local_id_x();
    let mut v = x[ctx.global_id_x()];
    s.set(t, v);
    if ctx.group_id_x() != 1 || t < 40 {
        v = ctx.subgroup_shuffle_down(v, 1); // SPLIT_IF
    }
    ctx.barrier();
    y[ctx.global_id_x()] = v + s.get(0);
}

/// A `while` whose condition reads a shuffled value, on which the lanes come to disagree.
#[lanes]
fn shuffle_in_split_while(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let t = ctx.local_id_x();
    let mut c = x[ctx.global_id_x()] % 4;
    s.set(t, c);
    // `k` bounds the fibers' loop: after the divergence the invocations still in it read their
    // source's stale value (it left), and would loop for ever.
    let mut k = 0;
    while c < 6 && k < 10 {
        c = ctx.subgroup_shuffle_down(c, 1); // SPLIT_WHILE
        c += 1;
        k += 1;
    }
    y[ctx.global_id_x()] = c + ignore(s.get(t));
}

/// A shuffle whose value reads the neighbour's shared element, written before the same barrier
/// (a race; unwritten when read), and whose delta reads past the input's end (out of bounds).
#[lanes]
fn shuffle_operand_faults(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let t = ctx.local_id_x();
    let i = ctx.global_id_x();
    s.set(t, x[i]);
    let a = ctx.subgroup_shuffle_down(s.get((t + 1) % ctx.group_size_x()), if i == 70 { x[i + 1000] } else { 1 }); // FAULTS
    y[i] = a;
}

#[test]
fn faults_at_a_shuffle_are_found_alike_on_fibers_and_lanes() {
    let f = same_findings([64, 1, 1], shuffle_in_split_if, shuffle_in_split_if_lanes);
    assert_eq!(f.iter().map(|f| (f.0.as_str(), f.1)).collect::<Vec<_>>(), [("barrier-divergence", line_of("// SPLIT_IF"))], "{f:?}");
    let f = same_findings([64, 1, 1], shuffle_in_split_while, shuffle_in_split_while_lanes);
    assert_eq!(f.iter().map(|f| (f.0.as_str(), f.1)).collect::<Vec<_>>(), [("barrier-divergence", line_of("// SPLIT_WHILE"))], "{f:?}");
    let f = same_findings([64, 1, 1], shuffle_operand_faults, shuffle_operand_faults_lanes);
    let mut kinds: Vec<&str> = f.iter().map(|f| f.0.as_str()).collect();
    kinds.sort();
    kinds.dedup();
    assert_eq!(kinds, ["out-of-bounds", "shared-race", "uninitialized-read"], "{f:?}");
    let at = line_of("// FAULTS");
    assert!(f.iter().any(|f| f.0 == "out-of-bounds" && f.1 == at) && f.iter().any(|f| f.0 == "shared-race" && f.1 == at), "{f:?}");
}

/// Some lanes return inside a uniform `while`, after its shuffle: the next round's shuffle is the
/// divergence.
#[lanes]
fn shuffle_return_in_loop(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let t = ctx.local_id_x();
    let mut v = x[ctx.global_id_x()];
    s.set(t, v);
    let mut off = ctx.subgroup_size() as u32 / 2;
    while off > 0 {
        v += ctx.subgroup_shuffle_down(v, off); // LOOP_RETURN
        if ctx.group_id_x() == 2 && t % 7 == 3 {
            return;
        }
        off /= 2;
    }
    y[ctx.global_id_x()] = v + ignore(s.get(t));
}

/// Lanes that disagree on an `if` with a shuffle in each branch (two different exchanges).
#[lanes]
fn shuffle_in_both_branches(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let t = ctx.local_id_x();
    let mut v = x[ctx.global_id_x()];
    s.set(t, v);
    if t % 32 < 16 {
        v = ctx.subgroup_shuffle_down(v, 1); // BOTH_THEN
    } else {
        v = ctx.subgroup_shuffle_down(v, 2);
    }
    y[ctx.global_id_x()] = v + ignore(s.get(t));
}

#[test]
fn divergences_around_shuffles_in_loops_and_branches_match() {
    let f = same_findings([64, 1, 1], shuffle_return_in_loop, shuffle_return_in_loop_lanes);
    assert_eq!(f.iter().map(|f| (f.0.as_str(), f.1)).collect::<Vec<_>>(), [("barrier-divergence", line_of("// LOOP_RETURN"))], "{f:?}");
    assert!(f[0].3.contains("workgroup (2, 0, 0)"), "{f:?}");
    let f = same_findings([64, 1, 1], shuffle_in_both_branches, shuffle_in_both_branches_lanes);
    assert_eq!(f.iter().map(|f| (f.0.as_str(), f.1)).collect::<Vec<_>>(), [("barrier-divergence", line_of("// BOTH_THEN"))], "{f:?}");
}

// ------------------------------------------------------------------ adversarial: lane-pure locals, bounded runs

/// `v` + 1000 where `v` is one of the lanes' names: a macro given lane-pure and kept names inside
/// expressions, or a lone name the next barrier's side does not read (`rebind!(w, ..)`), is
/// taken (a lone name read after the barrier is refused: `lanes_builds.rs`).
macro_rules! plus_thousand {
    ($v:expr) => {
        $v + 1000
    };
}

/// Statement macros after a barrier given names read after the next one, inside expressions
/// (`debug_assert!`, a macro of the crate's that only reads), and a macro binding a lone name
/// that nothing after the run reads.
#[lanes]
fn macro_reads(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let t = ctx.local_id_x();
    let v = t as u32 + 1;
    let mut kept = x[ctx.global_id_x()] % 100;
    s.set(t, kept);
    ctx.barrier();
    debug_assert!(v > 0, "{v} {t}");
    let _ = plus_thousand!(v + t as u32);
    kept = plus_thousand!(kept);
    rebind!(w, v * 3);
    s.set(t, s.get(t) + w);
    ctx.barrier();
    y[ctx.global_id_x()] = v * 10_000 + kept + s.get(t);
}

#[test]
fn macros_reading_names_across_a_barrier_match() {
    same!(macro_reads, macro_reads_lanes, [2, 1, 1], [8, 1, 1], 16);
}

/// Lane-pure locals whose operands change meaning between the `let` and a later run: a `mut`
/// parameter reassigned (each invocation's own), a uniform `mut` local changed after the `let`, a
/// uniform local of a `while` that the next round binds again, a parameter shadowed after the
/// barrier (by a `let`, a `for`'s pattern, a closure's parameter, a `match` arm), and floats
/// (NaN, -0.0, infinities: their bits compared).
#[lanes]
fn changing_operands(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>, mut n: u32, m: u32) {
    let t = ctx.local_id_x();
    let i = ctx.global_id_x();
    let p = t as u32 + n; // `n`: this invocation's own, changed below
    n += t as u32;
    let mut k = m * 2;
    let q = t as u32 + k; // `k` changed after the barrier: kept
    let r = t as u32 + m; // the parameter `m`, shadowed below
    let f = (t as f32 - 2.0) * -0.0;
    let nan = 0.0f32 / (t as f32 - 1.0);
    let big = (t as f32 + 1.0) * f32::MAX;
    s.set(t, x[i]);
    ctx.barrier();
    k += 3;
    let m = t as u32 * 1000;
    let mut acc = p + q * 3 + r * 7 + n * 11 + k + m;
    for m in 0..2u32 {
        acc += r * m;
    }
    let add = |m: u32| m + r;
    acc += add(5);
    match t % 2 {
        m => acc += r * m as u32,
    }
    let mut round = 0u32;
    let mut total = 0u32;
    while round < 3 {
        let w = round * 100 + m / 1000; // a uniform-looking local per round (`m` per lane here)
        let u = round * 100; // uniform, bound again each round
        let z = t as u32 + u; // lane-pure, from this round's `u`
        ctx.barrier();
        total += z + w;
        round += 1;
    }
    ctx.barrier();
    y[i] = acc.wrapping_add(total).wrapping_add(f.to_bits()).wrapping_add(nan.to_bits()).wrapping_add(big.to_bits()) ^ s.get(t);
}

#[test]
fn lane_pure_locals_with_changing_operands_match() {
    same(
        [3, 1, 1],
        [8, 1, 1],
        24,
        |c, x, y, s| changing_operands(c, x, y, s, 4, 9),
        |w, x, y, s| changing_operands_lanes(w, x, y, s, 4, 9),
    );
}

/// Runs of one `if t < bound` where `t` is not simply the x id, or the bound is not what it was
/// when the run began: `t` shadowed by the y id (2-D), by `t + 1`, by a `mut` copy, by a tuple's
/// second name; the bound a uniform `mut` local changed in the if's block (per lane then), one a
/// `while` doubles, one with a method, one past the row; a 3-D workgroup and a grid whose last
/// workgroup is partly past the data.
#[lanes]
fn bounds(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>, n: u32, size: usize) {
    let t = ctx.local_id_x();
    let lin = (ctx.local_id_z() * ctx.group_size_y() + ctx.local_id_y()) * ctx.group_size_x() + t;
    let i = ctx.group_linear() * size + lin;
    let mut acc = if i < n as usize { x[i] % 100 } else { 0 };
    s.set(lin, acc);
    let mut lim = ctx.group_size_x() / 2;
    ctx.barrier();
    if ctx.group_size_y() > 0 {
        let t = ctx.local_id_y();
        ctx.barrier();
        if t < 1 {
            acc += 1000;
        }
        ctx.barrier();
    }
    let t = t + 1;
    ctx.barrier();
    if t < 2 {
        acc += 10_000;
    }
    ctx.barrier();
    let mut tm = ctx.local_id_x();
    ctx.barrier();
    if tm < 2 {
        acc += 100_000;
        tm += 1;
    }
    ctx.barrier();
    let (a, t) = (ctx.local_id_x(), ctx.local_id_y());
    ctx.barrier();
    if t < 1 {
        acc += 1_000_000 + a as u32;
    }
    ctx.barrier();
    let t = a;
    if t < lim {
        lim += 1;
        acc += 10_000_000;
    }
    ctx.barrier();
    let mut b = 1;
    while b < ctx.group_size_x() {
        if t < b {
            acc += 3;
        }
        ctx.barrier();
        b *= 2;
    }
    if t < lim.min(ctx.group_size_x() - 1) {
        acc += 100_000_000;
    }
    ctx.barrier();
    if t < ctx.group_size_x() * 4 {
        acc += s.get(lin) % 7 + tm as u32 * 1_000_000_000;
    }
    if i < n as usize {
        y[i] = acc;
    }
}

#[test]
fn runs_bounded_by_something_else_than_the_x_id_match() {
    for (grid, threads, n) in [([3, 1, 1], [5, 2, 1], 26u32), ([2, 1, 1], [3, 2, 2], 20), ([2, 2, 1], [4, 3, 1], 45)] {
        same(
            grid,
            threads,
            n as usize,
            |c, x, y, s| bounds(c, x, y, s, n, (threads[0] * threads[1] * threads[2]) as usize),
            |w, x, y, s| bounds_lanes(w, x, y, s, n, (threads[0] * threads[1] * threads[2]) as usize),
        );
    }
}

/// A lane-pure local (per lane: it follows a `return` in its run) that panics (a division by
/// zero) in the workgroup that returned as a whole before it: fibers never compute it there; the
/// copy must not compute it again for those lanes in the loops after the barrier. And one that
/// overflows a `u8` past lane 8 only, in a workgroup of 8.
#[lanes]
fn overflow_after_return(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let t = ctx.local_id_x();
    s.set(t, x[ctx.global_id_x()]);
    if ctx.group_id_x() == 1 {
        return;
    }
    let d = 200u8 + t as u8 + 10 / (1 - ctx.group_id_x() as u8);
    let e = (t as u8).wrapping_sub(2).wrapping_mul(40);
    let f = t as u8 * 30; // 240 at lane 7
    ctx.barrier();
    y[ctx.global_id_x()] = d as u32 + e as u32 * 1000 + f as u32 * 1_000_000 + s.get(t) % 10;
}

#[test]
fn a_lane_pure_local_after_a_return_matches() {
    same!(overflow_after_return, overflow_after_return_lanes, [2, 1, 1], [8, 1, 1], 16);
}

/// Shared arrays asked for by some invocations only, a different set in each workgroup, in
/// barrier-free workgroups one after the other on one worker (no barrier, no return: the
/// workgroup state is not marked dirty, and `Group::begin` resets only the slots of those that
/// asked): an invocation left at its second array from an earlier workgroup would take the 16-word
/// array's slot for the 8-word one (a panic: "declared with different sizes"), or another array.
/// Then the same through a lanes copy between fibers' launches on one grid shape.
#[test]
fn shared_arrays_asked_by_some_invocations_only_are_theirs() {
    let groups = 7u32;
    for pass in 0..2 {
        let mut y = vec![0u32; groups as usize * 8];
        let g = Grid::with_workers([groups, 1, 1], [8, 1, 1], 1);
        let yb = g.output(&mut y);
        let body = |ctx: Ctx| {
            let (t, gid) = (ctx.local_id_x(), ctx.group_id_x());
            let mut yb = yb;
            if (t + gid * (pass + 1)) % 3 == 0 {
                let mut a = ctx.shared::<u32, 8>();
                let mut b = ctx.shared::<u32, 16>();
                a.set(t, (t + gid) as u32);
                b.set(t + 8, 2 * (t + gid) as u32);
                yb[ctx.global_id_x()] = a.get(t) * 1000 + b.get(t + 8);
            } else {
                yb[ctx.global_id_x()] = 7;
            }
        };
        g.run(body);
        for (i, v) in y.iter().enumerate() {
            let (t, gid) = (i % 8, i / 8);
            let expect = if (t + gid * (pass + 1)) % 3 == 0 { (t + gid) as u32 * 1002 } else { 7 };
            assert_eq!(*v, expect, "pass {pass}, workgroup {gid}, invocation {t}");
        }
    }
}

/// A lane-pure local that divides by a value zero in workgroup 2 only, read after two barriers:
/// workgroups 0 and 1 write their outputs, and the run stops at workgroup 2 with the fibers'
/// panic, before any later loop computes the local again (the outputs as the fibers left them).
#[lanes]
fn divide(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let t = ctx.local_id_x();
    s.set(t, x[ctx.global_id_x()]);
    ctx.barrier();
    let q = (t + 10) / (2 - ctx.group_id_x());
    let r = (t as u8).wrapping_mul(100) as u32 + q as u32;
    ctx.barrier();
    s.set(t, s.get(t) + r);
    ctx.barrier();
    y[ctx.global_id_x()] = s.get(t) + q as u32 * 1000 + r;
}

#[test]
fn a_lane_pure_division_by_zero_stops_where_fibers_stop() {
    let x: Vec<u32> = (0..32).collect();
    let stop = |lanes: bool| {
        let mut y = vec![0u32; 32];
        let g = Grid::with_workers([4, 1, 1], [8, 1, 1], 1);
        let (xb, yb) = (g.input(&x), g.output(&mut y));
        let stopped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            if lanes {
                g.run_lanes(|wg| divide_lanes(wg, xb, yb, wg.shared::<u32, S>()))
            } else {
                g.run(|ctx| divide(ctx, xb, yb, ctx.shared::<u32, S>()))
            }
        }));
        let payload = stopped.expect_err("workgroup 2 divides by zero");
        let message = payload.downcast_ref::<&str>().map(|m| m.to_string()).or_else(|| payload.downcast_ref::<String>().cloned());
        (y, message.unwrap_or_default())
    };
    let (fibers, lanes) = (stop(false), stop(true));
    assert!(fibers.1.contains("divide by zero"), "{}", fibers.1);
    assert_eq!(fibers, lanes);
    assert!(fibers.0[..16].iter().all(|&v| v != 0) && fibers.0[16..].iter().all(|&v| v == 0), "{:?}", fibers.0);
}

/// A lane-pure local computed from the parameter `n`, read after a barrier inside a block that
/// declares an item of that name (`const n`, visible in the whole block, nearer than the
/// parameter): fibers computed `p` where `n` is the parameter; a loop of that block computing `p`
/// again must not take the block's `n`.
#[lanes]
fn param_item(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>, n: u32) {
    let t = ctx.local_id_x();
    let p = t as u32 + n; // the parameter
    s.set(t, x[ctx.global_id_x()]);
    ctx.barrier();
    if ctx.group_id_x() < 100 {
        #[allow(non_upper_case_globals)]
        const n: u32 = 1000;
        ctx.barrier();
        y[ctx.global_id_x()] = p * 10_000 + n + s.get(t) % 10;
    }
}

#[test]
fn a_parameter_an_inner_blocks_item_hides_matches() {
    let out = same(
        [2, 1, 1],
        [8, 1, 1],
        16,
        |c, x, y, s| param_item(c, x, y, s, 4),
        |w, x, y, s| param_item_lanes(w, x, y, s, 4),
    );
    assert_eq!(out[3] / 10_000, 3 + 4, "p = t + the parameter");
}

// ------------------------------------------------------------------ a uniform barrier-free `while`
// (`uniform_while` in the macro): run as a loop over its iterations with the lanes inside. The
// lanes' order then differs from the fibers' (each fiber runs to its barrier), which a ticket
// (a shared atomic's old value) shows: `ticket_*` kernels write each iteration's ticket, so a
// lowered loop's tickets go iteration by iteration, a loop left in its lane loop's go lane by lane,
// as on fibers.

/// Histogram's shape: zero shared bins, count `ITEMS` strided elements a lane with shared
/// atomics in a loop whose counter is uniform, add the bins to the output (integer counts:
/// whatever the order, fibers and lanes agree).
const ITEMS: usize = 3;
/// The elements `counted` counts (its input may be longer: the last workgroups' go past it).
const COUNTED: usize = 200;

#[lanes]
fn counted(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let tid = ctx.local_id_x();
    let threads = ctx.group_size_x();
    let mut b = tid;
    while b < S {
        s.set(b, 0);
        b += threads;
    }
    ctx.barrier();
    let base = ctx.group_linear() * threads * ITEMS;
    let mut k = 0;
    while k < ITEMS {
        let i = base + k * threads + tid;
        if i < COUNTED {
            s.atomic_add((x.get(i) % 16) as usize, 1);
        }
        k += 1;
    }
    ctx.barrier();
    if tid < 16 {
        y[ctx.group_linear() * 16 + tid] = s.get(tid);
    }
}

#[test]
fn a_uniform_loop_of_shared_atomics_matches() {
    let out = same!(counted, counted_lanes, [4, 1, 1], [64, 1, 1], 4 * 64 * ITEMS);
    let x: Vec<u32> = (0..(4 * 64 * ITEMS) as u32).map(|i| i.wrapping_mul(2_654_435_761) % 1000).collect();
    let mut first = [0u32; 16];
    for v in &x[..64 * ITEMS] {
        first[(v % 16) as usize] += 1;
    }
    assert_eq!(out[..16], first, "workgroup 0's counts");
    // Not a power of two; the last workgroup's elements partly past the input.
    same!(counted, counted_lanes, [3, 1, 1], [24, 1, 1], 3 * 24 * ITEMS);
}

/// Tickets of a uniform loop (the counter and the bound uniform, only uniform assignments). The
/// element's index in a local first: an index expression before `=` (`y[.. k ..] = ..`) counts
/// as a possible assignment to every name in it, which would make `k` per lane.
#[lanes]
fn ticket_uniform(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let tid = ctx.local_id_x();
    let threads = ctx.group_size_x();
    let base = ctx.group_linear() * threads * ITEMS;
    let _ = x;
    s.set(tid, 0);
    ctx.barrier();
    let mut k = 0;
    while k < ITEMS {
        let at = base + k * threads + tid;
        y[at] = s.atomic_add(0, 1);
        k += 1;
    }
}

/// `ticket_uniform` on lanes: the tickets of each workgroup, `ITEMS` a lane (one worker, so the
/// shared ticket restarts at 0 in each workgroup).
fn lanes_tickets(lanes: impl Fn(&Lanes, In<u32>, Out<u32>, Shared<u32, S>) + Sync, threads: u32) -> Vec<u32> {
    let len = 2 * threads as usize * ITEMS;
    let x = vec![0u32; len];
    let mut out = vec![u32::MAX; len];
    let g = Grid::with_workers([2, 1, 1], [threads, 1, 1], 1);
    let (xb, yb) = (g.input(&x), g.output(&mut out));
    g.run_lanes(|wg| {
        let s = wg.shared::<u32, S>();
        lanes(wg, xb, yb, s)
    });
    out
}

#[test]
fn a_uniform_loop_runs_its_iterations_over_the_lanes() {
    let threads = 8;
    let out = lanes_tickets(ticket_uniform_lanes, threads);
    // Element base + k * threads + tid got ticket k * threads + tid: iteration k's lanes in turn.
    let expect: Vec<u32> = (0..2).flat_map(|_| 0..threads * ITEMS as u32).collect();
    assert_eq!(out, expect);
    // On fibers each invocation runs its iterations in turn: a lowering the tickets tell apart.
    let len = out.len();
    let x = vec![0u32; len];
    let mut on_fibers = vec![u32::MAX; len];
    let g = Grid::with_workers([2, 1, 1], [threads, 1, 1], 1);
    let (xb, yb) = (g.input(&x), g.output(&mut on_fibers));
    g.run(|ctx| {
        let s = ctx.shared::<u32, S>();
        ticket_uniform(ctx, xb, yb, s)
    });
    let t = threads as usize;
    let lane_major: Vec<u32> = (0..len).map(|e| ((e % (t * ITEMS)) % t * ITEMS + (e % (t * ITEMS)) / t) as u32).collect();
    assert_eq!(on_fibers, lane_major);
}

/// A per-lane `break`, `continue`, `return`, bound, counter step or macro in a barrier-free loop:
/// not lowered (the lanes would run different iterations), so the tickets go lane by lane, as on
/// fibers; `same` checks each against fibers element for element.
#[lanes]
fn ticket_break(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let tid = ctx.local_id_x();
    let threads = ctx.group_size_x();
    let base = ctx.group_linear() * threads * ITEMS;
    let _ = x;
    s.set(tid, 0);
    ctx.barrier();
    let mut k = 0;
    while k < ITEMS {
        if tid % 3 == 1 && k == 1 {
            break;
        }
        let at = base + k * threads + tid;
        y[at] = s.atomic_add(0, 1) + 1;
        k += 1;
    }
}

#[lanes]
fn ticket_continue(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let tid = ctx.local_id_x();
    let threads = ctx.group_size_x();
    let base = ctx.group_linear() * threads * ITEMS;
    let _ = x;
    s.set(tid, 0);
    ctx.barrier();
    let mut k = 0;
    while k < ITEMS {
        k += 1;
        if tid % 2 == 0 {
            continue;
        }
        y[base + (k - 1) * threads + tid] = s.atomic_add(0, 1) + 1;
    }
}

#[lanes]
fn ticket_return(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let tid = ctx.local_id_x();
    let threads = ctx.group_size_x();
    let base = ctx.group_linear() * threads * ITEMS;
    let _ = x;
    s.set(tid, 0);
    ctx.barrier();
    let mut k = 0;
    while k < ITEMS {
        if tid == 2 && k == 1 {
            return;
        }
        let at = base + k * threads + tid;
        y[at] = s.atomic_add(0, 1) + 1;
        k += 1;
    }
}

#[lanes]
fn ticket_lane_bound(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let tid = ctx.local_id_x();
    let threads = ctx.group_size_x();
    let base = ctx.group_linear() * threads * ITEMS;
    let _ = x;
    s.set(tid, 0);
    ctx.barrier();
    let mut k = 0;
    let items = ITEMS - tid % 2;
    while k < items {
        let at = base + k * threads + tid;
        y[at] = s.atomic_add(0, 1) + 1;
        k += 1;
    }
}

#[lanes]
fn ticket_lane_step(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let tid = ctx.local_id_x();
    let threads = ctx.group_size_x();
    let base = ctx.group_linear() * threads * ITEMS;
    let _ = x;
    s.set(tid, 0);
    ctx.barrier();
    let mut k = 0;
    while k < ITEMS {
        let at = base + k * threads + tid;
        y[at] = s.atomic_add(0, 1) + 1;
        // Uniform in the first iteration only.
        k += 1 + tid % 2;
    }
}

macro_rules! stop_at {
    ($k:expr, $at:expr) => {
        if $k == $at {
            break;
        }
    };
}

#[lanes]
fn ticket_macro(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let tid = ctx.local_id_x();
    let threads = ctx.group_size_x();
    let base = ctx.group_linear() * threads * ITEMS;
    let _ = x;
    s.set(tid, 0);
    ctx.barrier();
    let mut k = 0;
    while k < ITEMS {
        stop_at!(k + tid % 2, 2);
        let at = base + k * threads + tid;
        y[at] = s.atomic_add(0, 1) + 1;
        k += 1;
    }
}

#[test]
fn per_lane_exits_bounds_and_steps_keep_the_fibers_order() {
    let len = 2 * 8 * ITEMS;
    let lane_major: Vec<u32> = same!(ticket_break, ticket_break_lanes, [2, 1, 1], [8, 1, 1], len);
    // Lane 0 (no break) got tickets 1, 2, 3 before lane 1 got any.
    assert_eq!([lane_major[0], lane_major[8], lane_major[16]], [1, 2, 3]);
    assert_eq!(lane_major[1], 4, "lane 1 after lane 0's three");
    assert_eq!(lane_major[9], 0, "lane 1 broke at k == 1");
    same!(ticket_continue, ticket_continue_lanes, [2, 1, 1], [8, 1, 1], len);
    same!(ticket_return, ticket_return_lanes, [2, 1, 1], [8, 1, 1], len);
    same!(ticket_lane_bound, ticket_lane_bound_lanes, [2, 1, 1], [8, 1, 1], len);
    same!(ticket_lane_step, ticket_lane_step_lanes, [2, 1, 1], [8, 1, 1], len);
    same!(ticket_macro, ticket_macro_lanes, [2, 1, 1], [8, 1, 1], len);
}

/// A uniform loop whose body changes a per-lane `mut` local bound in the run before it to a value
/// whose type the attribute cannot see (`tid as u32`: kept per lane it must be `Copy`): left in
/// its lane loop (a register), also the fibers' order.
#[lanes]
fn ticket_accumulator(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let tid = ctx.local_id_x();
    let threads = ctx.group_size_x();
    let base = ctx.group_linear() * threads * ITEMS;
    let _ = x;
    s.set(tid, 0);
    ctx.barrier();
    let mut acc = tid as u32;
    let mut k = 0;
    while k < ITEMS {
        acc = acc * 7 + s.atomic_add(0, 1);
        y[base + k * threads + tid] = acc;
        k += 1;
    }
}

#[test]
fn a_uniform_loop_with_a_per_lane_accumulator_keeps_the_fibers_order() {
    same!(ticket_accumulator, ticket_accumulator_lanes, [2, 1, 1], [8, 1, 1], 2 * 8 * ITEMS);
}

/// A uniform loop whose per-lane accumulator the split can keep: bound to a literal or with a
/// primitive type in the run before the loop (warp_reduce's `let mut value = 0.0;`), or kept
/// from before a barrier. Lowered: each iteration's lanes in turn, the accumulators in the
/// lanes' storage between iterations. Each element gets its iteration's ticket, and `acc`
/// (the sum of the lane's tickets and inputs, in its own order) goes to the element after the
/// loop's: the lanes' sums of the tickets the order gave them.
#[lanes]
fn ticket_sum(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let tid = ctx.local_id_x();
    let threads = ctx.group_size_x();
    let base = ctx.group_linear() * threads * (ITEMS + 3);
    let mut kept = x[base + tid]; // kept from before the barrier
    s.set(tid, 0);
    ctx.barrier();
    let mut acc = 0u32;
    let mut typed: u32 = tid as u32 * 2;
    let mut k = 0;
    while k < ITEMS {
        let ticket = s.atomic_add(0, 1);
        let at = base + k * threads + tid; // not in `y[..]`: that would make `k` per lane
        y[at] = ticket;
        acc += ticket;
        typed = typed * 3 + ticket;
        kept += ticket;
        k += 1;
    }
    y[base + ITEMS * threads + tid] = acc;
    y[base + (ITEMS + 1) * threads + tid] = typed;
    y[base + (ITEMS + 2) * threads + tid] = kept;
}

#[test]
fn a_uniform_loop_with_a_literal_or_typed_accumulator_runs_its_iterations_over_the_lanes() {
    let threads = 8u32;
    let t = threads as usize;
    let per_group = t * (ITEMS + 3);
    let len = 2 * per_group;
    let x: Vec<u32> = (0..len as u32).map(|i| i * 10).collect();
    let g = Grid::with_workers([2, 1, 1], [threads, 1, 1], 1);
    let mut lanes = vec![u32::MAX; len];
    let (xb, yb) = (g.input(&x), g.output(&mut lanes));
    g.run_lanes(|wg| {
        let s = wg.shared::<u32, S>();
        ticket_sum_lanes(wg, xb, yb, s)
    });
    let mut fibers = vec![u32::MAX; len];
    let g = Grid::with_workers([2, 1, 1], [threads, 1, 1], 1);
    let (xb, yb) = (g.input(&x), g.output(&mut fibers));
    g.run(|ctx| {
        let s = ctx.shared::<u32, S>();
        ticket_sum(ctx, xb, yb, s)
    });
    for group in 0..2 {
        let base = group * per_group;
        for lane in 0..t {
            // Each lane's sums are of the tickets it got, in its order, on fibers as on lanes.
            for (out, order) in [(&lanes, "lanes"), (&fibers, "fibers")] {
                let tickets: Vec<u32> = (0..ITEMS).map(|k| out[base + k * t + lane]).collect();
                assert_eq!(out[base + ITEMS * t + lane], tickets.iter().sum::<u32>(), "{order}: acc");
                let typed = tickets.iter().fold(lane as u32 * 2, |a, k| a * 3 + k);
                assert_eq!(out[base + (ITEMS + 1) * t + lane], typed, "{order}: typed");
                let kept = x[base + lane] + tickets.iter().sum::<u32>();
                assert_eq!(out[base + (ITEMS + 2) * t + lane], kept, "{order}: kept");
            }
            // As lanes, iteration k's lanes in turn: lane `lane` got tickets k * threads + lane;
            // on fibers each invocation its iterations in turn: lane * ITEMS + k.
            let lanes_got: Vec<u32> = (0..ITEMS).map(|k| lanes[base + k * t + lane]).collect();
            assert_eq!(lanes_got, (0..ITEMS).map(|k| (k * t + lane) as u32).collect::<Vec<_>>(), "workgroup {group}, lane {lane}");
            let fibers_got: Vec<u32> = (0..ITEMS).map(|k| fibers[base + k * t + lane]).collect();
            assert_eq!(fibers_got, (0..ITEMS).map(|k| (lane * ITEMS + k) as u32).collect::<Vec<_>>(), "fibers");
        }
    }
}

/// A uniform loop after a per-lane local of a type lanes cannot keep (not `Copy`): the split
/// would keep it per lane (a compile error), so the loop stays in its run's lane loop and this
/// compiles; the fibers' order.
#[lanes]
fn ticket_not_copy(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let tid = ctx.local_id_x();
    let threads = ctx.group_size_x();
    let base = ctx.group_linear() * threads * ITEMS;
    let _ = x;
    s.set(tid, 0);
    ctx.barrier();
    let w: Vec<u32> = (0..ITEMS as u32).map(|j| j * 100 + tid as u32).collect();
    let mut k = 0;
    while k < ITEMS {
        let at = base + k * threads + tid;
        y[at] = s.atomic_add(0, 1) + w[k];
        k += 1;
    }
}

#[test]
fn a_uniform_loop_after_a_local_lanes_cannot_keep_keeps_the_fibers_order() {
    same!(ticket_not_copy, ticket_not_copy_lanes, [2, 1, 1], [8, 1, 1], 2 * 8 * ITEMS);
}

/// A uniform loop after per-lane locals read from a memory handle parameter (scan_add's `let
/// offset = total.get(0);`): `h.get(i)` and `h[i]` are elements, `Copy`, so the split keeps them
/// per lane and the loop runs its iterations over the lanes (the tickets go iteration by
/// iteration), each lane reading its own values in every iteration.
#[lanes]
fn ticket_element(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let tid = ctx.local_id_x();
    let threads = ctx.group_size_x();
    let base = ctx.group_linear() * threads * ITEMS;
    s.set(tid, 0);
    ctx.barrier();
    let got = x.get(base + tid);
    let indexed = x[base + threads + tid];
    let mut k = 0;
    while k < ITEMS {
        let at = base + k * threads + tid;
        y[at] = s.atomic_add(0, 1) + got + indexed * 2;
        k += 1;
    }
}

/// A `Copy` value whose `get` gives a `Vec`.
#[derive(Clone, Copy)]
struct Rows(u32);
impl Rows {
    fn get(&self, i: usize) -> Vec<u32> {
        vec![self.0 + i as u32]
    }
}

/// `ticket_element` with the handle's name bound again in the body (`let x = Rows(..);`): the
/// `x.get(..)` after the barrier is that value's, a `Vec`, which kept per lane would not compile,
/// so the loop stays in its run's lane loop (the fibers' order) and the body compiles.
#[lanes]
fn ticket_element_rebound(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let tid = ctx.local_id_x();
    let threads = ctx.group_size_x();
    let base = ctx.group_linear() * threads * ITEMS;
    let x = Rows(x.get(base + tid));
    s.set(tid, 0);
    ctx.barrier();
    let got = x.get(1);
    let mut k = 0;
    while k < ITEMS {
        let at = base + k * threads + tid;
        y[at] = s.atomic_add(0, 1) + got[0];
        k += 1;
    }
}

/// Global-buffer faults in a copy's loops over the lanes, in a uniform loop with the lanes
/// inside, and after barriers: cpu-sim's checks find the lane running from the workgroup and
/// lane 0's word of the epoch (`sim::lanes_running`, set at the workgroup's start and at each
/// barrier, not by every lane), so each finding must name the invocations and lines the fibers'
/// run names, and the barriers must order what they order there (no race across one).
#[lanes]
fn global_faults(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let t = ctx.local_id_y() * ctx.group_size_x() + ctx.local_id_x();
    let g = ctx.group_id_x();
    let n = ctx.group_size_x() * ctx.group_size_y();
    y.set(g * n + t, x.get(g * n + t));
    s.set(t, 1);
    ctx.barrier();
    // A neighbour's element, written before the barrier: ordered, no race.
    let v = y.get(g * n + (t + 1) % n);
    if t == 3 || t == n - 2 {
        y.set(g * n + 1, v); // GLOBAL_RACE
    }
    // x has 192 elements.
    if g == 2 && t == n - 1 {
        y.set(g * n + t, x.get(192 + t + 1 - n)); // GLOBAL_OOB
    }
    ctx.barrier();
    // A uniform loop, the lanes inside: each element's accesses come in the fibers' order (the
    // lanes of a later round are higher).
    let mut k = 0;
    while k < 3 {
        if k == 0 && (t == 2 || t == 4) {
            y.set(g * n + 9, v); // IN_UNIFORM_LOOP
        }
        if k == 1 && t == 6 {
            y.atomic_add(g * n + 9, 1); // GLOBAL_ATOMIC
        }
        if k == 2 && t == 8 {
            let _ = y.get(g * n + 9); // GLOBAL_AFTER_ATOMIC
        }
        k += 1;
    }
    ctx.barrier();
    if t == 7 {
        y.set(0, v + s.get(t)); // ACROSS_GROUPS
    }
}

#[test]
fn a_uniform_loop_after_a_handle_element_runs_its_iterations_over_the_lanes() {
    let threads = 8u32;
    let t = threads as usize;
    let len = 2 * t * ITEMS;
    let x: Vec<u32> = (0..len as u32).map(|i| i * 1000).collect();
    let run = |lanes: bool| {
        let mut out = vec![u32::MAX; len];
        let g = Grid::with_workers([2, 1, 1], [threads, 1, 1], 1);
        let (xb, yb) = (g.input(&x), g.output(&mut out));
        if lanes {
            g.run_lanes(|wg| {
                let s = wg.shared::<u32, S>();
                ticket_element_lanes(wg, xb, yb, s)
            });
        } else {
            g.run(|ctx| {
                let s = ctx.shared::<u32, S>();
                ticket_element(ctx, xb, yb, s)
            });
        }
        out
    };
    let (lanes, fibers) = (run(true), run(false));
    for group in 0..2 {
        let base = group * t * ITEMS;
        for lane in 0..t {
            let values = x[base + lane] + 2 * x[base + t + lane];
            for k in 0..ITEMS {
                let at = base + k * t + lane;
                // As lanes iteration k's lanes in turn; on fibers each invocation's iterations.
                assert_eq!(lanes[at], (k * t + lane) as u32 + values, "lanes: workgroup {group}, lane {lane}, k {k}");
                assert_eq!(fibers[at], (lane * ITEMS + k) as u32 + values, "fibers: workgroup {group}, lane {lane}, k {k}");
            }
        }
    }
    same!(ticket_element_rebound, ticket_element_rebound_lanes, [2, 1, 1], [8, 1, 1], len);
}

#[test]
fn global_faults_in_lane_loops_name_the_fibers_invocations() {
    for threads in [[64, 1, 1], [8, 4, 1], [24, 1, 1]] {
        let f = same_findings(threads, global_faults, global_faults_lanes);
        let mut found: Vec<(&str, u64)> = f.iter().map(|f| (f.0.as_str(), f.1)).collect();
        found.sort();
        found.dedup();
        let mut expected = vec![
            ("global-race", line_of("// GLOBAL_RACE")),
            ("global-race", line_of("// IN_UNIFORM_LOOP")),
            ("global-race", line_of("// GLOBAL_ATOMIC")),
            ("global-race", line_of("// GLOBAL_AFTER_ATOMIC")),
            ("global-race", line_of("// ACROSS_GROUPS")),
            ("out-of-bounds", line_of("// GLOBAL_OOB")),
            // Its write of the last element, which the lane before read after the barrier.
            ("global-race", line_of("// GLOBAL_OOB")),
        ];
        expected.sort();
        assert_eq!(found, expected, "{threads:?}: {f:?}");
        // The race names the invocations of both sides (local ids 3 and n - 2 write; 0 and 2 read).
        let race = f.iter().find(|f| f.1 == line_of("// GLOBAL_RACE")).unwrap();
        assert!(race.3.contains("local id (3, 0, 0)"), "{threads:?}: {race:?}");
    }
}
