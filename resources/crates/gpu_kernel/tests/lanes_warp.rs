//! `#[lanes]`'s uniform-delta shuffles (`put_uniform` / `settle` / `get_uniform`) and uniform
//! barrier-free loops that change a per-lane accumulator (`uniform_while`, `known_copy`), against
//! fibers: each kernel runs as written on fibers and as its `NAME_lanes` copy, both under cpu-sim,
//! on the same input; the outputs and cpu-sim's findings must be the same.
#![cfg(feature = "sim")]
#![allow(clippy::all, unused_variables, unused_mut, unused_assignments)]

mod common;

use common::{run_both, S};
use gpu_kernel::prelude::*;

/// `text` without the repeat counts: a loop whose iterations the lanes run in another order
/// (`uniform_while`) meets a race's pair of accesses another number of times.
fn uncounted(findings: &[String]) -> Vec<String> {
    findings.iter().map(|f| f.split(" [").next().unwrap_or(f).to_string()).collect()
}

/// Fibers and lanes: the same output and the same findings.
macro_rules! same {
    ($name:ident, $lanes:ident, $threads:expr, $n:expr) => {{
        let t: [u32; 3] = $threads;
        let len = 3 * (t[0] * t[1] * t[2]) as usize;
        let [f, l] = run_both([3, 1, 1], t, len, |c, x, y, s| $name(c, x, y, s, $n), |w, x, y, s| $lanes(w, x, y, s, $n));
        assert_eq!(f, l, "fibers (left) and lanes (right) differ");
        f
    }};
}

// ------------------------------------------------------------------ uniform-delta shuffles

/// A `mut` parameter is each invocation's own: changed by some lanes, it is no uniform delta.
#[lanes]
fn mut_param_delta(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>, mut d: u32) {
    let t = ctx.local_id_x();
    let i = ctx.global_id_x();
    if t % 3 == 0 {
        d += 1;
    }
    let v = x[i];
    let w = ctx.subgroup_shuffle_down(v, d);
    y[i] = w;
}

#[test]
fn a_mut_parameter_changed_per_lane_is_no_uniform_delta() {
    same!(mut_param_delta, mut_param_delta_lanes, [64, 1, 1], 1);
    same!(mut_param_delta, mut_param_delta_lanes, [36, 1, 1], 2);
}

macro_rules! set_to {
    ($v:ident, $e:expr) => {
        $v = $e;
    };
}

/// A uniform-looking delta a statement macro changes per lane in the shuffle's run.
#[lanes]
fn macro_delta(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>, n: u32) {
    let t = ctx.local_id_x();
    let i = ctx.global_id_x();
    let mut d = n;
    set_to!(d, t as u32 % 3);
    let v = x[i];
    let w = ctx.subgroup_shuffle_down(v, d);
    y[i] = w;
}

#[test]
fn a_delta_a_macro_changes_is_per_lane() {
    same!(macro_delta, macro_delta_lanes, [64, 1, 1], 1);
}

/// Tuple lets, shadowing in a uniform `if`'s block, a delta changing per iteration of a uniform
/// `while` around the shuffles, u64 / i32 / f32 values, deltas 0, 31, 32, 5 (no power of two),
/// partial subgroups.
#[lanes]
fn deltas(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>, n: u32) {
    let t = ctx.local_id_x();
    let i = ctx.global_id_x();
    let (d, e) = (n, t as u32 % 4);
    let v = x[i];
    let a = ctx.subgroup_shuffle_down(v, d);
    let b = ctx.subgroup_shuffle_down(v, e);
    let mut acc = a ^ b.rotate_left(3);
    if n > 0 {
        let d = (t % 5) as u32;
        let sh = ctx.subgroup_shuffle_down(acc, d);
        acc ^= sh.rotate_left(5);
    }
    let mut off = 32u32;
    while off > 0 {
        off /= 2;
        acc += ctx.subgroup_shuffle_down(acc, off + n - 1);
        let w = ctx.subgroup_shuffle_down(acc as f32 * 0.5, off);
        acc ^= w.to_bits() >> 7;
    }
    let f = ctx.subgroup_shuffle_down(v as f32 * 0.25, 5);
    let g = ctx.subgroup_shuffle_down(-(v as i32), 0);
    let h = ctx.subgroup_shuffle_down(v, 31);
    let k = ctx.subgroup_shuffle_down(v, 32);
    let a2 = ctx.subgroup_shuffle_down(a, 3);
    let a3 = ctx.subgroup_shuffle_down(a, 3);
    y[i] = acc ^ f.to_bits() ^ (g as u32).rotate_left(7) ^ h.rotate_left(9) ^ k.rotate_left(11) ^ a2.rotate_left(13) ^ a3.rotate_left(17);
}

