//! The executor: workgroups spread over worker threads (one per core, parked between launches:
//! `pool.rs`), and inside a workgroup every invocation its own execution context.
//!
//! A workgroup starts with invocation 0 called on the worker's own stack. If it returns without
//! reaching a barrier, the kernel has none in this workgroup (a GPU's barriers are reached by
//! every invocation of a workgroup or by none), and the rest run as a plain loop over the local
//! ids with the body inlined: no fiber, no bookkeeping per invocation, a loop the compiler can
//! optimise across invocations. If invocation 0 reaches a barrier, the workgroup turns into
//! fibers: invocation 0 stays suspended on the worker's stack, the others start on stacks of
//! their own, and each runs until it reaches a barrier or returns, then switches straight to the
//! next invocation that is ready (no scheduler in between: one switch per invocation per
//! barrier). The last one to stop ends the round: the barrier opens (all waiting at it), or the
//! workgroup is done (all returned), or — invocations waiting at different barriers, or some
//! returned while others wait — the barrier diverged: a `sim` build reports it, and the waiting
//! fibers are let go, so a divergent kernel never hangs the run.
//!
//! A `sim` build runs every invocation through the checked loop (as before the plain fast path):
//! invocations are called one after the other on the worker's stack until one reaches a barrier,
//! so a barrier reached by only some invocations is found and reported where it is. The plain
//! build, finding a barrier in an invocation after a barrier-free invocation 0 (a divergent
//! kernel, undefined on a GPU), lets it go at once.

use core::cell::{Cell, UnsafeCell};
use core::panic::Location;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::fiber::{self, Stacks};
use super::pool;
#[cfg(feature = "sim")]
use super::sim;

#[cfg(feature = "sim")]
type ChecksPtr = *const sim::Checks;
#[cfg(not(feature = "sim"))]
type ChecksPtr = *const ();

#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Status {
    Ready,
    Waiting(&'static Location<'static>),
    Done,
}

/// Starts the fiber of one invocation of a workgroup (`spawn`; a `#[lanes]` copy's `no_fibers`).
type Spawn = unsafe fn(&Group, usize);

/// Calls the kernel's closure (behind a thin pointer) with one invocation's `Ctx`: `call_body::<F>`.
type CallBody = unsafe fn(*const u8, Ctx);

/// One workgroup's state, reused by a worker thread for every workgroup it runs. Only that
/// thread touches it (its fibers run one at a time), hence `Cell`s and no locks.
pub struct Group {
    pub(crate) size: [u32; 3],
    pub(crate) grid: [u32; 3],
    pub(crate) threads: usize,
    pub(crate) coords: Cell<[u32; 3]>,
    pub(crate) linear: Cell<u64>,
    pub(crate) epoch: Cell<u32>,
    /// The invocation running now (set where fibers switch and, in a `sim` build, by the loop).
    pub(crate) current: Cell<usize>,
    pub(crate) status: Vec<Cell<Status>>,
    /// Each invocation's fiber: where it goes on (`fiber::Context`), its stack pointer 0 where
    /// none is started in this launch.
    ctx: Vec<fiber::Context>,
    slot_next: Vec<Cell<u32>>,
    slots_used: Cell<u32>,
    /// Each invocation's value in a subgroup shuffle (its bits), read by its neighbours: two
    /// halves of `threads`, used by turns (`Ctx::subgroup_shuffle_down`).
    exchange: Vec<Cell<u64>>,
    slots: UnsafeCell<Vec<Slot>>,
    #[allow(dead_code)]
    checks: ChecksPtr,
    #[cfg(feature = "sim")]
    pub(crate) diverged: Cell<bool>,
    /// Location ids of workgroup-memory accesses (`sim`), cached per worker.
    #[cfg(feature = "sim")]
    pub(crate) location_ids: sim::FastIds,
    /// The launch's generation (`sim::Checks::generation`; 0 without checks), read by the global
    /// shadow's accesses from fibers.
    #[cfg(feature = "sim")]
    pub(crate) generation: u64,
    /// The stamp of this workgroup's first epoch in the shared arrays' shadows (`sim::SharedShadow`,
    /// `Group::begin_shared`): above every stamp of the worker's earlier workgroups.
    #[cfg(feature = "sim")]
    pub(crate) shared_base: Cell<u32>,
    /// `shared_base + epoch`, kept beside `epoch` (`next_epoch`): one load per shared access.
    #[cfg(feature = "sim")]
    pub(crate) shared_stamp: Cell<u32>,
    /// The run of atomics on one shared array in this epoch, kept apart (`sim::AtomicRun`).
    #[cfg(feature = "sim")]
    pub(crate) atomic_run: Cell<sim::AtomicRun>,
    /// Atomics on workgroup memory in an epoch: its stamp and their count (`sim::RUN_AFTER`).
    #[cfg(feature = "sim")]
    pub(crate) atomics_seen: Cell<(u32, u32)>,
    /// Each element's last atomic invocation + 1 in the run (`AtomicRun::last`).
    #[cfg(feature = "sim")]
    pub(crate) run_last: UnsafeCell<Vec<u16>>,
    /// Whether this workgroup runs as fibers now (an invocation reached a barrier).
    converted: Cell<bool>,
    /// Whether `status` is kept at barriers in this workgroup: not while none of its invocations
    /// has returned and (`sim`) all of each round wait at one barrier (`wait`); then a round's end
    /// lets every invocation go (`open_barrier`). A debug build keeps every status (the debugger
    /// reads them at each switch).
    #[cfg(not(feature = "debug"))]
    kept: Cell<bool>,
    /// The barrier that this round's invocations wait at while `kept` is not set (`sim`: they
    /// are told apart; invocation 0, first in every such round, sets it).
    #[cfg(all(feature = "sim", not(feature = "debug")))]
    round_at: Cell<&'static Location<'static>>,
    /// The invocation that reached the first barrier on the worker's stack.
    home: Cell<usize>,
    /// Whether this workgroup changed `status` (it reached a barrier, an invocation of a
    /// `#[lanes]` copy returned): the next one resets every invocation's status and `slot_next`.
    /// A barrier-free workgroup without shared arrays (saxpy's) then costs nothing per invocation
    /// but the body: the reset was a third of it.
    pub(crate) dirty: Cell<bool>,
    /// One past the last invocation that asked for a shared array (`Ctx::shared`) since `begin`:
    /// the `slot_next` entries to reset when nothing else changed. A `#[lanes]` copy asks as
    /// invocation 0 only; marking the whole workgroup dirty for it reset every invocation's
    /// status and slot at each workgroup (a sixth of scan_add's CPU time).
    asked: Cell<usize>,
    /// The worker's stack, parked while the fibers finish a converted workgroup.
    resume: fiber::Context,
    /// Starts the fiber of invocation `u` (`spawn`, the same for every kernel body).
    spawn: Cell<Option<Spawn>>,
    spawn_data: Cell<[*const u8; 2]>,
    /// Where the entry called `Kernel::run` (a divergence report's "returned" side).
    #[allow(dead_code)]
    pub(crate) entry_at: &'static Location<'static>,
}

