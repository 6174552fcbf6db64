//! A workgroup run as loops over its invocations ("lanes"): what the host copy of a
//! `#[gpu_kernel::lanes]` body (`NAME_lanes`, written by the attribute in `macros/`) calls.
//!
//! The copy runs once per workgroup on the worker's stack: each barrier-free run of the body's
//! statements is one loop over the lanes (`lanes`, `ctx`), each barrier is a call of `barrier`
//! between two such loops, and each `while` / `if` around a barrier asks every lane for its
//! condition first (`vote`); a subgroup shuffle is a barrier too, each lane's operand put in a
//! `Stash` in the loop before it and its source lane's taken in the loop after. Locals that live
//! across a barrier are kept per lane (`LaneVar`), or once where the attribute proved them the
//! same in every lane (`Uniform`; then a condition that reads only such values is evaluated
//! once, `live` and `uniform_ctx`, with no vote).
//! No fiber, no switch: a kernel that does a few loads and adds between barriers (scan's
//! steps, a reduction's tree, a stencil's tile) spent most of its time switching.
//!
//! cpu-sim runs the same copy with its checks: each lane's accesses are that invocation's
//! (`group.current`, and the packed `who` of the barrier-free loop), each barrier opens a new
//! epoch, so races, out-of-bounds accesses and reads of unwritten workgroup memory are found as
//! on fibers. A barrier some lanes reach after others returned, or a condition the lanes
//! disagree on, is a barrier divergence: cpu-sim reports it, and the workgroup's lanes stop (as
//! fibers are let go: a divergent kernel never hangs the run).

use core::cell::Cell;
use core::marker::PhantomData;
use core::mem::MaybeUninit;
use core::panic::Location;

use super::exec::{Ctx, Group, Status, SUBGROUP_SIZE};
#[cfg(feature = "sim")]
use super::sim;
use super::{Shared, Shuffle};

/// The most invocations of a workgroup (GPUs allow 1024; `exec::run_grid` refuses more).
pub const MAX_LANES: usize = 1024;

/// The largest local a `#[lanes]` copy keeps per lane across a barrier: `MAX_LANES` of them take
/// 128 KiB of the worker's stack (as much as an invocation's whole fiber stack).
pub const MAX_CARRIED_BYTES: usize = 128;

/// One workgroup of a launch, as the copy of a `#[lanes]` body sees it.
///
/// Every field is read-only for the copy's run (its changing state is behind `state`): a type
/// without interior mutability, so the copy's `&Lanes` is `noalias readonly` to LLVM, which then
/// knows that the body's stores leave it alone and keeps lane 0's `Ctx` (the workgroup's
/// coordinates) and the sizes in registers across a loop over the lanes. With the `Cell`s in
/// `Lanes` itself, every lane of stencil2d's tile load reloaded the workgroup's coordinates from
/// the stack and multiplied them again (its `x0 - 1`, `y0 - 1`) after each store to the tile
/// (scratch harness, one worker: 37.0-37.7 -> 36.4-36.7 ms CPU time a launch).
#[cfg_attr(feature = "debug", allow(dead_code))] // `workbench debug` runs the fibers
pub struct Lanes<'a> {
    group: &'a Group,
    first: Ctx<'a>,
    size: [u32; 3],
    state: &'a LanesState,
}

/// What a `#[lanes]` copy changes as it runs (`Lanes::state`).
#[cfg_attr(feature = "debug", allow(dead_code))]
pub(crate) struct LanesState {
    /// Lanes that have returned (`retire`); all of them after a divergence.
    retired: Cell<usize>,
    /// The body's line (`begin`), and whether the copy reached its end (`end`).
    body: Cell<Option<&'static Location<'static>>>,
    ended: Cell<bool>,
}

#[cfg_attr(feature = "debug", allow(dead_code))]
impl LanesState {
    pub(crate) fn new() -> LanesState {
        LanesState {
            retired: Cell::new(0),
            body: Cell::new(None),
            ended: Cell::new(false),
        }
    }
}

