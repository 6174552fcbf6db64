//! `#[lanes]` and statement macros, against fibers: each kernel runs as written on fibers and as
//! its `NAME_lanes` copy, both under cpu-sim, on the same input; the outputs and cpu-sim's
//! findings must be the same. A statement macro may bind any name its tokens hold (`let $n = ..;`
//! in its expansion), in forms no look at its tokens can tell from a read (`bind!(v <- t)` is
//! token for token `v < -t`): the copy keeps each local or primitive parameter such a macro names
//! per lane, from whatever binding of it is in scope at the end of its run (the macro's, or the one
//! before). Each kernel here computed another value than fibers, with no error, before that
//! (the `macro_arrow` kernel of tests/run/test_lanes.py: every lane read the last lane's binding);
//! what the copy still refuses is in `lanes_builds.rs`.
#![cfg(feature = "sim")]
// The kernels are written the ways a user might write them, not the ways clippy prefers; a
// value a macro rebinds is unused on fibers.
#![allow(clippy::all, unused_variables)]

mod common;

use common::{run_both, S};
use gpu_kernel::host::Lanes;
use gpu_kernel::prelude::*;

/// Fibers and lanes give the same output and the same findings (none, for these kernels), on
/// workgroups of 16 and of 24 (not all lanes of a subgroup): the output of the first.
#[track_caller]
fn same(
    fibers: impl Fn(Ctx, In<u32>, Out<u32>, Shared<u32, S>) + Sync,
    lanes: impl Fn(&Lanes, In<u32>, Out<u32>, Shared<u32, S>) + Sync,
) -> Vec<u32> {
    let mut first = None;
    for (grid, threads) in [([3, 1, 1], [16, 1, 1]), ([2, 1, 1], [24, 1, 1])] {
        // One value an invocation.
        let len = (grid.iter().product::<u32>() * threads.iter().product::<u32>()) as usize;
        let [f, l] = run_both(grid, threads, len, &fibers, &lanes);
        assert_eq!(f, l, "fibers (left) and lanes (right) differ on {threads:?}");
        assert!(f.1.is_empty(), "{:?}", f.1);
        first.get_or_insert(f.0);
    }
    first.expect("one run at least")
}

macro_rules! same {
    ($name:ident, $lanes:ident) => {
        same(|c, x, y, s| $name(c, x, y, s), |w, x, y, s| $lanes(w, x, y, s))
    };
}

/// The input `same` gives invocation `i`.
fn input(i: u32) -> u32 {
    i.wrapping_mul(2_654_435_761) % 1000
}

/// Binds `$n` to `$v` with a `<-`: read as tokens, `v <- t` is `v < -t`, an expression.
macro_rules! bind {
    ($n:ident <- $v:expr) => {
        let $n = $v;
    };
}

/// Binds `$name`, given by itself.
macro_rules! rebind {
    ($name:ident, $value:expr) => {
        let $name = $value;
    };
}

/// A statement given whole (`stmt!(let v = 1)`).
macro_rules! stmt {
    ($s:stmt) => {
        $s
    };
}

/// Binds a name given inside nested brackets.
macro_rules! nested {
    ([($n:ident)] { $v:expr }) => {
        let $n = $v;
    };
}

/// Adds one to the `mut` local it is given, binding nothing.
macro_rules! bump {
    ($n:ident) => {
        $n += 1;
    };
}

/// Only reads what it is given.
macro_rules! check {
    ($c:expr) => {
        assert!($c, "check failed");
    };
}

// ------------------------------------------------------------------ names a macro binds

/// tests/run/test_lanes.py's `macro_arrow`: a uniform local bound again per lane by a macro, read
/// after a barrier (kept once, set by every lane from the macro's binding: every lane read the
/// last lane's, x + 16 where fibers give x + t + 1).
#[lanes]
fn arrow_uniform(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let t = ctx.local_id_x();
    let i = ctx.global_id_x();
    let v = 5u32;
    bind!(v <- t as u32);
    s.set(t, 1);
    ctx.barrier();
    y[i] = x[i] + v + s.get(t);
}

#[test]
fn a_uniform_local_a_macro_binds_again_per_lane_matches() {
    let out = same!(arrow_uniform, arrow_uniform_lanes);
    assert_eq!(out[17], input(17) + 1 + 1, "workgroup 1, lane 1");
}

/// A lane-pure local bound again by a macro after a barrier (the loop after the next one
/// computed it again from its `let`: t + 1 where fibers read 500 + t % 3), and one computed from
/// it before (which keeps the value before).
#[lanes]
fn arrow_lane_pure(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let t = ctx.local_id_x();
    let i = ctx.global_id_x();
    let v = t as u32 + 1;
    let w = v * 2;
    s.set(t, x[i]);
    ctx.barrier();
    bind!(v <- 500 + t as u32 % 3);
    check!(v >= 500);
    ctx.barrier();
    y[i] = v * 1000 + w + s.get(t) % 10;
}