/// A workgroup-shared array's storage (16-byte aligned; zeroed when allocated, and again for every
/// workgroup in a `sim` build only: `Ctx::shared`).
pub(crate) struct Slot {
    data: Vec<u128>,
    #[allow(dead_code)]
    pub(crate) decl: &'static Location<'static>,
    #[cfg(feature = "sim")]
    pub(crate) shadow: UnsafeCell<sim::SharedShadow>,
}

/// Invocations per subgroup on the host (see `Ctx::subgroup_size`).
pub const SUBGROUP_SIZE: usize = 32;

/// An invocation: its indices, the barrier, and workgroup-shared arrays. The workgroup's
/// coordinates and sizes are copied in (not read through `group` at each use): the body's stores
/// could alias `Group`'s cells as far as the optimizer knows, and values it must reload at every
/// invocation keep a workgroup's loop from being optimised across invocations.
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    local: [u32; 3],
    /// The linear local id (x fastest).
    t: u32,
    coords: [u32; 3],
    size: [u32; 2],
    grid: [u32; 2],
    linear: usize,
    group: &'a Group,
}

impl<'a> Ctx<'a> {
    /// Invocation `t` (local coordinates `local`) of the workgroup `group` runs now.
    #[inline(always)]
    fn of(group: &'a Group, t: usize, local: [u32; 3]) -> Ctx<'a> {
        Ctx {
            local,
            t: t as u32,
            coords: group.coords.get(),
            size: [group.size[0], group.size[1]],
            grid: [group.grid[0], group.grid[1]],
            linear: group.linear.get() as usize,
            group,
        }
    }

    /// Invocation `t` of `group` as a lane of a `#[lanes]` body (`lanes.rs`).
    #[cfg_attr(feature = "debug", allow(dead_code))]
    #[inline(always)]
    pub(crate) fn lane(group: &'a Group, t: usize, local: [u32; 3]) -> Ctx<'a> {
        Ctx::of(group, t, local)
    }

    /// This workgroup's invocation `t`, at `local`.
    #[inline(always)]
    pub(crate) fn at(&self, t: usize, local: [u32; 3]) -> Ctx<'a> {
        Ctx { local, t: t as u32, ..*self }
    }

    #[inline(always)]
    pub fn local_id_x(&self) -> usize { self.local[0] as usize }
    #[inline(always)]
    pub fn local_id_y(&self) -> usize { self.local[1] as usize }
    #[inline(always)]
    pub fn local_id_z(&self) -> usize { self.local[2] as usize }
    #[inline(always)]
    pub fn group_id_x(&self) -> usize { self.coords[0] as usize }
    #[inline(always)]
    pub fn group_id_y(&self) -> usize { self.coords[1] as usize }
    #[inline(always)]
    pub fn group_id_z(&self) -> usize { self.coords[2] as usize }
    #[inline(always)]
    pub fn group_size_x(&self) -> usize { self.size[0] as usize }
    #[inline(always)]
    pub fn group_size_y(&self) -> usize { self.size[1] as usize }
    #[inline(always)]
    pub fn num_groups_x(&self) -> usize { self.grid[0] as usize }
    #[inline(always)]
    pub fn num_groups_y(&self) -> usize { self.grid[1] as usize }
    /// The linear workgroup index (x fastest).
    #[inline(always)]
    pub fn group_linear(&self) -> usize { self.linear }
    #[inline(always)]
    pub fn global_id_x(&self) -> usize { self.group_id_x() * self.group_size_x() + self.local_id_x() }
    #[inline(always)]
    pub fn global_id_y(&self) -> usize { self.group_id_y() * self.group_size_y() + self.local_id_y() }

    /// Wait until every invocation of the workgroup arrives here; workgroup memory written
    /// before is visible after.
    ///
    /// Inlined as a call of `barrier_wait` with the workgroup and the invocation as arguments:
    /// the kernel keeps them in registers, where `&self` had `barrier_wait` load them from the
    /// kernel's frame first, two loads more on the chain of dependent loads that a switch is. Not
    /// inlined in `workbench debug`'s build: the debugger stops in this function (a breakpoint on
    /// it, and a stop in it shown at its caller's line), and `next` steps over its call.
    #[cfg_attr(not(feature = "debug"), inline(always))]
    #[cfg_attr(feature = "debug", inline(never))]
    #[track_caller]
    pub fn barrier(&self) {
        barrier_wait(self.group, self.t as usize, Location::caller());
    }

    /// Invocations per subgroup on the host: a CUDA warp's 32 (a GPU's may differ: WGSL's
    /// `subgroup_size` is 4 to 128; kernels read this instead of assuming one).
    #[inline(always)]
    pub fn subgroup_size(&self) -> usize {
        SUBGROUP_SIZE
    }

    /// This invocation's lane in its subgroup: subgroups are runs of `subgroup_size` consecutive
    /// linear local ids (x fastest), as CUDA's warps are.
    #[inline(always)]
    pub fn subgroup_invocation_id(&self) -> usize {
        self.t as usize % SUBGROUP_SIZE
    }

    /// The `value` of the lane `delta` above this one in the subgroup (CUDA `__shfl_down_sync`,
    /// WGSL `subgroupShuffleDown`); this invocation's own `value` where that lane is past the
    /// subgroup's end (GPUs leave it undefined there: a kernel must not use it).
    ///
    /// On the host the invocations of a workgroup run one at a time, so a shuffle is an exchange
    /// through the workgroup with a barrier between the writes and the reads: every invocation
    /// of the workgroup must call it (stricter than a GPU, where the subgroup's lanes suffice);
    /// one that does not is a barrier divergence at this call in cpu-sim.
    ///
    /// One barrier, not a second after the reads: the exchange has two halves, and a shuffle
    /// writes the half of the barrier epoch it starts in, so the next shuffle (an epoch later at
    /// least) writes the other half, or this one again only after a barrier that every lane
    /// reaches after its read. warp_reduce's barriers: 11 -> 6 an invocation.
    #[track_caller]
    pub fn subgroup_shuffle_down<T: super::Shuffle>(&self, value: T, delta: u32) -> T {
        let group = self.group;
        let me = self.t as usize;
        let half = &group.exchange[(group.epoch.get() as usize & 1) * group.threads..][..group.threads];
        half[me].set(value.to_word());
        self.barrier();
        let lane = me % SUBGROUP_SIZE;
        let source = me + delta as usize;
        let word = if lane + (delta as usize) < SUBGROUP_SIZE && source < group.threads {
            half[source].get()
        } else {
            half[me].get()
        };
        T::from_word(word)
    }

    /// Record `value` under `name` if this is the invocation a cpu-sim run traces (workgroup and
    /// local id chosen at launch: `workbench run --trace GX,GY:LX,LY`); in order, with this line
    /// and the barriers passed. A no-op in a plain host build and on every GPU target.
    #[inline(always)]
    #[track_caller]
    pub fn trace<T: crate::Trace>(&self, name: &'static str, value: T) {
        #[cfg(feature = "sim")]
        if let Some(checks) = self.group.checks() {
            if checks.tracing(self.group.coords.get(), self.local) {
                checks.trace(name, value.traced(), self.group.epoch.get(), Location::caller());
            }
        }
        #[cfg(not(feature = "sim"))]
        let _ = (name, value);
    }

    /// This workgroup's shared array of `N` elements: the k-th `shared` an invocation asks for is
    /// the workgroup's k-th array (every invocation declares the same arrays in the same order,
    /// as a GPU kernel's `__shared__` / `.shared` / `#[spirv(workgroup)]` declarations are).
    #[track_caller]
    pub fn shared<T: crate::Element, const N: usize>(&self) -> super::Shared<'a, T, N> {
        let group = self.group;
        let me = self.t as usize;
        if me >= group.asked.get() {
            group.asked.set(me + 1);
        }
        let k = group.slot_next[me].get();
        group.slot_next[me].set(k + 1);
        let bytes = N * core::mem::size_of::<T>();
        let slots = unsafe { &mut *group.slots.get() };
        if k >= group.slots_used.get() {
            // The first invocation to ask: this workgroup's array. The last workgroup's
            // storage when it is large enough (a new one, allocated and its shadow built, for
            // every workgroup was a tenth of cpu-sim's time on stencil2d, whose workgroups are
            // short once it runs as lanes).
            let words = bytes.div_ceil(16);
            // The declaration's line, read here: inside the closure `Location::caller()` would be
            // the closure's own (this file's), and the first workgroup's array would name another
            // declaration than the rest (one race reported twice, as two arrays).
            let decl = Location::caller();
            let new = || Slot {
                data: vec![0u128; words],
                decl,
                #[cfg(feature = "sim")]
                shadow: UnsafeCell::new(sim::SharedShadow::new(N)),
            };
            if (k as usize) < slots.len() {
                let old = &mut slots[k as usize];
                if old.data.len() >= words {
                    // Zeroed again only in a `sim` build (cpu-sim, the kernel tests, `workbench
                    // debug`: the values a reported read of unwritten memory gives stay the same
                    // from run to run). The plain build leaves what the worker's last workgroup
                    // wrote, as a GPU leaves what an earlier block left (a kernel must write
                    // workgroup memory before it reads it; cpu-sim reports one that does not):
                    // zeroing stencil2d's 4.6 KiB tile (sized for the largest workgroup) at each of
                    // 32768 workgroups was 7 % of the time of its tile load, a memset per workgroup.
                    #[cfg(feature = "sim")]
                    old.data.iter_mut().for_each(|w| *w = 0);
                    old.decl = decl;
                    #[cfg(feature = "sim")]
                    old.shadow.get_mut().reuse(N);
                } else {
                    *old = new();
                }
            } else {
                slots.push(new());
            }
            group.slots_used.set(k + 1);
        }
        let slot = &mut slots[k as usize];
        if slot.data.len() * 16 < bytes {
            panic!("gpu_kernel: shared array {k} is declared with different sizes by the invocations of a workgroup");
        }
        // cpu-sim: the handle holds the array's shadow (null without checks), as it holds the
        // data: an access reads it without going through the workgroup's slots (the slots' length
        // and the shadow's, reloaded after every store the checks make).
        #[cfg(feature = "sim")]
        let shadow = match group.checks() {
            None => core::ptr::null_mut(),
            Some(_) => slot.shadow.get_mut().entries_for(N, k),
        };
        super::Shared {
            ptr: slot.data.as_mut_ptr() as *mut T,
            slot: k,
            group,
            #[cfg(feature = "sim")]
            shadow,
        }
    }
}