impl<'a> Lanes<'a> {
    #[cfg_attr(feature = "debug", allow(dead_code))]
    pub(crate) fn new(group: &'a Group, state: &'a LanesState) -> Lanes<'a> {
        // cpu-sim: the thread's checks read lane 0's word in this epoch (worked out at the
        // workgroup's start and at each barrier, not for each lane of each loop) and the lane
        // running (`ctx`).
        #[cfg(feature = "sim")]
        sim::lanes_running(sim::loop_who(group.generation, group.linear.get()).0);
        Lanes {
            group,
            first: Ctx::lane(group, 0, [0; 3]),
            size: group.size,
            state,
        }
    }

    /// The copy starts; `track_caller`: the body's name, where the attribute puts the call.
    #[inline(always)]
    #[track_caller]
    pub fn begin(&self) {
        self.state.body.set(Some(Location::caller()));
    }

    /// The copy reached its end.
    #[inline(always)]
    pub fn end(&self) {
        self.state.ended.set(true);
    }

    /// After the copy: it reached its end, unless a `return` the attribute could not see (one a
    /// macro's expansion holds) returned from the whole copy, skipping every lane after that
    /// one and every statement after it. Then this stops the run, naming the body (the outputs
    /// would be wrong, with no error).
    pub(crate) fn check_ended(&self) {
        if !self.state.ended.get() {
            self.returned_early();
        }
    }

    #[cold]
    #[inline(never)]
    fn returned_early(&self) {
        let (file, line) = self.state.body.get().map_or(("?", 0), |at| (at.file(), at.line()));
        panic!(
            "#[lanes]: the host copy of the kernel body at {file}:{line} returned before its end, for every invocation \
             after the one that returned: a `return` inside a macro's expansion, which the attribute cannot see. \
             Write the `return` in the body itself, or remove #[lanes] to run on fibers"
        );
    }

    /// Where a loop over a row of lanes ends (the attribute puts the call after each one that
    /// runs the whole row, not after one to a `lane_bound`, which may run a few lanes): a
    /// path taken once per row, marked cold in the plain build, so that LLVM expects the loop to
    /// run long (a row is the workgroup's width, 32 to 1024 lanes) and the cpu build's range
    /// check elimination (`LOOP_FLAGS` in workbench/build/adapters/cpu.py; the executor's own
    /// loop is marked so for it, `exec::run_invocations`) takes a kernel's `if i < n` and the
    /// accessors' bounds checks out of the loop's middle iterations. Histogram's counting loop
    /// went from ten instructions and three branches an element to five and one (CPU time a
    /// launch on one worker: 3.35 -> 2.05 ms); scan_add 2.5 -> 1.7-2.0 ms, the others the same.
    /// Not in a `sim` build, which has no such pass (cpu-sim's adapter takes no LOOP_FLAGS): its
    /// code stays as it was. Inlined into the copy (`cold_path` marks the block it is called in).
    #[inline(always)]
    pub fn row_end(&self) {
        #[cfg(not(feature = "sim"))]
        core::hint::cold_path();
    }

    /// Invocations per workgroup along x, y, z (the copy's loop nest: x innermost, so the lane
    /// `row + x` is affine in the innermost counter, a loop LLVM can vectorise).
    #[inline(always)]
    pub fn size(&self) -> [u32; 3] {
        self.size
    }

    /// The end of a loop over x that stops at `bound` (a run that is one `if t < bound { .. }`:
    /// the lanes past it do nothing there).
    #[inline(always)]
    pub fn x_below(&self, bound: usize) -> u32 {
        (bound.min(self.size[0] as usize)) as u32
    }

    /// The lane of local coordinates (0, y, z).
    #[inline(always)]
    pub fn row(&self, y: u32, z: u32) -> usize {
        ((z * self.size[1] + y) * self.size[0]) as usize
    }

    /// Lane `t` (local coordinates `local`) runs now: its `Ctx`.
    #[inline(always)]
    pub fn ctx(&self, t: usize, local: [u32; 3]) -> Ctx<'a> {
        // cpu-sim: the lane running, for the checks (a global access reads it through the
        // thread's `LANES` word, `sim::lanes_running`).
        #[cfg(feature = "sim")]
        self.group.current.set(t);
        self.first.at(t, local)
    }

    /// This workgroup's next shared array (the entry asks for them in the order of the body's
    /// parameters, as `Ctx::shared` gives them to fibers).
    #[track_caller]
    pub fn shared<T: crate::Element, const N: usize>(&self) -> Shared<'a, T, N> {
        self.first.shared::<T, N>()
    }

    /// Whether lane `t` has returned (or the workgroup diverged). While none has (`retired`
    /// counts them: the common case), no status is read: the status vector's length and
    /// address, reloaded after every store of cpu-sim's checks, and the lane's status were most
    /// of each lane's cost in scan's loops between barriers (CPU time a launch: cpu-sim 62 -> 53 ms,
    /// cpu 20.4 -> 15.8 ms; reduction 34 -> 25 and 18.8 -> 14.2).
    #[inline(always)]
    pub fn retired(&self, t: usize) -> bool {
        self.state.retired.get() != 0 && self.group.status[t].get() == Status::Done
    }

    /// Lane `t` returned: it sits out the rest of the body.
    #[inline(always)]
    pub fn retire(&self, t: usize) {
        self.group.dirty.set(true);
        self.group.status[t].set(Status::Done);
        self.state.retired.set(self.state.retired.get() + 1);
    }

    /// Every lane stops (a divergence: nothing after it is defined).
    #[cold]
    fn retire_all(&self) {
        self.group.dirty.set(true);
        for t in 0..self.group.threads {
            self.group.status[t].set(Status::Done);
        }
        self.state.retired.set(self.group.threads);
    }

    /// The workgroup's barrier between two loops over the lanes: a new epoch for cpu-sim's race
    /// checks. Some lanes returned and others reach it: a divergence.
    ///
    /// Not inlined (one call per workgroup, not per invocation): its name says barrier, and the
    /// IR summary counts a host build's calls of such a symbol as its barriers
    /// (`ir_instructions`), as it counts the fibers' `barrier_wait`.
    #[inline(always)]
    #[track_caller]
    pub fn barrier(&self) {
        self.barrier_of::<()>()
    }

    /// `barrier`'s work, generic (over nothing) so that each kernel crate compiles its own copy
    /// and calls it by name: called through the GOT, from a loop with no other call, LLVM loaded
    /// its address once into a register (`call *%r15`, reduction's tree after lane 0's `Ctx`
    /// became a plain copy in `uniform_ctx`), and the IR summary no longer saw that barrier.
    #[inline(never)]
    #[track_caller]
    #[allow(clippy::extra_unused_type_parameters)] // the point: a copy in each kernel crate
    fn barrier_of<T>(&self) {
        let retired = self.state.retired.get();
        if retired != 0 && retired < self.group.threads {
            self.returned_before(Location::caller());
        }
        self.group.next_epoch();
        #[cfg(feature = "sim")]
        sim::lanes_running(sim::lane_who(self.group, 0));
    }

    #[cold]
    #[inline(never)]
    fn returned_before(&self, at: &'static Location<'static>) {
        #[cfg(feature = "sim")]
        if let Some(checks) = self.group.checks() {
            let waiting = (0..self.group.threads).find(|&t| !self.retired(t)).unwrap_or(0);
            let returned = (0..self.group.threads).find(|&t| self.retired(t)).unwrap_or(0);
            if !self.group.diverged.replace(true) {
                checks.divergence(self.group, waiting, at, returned, Status::Done);
            }
        }
        let _ = at;
        self.retire_all();
    }

    /// Storage for one local per lane (its type is the local's). On the worker's stack, for
    /// `MAX_LANES` lanes: a local over `MAX_CARRIED_BYTES` is refused when the kernel is built
    /// (it overflowed the stack, a SIGSEGV, where a fiber holds it in its own 128 KiB).
    #[inline(always)]
    pub fn var<T: Carried>(&self) -> LaneVar<T> {
        const {
            assert!(
                core::mem::size_of::<T>() <= MAX_CARRIED_BYTES,
                "#[lanes]: a local of more than 128 bytes lives across a barrier: kept for 1024 lanes on the \
                 worker's stack it would overflow it. Keep it in a shared array, or remove #[lanes] to run on fibers"
            )
        };
        LaneVar { lanes: [const { MaybeUninit::uninit() }; MAX_LANES] }
    }

    /// Storage for one local the same in every lane (the attribute proved it: a "uniform" local,
    /// see the macro's module doc): kept once for the workgroup, not per lane.
    #[inline(always)]
    pub fn uniform<T: Carried>(&self) -> Uniform<T> {
        Uniform { value: MaybeUninit::uninit() }
    }

    /// The type of a local each loop computes again from its lane (`LaneType`): no storage.
    #[inline(always)]
    pub fn lane_type<T>(&self) -> LaneType<T> {
        LaneType(PhantomData)
    }

    /// Whether some lane has not returned: a uniform condition or run is evaluated once, and only
    /// then (with no lane left, a loop's uniform condition would read values nobody set, and
    /// run on: the vote of no lane is `false`).
    #[inline(always)]
    pub fn live(&self) -> bool {
        self.state.retired.get() < self.group.threads
    }

    /// The `Ctx` a uniform condition or run reads its workgroup values from (`group_id_x()`,
    /// ...): the first lane that has not returned (in cpu-sim the invocation a panic there names).
    #[inline(always)]
    pub fn uniform_ctx(&self) -> Ctx<'a> {
        let t = if self.state.retired.get() == 0 { 0 } else { (0..self.group.threads).find(|&t| !self.retired(t)).unwrap_or(0) };
        #[cfg(feature = "sim")]
        self.group.current.set(t);
        // Lane 0's coordinates are known: `local_coords` (three integer divisions, not inlined)
        // at each uniform condition and run was a tenth of scan_add's time per workgroup.
        if t == 0 {
            return self.first;
        }
        self.first.at(t, self.group.local_coords(t))
    }

    /// A condition every lane gives (`Vote::cast`) before a loop or branch with a barrier.
    #[inline(always)]
    pub fn vote(&self) -> Vote {
        Vote { first: None, split: None }
    }

    /// The exchange of one subgroup shuffle statement (`Stash`): each lane puts its operand in
    /// the loop before the shuffle's barrier, and reads its source lane's in the loop after.
    #[inline(always)]
    pub fn stash<T: Shuffle>(&self) -> Stash<T> {
        // Uninitialised (a `LaneVar`'s way): zeroing its 8 KiB at every shuffle of every workgroup
        // would cost more than the lanes' work between two shuffles.
        Stash {
            values: [const { MaybeUninit::uninit() }; MAX_LANES],
            source: [const { MaybeUninit::uninit() }; MAX_LANES],
            delta: 0,
            threads: self.group.threads,
        }
    }
}