#[test]
fn odd_deltas_and_values_match() {
    for n in [1, 2, 3, 7] {
        for t in [[64, 1, 1], [36, 1, 1], [12, 1, 1], [40, 1, 1], [16, 3, 1], [100, 1, 1]] {
            same!(deltas, deltas_lanes, t, n);
        }
    }
}

/// A delta read in a `while` the lanes vote on, from a `mut` local another statement changes
/// later, and from shared memory.
#[lanes]
fn late_change(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>, n: u32) {
    let t = ctx.local_id_x();
    let i = ctx.global_id_x();
    let mut d = n;
    let mut v = x[i];
    let mut k = 0u32;
    while k < 3 {
        v = ctx.subgroup_shuffle_down(v, d);
        d = n + k;
        if t % 2 == 0 {
            d = n;
        }
        k += 1;
    }
    s.set(t, n + (t % 3) as u32);
    ctx.barrier();
    let dd = s.get(t);
    let w = ctx.subgroup_shuffle_down(v, dd);
    y[i] = w;
}

#[test]
fn deltas_that_change_later_or_come_from_memory_match() {
    same!(late_change, late_change_lanes, [64, 1, 1], 1);
    same!(late_change, late_change_lanes, [36, 1, 1], 2);
}

// ------------------------------------------------------------------ accumulators in uniform loops

/// Accumulators: shadowed inside the loop after the change, changed only under a per-lane `if`,
/// two of them, nested loops with one each, read after the loop across a barrier.
#[lanes]
fn accumulators(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>, n: u32) {
    let t = ctx.local_id_x();
    let i = ctx.global_id_x();
    let size = ctx.group_size_x();
    let mut acc = 0u32;
    let mut acc2: u32 = 7;
    let mut k = 0u32;
    while k < n + 2 {
        acc += x[i] + k;
        let acc = acc * 3;
        acc2 ^= acc;
        if (t + k as usize) % 3 == 0 {
            acc2 = acc2.rotate_left(1);
        }
        let mut j = 0u32;
        let mut inner = 1u32;
        while j < 2 {
            inner = inner * 5 + j + acc;
            acc2 = acc2.wrapping_add(inner);
            j += 1;
        }
        k += 1;
    }
    s.set(t, acc);
    ctx.barrier();
    let other = s.get((t + 1) % size);
    y[i] = acc ^ acc2.rotate_left(4) ^ other.rotate_left(9);
}

#[test]
fn accumulators_match() {
    same!(accumulators, accumulators_lanes, [64, 1, 1], 1);
    same!(accumulators, accumulators_lanes, [12, 1, 1], 3);
}

/// An accumulator another lane reads in the same iteration through shared memory: a race on
/// fibers, and found as one as lanes (the same lines).
#[lanes]
fn racing(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>, n: u32) {
    let t = ctx.local_id_x();
    let i = ctx.global_id_x();
    let size = ctx.group_size_x();
    let mut acc = 0u32;
    let mut k = 0u32;
    while k < n {
        s.set(t, acc);
        acc += s.get((t + 1) % size) + x[i];
        k += 1;
    }
    ctx.barrier();
    y[i] = acc;
}

#[test]
fn a_race_through_an_accumulator_is_found_alike() {
    let t = [12u32, 1, 1];
    let [f, l] = run_both([1, 1, 1], t, 12, |c, x, y, s| racing(c, x, y, s, 2), |w, x, y, s| racing_lanes(w, x, y, s, 2));
    assert!(!f.1.is_empty());
    assert_eq!(uncounted(&f.1), uncounted(&l.1));
}

/// A uniform `d` shadowed in the shuffle's own run by a per-lane `let` (a name, a tuple, `mut`
/// then changed per lane). (`let`s of other patterns are refused in a run: slices, structs,
/// `let`-`else`, `@`, nested tuples, `ref`.)
#[lanes]
fn shadows(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>, n: u32) {
    let t = ctx.local_id_x();
    let i = ctx.global_id_x();
    let v = x[i];
    let d = n;
    let d = t as u32 % 3 + d;
    let a = ctx.subgroup_shuffle_down(v, d);
    let d = n;
    let (e, d) = (d, t as u32 % 6);
    let b = ctx.subgroup_shuffle_down(v, d);
    let d = e;
    let mut d = d;
    d += t as u32 % 2;
    let c = ctx.subgroup_shuffle_down(v, d);
    let d = n;
    let f = ctx.subgroup_shuffle_down(v, d);
    y[i] = a ^ b.rotate_left(3) ^ c.rotate_left(6) ^ f.rotate_left(9);
}

#[test]
fn a_delta_shadowed_per_lane_is_per_lane() {
    same!(shadows, shadows_lanes, [64, 1, 1], 1);
    same!(shadows, shadows_lanes, [48, 1, 1], 3);
}