impl Group {
    fn new(grid: [u32; 3], size: [u32; 3], checks: ChecksPtr, entry_at: &'static Location<'static>) -> Group {
        let threads = (size[0] * size[1] * size[2]) as usize;
        Group {
            size,
            grid,
            threads,
            coords: Cell::new([0; 3]),
            linear: Cell::new(0),
            epoch: Cell::new(0),
            current: Cell::new(0),
            status: (0..threads).map(|_| Cell::new(Status::Done)).collect(),
            ctx: (0..threads).map(|_| fiber::Context::new()).collect(),
            slot_next: (0..threads).map(|_| Cell::new(0)).collect(),
            slots_used: Cell::new(0),
            exchange: (0..2 * threads).map(|_| Cell::new(0)).collect(),
            slots: UnsafeCell::new(Vec::new()),
            checks,
            #[cfg(feature = "sim")]
            diverged: Cell::new(false),
            #[cfg(feature = "sim")]
            location_ids: sim::NO_IDS,
            #[cfg(feature = "sim")]
            generation: unsafe { checks.as_ref() }.map_or(0, |checks| checks.generation),
            #[cfg(feature = "sim")]
            shared_base: Cell::new(1),
            #[cfg(feature = "sim")]
            shared_stamp: Cell::new(1),
            #[cfg(feature = "sim")]
            atomic_run: Cell::new(sim::AtomicRun::NONE),
            #[cfg(feature = "sim")]
            atomics_seen: Cell::new((0, 0)),
            #[cfg(feature = "sim")]
            run_last: UnsafeCell::new(Vec::new()),
            converted: Cell::new(false),
            #[cfg(not(feature = "debug"))]
            kept: Cell::new(false),
            #[cfg(all(feature = "sim", not(feature = "debug")))]
            round_at: Cell::new(entry_at),
            home: Cell::new(0),
            dirty: Cell::new(true),
            asked: Cell::new(0),
            resume: fiber::Context::new(),
            spawn: Cell::new(None),
            spawn_data: Cell::new([core::ptr::null(); 2]),
            entry_at,
        }
    }