/// One `ctx.subgroup_shuffle_down(value, delta)` of a `#[lanes]` body, split in two: every lane
/// `put`s its `value` (and where its result comes from) in the loop over the lanes before the
/// shuffle's barrier (`Lanes::barrier`, at the shuffle's line: a new epoch, as the fibers'
/// shuffle waits at one), and `get`s its source lane's value in the loop after. The same value
/// as `Ctx::subgroup_shuffle_down` on fibers: the lane `delta` above in its subgroup, its own
/// where that lane is past the subgroup's or the workgroup's end. A lane that returned before
/// it is a divergence at the barrier (every lane stops: no `get` reads a value not put).
///
/// Where the attribute proved `delta` the same in every lane (a uniform expression: warp_reduce's
/// `offset`), the shuffle is `put_uniform`, the barrier, `settle` once, and `get_uniform`: no
/// source lane per lane; `settle` moves each subgroup's values down by `delta` in place (the
/// lanes whose source is their own keep theirs), so lane `t`'s result is slot `t`, and the
/// loop after reads consecutive slots (one LLVM vectorises; the per-lane source was a gather,
/// half of warp_reduce's time after its loads).
pub struct Stash<T> {
    values: [MaybeUninit<T>; MAX_LANES],
    /// Each lane's source lane (below `threads`: a lane of the workgroup).
    source: [MaybeUninit<u32>; MAX_LANES],
    /// `put_uniform`'s delta (every lane's).
    delta: u32,
    threads: usize,
}