#[test]
fn a_lane_pure_local_a_macro_binds_again_matches() {
    let out = same!(arrow_lane_pure, arrow_lane_pure_lanes);
    assert_eq!(out[5], (500 + 5 % 3) * 1000 + 12 + input(5) % 10);
}

/// A uniform local read by a lane-pure one's value, then bound again by a macro (not read after
/// the barrier itself): the lane-pure local, computed again after the barrier, read the uniform
/// one's slot, set at the run's end from the macro's binding (t + 100 where fibers give t + 5).
/// The same with a `let` of a pattern the copy does not keep (`let [v, _]`).
#[lanes]
fn slot_rebound(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let t = ctx.local_id_x();
    let i = ctx.global_id_x();
    let v = 5u32;
    let w = t as u32 + v;
    bind!(v <- 100u32);
    let u = 7u32;
    let z = t as u32 * 2 + u;
    let [u, _] = [300u32, 0];
    s.set(t, v + u);
    ctx.barrier();
    y[i] = w * 1000 + z + s.get(t) + x[i] % 2;
}

#[test]
fn a_lane_pure_local_of_a_uniform_one_bound_again_matches() {
    let out = same!(slot_rebound, slot_rebound_lanes);
    assert_eq!(out[3], (3 + 5) * 1000 + (6 + 7) + 400 + input(3) % 2);
}

/// A lane-pure local given by itself to a macro that binds it (`rebind!(v, ..)`, or a `stmt`
/// fragment) after a barrier, read after the next one: refused before, the copy now keeps the
/// macro's binding.
#[lanes]
fn lone_names(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let t = ctx.local_id_x();
    let i = ctx.global_id_x();
    let v = t as u32 + 1;
    let w = v * 3;
    s.set(t, x[i]);
    ctx.barrier();
    rebind!(v, 500u32 + s.get(t) % 7);
    stmt!(let w = w + 600);
    ctx.barrier();
    y[i] = v * 10_000 + w;
}

#[test]
fn a_name_given_by_itself_to_a_macro_that_binds_it_matches() {
    let out = same!(lone_names, lone_names_lanes);
    assert_eq!(out[4], (500 + input(4) % 7) * 10_000 + 15 + 600);
}

/// Names inside nested brackets of a macro's arguments: a per-lane local kept from the run
/// before (bound again), and a `mut` one a macro changes without binding it (put back).
#[lanes]
fn kept_names(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let t = ctx.local_id_x();
    let i = ctx.global_id_x();
    let size = ctx.group_size_x();
    let v = x[i] % 100;
    let mut acc = x[i] % 7;
    s.set(t, v);
    ctx.barrier();
    nested!([(v)] { v + s.get((t + 1) % size) });
    bump!(acc);
    bump!(acc);
    ctx.barrier();
    y[i] = v * 100 + acc;
}

#[test]
fn a_kept_local_bound_again_or_changed_by_a_macro_matches() {
    let out = same!(kept_names, kept_names_lanes);
    assert_eq!(out[2], (input(2) % 100 + input(3) % 100) * 100 + input(2) % 7 + 2);
}

/// A parameter of a primitive type bound again by a macro (the later loop read the parameter).
#[lanes]
fn param_rebound(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>, n: u32) {
    let t = ctx.local_id_x();
    let i = ctx.global_id_x();
    bind!(n <- n + t as u32);
    s.set(t, x[i] % 10);
    ctx.barrier();
    y[i] = n * 10 + s.get(t);
}

#[test]
fn a_parameter_a_macro_binds_again_matches() {
    let out = same(|c, x, y, s| param_rebound(c, x, y, s, 7), |w, x, y, s| param_rebound_lanes(w, x, y, s, 7));
    assert_eq!(out[20], (7 + 4) * 10 + input(20) % 10);
}

/// In the block of a `while` with a barrier, a macro binds again a local of the body (its
/// binding lives to the block's end: each round reads the body's), and a read-only macro names
/// the loop's `mut` counter through a copy.
#[lanes]
fn in_a_loop(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let t = ctx.local_id_x();
    let i = ctx.global_id_x();
    let size = ctx.group_size_x();
    let v = t as u32;
    let mut acc = 0u32;
    let mut k = 0u32;
    while k < 2 {
        let round = k;
        check!(round < 2 && v < 64);
        bind!(v <- v + 10);
        s.set(t, v + round);
        ctx.barrier();
        acc += v * 100 + s.get((t + 1) % size);
        ctx.barrier();
        k += 1;
    }
    y[i] = acc * 100 + v + x[i] % 2;
}

#[test]
fn a_macro_binding_a_local_in_a_loops_block_matches() {
    let out = same!(in_a_loop, in_a_loop_lanes);
    // Lane 3 of 16: each round v = 13, its neighbour's 14 + round.
    assert_eq!(out[3], (2 * (13 * 100) + 14 + 15) * 100 + 3 + input(3) % 2);
}