    /// The local coordinates of invocation `t` (x fastest).
    pub(crate) fn local_coords(&self, t: usize) -> [u32; 3] {
        local_coords(t, self.size)
    }

    /// Invocation `t`'s state for a debugger (`debug::gpu_kernel_debug_states`): 0 ready
    /// (not at a barrier), 1 waiting at the barrier of line `.1`, 2 returned; and the count.
    #[cfg(feature = "debug")]
    pub(crate) fn debug_state(&self, t: usize) -> (u32, u32) {
        match self.status[t].get() {
            Status::Ready => (0, 0),
            Status::Waiting(at) => (1, at.line()),
            Status::Done => (2, 0),
        }
    }

    #[cfg(feature = "debug")]
    pub(crate) fn threads(&self) -> usize {
        self.threads
    }

    #[cfg(feature = "sim")]
    #[inline(always)]
    pub(crate) fn checks(&self) -> Option<&sim::Checks> {
        unsafe { self.checks.as_ref() }
    }

    #[cfg(feature = "sim")]
    pub(crate) fn slot(&self, k: u32) -> &Slot {
        unsafe { &(&*self.slots.get())[k as usize] }
    }

    /// Every shared array's storage (for `sim::Group::restart_stamps`, between workgroups).
    #[cfg(feature = "sim")]
    pub(crate) fn slots_mut(&self) -> *mut Vec<Slot> {
        self.slots.get()
    }

    /// The workgroup's barrier opened: a new epoch.
    #[inline(always)]
    pub(crate) fn next_epoch(&self) {
        self.epoch.set(self.epoch.get() + 1);
        #[cfg(feature = "sim")]
        self.shared_stamp.set(self.shared_stamp.get().wrapping_add(1));
    }

    fn begin(&self, linear: u64) {
        let (gx, gy) = (self.grid[0] as u64, self.grid[1] as u64);
        self.coords.set([(linear % gx) as u32, ((linear / gx) % gy) as u32, (linear / (gx * gy)) as u32]);
        self.linear.set(linear);
        #[cfg(feature = "sim")]
        self.begin_shared();
        self.epoch.set(0);
        self.slots_used.set(0);
        self.converted.set(false);
        #[cfg(not(feature = "debug"))]
        self.kept.set(false);
        self.current.set(0);
        // A debug build marks every invocation's status as it returns.
        if self.dirty.replace(cfg!(feature = "debug")) {
            for t in 0..self.threads {
                self.status[t].set(Status::Ready);
                self.slot_next[t].set(0);
            }
        } else {
            for slot in &self.slot_next[..self.asked.get()] {
                slot.set(0);
            }
        }
        self.asked.set(0);
        #[cfg(feature = "sim")]
        self.diverged.set(false);
    }
}

/// `Ctx::barrier` of invocation `me` of `group`, at the kernel's line `at`. Its name says barrier:
/// the IR summary counts a host build's calls of such a symbol as its barriers (`ir_instructions`).
///
/// Every call in it is a tail call (the first barrier's work is out of line, `first_barrier`):
/// it saves no register of its own on the fiber's stack, and `fiber::switch`, reached by a jump,
/// resumes the next fiber straight in its kernel.
#[inline(never)]
fn barrier_wait(group: &Group, me: usize, at: &'static Location<'static>) {
    if !group.converted.get() {
        return first_barrier(group, me, at);
    }
    wait(group, me, at);
}

/// Invocation `me` of a workgroup that runs as fibers waits at the barrier at `at`.
#[inline(always)]
fn wait(group: &Group, me: usize, at: &'static Location<'static>) {
    // Unchecked indexing: `me` is an invocation of this workgroup, below `threads`, the length
    // of `status` and `ctx` (the bounds checks were a fifth of the barrier's instructions).
    let save = unsafe { group.ctx.get_unchecked(me) }.ptr();
    // None returned yet in this workgroup (and, cpu-sim, all of this round so far at this
    // barrier): the invocations run each round in order (invocation 0 first, `open_barrier`)
    // and all stop at a barrier, so the next one is ready; no status is written or read
    // (`mark_returned` writes those of the invocations waiting when the first returns, and
    // `other_barrier` when one waits at another barrier). A store and a load less at every
    // barrier, and no reset of every status at the end of a round: reduction 52 -> 48 ms,
    // softmax 205 -> 184 ms a launch (one worker, plain build).
    #[cfg(not(feature = "debug"))]
    if !group.kept.get() {
        // cpu-sim tells barriers apart: a pointer compare with the round's barrier.
        #[cfg(feature = "sim")]
        if !core::ptr::eq(group.round_at.get(), at) {
            return other_barrier(group, me, at, save);
        }
        return go_on(group, me, save);
    }
    unsafe { group.status.get_unchecked(me) }.set(Status::Waiting(at));
    stop(group, me, save);
}