impl<T: Shuffle> Stash<T> {
    /// Lane `t` (local linear id) shuffles `value` down by `delta`.
    /// # Safety
    /// `t` is a lane of the workgroup.
    #[inline(always)]
    pub unsafe fn put(&mut self, t: usize, value: T, delta: u32) {
        // `Ctx::subgroup_shuffle_down`'s rule (`lane + delta < SUBGROUP_SIZE`, `t + delta <
        // threads`, in usize) in u32, without overflow: `delta < SUBGROUP_SIZE - lane` first,
        // then `t + delta` is below MAX_LANES + SUBGROUP_SIZE. 32-bit compares: the loop of puts
        // vectorises with SSE2 (64-bit ones it emulates).
        let t32 = t as u32;
        let lane = t32 % SUBGROUP_SIZE as u32;
        let from = if delta < SUBGROUP_SIZE as u32 - lane && t32 + delta < self.threads as u32 { t32 + delta } else { t32 };
        unsafe {
            *self.values.get_unchecked_mut(t) = MaybeUninit::new(value);
            *self.source.get_unchecked_mut(t) = MaybeUninit::new(from);
        }
    }

    /// Lane `t`'s result.
    /// # Safety
    /// Every lane of the workgroup `put` before (lane `t` did, and none had returned: else the
    /// barrier between retired them all).
    #[inline(always)]
    pub unsafe fn get(&self, t: usize) -> T {
        unsafe {
            let from = self.source.get_unchecked(t).assume_init() as usize;
            self.values.get_unchecked(from).assume_init()
        }
    }