/// An accumulator shadowed in the loop's block after its change.
#[lanes]
fn acc_shadowed(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>, n: u32) {
    let i = ctx.global_id_x();
    let mut acc = 0u32;
    let mut other: u32 = 7;
    let mut k = 0u32;
    while k < n + 2 {
        acc += x[i] + k;
        let acc = acc * 3;
        other ^= acc;
        k += 1;
    }
    y[i] = acc ^ other.rotate_left(4);
}

/// An accumulator changed only in some lanes' iterations (a per-lane `if`), and two of them.
#[lanes]
fn acc_some(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>, n: u32) {
    let t = ctx.local_id_x();
    let i = ctx.global_id_x();
    let mut acc = 1u32;
    let mut b = 0.5f32;
    let mut k = 0u32;
    while k < n + 2 {
        if (t + k as usize) % 3 == 0 {
            acc = acc.rotate_left(1) ^ x[i];
        } else {
            b = b * 1.5 + acc as f32;
        }
        k += 1;
    }
    y[i] = acc ^ b.to_bits();
}

/// Nested uniform loops, an accumulator in each.
#[lanes]
fn acc_nested(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>, n: u32) {
    let i = ctx.global_id_x();
    let mut acc = 0u32;
    let mut k = 0u32;
    while k < n + 2 {
        let mut inner = 1u32;
        let mut j = 0u32;
        while j < 3 {
            inner = inner * 5 + j + acc + x[i];
            j += 1;
        }
        acc = acc.wrapping_mul(31) ^ inner;
        k += 1;
    }
    y[i] = acc;
}

/// An accumulator read after the loop across a barrier, by another lane through shared memory.
#[lanes]
fn acc_barrier(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>, n: u32) {
    let t = ctx.local_id_x();
    let i = ctx.global_id_x();
    let size = ctx.group_size_x();
    let mut acc: u32 = 3;
    let mut k = 0u32;
    while k < n + 2 {
        acc = acc * 7 + x[i] + k;
        k += 1;
    }
    s.set(t, acc);
    ctx.barrier();
    acc += s.get((t + 1) % size);
    ctx.barrier();
    y[i] = acc;
}

#[test]
fn accumulator_shapes_match() {
    for n in [0, 1, 3] {
        same!(acc_shadowed, acc_shadowed_lanes, [36, 1, 1], n);
        same!(acc_some, acc_some_lanes, [36, 1, 1], n);
        same!(acc_nested, acc_nested_lanes, [36, 1, 1], n);
        same!(acc_barrier, acc_barrier_lanes, [36, 1, 1], n);
    }
}

/// A local whose type is named like a primitive but is an item of the body (not `Copy`): the
/// uniform loop that reads it stays in its run's lane loop, as a loop over a local of any other
/// non-`Copy` type does.
#[lanes]
fn item_named_u64(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>, n: u32) {
    #[allow(non_camel_case_types)]
    struct u64 {
        v: Vec<u32>,
    }
    impl u64 {
        fn new() -> u64 {
            u64 { v: Vec::new() }
        }
    }
    let i = ctx.global_id_x();
    let mut got: u64 = u64::new();
    let mut k = 0u32;
    while k < n {
        got.v.push(x[i] + k);
        k += 1;
    }
    y[i] = got.v.iter().sum();
}

#[test]
fn a_type_of_the_body_named_like_a_primitive_is_not_taken_for_it() {
    same!(item_named_u64, item_named_u64_lanes, [36, 1, 1], 3);
}

/// A `mut` parameter as the accumulator; an accumulator kept from before a barrier, changed by a
/// uniform loop inside a `while` around a barrier and a uniform `if`; a uniform `mut` delta that
/// a uniform loop changes beside per-lane statements; the shuffle's value the accumulator.
#[lanes]
fn acc_kept(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>, mut p: u32) {
    let t = ctx.local_id_x();
    let i = ctx.global_id_x();
    let n = ctx.group_id_x() as u32 + 1;
    let mut k = 0u32;
    while k < n {
        p = p * 3 + x[i];
        k += 1;
    }
    let mut acc = p;
    let mut d = 0u32;
    ctx.barrier();
    let mut stride = 2u32;
    while stride > 0 {
        let mut j = 0u32;
        while j < stride {
            acc = acc.rotate_left(3) ^ (x[i] + j);
            d += 1;
            j += 1;
        }
        if n > 1 {
            let mut m = 0u32;
            while m < 2 {
                acc += m;
                m += 1;
            }
            ctx.barrier();
        }
        acc += ctx.subgroup_shuffle_down(acc, d % 7);
        stride -= 1;
    }
    y[i] = acc ^ p.rotate_left(11);
}