/// Invocation `me` waits at the round's barrier while statuses are not kept: the next one is
/// ready (`wait`), or `me` is the round's last.
#[cfg(not(feature = "debug"))]
#[inline(always)]
fn go_on(group: &Group, me: usize, save: *mut fiber::Context) {
    let next = me + 1;
    if next < group.threads {
        #[cfg(feature = "sim")]
        group.current.set(next);
        return switch_to(group, save, next);
    }
    stop_slow(group, me, save)
}

/// cpu-sim, statuses not kept: invocation `me` waits at `at`, another barrier than the round's
/// so far (`round_at`). Invocation 0 starts the round (its barrier is the round's), and another
/// `Location` of the same line is the same barrier; anything else is a divergence: those before
/// `me` in this round wait at `round_at`, and from here every status is kept, so the round's end
/// reports it as before (`open_barrier`).
#[cfg(all(feature = "sim", not(feature = "debug")))]
#[cold]
#[inline(never)]
fn other_barrier(group: &Group, me: usize, at: &'static Location<'static>, save: *mut fiber::Context) {
    let round_at = group.round_at.get();
    if me == 0 || round_at == at {
        group.round_at.set(at);
        return go_on(group, me, save);
    }
    keep_statuses(group, me);
    group.status[me].set(Status::Waiting(at));
    stop(group, me, save)
}

/// From now on `status` is kept: the invocations before `me` in this round (all of them wait at
/// the round's barrier: `wait`) are marked so; those after it have not run in this round: ready.
#[cfg(not(feature = "debug"))]
#[cold]
#[inline(never)]
fn keep_statuses(group: &Group, me: usize) {
    // The plain build does not tell barriers apart (`open_barrier`): any line will do.
    #[cfg(not(feature = "sim"))]
    let at = group.entry_at;
    #[cfg(feature = "sim")]
    let at = group.round_at.get();
    for t in 0..me {
        group.status[t].set(Status::Waiting(at));
    }
    group.kept.set(true);
}

/// The first barrier a workgroup's invocation `me` reaches: the workgroup turns into fibers
/// (`convert`), or, in a plain build, a divergent barrier is let go.
#[cold]
#[inline(never)]
fn first_barrier(group: &Group, me: usize, at: &'static Location<'static>) {
    if cfg!(not(feature = "sim")) && me != 0 {
        // Plain build: invocation 0 returned without waiting, the rest run as a plain
        // loop; a barrier now is a divergent one: let go (see the module's comment).
        // Read here, not stored by the loop: a store to the workgroup in the loop kept
        // LLVM from hoisting the body's loads of its captures (saxpy 1.51 -> 1.01 ms).
        return;
    }
    group.converted.set(true);
    convert(group, me);
    wait(group, me, at);
}

/// The local coordinates of invocation `t` in a workgroup of `size` (x fastest).
#[inline(always)]
fn local_coords(t: usize, size: [u32; 3]) -> [u32; 3] {
    let t = t as u32;
    let (sx, sy) = (size[0], size[1]);
    [t % sx, (t / sx) % sy, t / (sx * sy)]
}

/// What a fiber needs to start invocation `local` (the body is the kernel's closure, behind a
/// thin pointer: `call`, monomorphized for it, knows its type).
struct Start {
    group: *const Group,
    t: usize,
    /// The local coordinates of invocation `t`, worked out once per launch (three integer
    /// divisions at every fiber start were a tenth of stencil2d's time).
    local: [u32; 3],
    body: *const u8,
    call: CallBody,
}

/// A fiber's life: invocation `t` of the workgroup running now, then, parked where it returned,
/// invocation `t` of the next workgroup that turns into fibers on this worker, and so on to the
/// launch's end (`convert` starts a fiber only once per launch: preparing 255 stacks and entering
/// each fiber afresh at every workgroup was a third of a one-barrier kernel's overhead).
///
/// Not generic: the body is called through `start.call` (`call_body::<F>`, the body inlined
/// there), one indirect call per invocation and workgroup beside a fiber's switches at every
/// barrier. Generic over the closure, this loop, `mark_returned` and `stop` (the switch to the
/// next invocation) and `spawn` were compiled again in every kernel crate's cpu build, after
/// every edit: 9-18 ms (6-11 %) of saxpy's CPU time
/// (docs/cpu-sim.md, "Edit loop, the fiber start compiled once").
extern "C" fn fiber_main(arg: *mut u8) -> ! {
    let start = unsafe { &*(arg as *const Start) };
    let group = unsafe { &*start.group };
    loop {
        unsafe { (start.call)(start.body, Ctx::of(group, start.t, start.local)) };
        mark_returned(group, start.t);
        // Resumed only when a later workgroup's invocation `t` is ready to run (a finished
        // invocation's status stays `Done` until `begin`).
        stop(group, start.t, group.ctx[start.t].ptr());
    }
}

/// The kernel-specific part of a launch, the only code monomorphized for each kernel body: the
/// invocations of one workgroup (`group`: the body inlined into their loop) and one invocation
/// on a fiber (`call`: the body inlined into `call_body`). The threads, the workgroup loop, the
/// fibers' start and loop (`spawn`, `fiber_main`) and the barrier rounds are compiled once, in
/// this crate: a kernel crate's cpu build (the edit → result loop's) compiles its body and
/// little else. With `std::thread::scope` monomorphized for each body, saxpy's `cargo build`
/// after a kernel edit took 0.27 s; now 0.14 s (benchmarks/kernel_crate_ab.py).
struct KernelCode {
    body: *const u8,
    group: unsafe fn(&Group, *const u8),
    spawn: Spawn,
    call: CallBody,
}

/// One invocation of the kernel's closure `F` (behind `body`), on its fiber (`fiber_main`).
unsafe fn call_body<F: Fn(Ctx) + Sync>(body: *const u8, ctx: Ctx) {
    unsafe { (*(body as *const F))(ctx) }
}