    /// `put`, for a `delta` the same in every lane of the workgroup.
    /// # Safety
    /// `t` is a lane of the workgroup, and every lane's `delta` is this one.
    #[inline(always)]
    pub unsafe fn put_uniform(&mut self, t: usize, value: T, delta: u32) {
        unsafe { *self.values.get_unchecked_mut(t) = MaybeUninit::new(value) };
        self.delta = delta;
    }

    /// After the shuffle's barrier, once (`put_uniform`'s): each lane's slot now holds its
    /// result. `put`'s rule with one `delta`: lane `t` of the subgroup starting at `s` takes
    /// lane `t + delta` where that is below `end` (the subgroup's end or the workgroup's,
    /// whichever is first), else keeps its own: the slots `s + delta .. end` move down by
    /// `delta`, the last `delta` stay.
    /// # Safety
    /// Every lane `put_uniform` before the barrier (or the barrier retired them all: then the
    /// moves copy slots no lane reads).
    #[inline(always)]
    pub unsafe fn settle(&mut self) {
        let delta = self.delta as usize;
        if delta == 0 || delta >= SUBGROUP_SIZE {
            return;
        }
        let mut s = 0;
        while s < self.threads {
            let end = (s + SUBGROUP_SIZE).min(self.threads);
            if s + delta < end {
                // Overlapping, source above destination: `copy` (memmove) keeps every source.
                unsafe {
                    let base = self.values.as_mut_ptr();
                    core::ptr::copy(base.add(s + delta), base.add(s), end - s - delta);
                }
            }
            s += SUBGROUP_SIZE;
        }
    }

    /// Lane `t`'s result after `settle`.
    /// # Safety
    /// As `get`'s, with every lane's value `put_uniform` and the stash settled.
    #[inline(always)]
    pub unsafe fn get_uniform(&self, t: usize) -> T {
        unsafe { self.values.get_unchecked(t).assume_init() }
    }
}

/// The types a `#[lanes]` body keeps per lane across a barrier.
#[diagnostic::on_unimplemented(
    message = "`{Self}` lives across a barrier in a #[lanes] body, and only `Copy` values can",
    label = "kept per invocation across a barrier",
    note = "compute it again after the barrier, or remove #[lanes] to run the body on fibers"
)]
pub trait Carried: Copy {}
impl<T: Copy> Carried for T {}

