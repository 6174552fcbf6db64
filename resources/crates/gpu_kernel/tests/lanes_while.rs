//! `#[lanes]`'s uniform barrier-free `while` (`uniform_while` in the macro) against fibers: each
//! kernel runs as written on fibers and as its `NAME_lanes` copy, both under cpu-sim, on the same
//! input; the outputs and cpu-sim's findings must be the same. The loop, lowered, runs its
//! iterations one after the other with the lanes inside; the kernels here are the shapes around
//! it that the lowering could get wrong: what its split of the run before the loop cuts short
//! (a value dropped, a macro's binding), conditions that look uniform and are not, and the shapes
//! it takes (nested, after returns, in a branch with a barrier). `tests/lanes.rs` has its tickets.
#![cfg(feature = "sim")]
// The kernels are written the ways a user might write them, not the ways clippy prefers; a
// value a macro rebinds (`bind!`) is unused on fibers.
#![allow(clippy::all, unused_variables)]

mod common;

use common::{run_both, S};
use gpu_kernel::host::Lanes;
use gpu_kernel::prelude::*;
const ITEMS: usize = 3;

/// Fibers and lanes give the same output and the same findings (none, for these kernels): the
/// output.
#[track_caller]
fn same(
    fibers: impl Fn(Ctx, In<u32>, Out<u32>, Shared<u32, S>) + Sync,
    lanes: impl Fn(&Lanes, In<u32>, Out<u32>, Shared<u32, S>) + Sync,
) -> Vec<u32> {
    let [f, l] = run_both([3, 1, 1], [12, 1, 1], 3 * 12 * ITEMS, fibers, lanes);
    assert_eq!(f, l, "fibers (left) and lanes (right) differ");
    assert!(f.1.is_empty(), "{:?}", f.1);
    f.0
}

macro_rules! same {
    ($name:ident, $lanes:ident) => {
        same(|c, x, y, s| $name(c, x, y, s), |w, x, y, s| $lanes(w, x, y, s))
    };
}

// ------------------------------------------------------------------ what the split cut short
// The lowering ends the lane loop of the statements before the loop there, where fibers go on in
// one scope: each of these compiled and computed something else (or did not compile) until the
// loop was left in its run for them.

/// Writes 77 at its element when dropped.
struct Guard<'a> {
    y: Out<'a, u32>,
    at: usize,
}
impl Drop for Guard<'_> {
    fn drop(&mut self) {
        self.y.set(self.at, 77);
    }
}

/// A local with drop glue that nothing after the loop names: fibers drop it at the end of the
/// body, after the loop's writes (77 everywhere); the split dropped it before the loop, whose
/// last write stayed (2).
#[lanes]
fn dropped(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let tid = ctx.local_id_x();
    let at = ctx.group_linear() * ctx.group_size_x() + tid;
    let _ = x;
    s.set(tid, 0);
    ctx.barrier();
    let _guard = Guard { y, at };
    let mut k = 0;
    while k < ITEMS {
        y.set(at, k as u32 + s.get(tid));
        k += 1;
    }
}

/// Binds `$n` to `$v` with a `<-` the attribute's look for a macro's binding (a name alone, or
/// before `=` or `:`) does not see.
macro_rules! bind {
    ($n:ident <- $v:expr) => {
        let $n = $v;
    };
}

/// The loop's bound rebound per lane by a macro: the uniform `items` kept after the run was the
/// last lane's binding (every lane counted 1, not `tid % 3`).
#[lanes]
fn macro_bound(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let tid = ctx.local_id_x();
    let at = ctx.group_linear() * ctx.group_size_x() + tid;
    let _ = x;
    s.set(tid, 0);
    ctx.barrier();
    let items = ITEMS;
    bind!(items <- tid % 3);
    let mut k = 0;
    while k < items {
        s.atomic_add(tid, 1);
        k += 1;
    }
    y.set(at, s.get(tid));
}

/// A value the loop reads, rebound per lane by a macro (every lane read the last lane's).
#[lanes]
fn macro_value(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let tid = ctx.local_id_x();
    let at = ctx.group_linear() * ctx.group_size_x() + tid;
    let _ = x;
    s.set(tid, 0);
    ctx.barrier();
    let v = 5u32;
    bind!(v <- tid as u32 * 10);
    let mut k = 0;
    while k < 2 {
        s.atomic_add(tid, v);
        k += 1;
    }
    y.set(at, s.get(tid));
}