// The body is `Sync` (`run`'s bound); the pointer is only its address.
unsafe impl Sync for KernelCode {}

/// Every workgroup of `grid`, `size` invocations each, spread over `workers` threads (0: one per
/// core).
pub(crate) fn run<F: Fn(Ctx) + Sync>(
    grid: [u32; 3],
    size: [u32; 3],
    workers: u32,
    checks: ChecksPtr,
    body: &F,
    entry_at: &'static Location<'static>,
) {
    let kernel = KernelCode { body: body as *const F as *const u8, group: run_invocations::<F>, spawn, call: call_body::<F> };
    run_grid(grid, size, workers, checks, &kernel, entry_at);
}

/// Every workgroup of `grid` as one call of `body`, the host copy of a `#[lanes]` kernel body
/// (`lanes.rs`): the same workers, chunks and workgroup state as `run`, no fibers. (In
/// `workbench debug`'s build only for `testing::Grid::run_lanes`: its entries run fibers.)
pub(crate) fn run_lanes<L: Fn(&super::Lanes) + Sync>(
    grid: [u32; 3],
    size: [u32; 3],
    workers: u32,
    checks: ChecksPtr,
    body: &L,
    entry_at: &'static Location<'static>,
) {
    let kernel = KernelCode { body: body as *const L as *const u8, group: run_lanes_group::<L>, spawn: no_fibers, call: no_call };
    run_grid(grid, size, workers, checks, &kernel, entry_at);
}

unsafe fn run_lanes_group<L: Fn(&super::Lanes) + Sync>(group: &Group, body: *const u8) {
    let body = unsafe { &*(body as *const L) };
    let state = super::lanes::LanesState::new();
    let lanes = super::Lanes::new(group, &state);
    body(&lanes);
    lanes.check_ended();
}

/// A `#[lanes]` copy starts no fiber (`no_fibers`), so nothing calls its `KernelCode::call`.
unsafe fn no_call(_: *const u8, _: Ctx) {
    unreachable!("gpu_kernel: a #[lanes] copy has no fibers");
}

/// A `#[lanes]` body reaches no `Ctx::barrier` (the attribute refuses a `ctx` it cannot see).
unsafe fn no_fibers(_: &Group, _: usize) {
    panic!("gpu_kernel: a barrier outside the statements #[lanes] splits at");
}

/// One workgroup's invocations on the worker's stack (see the module's comment): invocation 0,
/// then, if it reached no barrier, the others as a plain loop (a `sim` build: one after the
/// other until one reaches a barrier).
unsafe fn run_invocations<F: Fn(Ctx) + Sync>(group: &Group, body: *const u8) {
    let body = unsafe { &*(body as *const F) };
    // Read once: the body is opaque to the optimizer, and `Group`'s cells could change under it.
    #[cfg(not(feature = "sim"))]
    let size = group.size;
    let first = Ctx::of(group, 0, [0; 3]);
    // One loop nest, the body inlined once (a copy per form cost the edit loop's build 19 %):
    // invocation 0 first decides (see the module's comment). The local ids are the loops'
    // counters, x innermost: in a 1-D workgroup `x` is the loop's induction variable, so an
    // index `group * size + x` is affine in it (a counter wrapping through `next_local` cost
    // saxpy's loop about 8 %). The first row runs in two spans of that one loop, `0..1` (invocation
    // 0) and `1..size[0]`, with the test for a barrier between spans, not in the loop: a test of
    // `t == 0` at every invocation cost saxpy 0.90 -> 0.73 ms and bitonic 1.71 -> 1.39 ms of CPU
    // time per launch (one worker). Only invocation 0 can convert the workgroup in a plain build
    // (`barrier`), so the test after later spans never finds it set.
    #[cfg(not(feature = "sim"))]
    {
        let mut row = 0u32;
        let (mut lo, mut hi) = (0u32, 1u32);
        for z in 0..size[2] {
            for y in 0..size[1] {
                loop {
                    for x in lo..hi {
                        body(Ctx { local: [x, y, z], t: row + x, ..first });
                    }
                    // A span runs to its end far more often than it ends: marked so, its loop
                    // is one LLVM expects to run long, the one loop the cpu build's range check
                    // elimination splits (`LOOP_FLAGS` in workbench/build/adapters/cpu.py: the
                    // kernel's `i < n` and the bounds checks out of the middle iterations, which
                    // then vectorise; saxpy 0.84 -> 0.26 ms of CPU time a launch).
                    core::hint::cold_path();
                    if group.converted.get() {
                        home_returned(group, 0);
                        return;
                    }
                    if hi == size[0] {
                        break;
                    }
                    (lo, hi) = (hi, size[0]);
                }
                lo = 0;
                row += size[0];
            }
        }
    }
    #[cfg(feature = "sim")]
    sim_loop(group, body, first);
}

/// cpu-sim's barrier-free loop (`run_invocations`): every invocation one after the other until
/// one reaches a barrier. Out of line, the closure a `&F` argument: LLVM then knows no store in
/// the loop changes the closure (a `&` to a type without interior mutability is `noalias
/// readonly`), so its captures stay in registers instead of being reloaded after every store
/// the checks make.
#[cfg(feature = "sim")]
#[inline(never)]
fn sim_loop<F: Fn(Ctx) + Sync>(group: &Group, body: &F, first: Ctx) {
    let size = group.size;
    let mut local = [0; 3];
    let (mut who, step) = sim::loop_who(group.generation, group.linear.get());
    for t in 0..group.threads {
        group.current.set(t);
        sim::running(who);
        who += step;
        #[cfg(feature = "debug")]
        super::debug::now_running(group, t);
        body(Ctx { local, t: t as u32, ..first });
        if group.converted.get() {
            home_returned(group, t);
            return;
        }
        // Only the debugger reads a barrier-free workgroup's statuses (`convert` marks those
        // before a first barrier returned): a store here, and a reset per workgroup, cost
        // cpu-sim's barrier-free loop about a tenth of its time (saxpy 9.4 -> 8.5 ms).
        #[cfg(feature = "debug")]
        group.status[t].set(Status::Done);
        local = next_local(local, size);
    }
}