/// One local of every lane of a workgroup.
pub struct LaneVar<T> {
    lanes: [MaybeUninit<T>; MAX_LANES],
}

impl<T: Carried> LaneVar<T> {
    /// # Safety
    /// `t` is a lane of the workgroup and its value was `set` before.
    #[inline(always)]
    pub unsafe fn get(&self, t: usize) -> T {
        unsafe { self.lanes.get_unchecked(t).assume_init() }
    }

    /// # Safety
    /// `t` is a lane of the workgroup.
    #[inline(always)]
    pub unsafe fn set(&mut self, t: usize, value: T) {
        unsafe { *self.lanes.get_unchecked_mut(t) = MaybeUninit::new(value) };
    }
}

/// One local of the workgroup, the same for every lane (`Lanes::uniform`): each lane of a run
/// sets it to the same value, later runs read it.
pub struct Uniform<T> {
    value: MaybeUninit<T>,
}

impl<T: Copy> Clone for Uniform<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: Copy> Copy for Uniform<T> {}

impl<T: Carried> Uniform<T> {
    /// # Safety
    /// Its value was `set` before.
    #[inline(always)]
    pub unsafe fn get(&self) -> T {
        unsafe { self.value.assume_init() }
    }

    #[inline(always)]
    pub fn set(&mut self, value: T) {
        self.value = MaybeUninit::new(value);
    }
}

/// Every lane's value of the condition of a loop or branch with a barrier in it.
pub struct Vote {
    first: Option<(usize, bool)>,
    split: Option<usize>,
}

impl Vote {
    #[inline(always)]
    pub fn cast(&mut self, t: usize, value: bool) {
        match self.first {
            None => self.first = Some((t, value)),
            Some((_, v)) if v != value && self.split.is_none() => self.split = Some(t),
            _ => {}
        }
    }

    /// The workgroup's value. Lanes that disagree are a divergence at the barrier inside
    /// (this call's location): reported by cpu-sim, and every lane stops.
    #[inline(always)]
    #[track_caller]
    pub fn result(&self, lanes: &Lanes) -> bool {
        match (self.first, self.split) {
            (None, _) => false,
            (Some((_, v)), None) => v,
            (Some((a, v)), Some(b)) => {
                let (inside, outside) = if v { (a, b) } else { (b, a) };
                self.diverged(lanes, inside, outside, Location::caller());
                false
            }
        }
    }

    #[cold]
    #[inline(never)]
    fn diverged(&self, lanes: &Lanes, inside: usize, outside: usize, at: &'static Location<'static>) {
        #[cfg(feature = "sim")]
        if let Some(checks) = lanes.group.checks() {
            if !lanes.group.diverged.replace(true) {
                // The other side as fibers report it: it did not reach the barrier (it returned
                // there, or waits at another one later): "returned without reaching it".
                checks.divergence(lanes.group, inside, at, outside, Status::Done);
            }
        }
        let _ = (inside, outside, at);
        lanes.retire_all();
    }
}

/// The type of a lane-pure local (see the macro's `closed_form`): not kept, each loop over the
/// lanes that reads it computes it again from its lane. The run that binds it `bind`s its value,
/// each loop that computes it again takes its `value` through this: one type for all of them, as
/// one `LaneVar<T>` had (a form's literals infer the type the local's own uses gave it).
pub struct LaneType<T>(PhantomData<fn() -> T>);

impl<T> Clone for LaneType<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for LaneType<T> {}

impl<T> LaneType<T> {
    #[inline(always)]
    pub fn bind(&self, value: &T) {
        let _ = value;
    }

    #[inline(always)]
    pub fn value(&self, value: T) -> T {
        value
    }

    /// `value`, hidden from the optimizer (a loop over the lanes whose inner loop names it).
    #[inline(always)]
    pub fn opaque(&self, value: T) -> T {
        core::hint::black_box(value)
    }
}