/// A `macro_rules!` before the loop, used after it (the split hid it: cannot find macro `put`).
#[lanes]
fn macro_after(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let tid = ctx.local_id_x();
    let at = ctx.group_linear() * ctx.group_size_x() + tid;
    let _ = x;
    s.set(tid, 0);
    ctx.barrier();
    macro_rules! put {
        ($v:expr) => {
            y.set(at, $v)
        };
    }
    let mut k = 0;
    while k < ITEMS {
        s.atomic_add(tid, 1);
        k += 1;
    }
    put!(s.get(tid));
}

/// The loop's block shadows its counter after changing it (lowered as a block, refused:
/// "`k` is shadowed here ... rename one"; one lane loop takes it).
#[lanes]
fn shadowed_counter(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let tid = ctx.local_id_x();
    let at = ctx.group_linear() * ctx.group_size_x() + tid;
    let _ = x;
    s.set(tid, 0);
    ctx.barrier();
    let mut k = 0;
    while k < ITEMS {
        k += 1;
        let k = tid as u32 * 100 + s.atomic_add(tid, 1) + k as u32;
        y.set(at, k);
    }
}

/// A `Range` the loop reads: kept by the split, which asks `Copy` of what it keeps, where the run
/// left whole does not (it failed to build: "`Range<usize>` lives across a barrier").
#[lanes]
fn range_bound(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let tid = ctx.local_id_x();
    let at = ctx.group_linear() * ctx.group_size_x() + tid;
    let _ = x;
    s.set(tid, 0);
    ctx.barrier();
    let r = 1..ITEMS;
    let mut k = r.start;
    while k < r.end {
        s.atomic_add(tid, k as u32);
        k += 1;
    }
    y.set(at, s.get(tid));
}

#[test]
fn what_the_split_would_cut_short_keeps_the_loop_in_its_run() {
    let out = same!(dropped, dropped_lanes);
    // 3 workgroups of 12: the first 36 elements.
    assert!(out[..36].iter().all(|&v| v == 77), "{out:?}");
    let out = same!(macro_bound, macro_bound_lanes);
    assert_eq!(out[..4], [0, 1, 2, 0]);
    let out = same!(macro_value, macro_value_lanes);
    assert_eq!(out[..3], [0, 20, 40]);
    let out = same!(macro_after, macro_after_lanes);
    assert!(out[..36].iter().all(|&v| v == ITEMS as u32), "{out:?}");
    let out = same!(shadowed_counter, shadowed_counter_lanes);
    assert_eq!(out[1], 100 + 2 + 3);
    let out = same!(range_bound, range_bound_lanes);
    assert!(out[..36].iter().all(|&v| v == 1 + 2), "{out:?}");
}

// ------------------------------------------------------------------ conditions that look uniform
// Each loop's counter or bound is the same in every lane at first and then is not: not lowered,
// so each lane runs its own iterations (the tickets, a shared atomic's old values, go lane by
// lane, each lane's `ITEMS` elements of `y` from `base + tid` on, `threads` apart), as on fibers.

/// The counter also stepped in a branch some lanes take.
#[lanes]
fn branch_step(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let tid = ctx.local_id_x();
    let threads = ctx.group_size_x();
    let base = ctx.group_linear() * threads * ITEMS;
    let _ = x;
    s.set(tid, 0);
    ctx.barrier();
    let mut k = 0;
    while k < ITEMS {
        let at = base + k * threads + tid;
        y.set(at, s.atomic_add(0, 1) + 1);
        if tid % 3 == 0 {
            k += 1;
        }
        k += 1;
    }
}

/// The counter stepped through a `&mut` taken before the loop.
#[lanes]
fn through_ref(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let tid = ctx.local_id_x();
    let threads = ctx.group_size_x();
    let base = ctx.group_linear() * threads * ITEMS;
    let _ = x;
    s.set(tid, 0);
    ctx.barrier();
    let mut k = 0;
    let r = &mut k;
    *r += tid % 2;
    while k < ITEMS {
        let at = base + k * threads + tid;
        y.set(at, s.atomic_add(0, 1) + 1);
        k += 1;
    }
}

/// A counter that is a struct's field.
#[derive(Clone, Copy)]
struct Counter {
    k: usize,
}
#[lanes]
fn field_counter(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let tid = ctx.local_id_x();
    let threads = ctx.group_size_x();
    let base = ctx.group_linear() * threads * ITEMS;
    let _ = x;
    s.set(tid, 0);
    ctx.barrier();
    let mut c = Counter { k: 0 };
    c.k += tid % 2;
    while c.k < ITEMS {
        let at = base + c.k * threads + tid;
        y.set(at, s.atomic_add(0, 1) + 1);
        c.k += 1;
    }
}