/// The local coordinates after `local` (x fastest): counting, not dividing (a division per
/// invocation was 15 % of cpu-sim's time on saxpy). cpu-sim's loop only: the plain one counts in
/// a loop nest (a plain build would warn of an unused function in every user's build output).
#[cfg(feature = "sim")]
#[inline(always)]
fn next_local(mut local: [u32; 3], size: [u32; 3]) -> [u32; 3] {
    local[0] += 1;
    if local[0] == size[0] {
        local[0] = 0;
        local[1] += 1;
        if local[1] == size[1] {
            local[1] = 0;
            local[2] += 1;
        }
    }
    local
}

/// The invocation on the worker's stack (`home`) has returned after the workgroup turned into
/// fibers: the others run on, and the last to stop switches back here.
fn home_returned(group: &Group, me: usize) {
    mark_returned(group, me);
    stop(group, me, group.resume.ptr());
    // The home's barriers saved its context where fiber `me`'s was (a `sim` build's
    // home may be any invocation): that fiber is gone, start it afresh when next needed.
    group.ctx[me].clear();
}

/// The workgroup's first barrier, reached by invocation `me` on the worker's stack: the
/// invocations after it get fibers (those before it have returned).
#[cold]
#[inline(never)]
fn convert(group: &Group, me: usize) {
    group.home.set(me);
    group.dirty.set(true);
    // cpu-sim's loop ran the invocations before `me` to their end without marking them, and
    // told the checks which one runs (`sim::running`): from here the fibers' `current` says.
    #[cfg(feature = "sim")]
    {
        for t in 0..me {
            group.status[t].set(Status::Done);
        }
        // Some have returned: every status is kept from the start (`wait`).
        #[cfg(not(feature = "debug"))]
        if me > 0 {
            group.kept.set(true);
        }
        sim::fibers();
    }
    let spawn = group.spawn.get().expect("a worker sets spawn");
    for u in me + 1..group.threads {
        // A fiber of an earlier workgroup of this launch is parked at its loop's end, ready.
        if group.ctx[u].sp() == 0 {
            unsafe { spawn(group, u) };
        }
    }
}

/// Invocation `me` has stopped (at a barrier, or returned): switch to the next invocation ready
/// in this round, saving this one's context in `save`; the last to stop ends the round
/// (`open_barrier`). Returns when `me` may go on: its barrier opened, or `me` is the worker's
/// own invocation and the workgroup is done. Inlined into `barrier` (one frame less on each
/// fiber's stack: the stacks of a workgroup's fibers are its working set at every switch).
#[inline(always)]
fn stop(group: &Group, me: usize, save: *mut fiber::Context) {
    let next = me + 1;
    // The common case: the next invocation is ready (every one waits at the same barrier).
    // Unchecked indexing below `threads` (the length of `status` and `ctx`), as in `wait`.
    if next < group.threads && unsafe { group.status.get_unchecked(next) }.get() == Status::Ready {
        #[cfg(feature = "sim")]
        group.current.set(next);
        #[cfg(feature = "debug")]
        super::debug::now_running(group, next);
        switch_to(group, save, next);
        return;
    }
    stop_slow(group, me, save)
}

/// Switch to invocation `next` (ready), saving the one running now into `save`.
#[inline(always)]
fn switch_to(group: &Group, save: *mut fiber::Context, next: usize) {
    if next + 1 < group.threads {
        // The one after: its context and the top of its stack arrive while `next` runs, and the
        // context after that (`fiber::prefetch`; a prefetch never faults, past the end either).
        fiber::prefetch(group.ctx.as_ptr().wrapping_add(next + 2) as usize);
        fiber::prefetch(unsafe { group.ctx.get_unchecked(next + 1) }.sp());
    }
    unsafe { fiber::switch(save, group.ctx.get_unchecked(next).ptr()) };
}

/// Invocation `me` has returned. The first to return in a workgroup whose statuses are not kept
/// marks the invocations before it in this round as waiting: they stopped at a barrier, which
/// `wait` did not record (`keep_statuses`).
#[inline(always)]
fn mark_returned(group: &Group, me: usize) {
    #[cfg(not(feature = "debug"))]
    if !group.kept.get() {
        keep_statuses(group, me);
    }
    group.status[me].set(Status::Done);
}

#[inline(never)]
fn stop_slow(group: &Group, me: usize, save: *mut fiber::Context) {
    let mut next = me + 1;
    while next < group.threads && group.status[next].get() != Status::Ready {
        next += 1;
    }
    let next = if next < group.threads { Some(next) } else { open_barrier(group) };
    match next {
        Some(u) if u == me => {}
        Some(u) => {
            group.current.set(u);
            #[cfg(feature = "debug")]
            super::debug::now_running(group, u);
            unsafe { fiber::switch(save, group.ctx[u].ptr()) };
        }
        None if me == group.home.get() => {}
        None => unsafe { fiber::switch(save, group.resume.ptr()) },
    }
}

/// Every invocation has stopped: release those waiting at a barrier (the first of them runs
/// next), or None when all have returned. Waiting at different barriers, or some returned while
/// others wait, is a divergence: a `sim` build reports it; all waiting are let go.
#[inline(never)]
fn open_barrier(group: &Group) -> Option<usize> {
    #[cfg(not(feature = "debug"))]
    if !group.kept.get() {
        // Every invocation has stopped in this round and none has returned: all wait at a
        // barrier (cpu-sim: at one barrier, `other_barrier`), all go on, invocation 0 first.
        // Their statuses still say ready: `wait` writes none while they are not kept.
        group.next_epoch();
        #[cfg(feature = "sim")]
        group.current.set(0);
        return Some(0);
    }
    #[cfg(feature = "sim")]
    {
        let mut first: Option<(usize, &'static Location<'static>)> = None;
        let mut other: Option<(usize, Status)> = None;
        for t in 0..group.threads {
            match group.status[t].get() {
                Status::Waiting(loc) => match first {
                    None => first = Some((t, loc)),
                    Some((_, at)) if other.is_none() && at != loc => other = Some((t, Status::Waiting(loc))),
                    _ => {}
                },
                Status::Done => {
                    if other.is_none() {
                        other = Some((t, Status::Done));
                    }
                }
                Status::Ready => {}
            }
        }
        if let (Some((waiting, at)), Some((t, status))) = (first, other) {
            // Divergence: let the waiting go on (a GPU would hang or misbehave; this never hangs).
            if let Some(checks) = group.checks() {
                if !group.diverged.replace(true) {
                    checks.divergence(group, waiting, at, t, status);
                }
            }
        }
    }
    let mut first = None;
    for t in 0..group.threads {
        if let Status::Waiting(_) = group.status[t].get() {
            group.status[t].set(Status::Ready);
            first.get_or_insert(t);
        }
    }
    if first.is_some() {
        group.next_epoch();
        group.current.set(first.unwrap_or(0));
        #[cfg(feature = "debug")]
        super::debug::now_running(group, first.unwrap_or(0));
    }
    first
}