#[test]
fn kept_accumulators_and_parameters_match() {
    for p in [0, 5] {
        same!(acc_kept, acc_kept_lanes, [36, 1, 1], p);
        same!(acc_kept, acc_kept_lanes, [64, 1, 1], p);
    }
}

/// An accumulator's loads past the input's end in some lanes' later iterations: an
/// out-of-bounds read, found at the same line.
#[lanes]
fn acc_oob(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>, n: u32) {
    let t = ctx.local_id_x();
    let i = ctx.global_id_x();
    let mut acc = 0u32;
    let mut k = 0u32;
    while k < n {
        acc += x[i + k as usize * 20];
        k += 1;
    }
    if i < 36 {
        y[i] = acc;
    }
}

#[test]
fn an_accumulators_out_of_bounds_read_is_found_alike() {
    let [f, l] = run_both([1, 1, 1], [36, 1, 1], 40, |c, x, y, s| acc_oob(c, x, y, s, 3), |w, x, y, s| acc_oob_lanes(w, x, y, s, 3));
    assert!(!f.1.is_empty());
    assert_eq!(uncounted(&f.1), uncounted(&l.1));
}

/// Lanes that return before a uniform loop over an accumulator (some, or the whole workgroup),
/// and a shuffle of it after (a divergence where some returned, as on fibers).
#[lanes]
fn acc_after_return(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>, n: u32) {
    let t = ctx.local_id_x();
    let i = ctx.global_id_x();
    let mut k = 0u32;
    if t as u32 % 4 == n % 4 || ctx.group_id_x() == 2 {
        return;
    }
    let mut acc = 1.5f32;
    while k < 3 {
        acc = acc * 0.5 + x[i] as f32;
        k += 1;
    }
    y[i] = acc.to_bits();
    if n > 5 {
        let w = ctx.subgroup_shuffle_down(acc, 2);
        y[i] = w.to_bits();
    }
}

#[test]
fn returns_before_a_uniform_loop_match() {
    for n in [1, 9] {
        let t = [36u32, 1, 1];
        let [f, l] = run_both([3, 1, 1], t, 3 * 36, |c, x, y, s| acc_after_return(c, x, y, s, n), |w, x, y, s| acc_after_return_lanes(w, x, y, s, n));
        // After a divergence nothing is defined (fibers go on, lanes stop): its findings only.
        if n < 5 {
            assert_eq!(f, l, "fibers (left) and lanes (right) differ");
            assert!(f.1.is_empty(), "{:?}", f.1);
        } else {
            assert_eq!(f.1, l.1);
            assert!(f.1.iter().all(|f| f.contains("barrier-divergence")) && !f.1.is_empty(), "{:?}", f.1);
        }
    }
}

/// A delta kept from an outer block's run, shadowed there per lane (or uniform over a per-lane
/// one) before the block around the shuffle.
#[lanes]
fn outer_shadows(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>, n: u32) {
    let t = ctx.local_id_x();
    let i = ctx.global_id_x();
    let v = x[i];
    let d = n;
    let e = t as u32 % 3;
    ctx.barrier();
    let d = t as u32 % 5;
    let e = n + 1;
    let mut acc = v;
    if n > 0 {
        let w = ctx.subgroup_shuffle_down(acc, d);
        acc ^= w;
        let mut k = 0u32;
        while k < 2 {
            acc += ctx.subgroup_shuffle_down(acc, e + k);
            k += 1;
        }
    }
    y[i] = acc;
}

#[test]
fn a_delta_shadowed_in_an_outer_block_matches() {
    same!(outer_shadows, outer_shadows_lanes, [64, 1, 1], 1);
    same!(outer_shadows, outer_shadows_lanes, [40, 1, 1], 2);
}

/// An accumulator kept from before a barrier, changed by a uniform loop, then shadowed in the
/// run after the loop before the next barrier reads it; a uniform loop in a branch's block
/// around a barrier changing a local kept from before.
#[lanes]
fn acc_then_shadowed(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>, n: u32) {
    let i = ctx.global_id_x();
    let mut acc = x[i];
    let mut k = 0u32;
    ctx.barrier();
    while k < n {
        acc = acc * 3 + k;
        k += 1;
    }
    let before = acc;
    let acc = acc ^ 0x55;
    ctx.barrier();
    let mut out = acc.rotate_left(7) ^ before;
    if n > 1 {
        let mut m = 0u32;
        while m < n {
            out = out.wrapping_mul(5) + m;
            m += 1;
        }
        let o2 = out + 1;
        ctx.barrier();
        y[i] = o2 ^ out;
    } else {
        y[i] = out;
    }
}

#[test]
fn an_accumulator_shadowed_after_its_loop_matches() {
    for n in [0, 1, 3] {
        same!(acc_then_shadowed, acc_then_shadowed_lanes, [36, 1, 1], n);
    }
}