/// The bound read from shared memory (a lane's own element).
#[lanes]
fn shared_bound(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let tid = ctx.local_id_x();
    let threads = ctx.group_size_x();
    let base = ctx.group_linear() * threads * ITEMS;
    let _ = x;
    s.set(tid, 0);
    s.set(S - 1 - tid, (ITEMS - tid % 2) as u32);
    ctx.barrier();
    let mut k = 0;
    while k < s.get(S - 1 - tid) as usize {
        let at = base + k * threads + tid;
        y.set(at, s.atomic_add(0, 1) + 1);
        k += 1;
    }
}

/// The step from a function of the lane's id, and from a closure that reads it.
#[inline(never)]
fn step(tid: usize) -> usize {
    1 + tid % 2
}
#[lanes]
fn called_step(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let tid = ctx.local_id_x();
    let threads = ctx.group_size_x();
    let base = ctx.group_linear() * threads * ITEMS;
    let _ = x;
    s.set(tid, 0);
    ctx.barrier();
    let by = |k: usize| k + step(tid);
    let mut k = 0;
    while k < ITEMS {
        let at = base + k * threads + tid;
        y.set(at, s.atomic_add(0, 1) + 1);
        k = by(k);
    }
}

/// The counter shadowed before the loop by a per-lane one of its name.
#[lanes]
fn shadowed_before(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let tid = ctx.local_id_x();
    let threads = ctx.group_size_x();
    let base = ctx.group_linear() * threads * ITEMS;
    let _ = x;
    s.set(tid, 0);
    ctx.barrier();
    let mut k = 0;
    k += 0;
    let mut k = k + tid % 2;
    while k < ITEMS {
        let at = base + k * threads + tid;
        y.set(at, s.atomic_add(0, 1) + 1);
        k += 1;
    }
}

/// The counter changed through a method that takes `&mut self`.
#[lanes]
fn method_step(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    use core::ops::AddAssign;
    let tid = ctx.local_id_x();
    let threads = ctx.group_size_x();
    let base = ctx.group_linear() * threads * ITEMS;
    let _ = x;
    s.set(tid, 0);
    ctx.barrier();
    let mut k = 0usize;
    while k < ITEMS {
        let at = base + k * threads + tid;
        y.set(at, s.atomic_add(0, 1) + 1);
        k.add_assign(1 + tid % 2);
    }
}

#[test]
fn conditions_that_look_uniform_and_are_not_run_each_lanes_own_iterations() {
    let lane_major = same!(branch_step, branch_step_lanes);
    // Lane 0 steps by two: tickets 1 and 2 (k = 0, 2) before lane 1's first.
    assert_eq!([lane_major[0], lane_major[24], lane_major[1]], [1, 2, 3]);
    same!(through_ref, through_ref_lanes);
    same!(field_counter, field_counter_lanes);
    same!(shared_bound, shared_bound_lanes);
    same!(called_step, called_step_lanes);
    same!(shadowed_before, shadowed_before_lanes);
    same!(method_step, method_step_lanes);
}

// ------------------------------------------------------------------ shapes it lowers
// Each result is the same in any order of the lanes' iterations (a lane's own elements, atomic
// counts), so fibers and the lowered loop agree.

/// Nested uniform loops (the inner counter reset in the outer block), a uniform `let` and a
/// per-lane one in the block, a non-`Copy` value made and dropped in it, a `u8` counter that
/// wraps, an immutable per-lane local kept from before a barrier read inside, and a block of
/// only uniform statements.
#[lanes]
fn shapes(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let tid = ctx.local_id_x();
    let threads = ctx.group_size_x();
    let base = ctx.group_linear() * threads * ITEMS;
    let mine = x.get(base + tid);
    s.set(tid, 0);
    ctx.barrier();
    let mut i = 0;
    while i < ITEMS {
        let mut j = 0;
        let row = i * threads;
        while j < 2 {
            let v: Vec<u32> = Vec::from([mine, j as u32]);
            s.atomic_add(tid, v.iter().sum::<u32>() % 7);
            j += 1;
        }
        let at = base + row + tid;
        y.set(at, x.get(at) + s.get(tid));
        i += 1;
    }
    ctx.barrier();
    let mut w: u8 = 250;
    let mut n = 0u32;
    while w != 4 {
        w = w.wrapping_add(1);
        n += 1;
    }
    let mut c = 0;
    while c < n {
        s.atomic_add(tid, 1);
        c += 1;
    }
    let at = base + tid;
    y.set(at, y.get(at) + 1000 * s.get(tid));
}