/// One launch's workgroups, handed out in chunks (`next`) to the launching thread and the pool's.
struct GridJob<'k> {
    grid: [u32; 3],
    size: [u32; 3],
    checks: usize,
    kernel: &'k KernelCode,
    entry_at: &'static Location<'static>,
    next: AtomicU64,
    total: u64,
    chunk: u64,
}

fn run_grid(
    grid: [u32; 3],
    size: [u32; 3],
    workers: u32,
    checks: ChecksPtr,
    kernel: &KernelCode,
    entry_at: &'static Location<'static>,
) {
    let total = grid[0] as u64 * grid[1] as u64 * grid[2] as u64;
    let threads = size[0] as usize * size[1] as usize * size[2] as usize;
    if total == 0 || threads == 0 {
        return;
    }
    if threads > 1024 {
        panic!("gpu_kernel: {threads} invocations per workgroup; GPUs allow at most 1024");
    }
    let workers = (if workers == 0 { cores() } else { workers as usize }).min(total as usize).max(1);
    // About 64 chunks per worker: one atomic per chunk, not per workgroup, and still a balanced end.
    let chunk = (total / (workers as u64 * 64)).clamp(1, 256);
    let job = GridJob { grid, size, checks: checks as usize, kernel, entry_at, next: AtomicU64::new(0), total, chunk };
    pool::run(workers - 1, &|wake| work(&job, wake));
}

/// Helpers are woken when the launching thread's estimate of the work left (its own time so far,
/// scaled by the workgroups left) is at least this: about what handing work to a parked thread
/// costs before it starts (a futex wake and a time slice on this VM), twice over, so sharing
/// what is left pays for itself.
const WORTH_SHARING: Duration = Duration::from_micros(40);

/// The cores, asked once per process: `available_parallelism` reads the cgroup's CPU quota
/// from /proc and /sys (open, read, statx, close: 40 µs a launch on this VM, as long as a whole
/// launch of a 256-element kernel).
fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

thread_local! {
    /// This thread's fiber stacks, kept from launch to launch (mapping them and their guard pages
    /// is a system call per stack).
    static STACKS: RefCell<Option<Stacks>> = const { RefCell::new(None) };
}

/// A worker's part of a launch: chunks of workgroups until none is left. The launching thread
/// (`wake`) starts alone with one workgroup, then after each chunk wakes the pool's helpers once
/// the work left is worth sharing (`WORTH_SHARING`): a small launch never pays for the hand-off,
/// a large one loses at most its first chunk's time on the helpers. Workgroups are independent,
/// so which thread runs which, and when, changes no result.
fn work(job: &GridJob, wake: Option<&pool::Wake>) {
    let group = Group::new(job.grid, job.size, job.checks as ChecksPtr, job.entry_at);
    let threads = group.threads;
    let kept = STACKS.with(|s| s.borrow_mut().take());
    // One stack per invocation (mapped lazily: untouched when no invocation reaches a barrier).
    let stacks = match kept {
        Some(stacks) if stacks.count() >= threads => stacks,
        _ => Stacks::new(threads.next_power_of_two().max(256)),
    };
    #[cfg(feature = "sim")]
    sim::enter_group(&group);
    let kernel = job.kernel;
    let starts: Vec<Start> =
        (0..threads).map(|t| Start { group: &group, t, local: group.local_coords(t), body: kernel.body, call: kernel.call }).collect();
    group.spawn.set(Some(kernel.spawn));
    group.spawn_data.set([&stacks as *const Stacks as *const u8, starts.as_ptr() as *const u8]);
    let started = wake.map(|_| Instant::now());
    let mut alone = wake;
    let mut take = if alone.is_some() { 1 } else { job.chunk };
    loop {
        let from = job.next.fetch_add(take, Ordering::Relaxed);
        if from >= job.total {
            break;
        }
        for linear in from..(from + take).min(job.total) {
            group.begin(linear);
            unsafe { (kernel.group)(&group, kernel.body) };
        }
        take = job.chunk;
        if let (Some(pool), Some(started)) = (alone, started) {
            let next = job.next.load(Ordering::Relaxed);
            if next >= job.total {
                break;
            }
            let left = started.elapsed().mul_f64((job.total - next) as f64 / next as f64);
            if left >= WORTH_SHARING && pool.wake() {
                alone = None;
            }
        }
    }
    #[cfg(feature = "sim")]
    sim::leave_group();
    STACKS.with(|s| *s.borrow_mut() = Some(stacks));
}

/// Start invocation `u`'s fiber (ready to run the body from its beginning). Never inlined: rustc
/// would otherwise hand this small function to every kernel crate to compile again (it is only
/// called through `KernelCode::spawn`).
#[inline(never)]
unsafe fn spawn(group: &Group, u: usize) {
    let [stacks, starts] = group.spawn_data.get();
    let stacks = unsafe { &*(stacks as *const Stacks) };
    let start = unsafe { (starts as *const Start).add(u) };
    unsafe { fiber::prepare(&group.ctx[u], stacks.top(u), fiber_main, start as *mut u8) };
}