/// Lanes that returned before the loop, and a uniform loop in the block of an `if` with a
/// barrier (a per-lane condition every lane agrees on) and of a `while` with a barrier.
#[lanes]
fn after_returns(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let tid = ctx.local_id_x();
    let threads = ctx.group_size_x();
    let base = ctx.group_linear() * threads * ITEMS;
    s.set(tid, 0);
    ctx.barrier();
    if tid < 1000 {
        let mut k0 = 0;
        while k0 < ITEMS {
            s.atomic_add(k0, x.get(base + k0 * threads + tid) % 5);
            k0 += 1;
        }
        ctx.barrier();
    }
    let mut round = 0;
    while round < 2 {
        let mut k1 = 0;
        while k1 < ITEMS {
            s.atomic_add(8 + k1, round + 1);
            k1 += 1;
        }
        ctx.barrier();
        round += 1;
    }
    // The counter before the `return` (after it, a lane that returned skips it: not uniform).
    let mut k = 0;
    if tid % 3 == 1 {
        return;
    }
    while k < ITEMS {
        let at = base + k * threads + tid;
        y.set(at, s.get(k) + 100 * s.get(8 + k) + 10_000 * x.get(at));
        k += 1;
    }
}

/// A uniform loop bounded by a uniform local a `while` with a barrier doubled, its block with an
/// item (a `const`, a `fn`) and a closure reading a per-lane local; then another of the same
/// counter's name, counting down.
#[lanes]
fn items_and_closures(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let tid = ctx.local_id_x();
    let threads = ctx.group_size_x();
    let at = ctx.group_linear() * threads + tid;
    let mine = x.get(at);
    s.set(tid, 0);
    ctx.barrier();
    let mut offset = 1usize;
    while offset < threads {
        s.atomic_add(tid, 1);
        ctx.barrier();
        offset *= 2;
    }
    let mut k = 0;
    while k < offset {
        const STEP: u32 = 2;
        fn twice(v: u32) -> u32 {
            v * STEP
        }
        let add = |v: u32| v + mine;
        s.atomic_add(tid, twice(add(k as u32)) % 5);
        k += 1;
    }
    let mut k = offset / 2;
    while k > 0 {
        s.atomic_add(tid, k as u32);
        k -= 1;
    }
    ctx.barrier();
    y.set(at, s.get(tid) + 1000 * offset as u32);
}

#[test]
fn shapes_it_lowers_match_fibers() {
    same!(items_and_closures, items_and_closures_lanes);
    same!(shapes, shapes_lanes);
    let out = same!(after_returns, after_returns_lanes);
    assert_eq!(out[1], 0, "lane 1 returned before the last loop");
}

// ------------------------------------------------------------------ a racy loop
// With no barrier in it, a lowered loop's plain accesses of one element by two lanes race on a
// GPU; the lanes' order is another than the fibers' (the output may differ: both are outputs a
// GPU may give), and cpu-sim reports the race at the loop's lines either way.

/// A reduction's folding loop whose barrier was forgotten.
#[lanes]
fn fold(ctx: Ctx, x: In<u32>, mut y: Out<u32>, mut s: Shared<u32, S>) {
    let tid = ctx.local_id_x();
    let n = ctx.group_size_x();
    let g = ctx.group_linear();
    s.set(tid, x.get(g * n + tid));
    ctx.barrier();
    let mut stride = n / 2;
    while stride > 0 {
        if tid < stride {
            s.set(tid, s.get(tid) + s.get(tid + stride)); // FOLD
        }
        stride /= 2;
    }
    ctx.barrier();
    if tid == 0 {
        y.set(g, s.get(0));
    }
}

#[test]
fn a_racy_uniform_loop_is_a_race_on_lanes_too() {
    let line = 1 + include_str!("lanes_while.rs").lines().position(|l| l.ends_with("// FOLD")).unwrap();
    let [f, l] = run_both([2, 1, 1], [8, 1, 1], 16, |c, x, y, s| fold(c, x, y, s), |w, x, y, s| fold_lanes(w, x, y, s));
    for (run, findings) in [("fibers", &f.1), ("lanes", &l.1)] {
        assert!(
            findings.iter().any(|t| t.starts_with(&format!("tests/lanes_while.rs:{line}:")) && t.contains("[shared-race]")),
            "{run}: {findings:?}"
        );
    }
}
