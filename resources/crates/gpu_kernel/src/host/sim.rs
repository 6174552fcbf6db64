//! The simulator's checks (`sim` feature): shadow state beside every written buffer and every
//! workgroup-shared array, and the findings they produce.
//!
//! - Workgroup memory: per element, who wrote and who read it since the workgroup's last
//!   barrier (`epoch`). Two invocations touching one element in one epoch, at least one writing,
//!   is a race; a read of an element no invocation of this workgroup wrote is reported too.
//!   A workgroup's fibers run on one thread, so this shadow needs no atomics.
//! - Global buffers (`Out`): per element, the last writer and up to two readers, packed as
//!   (workgroup, local id, epoch, location) in atomics, as workgroups run on several threads;
//!   while one invocation alone touched the element in one epoch, one word says it
//!   (`GlobalShadow::words`). Accesses of one workgroup separated by a barrier are ordered;
//!   anything else by two invocations, at least one writing, is a race, whatever order the
//!   threads ran in.
//! - Atomics (`atomic_add`) never race with each other; an atomic and a plain access of one
//!   element by two unordered invocations do (each element's last atomic is kept apart from its
//!   writer and readers: `SharedEntry::atomic`, `GlobalShadow::atomics`).
//! - Out-of-bounds indexes of any buffer or shared array (the access is skipped, a read gives 0).
//! - Barrier divergence (`exec::run_group`).
//!
//! Findings are grouped by (kind, array, the two source locations): the first occurrence keeps
//! its coordinates, later ones only count.

use core::cell::{Cell, RefCell};
use core::panic::Location;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

use super::exec::{Group, Status};

/// Which array an access touched.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum Array {
    /// A buffer, by its number among the manifest's buffer arguments.
    Buffer(u32),
    /// A workgroup-shared array, by declaration order, with where it was declared.
    Shared(u32, Loc),
    None,
}

/// A source location, compared by address (`#[track_caller]` locations are statics).
#[derive(Clone, Copy)]
pub struct Loc(pub &'static Location<'static>);
impl PartialEq for Loc {
    fn eq(&self, other: &Self) -> bool {
        core::ptr::eq(self.0, other.0)
    }
}
impl Eq for Loc {}
impl core::hash::Hash for Loc {
    fn hash<H: core::hash::Hasher>(&self, state: &mut H) {
        (self.0 as *const Location as usize).hash(state)
    }
}

/// One side of a finding: which invocation, doing what, where.
#[derive(Clone, Copy)]
pub struct Access {
    pub group: [u32; 3],
    pub local: [u32; 3],
    /// "read", "write", "atomic", "barrier" (waiting at one) or "return" (left the kernel).
    pub what: &'static str,
    pub at: &'static Location<'static>,
}

pub struct Finding {
    pub kind: &'static str,
    pub array: Array,
    pub index: Option<u64>,
    pub length: Option<u64>,
    pub first: Access,
    pub second: Option<Access>,
    pub count: u64,
}

/// One `Ctx::trace` call of the traced invocation.
pub struct TraceRecord {
    pub name: &'static str,
    pub value: super::Traced,
    pub epoch: u32,
    pub at: &'static Location<'static>,
}

/// Trace records kept per launch (a loop that traces more is cut there; `trace_dropped` counts).
const MAX_TRACE: usize = 4096;

/// Each finding reported, by kind, array and lines, to its place in the list: a repeat only counts
/// (`Finding.count`).
type SeenFindings = HashMap<(&'static str, Array, Loc, Option<Loc>), usize>;

pub struct Checks {
    /// This launch's number in the process (`LAUNCHES`) and its generation (`generation_of`):
    /// every shadow of the launch stamps its words with it.
    launch: u64,
    pub(crate) generation: u64,
    grid: [u32; 3],
    size: [u32; 3],
    /// The invocation traced (workgroup, local id), if any.
    traced: Option<([u32; 3], [u32; 3])>,
    pub(crate) traces: Mutex<Vec<TraceRecord>>,
    pub(crate) trace_dropped: AtomicU64,
    findings: Mutex<(Vec<Finding>, SeenFindings)>,
    // Boxed: each shadow's address is held by the launch's `Out` handles while the Vec grows.
    #[allow(clippy::vec_box)]
    shadows: Mutex<Vec<Box<GlobalShadow>>>,
    pub(crate) dropped: AtomicU64,
    /// The launch records writers (`debug::Writers`): the report lists the locations.
    pub(crate) writers: bool,
}

fn order(access: &Access) -> ([u32; 3], [u32; 3]) {
    let (g, l) = (access.group, access.local);
    ([g[2], g[1], g[0]], [l[2], l[1], l[0]])
}

/// Findings kept in full; later distinct ones are only counted (`dropped`).
const MAX_FINDINGS: usize = 64;

impl Checks {
    pub fn new(grid: [u32; 3], size: [u32; 3], traced: Option<([u32; 3], [u32; 3])>) -> Checks {
        let launch = LAUNCHES.fetch_add(1, Ordering::Relaxed) + 1;
        Checks {
            launch,
            generation: (launch - 1) % GEN_LIMIT + 1,
            grid,
            size,
            traced,
            traces: Mutex::new(Vec::new()),
            trace_dropped: AtomicU64::new(0),
            findings: Mutex::new((Vec::new(), HashMap::new())),
            shadows: Mutex::new(Vec::new()),
            dropped: AtomicU64::new(0),
            writers: false,
        }
    }

    pub fn is_tracing(&self) -> bool {
        self.traced.is_some()
    }

    /// Whether the invocation (workgroup, local id) is the one traced.
    #[inline(always)]
    pub fn tracing(&self, group: [u32; 3], local: [u32; 3]) -> bool {
        matches!(self.traced, Some((g, l)) if g == group && l == local)
    }

    #[cold]
    pub fn trace(&self, name: &'static str, value: super::Traced, epoch: u32, at: &'static Location<'static>) {
        let mut traces = self.traces.lock().unwrap();
        if traces.len() >= MAX_TRACE {
            self.trace_dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        traces.push(TraceRecord { name, value, epoch, at });
    }

    pub fn findings<R>(&self, read: impl FnOnce(&[Finding]) -> R) -> R {
        read(&self.findings.lock().unwrap().0)
    }

    pub fn global_shadow(&self, buffer: u32, len: usize, writers: super::debug::Writers) -> *const GlobalShadow {
        let mut shadow = GlobalShadow::take(self as *const Checks, self.launch, self.generation, buffer, len);
        shadow.writers = writers;
        *shadow.slow.get_mut() = writers.is_on();
        let ptr = &*shadow as *const GlobalShadow;
        self.shadows.lock().unwrap().push(shadow);
        ptr
    }

    #[cold]
    fn report(&self, kind: &'static str, array: Array, index: Option<u64>, length: Option<u64>, first: Access, second: Option<Access>) {
        let key = (kind, array, Loc(first.at), second.map(|s| Loc(s.at)));
        let mut guard = self.findings.lock().unwrap();
        let (list, seen) = &mut *guard;
        if let Some(&k) = seen.get(&key) {
            // Workgroups run on several threads: keep the occurrence of the lowest workgroup and
            // invocation, so a report does not depend on which thread got there first.
            let kept = &mut list[k];
            kept.count += 1;
            if order(&first) < order(&kept.first) {
                (kept.index, kept.length, kept.first, kept.second) = (index, length, first, second);
            }
            return;
        }
        if list.len() >= MAX_FINDINGS {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        seen.insert(key, list.len());
        list.push(Finding { kind, array, index, length, first, second, count: 1 });
    }

    fn coords(&self, linear: u64, local: u32) -> ([u32; 3], [u32; 3]) {
        let (gx, gy) = (self.grid[0] as u64, self.grid[1] as u64);
        let group = [(linear % gx) as u32, ((linear / gx) % gy) as u32, (linear / (gx * gy)) as u32];
        let (sx, sy) = (self.size[0], self.size[1]);
        (group, [local % sx, (local / sx) % sy, local / (sx * sy)])
    }

    /// The invocation running on this thread now.
    fn me(&self, what: &'static str, at: &'static Location<'static>) -> Access {
        WORKER.with(|w| {
            let group = unsafe { &*w.group.get() };
            Access { group: group.coords.get(), local: group.local_coords(group.current.get()), what, at }
        })
    }

    pub fn out_of_bounds(&self, array: Array, index: usize, len: usize, write: bool, at: &'static Location<'static>) {
        let me = self.me(if write { "write" } else { "read" }, at);
        self.report("out-of-bounds", array, Some(index as u64), Some(len as u64), me, None);
    }

    pub(crate) fn divergence(&self, group: &Group, waiting: usize, at: &'static Location<'static>, other: usize, status: Status) {
        let first = Access { group: group.coords.get(), local: group.local_coords(waiting), what: "barrier", at };
        let second = match status {
            Status::Waiting(loc) => Access { group: first.group, local: group.local_coords(other), what: "barrier", at: loc },
            // Where a returned invocation left the body is not recorded: the entry's `run` stands for it.
            _ => Access { group: first.group, local: group.local_coords(other), what: "return", at: group.entry_at },
        };
        self.report("barrier-divergence", Array::None, None, None, first, Some(second));
    }
}

impl Drop for Checks {
    fn drop(&mut self) {
        for shadow in self.shadows.get_mut().unwrap().drain(..) {
            GlobalShadow::give_back(shadow);
        }
    }
}

/// A direct-mapped cache of location ids: a kernel's accesses come from a handful of lines, and
/// a hash map lookup per access was most of the checks' cost.
const FAST_SLOTS: usize = 64;

/// Location ids by location address, direct-mapped (a worker thread's own: in `WORKER` and in
/// its `Group`, so workgroup-memory accesses, which have the group at hand, need no TLS lookup).
pub(crate) type FastIds = [Cell<(usize, u16)>; FAST_SLOTS];
#[allow(clippy::declare_interior_mutable_const)] // an initializer, copied fresh into each slot
pub(crate) const NO_IDS: FastIds = [const { Cell::new((0, 0)) }; FAST_SLOTS];

/// What a worker thread's accesses to global buffers read, in one thread-local (one TLS lookup
/// per access: in a cdylib each one is a call to `__tls_get_addr`).
struct Worker {
    /// The workgroup this worker thread runs (the fibers' accesses find their invocation here).
    group: Cell<*const Group>,
    /// The invocation the barrier-free loop runs now, `pack`ed (the launch's generation, workgroup,
    /// local id, epoch 0; no location), set by the loop for each invocation (`running`); 0 elsewhere
    /// (fibers, a workgroup past `GROUP_LIMIT`): `whoami` then reads the workgroup's state. One
    /// load per access instead of four and the packing.
    who: Cell<u64>,
    fast: FastIds,
    /// Pair ids by (read, write) location ids (`pair_id`), direct-mapped.
    pairs: [Cell<(u32, u16)>; PAIR_SLOTS],
}

const PAIR_SLOTS: usize = 16;

thread_local! {
    static WORKER: Worker = const {
        Worker { group: Cell::new(core::ptr::null()), who: Cell::new(0), fast: NO_IDS, pairs: [const { Cell::new((0, 0)) }; PAIR_SLOTS] }
    };
    /// Location ids of this thread (a cache of `LOCATIONS`).
    static LOCAL_IDS: RefCell<HashMap<usize, u16>> = RefCell::new(HashMap::new());
}

pub(crate) fn enter_group(group: &Group) {
    WORKER.with(|w| w.group.set(group));
}

pub(crate) fn leave_group() {
    WORKER.with(|w| {
        w.group.set(core::ptr::null());
        w.who.set(0);
    });
}

/// `running`'s argument for invocation 0 of the workgroup `linear` of a launch of generation
/// `generation`, and what to add for each next invocation (0 and 0: past `GROUP_LIMIT`, no checks).
#[inline(always)]
pub(crate) fn loop_who(generation: u64, linear: u64) -> (u64, u64) {
    if linear < GROUP_LIMIT { (pack(generation, linear, 0, 0, 0), 1 << 22) } else { (0, 0) }
}

/// The barrier-free loop runs the invocation `who` (`loop_who`).
#[inline(always)]
pub(crate) fn running(who: u64) {
    WORKER.with(|w| w.who.set(who));
}

/// A `#[lanes]` workgroup runs on this thread from now on, in the epoch of `who` (lane 0's
/// `running` word, `loop_who` / `lane_who`; 0: no checks): the thread's word is that, marked
/// `LANES`, and the lane running is the workgroup's `current` (`Lanes::ctx` sets it). Set at the
/// workgroup's start and at each barrier, not for each lane of each loop: that store (and its
/// reload of lane 0's word) in every lane kept warp_reduce's loads a loop of eight instructions
/// an element, with no global access in it to read it.
#[inline(always)]
pub(crate) fn lanes_running(who: u64) {
    running(if who == 0 { 0 } else { who | LANES });
}

/// In `Worker::who`: a `#[lanes]` workgroup's lane 0 (`lanes_running`). A bit no `pack`ed
/// invocation has (`SPILL`'s, only ever in `GlobalShadow::words`).
const LANES: u64 = SPILL;

/// The word of the lane running (`current`, as `Lanes::ctx` set it) of the `#[lanes]`
/// workgroup whose lane 0 `who` is (`LANES` marked): lane 0's word with the local id added
/// (`loop_who`'s step).
#[inline(always)]
fn lane_running(w: &Worker, who: u64) -> u64 {
    let group = unsafe { &*w.group.get() };
    (who & !LANES) + ((group.current.get() as u64) << 22)
}

/// `running`'s argument for lane `t` of a `#[lanes]` workgroup, in the workgroup's epoch now.
#[inline(always)]
pub(crate) fn lane_who(group: &Group, t: usize) -> u64 {
    let linear = group.linear.get();
    if linear < GROUP_LIMIT { pack(group.generation, linear, t, group.epoch.get(), 0) } else { 0 }
}

/// The workgroup turned into fibers: accesses read their invocation from it (`whoami`).
pub(crate) fn fibers() {
    WORKER.with(|w| w.who.set(0));
}

/// The invocation running on this thread and the location id of `at`, `pack`ed with the launch's
/// generation (`Checks::generation`: one for every shadow of the launch); 0 outside a workgroup or past `GROUP_LIMIT` (no checks). `INLINE`: the fallback from the
/// workgroup inlined (atomics, mostly in fibers); else out of line (plain accesses: inlined, it
/// grew the barrier-free loop, bitonic 4.7 -> 5.3 ms of CPU time per launch).
#[inline(always)]
fn whoami<const INLINE: bool>(at: &'static Location<'static>) -> u64 {
    WORKER.with(|w| {
        let who = w.who.get();
        let who = match (who, INLINE) {
            (0, true) => group_who(w),
            (0, false) => who_in_group(w),
            _ => who,
        };
        if who == 0 {
            return 0;
        }
        let who = if who & LANES != 0 { lane_running(w, who) } else { who };
        who | fast_location_id(w, at) as u64
    })
}

#[cold]
#[inline(never)]
fn who_in_group(w: &Worker) -> u64 {
    group_who(w)
}

/// `whoami` from the workgroup's state (fibers, or outside the barrier-free loop).
#[inline(always)]
fn group_who(w: &Worker) -> u64 {
    let group = w.group.get();
    if group.is_null() {
        return 0;
    }
    let group = unsafe { &*group };
    let linear = group.linear.get();
    if linear >= GROUP_LIMIT {
        return 0;
    }
    pack(group.generation, linear, group.current.get(), group.epoch.get(), 0)
}

/// Launches with checks in this process so far (`Checks::launch`).
static LAUNCHES: AtomicU64 = AtomicU64::new(0);

/// Every location an access came from, by id (0: none). At most `LOCATION_LIMIT` distinct
/// locations (the global shadow keeps 12 bits of it).
static LOCATIONS: Mutex<Vec<&'static Location<'static>>> = Mutex::new(Vec::new());
const NO_LOCATION: u16 = 0;

#[inline(always)]
fn fast_location_id(w: &Worker, at: &'static Location<'static>) -> u16 {
    cached_location_id(&w.fast, at)
}

#[inline(always)]
fn cached_location_id(fast: &FastIds, at: &'static Location<'static>) -> u16 {
    let key = at as *const Location as usize;
    let slot = (key >> 3) % FAST_SLOTS;
    let (k, id) = fast[slot].get();
    if k == key {
        return id;
    }
    let id = location_id_slow(at);
    fast[slot].set((key, id));
    id
}

#[cold]
fn location_id_slow(at: &'static Location<'static>) -> u16 {
    let key = at as *const Location as usize;
    LOCAL_IDS.with(|ids| {
        if let Some(&id) = ids.borrow().get(&key) {
            return id;
        }
        let mut all = LOCATIONS.lock().unwrap();
        let id = match all.iter().position(|l| core::ptr::eq(*l, at)) {
            Some(k) => (k + 1) as u16,
            None if all.len() < LOCATION_LIMIT => {
                all.push(at);
                all.len() as u16
            }
            None => NO_LOCATION,
        };
        ids.borrow_mut().insert(key, id);
        id
    })
}

/// The (read, write) location ids of each pair id (`read << 11 | write`; 0: none): the word of an
/// element one invocation read and wrote holds both locations as one id (`GlobalShadow::words`).
static PAIRS: [AtomicU32; LOCATION_LIMIT + 1] = [const { AtomicU32::new(0) }; LOCATION_LIMIT + 1];
static PAIR_COUNT: Mutex<usize> = Mutex::new(0);

/// The pair id of a read at location id `read` and a write at `write` (0: none left: the
/// element's shadow spills instead).
#[inline(always)]
fn pair_id(read: u16, write: u16) -> u16 {
    let key = (read as u32) << 11 | write as u32;
    WORKER.with(|w| {
        // By the write's location id (consecutive ids: a kernel's writes seldom share a slot).
        let slot = &w.pairs[key as usize % PAIR_SLOTS];
        let (k, id) = slot.get();
        if k == key && id != 0 {
            return id;
        }
        let id = pair_id_slow(key);
        slot.set((key, id));
        id
    })
}

#[cold]
fn pair_id_slow(key: u32) -> u16 {
    if key == 0 {
        return 0;
    }
    let mut count = PAIR_COUNT.lock().unwrap();
    if let Some(k) = PAIRS[1..=*count].iter().position(|p| p.load(Ordering::Relaxed) == key) {
        return (k + 1) as u16;
    }
    if *count >= LOCATION_LIMIT {
        return 0;
    }
    *count += 1;
    PAIRS[*count].store(key, Ordering::Relaxed);
    *count as u16
}

/// The (read, write) location ids of pair `id`.
#[inline(always)]
fn pair_of(id: u16) -> (u16, u16) {
    let mut key = PAIRS[id as usize & LOCATION_LIMIT].load(Ordering::Relaxed);
    if key == 0 {
        key = pair_seen(id);
    }
    ((key >> 11) as u16, (key & 0x7FF) as u16)
}

/// `pair_of` for an id another thread made and this one does not see yet (the word that held
/// it was a relaxed store): the lock orders it after the id's making.
#[cold]
fn pair_seen(id: u16) -> u32 {
    let _made = PAIR_COUNT.lock().unwrap();
    PAIRS[id as usize & LOCATION_LIMIT].load(Ordering::Relaxed)
}

/// Every location with an id, in id order (id k + 1 at k): the report's `locations`.
pub(crate) fn locations() -> Vec<&'static Location<'static>> {
    LOCATIONS.lock().unwrap().clone()
}

fn location_of(id: u16) -> &'static Location<'static> {
    let all = LOCATIONS.lock().unwrap();
    all.get((id as usize).wrapping_sub(1)).copied().unwrap_or(Location::caller())
}

// ------------------------------------------------------------------------ workgroup memory

/// One element's shadow in a workgroup-shared array: two words, 16 bytes aligned, so an entry
/// never straddles a cache line and the first access of an epoch writes it with two stores (as
/// 24 bytes of separate fields it took seven, and a third of the entries crossed a line).
///
/// `head`: the stamp (`Group::shared_stamp`: the worker's workgroups and epochs counted together)
/// of the epoch the entry holds (one below the workgroup's first, `Group::shared_base`, is an
/// earlier workgroup's, so `WRITTEN` does not hold either); `WRITTEN` (this workgroup wrote the
/// element); `QUIET`; this epoch's writer and its location id, and its last atomic. `rest`: this
/// epoch's first two readers and their location ids, and the atomic's location id. An
/// invocation is its local id + 1 (0: none).
///
/// `QUIET`: a read in this epoch has nothing to check or record: the element was written, no
/// writer or atomic in this epoch, two readers kept (matmul's tiles: each element read by a row
/// of invocations). A write or an atomic clears it, as does a new epoch.
#[derive(Clone, Copy, Default)]
#[repr(C, align(16))]
pub struct SharedEntry {
    head: u64,
    rest: u64,
}

// head: (stamp: 28 bits) (WRITTEN) (QUIET) (writer: 11 bits) (writer's location id: 11) (atomic: 11)
// rest: (reader: 11 bits) (its location id: 11) (second reader: 11) (its location id: 11)
//       (atomic's location id: 11)
// Local ids + 1 are at most 1024 and location ids at most `LOCATION_LIMIT`: 11 bits each.
const STAMP_BITS: u64 = (1 << 28) - 1;
const WRITTEN: u64 = 1 << 28;
const QUIET: u64 = 1 << 29;
const FIELD: u64 = 0x7FF;
const WRITER_AT: u32 = 30;
const WLOC_AT: u32 = 41;
const ATOMIC_AT: u32 = 52;
const READER_AT: u32 = 0;
const RLOC_AT: u32 = 11;
const READER2_AT: u32 = 22;
const R2LOC_AT: u32 = 33;
const ALOC_AT: u32 = 44;

#[inline(always)]
fn field(word: u64, at: u32) -> u16 {
    ((word >> at) & FIELD) as u16
}

pub struct SharedShadow {
    entries: Vec<SharedEntry>,
}

/// A run of atomics: in one epoch, every access to one shared array so far an atomic at one
/// location, on elements the workgroup wrote before (histogram's counting loop: 16,384 atomics a
/// workgroup on 256 bins). Such an atomic can report nothing (atomics never race each other; a
/// written element is no uninitialized read), and all the full path keeps of it is its invocation,
/// as the element's last atomic, for a plain access later in the epoch to race with. In the run,
/// that is one store to `last` (the element's last atomic invocation + 1, 0: none in the run): no
/// entry read, tested or written. `Group::start_atomic_run` starts one after `RUN_AFTER` atomics
/// in an epoch, when every entry of the array allows it (written, and no access in the epoch but
/// atomics at that location: their invocations move to `last`), and marks every entry
/// `IN_RUN` (an atomic field no invocation has, with the epoch's stamp): any other access to the
/// array in the epoch, a plain one or an atomic at another location, then leaves every fast path
/// for the full one, which first ends the run (`end_atomic_run`): each entry becomes what the
/// accesses one by one would have made it (its last atomic and the run's location; an element no
/// atomic of the run touched, the entry of the epoch with nothing in it). So each finding, its
/// invocations and lines, and every later check are the full path's. A barrier ends the epoch
/// and the run with it: entries of an earlier epoch are renewed at their next access, keeping
/// whether the workgroup wrote them, as they would be.
#[derive(Clone, Copy)]
pub(crate) struct AtomicRun {
    /// The epoch's stamp (0: no run; stamps start at 1).
    stamp: u32,
    slot: u32,
    at: *const Location<'static>,
    lid: u16,
    entries: *mut SharedEntry,
    n: usize,
    last: *mut u16,
}

impl AtomicRun {
    pub(crate) const NONE: AtomicRun =
        AtomicRun { stamp: 0, slot: 0, at: core::ptr::null(), lid: 0, entries: core::ptr::null_mut(), n: 0, last: core::ptr::null_mut() };
}

/// Atomics on workgroup memory in an epoch before a run is tried (`Group::start_atomic_run`, which
/// reads every entry of the array once): at least the array's length, so that a kernel with few
/// atomics an epoch never pays for it.
const RUN_AFTER: u32 = 64;

/// In an entry's atomic field: the element is in a run of atomics (`AtomicRun`); its last atomic
/// is the run's. No invocation's (local id + 1 is at most 1024).
const IN_RUN: u16 = FIELD as u16;

/// Where the stamps start again (`Group::begin_shared`): the shadows are cleared then. Far below
/// the entries' 28 bits of stamp, so a workgroup's epochs (its barriers) never carry a stamp past
/// them. The crate's tests start them again every few workgroups, so that path runs too.
const STAMP_LIMIT: u32 = if cfg!(test) { 40 } else { 1 << 27 };

impl SharedShadow {
    pub fn new(n: usize) -> SharedShadow {
        SharedShadow { entries: vec![SharedEntry::default(); n] }
    }

    /// The shadow of the next workgroup's array of `n` elements, in the last one's storage. Its
    /// entries are left as they are: their stamps are an earlier workgroup's, which every access
    /// reads as empty and never written (`Group::shared_entry`). Clearing and refilling every
    /// entry for every workgroup was 7 % of cpu-sim's CPU time on stencil2d (1188 entries,
    /// 16384 workgroups a launch).
    pub fn reuse(&mut self, n: usize) {
        if self.entries.len() < n {
            self.entries.resize(n, SharedEntry::default());
        }
    }

    /// The entries of an array of `n` elements, for its `Shared` handle (it checks each index
    /// against `n` before it reads the shadow). Shorter: the invocations declared the array `k`
    /// with different sizes (the same bytes, elements of other sizes).
    pub fn entries_for(&mut self, n: usize, k: u32) -> *mut SharedEntry {
        if self.entries.len() < n {
            panic!("gpu_kernel: shared array {k} is declared with different sizes by the invocations of a workgroup");
        }
        self.entries.as_mut_ptr()
    }

    fn clear(&mut self) {
        self.entries.iter_mut().for_each(|e| *e = SharedEntry::default());
    }
}

impl Group {
    /// A new workgroup on this worker: its stamps start past every stamp of the last one's
    /// epochs (`shared_stamp`), so its shared arrays' shadows need no clearing (`reuse`). Called
    /// by `begin` before it resets `epoch`.
    #[inline(always)]
    pub(crate) fn begin_shared(&self) {
        let next = self.shared_stamp.get().wrapping_add(1);
        if next < STAMP_LIMIT {
            self.shared_base.set(next);
            self.shared_stamp.set(next);
        } else {
            self.restart_stamps();
        }
    }

    /// The stamps come round (after about 2^31 workgroups and barriers on one worker in one
    /// launch): every shadow is emptied and the stamps start again above the empty entries' 0.
    #[cold]
    #[inline(never)]
    fn restart_stamps(&self) {
        for slot in unsafe { &mut *self.slots_mut() }.iter_mut() {
            slot.shadow.get_mut().clear();
        }
        self.shared_base.set(1);
        self.shared_stamp.set(1);
        // A run's stamp would come round again with entries no longer marked.
        self.atomic_run.set(AtomicRun::NONE);
        self.atomics_seen.set((0, 0));
    }

    /// The stamp of this workgroup's epoch now, as the shared shadows' entries hold it.
    #[inline(always)]
    fn shared_stamp(&self) -> u32 {
        self.shared_stamp.get()
    }

    /// `entry` made this epoch's: emptied, keeping whether this workgroup wrote the element.
    #[inline(always)]
    fn renew(&self, entry: &mut SharedEntry, stamp: u32) {
        let written = if self.wrote(entry.head) { WRITTEN } else { 0 };
        *entry = SharedEntry { head: stamp as u64 | written, rest: 0 };
    }

    /// Whether an entry's `head` (of any epoch) says this workgroup wrote the element.
    #[inline(always)]
    fn wrote(&self, head: u64) -> bool {
        head & WRITTEN != 0 && head & STAMP_BITS >= self.shared_base.get() as u64
    }

    pub(crate) fn shared_array(&self, slot: u32) -> Array {
        Array::Shared(slot, Loc(self.slot(slot).decl))
    }

    /// This epoch's entry of element `i` of shared array `slot` (an entry of an earlier epoch is
    /// emptied, keeping whether this workgroup wrote the element).
    #[inline(always)]
    #[allow(clippy::mut_from_ref)]
    fn shared_entry(&self, slot: u32, i: usize) -> &mut SharedEntry {
        let shadow = unsafe { &mut *self.slot(slot).shadow.get() };
        let entry = &mut shadow.entries[i];
        let stamp = self.shared_stamp();
        if entry.stamp() != stamp {
            self.renew(entry, stamp);
        }
        entry
    }

    /// One side of a workgroup-memory finding: the invocation `who` (local id + 1) of this
    /// workgroup at location id `loc` (built only for a report: `location_of` takes a lock).
    #[cold]
    fn shared_side(&self, who: u16, loc: u16, what: &'static str) -> Access {
        Access { group: self.coords.get(), local: self.local_coords(who as usize - 1), what, at: location_of(loc) }
    }

    /// A plain read or write of element `i` of shared array `slot` by the invocation running.
    ///
    /// The common case inline: the element's entry is of this epoch (or emptied for it), was
    /// written before a read, and holds no other invocation's access that conflicts: a few
    /// compares, and the new writer or first two readers recorded. Anything else (a finding)
    /// goes to `shared_access_slow`, which makes the same checks in full.
    ///
    /// `entries` is the array's shadow (its handle's), `i` below the array's length.
    #[inline(always)]
    pub(crate) fn shared_access(&self, entries: *mut SharedEntry, slot: u32, i: usize, write: bool, at: &'static Location<'static>) {
        let entry = unsafe { &mut *entries.add(i) };
        let stamp = self.shared_stamp() as u64;
        let head = entry.head;
        if head & STAMP_BITS != stamp {
            // The element's first access in this epoch: the entry written once, whole, with this
            // access in it (emptied, then read back field by field and written again, it was a
            // tenth of cpu-sim's CPU time on scan, whose every step is a new epoch). A read of an
            // element this workgroup never wrote goes on to the report.
            let me = (self.current.get() + 1) as u64;
            if write {
                let lid = cached_location_id(&self.location_ids, at) as u64;
                *entry = SharedEntry { head: stamp | WRITTEN | me << WRITER_AT | lid << WLOC_AT, rest: 0 };
                return;
            }
            if self.wrote(head) {
                let lid = cached_location_id(&self.location_ids, at) as u64;
                *entry = SharedEntry { head: stamp | WRITTEN, rest: me << READER_AT | lid << RLOC_AT };
                return;
            }
            *entry = SharedEntry { head: stamp, rest: 0 };
            return self.shared_access_slow(slot, i, write, at);
        }
        if !write && head & QUIET != 0 {
            return;
        }
        let me = (self.current.get() + 1) as u16;
        let free = |who: u16| who == 0 || who == me;
        let rest = entry.rest;
        if write {
            // Nobody else's access in this epoch: most often nobody's at all (one test for all four).
            let nobody = head & (FIELD << WRITER_AT | FIELD << ATOMIC_AT) == 0 && rest & (FIELD << READER_AT | FIELD << READER2_AT) == 0;
            if nobody || free(field(head, ATOMIC_AT)) && free(field(head, WRITER_AT)) && free(field(rest, READER_AT)) && free(field(rest, READER2_AT)) {
                entry.set_writer(me, cached_location_id(&self.location_ids, at));
                return;
            }
        } else if head & WRITTEN != 0 && free(field(head, ATOMIC_AT)) && free(field(head, WRITER_AT)) {
            let reader = field(rest, READER_AT);
            if reader == 0 {
                let lid = cached_location_id(&self.location_ids, at) as u64;
                entry.rest = rest | (me as u64) << READER_AT | lid << RLOC_AT;
            } else if reader != me && field(rest, READER2_AT) == 0 {
                let lid = cached_location_id(&self.location_ids, at) as u64;
                entry.rest = rest | (me as u64) << READER2_AT | lid << R2LOC_AT;
                if head & (FIELD << WRITER_AT | FIELD << ATOMIC_AT) == 0 {
                    entry.head = head | QUIET;
                }
            }
            return;
        }
        self.shared_access_slow(slot, i, write, at)
    }

    /// This epoch's entry of element `i` of the shadow `entries` (as `shared_entry`); `i` is
    /// below the array's length, which the shadow's is not below (`SharedShadow::entries_for`).
    #[inline(always)]
    #[allow(clippy::mut_from_ref)]
    fn shared_entry_fast(&self, entries: *mut SharedEntry, i: usize) -> &mut SharedEntry {
        let entry = unsafe { &mut *entries.add(i) };
        let stamp = self.shared_stamp();
        if entry.stamp() != stamp {
            self.renew(entry, stamp);
        }
        entry
    }

    #[inline(never)]
    fn shared_access_slow(&self, slot: u32, i: usize, write: bool, at: &'static Location<'static>) {
        self.end_atomic_run_of(slot);
        let Some(checks) = self.checks() else { return };
        let entry = self.shared_entry(slot, i);
        let me = (self.current.get() + 1) as u16;
        let lid = cached_location_id(&self.location_ids, at);
        // Built only for a report.
        let array = || self.shared_array(slot);
        let this = || Access {
            group: self.coords.get(),
            local: self.local_coords(me as usize - 1),
            what: if write { "write" } else { "read" },
            at,
        };
        let race = |(who, loc, what): (u16, u16, &'static str)| {
            checks.report("shared-race", array(), Some(i as u64), None, self.shared_side(who, loc, what), Some(this()))
        };
        if write {
            if let Some(other) = entry.other_than(me, true) {
                race(other);
            }
            entry.set_writer(me, lid);
        } else {
            if !entry.written() {
                checks.report("uninitialized-read", array(), Some(i as u64), None, this(), None);
            } else if let Some(other) = entry.other_than(me, false) {
                race(other);
            }
            entry.add_reader(me, lid);
        }
    }

    /// An atomic read-modify-write of element `i` of shared array `slot`: it races with another
    /// invocation's plain access in this epoch, never with an atomic; an atomic on an element no
    /// invocation wrote is an uninitialized read (GPU workgroup memory starts undefined).
    ///
    /// `n` is the array's length (a run reads its every entry).
    #[inline(always)]
    pub(crate) fn shared_atomic(&self, entries: *mut SharedEntry, slot: u32, i: usize, n: usize, at: &'static Location<'static>) {
        let stamp = self.shared_stamp();
        let run = self.atomic_run.get();
        if run.stamp == stamp && run.slot == slot {
            // (Below the run's length: a handle may declare the array longer, `entries_for`.)
            if core::ptr::eq(run.at, at) && i < run.n {
                // In the run (`AtomicRun`): its invocation, as the element's last atomic.
                unsafe { *run.last.add(i) = (self.current.get() + 1) as u16 };
                return;
            }
            self.end_atomic_run();
        }
        let (seen, count) = self.atomics_seen.get();
        let count = if seen == stamp { count.saturating_add(1) } else { 1 };
        self.atomics_seen.set((stamp, count));
        if count == RUN_AFTER.max(n.min(u32::MAX as usize) as u32) && self.start_atomic_run(entries, slot, n, at) {
            return self.shared_atomic(entries, slot, i, n, at);
        }
        self.shared_atomic_entry(entries, slot, i, at)
    }

    /// Start a run of atomics (`AtomicRun`) on the array `slot` (its `n` entries `entries`) at
    /// `at`, if every entry allows it (see there); whether it started.
    #[cold]
    #[inline(never)]
    fn start_atomic_run(&self, entries: *mut SharedEntry, slot: u32, n: usize, at: &'static Location<'static>) -> bool {
        if self.checks().is_none() || self.atomic_run.get().stamp == self.shared_stamp() {
            return false;
        }
        let stamp = self.shared_stamp() as u64;
        let lid = cached_location_id(&self.location_ids, at);
        let entries_now = unsafe { core::slice::from_raw_parts_mut(entries, n) };
        let allowed = |e: &SharedEntry| {
            if e.head & STAMP_BITS != stamp {
                return self.wrote(e.head);
            }
            // Of this epoch: written, no plain access, and atomics (if any) only at `at`.
            e.written()
                && e.writer() == 0
                && e.reader() == 0
                && e.reader2() == 0
                && (e.atomic() == 0 || field(e.rest, ALOC_AT) == lid && e.atomic() != IN_RUN)
        };
        if !entries_now.iter().all(allowed) {
            // Not again in this epoch.
            self.atomics_seen.set((self.shared_stamp(), u32::MAX));
            return false;
        }
        let last = unsafe { &mut *self.run_last.get() };
        last.clear();
        last.resize(n, 0);
        for (e, l) in entries_now.iter_mut().zip(last.iter_mut()) {
            if e.head & STAMP_BITS == stamp {
                *l = e.atomic();
            }
            *e = SharedEntry { head: stamp | WRITTEN | (IN_RUN as u64) << ATOMIC_AT, rest: (lid as u64) << ALOC_AT };
        }
        let at = at as *const Location<'static>;
        self.atomic_run.set(AtomicRun { stamp: stamp as u32, slot, at, lid, entries, n, last: last.as_mut_ptr() });
        true
    }

    /// End the run of atomics on the array `slot` in this epoch, if there is one.
    #[inline(always)]
    fn end_atomic_run_of(&self, slot: u32) {
        let run = self.atomic_run.get();
        if run.stamp == self.shared_stamp() && run.slot == slot {
            self.end_atomic_run();
        }
    }

    /// End this epoch's run of atomics: each entry of its array what the atomics one by one
    /// would have made it (`AtomicRun`).
    #[cold]
    #[inline(never)]
    fn end_atomic_run(&self) {
        let run = self.atomic_run.replace(AtomicRun::NONE);
        let stamp = run.stamp as u64;
        let entries = unsafe { core::slice::from_raw_parts_mut(run.entries, run.n) };
        let last = unsafe { core::slice::from_raw_parts(run.last, run.n) };
        for (e, &l) in entries.iter_mut().zip(last) {
            // Every entry is still the run's: an access of the array that is not the run's
            // ends it before it touches one.
            debug_assert!(e.head & STAMP_BITS == stamp && e.atomic() == IN_RUN);
            *e = if l == 0 {
                SharedEntry { head: stamp | WRITTEN, rest: 0 }
            } else {
                SharedEntry { head: stamp | WRITTEN | (l as u64) << ATOMIC_AT, rest: (run.lid as u64) << ALOC_AT }
            };
        }
    }

    /// `shared_atomic` outside a run of atomics: the entry's checks.
    #[inline(always)]
    fn shared_atomic_entry(&self, entries: *mut SharedEntry, slot: u32, i: usize, at: &'static Location<'static>) {
        // The common case in one test of each word (histogram's counting loop: the bins written
        // before the barrier, then only atomics, all at one line): an entry of this epoch,
        // written, no plain access in it, and its last atomic's location this one. Then the only
        // change is the atomic's invocation (`set_atomic` would store `rest` unchanged): one
        // store. Anything else takes the full path below, which decides the same for this case.
        let entry = unsafe { &mut *entries.add(i) };
        let head = entry.head;
        if head & (STAMP_BITS | WRITTEN | FIELD << WRITER_AT) == self.shared_stamp() as u64 | WRITTEN {
            let lid = cached_location_id(&self.location_ids, at) as u64;
            if entry.rest & (FIELD << READER_AT | FIELD << READER2_AT | FIELD << ALOC_AT) == lid << ALOC_AT {
                let me = (self.current.get() + 1) as u64;
                entry.head = head & !(FIELD << ATOMIC_AT | QUIET) | me << ATOMIC_AT;
                return;
            }
        }
        let entry = self.shared_entry_fast(entries, i);
        // Written before, and no other invocation's plain access in this epoch: no finding.
        let me = (self.current.get() + 1) as u16;
        let free = |who: u16| who == 0 || who == me;
        // No plain access in this epoch (histogram's counting: bins written before the barrier, then
        // only atomics): one test for the three.
        let plain = entry.head & (FIELD << WRITER_AT) != 0 || entry.rest & (FIELD << READER_AT | FIELD << READER2_AT) != 0;
        if entry.written() && (!plain || free(entry.writer()) && free(entry.reader()) && free(entry.reader2())) {
            entry.set_atomic(me, cached_location_id(&self.location_ids, at));
            return;
        }
        self.shared_atomic_slow(slot, i, at)
    }

    #[inline(never)]
    fn shared_atomic_slow(&self, slot: u32, i: usize, at: &'static Location<'static>) {
        self.end_atomic_run_of(slot);
        let Some(checks) = self.checks() else { return };
        let entry = self.shared_entry(slot, i);
        let me = (self.current.get() + 1) as u16;
        let this = || Access { group: self.coords.get(), local: self.local_coords(me as usize - 1), what: "atomic", at };
        if !entry.written() {
            checks.report("uninitialized-read", self.shared_array(slot), Some(i as u64), None, this(), None);
        } else if let Some((who, loc, what)) = entry.plain_other(me, true) {
            // An atomic writes: any other invocation's plain access races with it.
            checks.report("shared-race", self.shared_array(slot), Some(i as u64), None, self.shared_side(who, loc, what), Some(this()));
        }
        entry.set_atomic(me, cached_location_id(&self.location_ids, at));
    }
}

impl SharedEntry {
    #[inline(always)]
    fn stamp(&self) -> u32 {
        (self.head & STAMP_BITS) as u32
    }
    /// Written in this epoch or an earlier one (of this workgroup, for an entry of this epoch).
    #[inline(always)]
    fn written(&self) -> bool {
        self.head & WRITTEN != 0
    }
    #[inline(always)]
    fn writer(&self) -> u16 {
        field(self.head, WRITER_AT)
    }
    #[inline(always)]
    fn atomic(&self) -> u16 {
        field(self.head, ATOMIC_AT)
    }
    #[inline(always)]
    fn reader(&self) -> u16 {
        field(self.rest, READER_AT)
    }
    #[inline(always)]
    fn reader2(&self) -> u16 {
        field(self.rest, READER2_AT)
    }

    /// `me` wrote the element at location id `lid` (written; not quiet).
    #[inline(always)]
    fn set_writer(&mut self, me: u16, lid: u16) {
        let kept = self.head & !(FIELD << WRITER_AT | FIELD << WLOC_AT | QUIET);
        self.head = kept | WRITTEN | (me as u64) << WRITER_AT | (lid as u64) << WLOC_AT;
    }

    /// `me`'s atomic at location id `lid` (written: it stored; not quiet).
    #[inline(always)]
    fn set_atomic(&mut self, me: u16, lid: u16) {
        self.head = self.head & !(FIELD << ATOMIC_AT | QUIET) | WRITTEN | (me as u64) << ATOMIC_AT;
        self.rest = self.rest & !(FIELD << ALOC_AT) | (lid as u64) << ALOC_AT;
    }

    /// Another invocation's plain access in this epoch that conflicts with one by `me`: its
    /// write, and for a write by `me` its reads too (two reads never conflict).
    #[inline(always)]
    fn plain_other(&self, me: u16, write: bool) -> Option<(u16, u16, &'static str)> {
        let writer = self.writer();
        if writer != 0 && writer != me {
            return Some((writer, field(self.head, WLOC_AT), "write"));
        }
        if !write {
            return None;
        }
        [(self.reader(), field(self.rest, RLOC_AT)), (self.reader2(), field(self.rest, R2LOC_AT))]
            .into_iter()
            .find(|&(r, _)| r != 0 && r != me)
            .map(|(r, l)| (r, l, "read"))
    }

    /// What a plain access by `me` races with: another invocation's atomic, or its conflicting
    /// plain access.
    #[inline(always)]
    fn other_than(&self, me: u16, write: bool) -> Option<(u16, u16, &'static str)> {
        let atomic = self.atomic();
        if atomic != 0 && atomic != me {
            return Some((atomic, field(self.rest, ALOC_AT), "atomic"));
        }
        self.plain_other(me, write)
    }

    #[inline(always)]
    fn add_reader(&mut self, me: u16, lid: u16) {
        let reader = self.reader();
        if reader == 0 {
            self.rest |= (me as u64) << READER_AT | (lid as u64) << RLOC_AT;
        } else if reader != me && self.reader2() == 0 {
            self.rest |= (me as u64) << READER2_AT | (lid as u64) << R2LOC_AT;
        }
    }
}

// ------------------------------------------------------------------------ global buffers

/// One element's full shadow: the last writer and the first reader, each `pack`ed (0 or another
/// launch's generation: none), side by side in 16 bytes. A second reader, rare, is kept apart
/// (`GlobalShadow::others`), flagged in the first's word (`SECOND`). Used only for an element
/// whose one-word shadow (`GlobalShadow::words`) cannot say it: `spill`.
#[repr(C, align(16))]
pub struct Cell2 {
    writer: AtomicU64,
    reader: AtomicU64,
}

/// A global buffer's shadow. Kept between launches (`POOL`): every launch has a generation of its
/// own among the last 63 launches (`Checks::generation`), and words of another generation count
/// as empty, so a launch neither allocates nor clears its shadow (at 2^20 elements, clearing and
/// faulting in a fresh shadow cost more than the checks themselves); `words` is cleared when the
/// launches it holds words of and this one span 63 launches, so the number could come round
/// again (`take`).
///
/// Per element one word (`words`, 8 bytes where the full shadow has 24): the one invocation
/// that touched the element in this launch, in one epoch, with whether it read and wrote (`READ`,
/// `WROTE`) and where (the first read's location, the last write's, or both as a pair id:
/// `pair_id`). An access by that invocation in that epoch — a kernel's common case: each element
/// its own invocation's — is one load and at most a plain store. Anything else (another
/// invocation, a later epoch, an atomic, writer arrays) moves the element to the full shadow
/// (`cells`, `others`: `SPILL` in its word) as the writer and first reader it would have held,
/// and the full checks run there, so a finding is the same as with the full shadow alone.
pub struct GlobalShadow {
    checks: *const Checks,
    buffer: u32,
    /// The launch's generation (`Checks::generation`).
    generation: u64,
    /// The launches (`Checks::launch`) whose generations `words` may hold: every launch that
    /// took this shadow since its words were last all zero is in `oldest ..= newest`.
    oldest: u64,
    newest: u64,
    words: Vec<AtomicU64>,
    /// The full shadow of spilled elements (calloc'd: only spilled elements' pages are touched).
    cells: Vec<Cell2>,
    /// Per element, the latest reader other than the first (read only where `SECOND` says so).
    others: Vec<AtomicU64>,
    /// Per element, the last atomic (`pack`ed, generations as in `cells`). calloc'd and touched
    /// only by kernels that use atomics: a plain access reads it only in a launch whose atomics
    /// touched this buffer (`atomic_generation`), so other kernels pay one compare per access.
    atomics: Vec<AtomicU64>,
    /// The generation of the last launch with an atomic on this buffer (0: none since the
    /// last clearing, so `atomics` is all zero).
    atomic_generation: AtomicU64,
    /// Plain writes take `access_slow`: the launch records writers. (An element an atomic
    /// touched is spilled: plain accesses to it take `access_slow`, which reads `atomics`.)
    slow: AtomicBool,
    /// Some element was spilled (its `cells` and `others` pages are memory now: `bytes`).
    spilled: AtomicBool,
    /// This launch's writer arrays, if it asked for them (`debug::Writers`).
    writers: super::debug::Writers,
}

unsafe impl Send for GlobalShadow {}
unsafe impl Sync for GlobalShadow {}

/// Shadows of finished launches, for the next launch with a buffer of the same length.
#[allow(clippy::vec_box)] // boxed: a pooled shadow keeps its address when handed to a launch
static POOL: Mutex<Vec<Box<GlobalShadow>>> = Mutex::new(Vec::new());
/// The most shadow memory kept between launches (bytes); larger shadows are freed.
const POOL_BYTES: usize = 1 << 30;

fn zeroed_cells(len: usize) -> Vec<Cell2> {
    // alloc_zeroed is calloc: pages of a large buffer's shadow are only touched where used.
    if len == 0 {
        return Vec::new();
    }
    let layout = std::alloc::Layout::array::<Cell2>(len).expect("shadow size");
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) } as *mut Cell2;
    if ptr.is_null() {
        std::alloc::handle_alloc_error(layout);
    }
    unsafe { Vec::from_raw_parts(ptr, len, len) }
}

fn zeroed_words(len: usize) -> Vec<AtomicU64> {
    let mut plain = core::mem::ManuallyDrop::new(vec![0u64; len]);
    unsafe { Vec::from_raw_parts(plain.as_mut_ptr() as *mut AtomicU64, plain.len(), plain.capacity()) }
}

// (generation: 6 bits) (WROTE, READ: 1 bit each, in `words` only) (workgroup + 1: 24 bits)
// (local id: 10 bits) (SPILL: 1 bit, in `words` only) (epoch mod 512: 9 bits)
// (SECOND: 1 bit, in a first reader's word) (location id: 11 bits)
const GEN_SHIFT: u32 = 58;
const GEN_LIMIT: u64 = (1 << (64 - GEN_SHIFT)) - 1;
const GROUP_LIMIT: u64 = (1 << 24) - 1;
pub(crate) const LOCATION_LIMIT: usize = (1 << 11) - 1;
/// In the first reader's word: another invocation read the element too (`others`).
const SECOND: u64 = 1 << 11;
/// In `words`: the invocation of the word wrote the element / read it.
const WROTE: u64 = 1 << 57;
const READ: u64 = 1 << 56;
/// Both: the word's location field is a pair id (`pair_id`: the first read's and the last
/// write's locations).
const BOTH: u64 = READ | WROTE;
/// In `words`: the element's shadow is in `cells` (the word holds only the generation and this,
/// and `BUSY` while one thread moves it there).
const SPILL: u64 = 1 << 21;
const BUSY: u64 = 1;
/// The bits of `words` that say "this invocation, this epoch, not spilled" (no flag, no location).
const OWNER: u64 = !(WROTE | READ | SECOND | 0x7FF);

#[inline(always)]
fn pack(generation: u64, group: u64, local: usize, epoch: u32, loc: u16) -> u64 {
    (generation << GEN_SHIFT) | ((group + 1) << 32) | ((local as u64) << 22) | (((epoch & 0x1FF) as u64) << 12) | (loc as u64 & 0x7FF)
}

fn unpack(word: u64) -> (u64, u32, u32, u16) {
    (((word >> 32) & 0xFF_FFFF) - 1, ((word >> 22) & 0x3FF) as u32, ((word >> 12) & 0x1FF) as u32, (word & 0x7FF) as u16)
}

/// Whether `earlier` (a word of this launch's generation) and an access by `me` are unordered
/// and by two invocations.
#[inline(always)]
fn conflicts(earlier: u64, me: u64) -> bool {
    // Same workgroup and same epoch (bits 12..55 but the local id): two invocations of one
    // workgroup between the same two barriers; another workgroup: always.
    const GROUP: u64 = 0xFF_FFFF << 32;
    const EPOCH: u64 = 0x1FF << 12;
    const LOCAL: u64 = 0x3FF << 22;
    if (earlier ^ me) & GROUP != 0 {
        return true;
    }
    (earlier ^ me) & LOCAL != 0 && (earlier ^ me) & EPOCH == 0
}

#[inline(always)]
fn same_invocation(a: u64, b: u64) -> bool {
    const WHO: u64 = (0xFF_FFFF << 32) | (0x3FF << 22);
    (a ^ b) & WHO == 0
}

impl GlobalShadow {
    /// A shadow for `len` elements for launch number `launch` of generation `generation`
    /// (`Checks`): a pooled one of that length, or a new one.
    pub(crate) fn take(checks: *const Checks, launch: u64, generation: u64, buffer: u32, len: usize) -> Box<GlobalShadow> {
        let pooled = {
            let mut pool = POOL.lock().unwrap();
            pool.iter().position(|s| s.words.len() == len).map(|k| pool.swap_remove(k))
        };
        let mut shadow = match pooled {
            Some(mut shadow) => {
                // Its words hold generations of launches `oldest ..= newest` (zero before): one of
                // them may be this launch's generation once this launch and those span 63
                // launches (the generation comes round; launches may take shadows out of their
                // order), so the shadow is cleared. `cells` and `others` need no clearing: an
                // element's cells are written when it spills, and `others` is read only where
                // this launch set `SECOND`.
                let (oldest, newest) = (shadow.oldest.min(launch), shadow.newest.max(launch));
                (shadow.oldest, shadow.newest) = (oldest, newest);
                if newest - oldest >= GEN_LIMIT {
                    for word in &mut shadow.words {
                        *word.get_mut() = 0;
                    }
                    if *shadow.atomic_generation.get_mut() != 0 {
                        for word in &mut shadow.atomics {
                            *word.get_mut() = 0;
                        }
                        *shadow.atomic_generation.get_mut() = 0;
                    }
                    (shadow.oldest, shadow.newest) = (launch, launch);
                }
                shadow
            }
            None => Box::new(GlobalShadow {
                checks,
                buffer,
                generation,
                oldest: launch,
                newest: launch,
                words: zeroed_words(len),
                cells: zeroed_cells(len),
                others: zeroed_words(len),
                atomics: zeroed_words(len),
                atomic_generation: AtomicU64::new(0),
                slow: AtomicBool::new(false),
                spilled: AtomicBool::new(false),
                writers: super::debug::Writers::NONE,
            }),
        };
        shadow.checks = checks;
        shadow.buffer = buffer;
        shadow.generation = generation;
        *shadow.slow.get_mut() = false;
        shadow
    }

    /// Back to the pool for the next launch (within `POOL_BYTES`; the oldest go first).
    pub(crate) fn give_back(shadow: Box<GlobalShadow>) {
        let mut pool = POOL.lock().unwrap();
        pool.push(shadow);
        let bytes = |pool: &Vec<Box<GlobalShadow>>| pool.iter().map(|s| s.bytes()).sum::<usize>();
        while bytes(&pool) > POOL_BYTES {
            pool.remove(0);
        }
    }

    /// Shadow memory this shadow holds: its words, and `cells`, `others` and `atomics` where a
    /// kernel touched them (untouched calloc'd pages are not memory yet).
    fn bytes(&self) -> usize {
        let atomics = if self.atomic_generation.load(Ordering::Relaxed) != 0 { 8 } else { 0 };
        let spilled = if self.spilled.load(Ordering::Relaxed) { 24 } else { 0 };
        self.words.len() * (8 + spilled + atomics)
    }

    fn side(&self, word: u64, what: &'static str) -> Access {
        let (group, local, _, loc) = unpack(word);
        let (group, local) = unsafe { &*self.checks }.coords(group, local);
        Access { group, local, what, at: location_of(loc) }
    }

    /// The word of this launch in `slot` (0: none, or another launch's).
    #[inline(always)]
    fn current(&self, slot: &AtomicU64) -> u64 {
        let word = slot.load(Ordering::Relaxed);
        if word >> GEN_SHIFT == self.generation { word } else { 0 }
    }

    /// A plain read or write of element `i` (`i` < the buffer's length: the caller checked).
    ///
    /// The common case inline: no writer arrays for a write, and the element's word is empty (of
    /// another launch) or this invocation's in this epoch (an atomic spills the element):
    /// one load, and a plain store for a first read or a first write after a read, a
    /// compare-exchange for a first write (two writers on two threads see each other whatever
    /// the timing). Anything else — another invocation's access, a later epoch — goes out of
    /// line (`access_slow`), which makes the full checks on the element's full shadow.
    #[inline(always)]
    pub fn access(&self, i: usize, write: bool, at: &'static Location<'static>) {
        // The launch's generation included (`whoami`).
        let me = whoami::<false>(at);
        if me == 0 {
            return;
        }
        if write && self.slow.load(Ordering::Relaxed) {
            return self.access_slow(i, write, me, at);
        }
        let slot = unsafe { self.words.get_unchecked(i) };
        let word = slot.load(Ordering::Relaxed);
        if (word ^ me) & OWNER == 0 {
            // This invocation's, this epoch: a first read or write is added to the word, a write
            // at another line replaces the write's.
            let (lid, loc) = ((me & 0x7FF) as u16, (word & 0x7FF) as u16);
            let with_pair = |read: u16, write: u16| pair_id(read, write) as u64 | (me & !0x7FF) | BOTH;
            // Branches in the order of how common they are (a jump table cost saxpy 5 %).
            let mine = if !write {
                if word & READ != 0 {
                    return;
                }
                with_pair(lid, loc)
            } else if word & BOTH == READ {
                with_pair(loc, lid)
            } else if word & BOTH == WROTE {
                if loc == lid {
                    return;
                }
                me | WROTE
            } else {
                let (read, write) = pair_of(loc);
                if write == lid {
                    return;
                }
                with_pair(read, lid)
            };
            if mine & 0x7FF != 0 {
                slot.store(mine, Ordering::Relaxed);
                return;
            }
            // No pair id left: the full shadow keeps both locations.
        }
        if (word ^ me) >> GEN_SHIFT != 0 {
            // Nobody touched the element in this launch. Readers are kept with a plain store (two
            // reads never race; two first readers on two threads at once may keep only one).
            if !write {
                slot.store(me | READ, Ordering::Relaxed);
                return;
            }
            if slot.compare_exchange(word, me | WROTE, Ordering::Relaxed, Ordering::Relaxed).is_ok() {
                return;
            }
        }
        self.access_slow(i, write, me, at)
    }

    /// Element `i`'s shadow in `cells` (moved there from its word, once per launch): the
    /// word's invocation as the writer if it wrote, as the first reader if it read.
    #[inline(always)]
    fn spill(&self, i: usize) -> &Cell2 {
        // Spilled already (an atomic's element after the first atomic on it): one load.
        if self.words[i].load(Ordering::Acquire) == (self.generation << GEN_SHIFT) | SPILL {
            return &self.cells[i];
        }
        self.spill_now(i)
    }

    #[cold]
    #[inline(never)]
    fn spill_now(&self, i: usize) -> &Cell2 {
        let slot = &self.words[i];
        let cell = &self.cells[i];
        let spilled = (self.generation << GEN_SHIFT) | SPILL;
        loop {
            let word = slot.load(Ordering::Acquire);
            if word == spilled {
                return cell;
            }
            if word == spilled | BUSY {
                // Another thread is moving it (two stores).
                core::hint::spin_loop();
                continue;
            }
            if slot.compare_exchange_weak(word, spilled | BUSY, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                let current = word >> GEN_SHIFT == self.generation;
                let who = word & !(BOTH | 0x7FF);
                let loc = word & 0x7FF;
                let (read, write) = match word & BOTH {
                    BOTH => {
                        let (read, write) = pair_of(loc as u16);
                        (who | read as u64, who | write as u64)
                    }
                    _ => (who | loc, who | loc),
                };
                cell.writer.store(if current && word & WROTE != 0 { write } else { 0 }, Ordering::Relaxed);
                cell.reader.store(if current && word & READ != 0 { read } else { 0 }, Ordering::Relaxed);
                if !self.spilled.load(Ordering::Relaxed) {
                    self.spilled.store(true, Ordering::Relaxed);
                }
                slot.store(spilled, Ordering::Release);
                return cell;
            }
        }
    }

    /// `access` in full: atomics of this launch, writer arrays, races, second readers.
    #[inline(never)]
    fn access_slow(&self, i: usize, write: bool, me: u64, at: &'static Location<'static>) {
        let cell = self.spill(i);
        if self.atomic_generation.load(Ordering::Relaxed) == self.generation {
            // Atomics touched this buffer in this launch: another invocation's unordered atomic
            // races with this plain access (and the checks below still run).
            let atomic = self.current(&self.atomics[i]);
            if atomic != 0 && conflicts(atomic, me) {
                self.race(i, atomic, "atomic", me, write, at);
            }
        }
        if write {
            if self.writers.is_on() {
                let (linear, local, _, lid) = unpack(me);
                self.writers.wrote(i, linear, local as usize, lid);
            }
            // Another writer, or a reader, not ordered before this write: a race. The swap makes
            // two writers on two threads see each other whatever the timing; a writer that wrote
            // this element already (same word) needs no atomic.
            let seen = cell.writer.load(Ordering::Relaxed);
            let before = if seen == me { seen } else { cell.writer.swap(me, Ordering::Relaxed) };
            self.write_slow(i, before, me, at);
        } else {
            let writer = self.current(&cell.writer);
            if writer != 0 && conflicts(writer, me) {
                self.race(i, writer, "write", me, write, at);
            }
            // Readers are kept to find a later write's race; two reads never race, so a plain
            // store suffices (two readers on two threads at the same instant may keep only one).
            // The second slot keeps the latest reader other than the first.
            let first = self.current(&cell.reader);
            if first == 0 {
                cell.reader.store(me, Ordering::Relaxed);
            } else if !same_invocation(first, me) {
                if first & SECOND == 0 {
                    cell.reader.store(first | SECOND, Ordering::Relaxed);
                }
                let other = &self.others[i];
                if self.current(other) != me {
                    other.store(me, Ordering::Relaxed);
                }
            }
        }
    }

    /// A write of element `i` by `me` after the swap that gave `before` (the writer it
    /// replaced): a race with that writer, or with a reader, not ordered before it.
    #[inline(never)]
    fn write_slow(&self, i: usize, before: u64, me: u64, at: &'static Location<'static>) {
        let cell = &self.cells[i];
        let before = if before >> GEN_SHIFT == self.generation { before } else { 0 };
        if before != 0 && conflicts(before, me) {
            self.race(i, before, "write", me, true, at);
            return;
        }
        let reader = self.current(&cell.reader);
        if reader != 0 && conflicts(reader, me) {
            self.race(i, reader, "read", me, true, at);
            return;
        }
        if reader & SECOND != 0 {
            let other = self.current(&self.others[i]);
            if other != 0 && conflicts(other, me) {
                self.race(i, other, "read", me, true, at);
            }
        }
    }

    /// An atomic read-modify-write of element `i`: it races with another invocation's unordered
    /// plain write or read (first reader, and the second where `SECOND` says so), never with
    /// another atomic.
    #[inline(always)]
    pub fn atomic(&self, i: usize, at: &'static Location<'static>) {
        let me = whoami::<true>(at);
        if me == 0 {
            return;
        }
        if self.writers.is_on() {
            let (linear, local, _, lid) = unpack(me);
            self.writers.wrote(i, linear, local as usize, lid);
        }
        // Once per launch and buffer (a load after that), so `access_slow` starts reading `atomics`
        // (plain accesses of this element take it: the element is spilled below).
        if self.atomic_generation.load(Ordering::Relaxed) != self.generation {
            self.atomic_generation.store(self.generation, Ordering::Relaxed);
        }
        let slot = &self.atomics[i];
        if slot.load(Ordering::Relaxed) != me {
            slot.store(me, Ordering::Relaxed);
        }
        let cell = self.spill(i);
        let writer = self.current(&cell.writer);
        if writer != 0 && conflicts(writer, me) {
            return self.report_race(i, writer, "write", me, "atomic", at);
        }
        let reader = self.current(&cell.reader);
        if reader != 0 && conflicts(reader, me) {
            return self.report_race(i, reader, "read", me, "atomic", at);
        }
        if reader & SECOND != 0 {
            let other = self.current(&self.others[i]);
            if other != 0 && conflicts(other, me) {
                self.report_race(i, other, "read", me, "atomic", at);
            }
        }
    }

    #[cold]
    #[inline(never)]
    fn race(&self, i: usize, earlier: u64, what: &'static str, me: u64, write: bool, at: &'static Location<'static>) {
        self.report_race(i, earlier, what, me, if write { "write" } else { "read" }, at);
    }

    #[cold]
    #[inline(never)]
    fn report_race(&self, i: usize, earlier: u64, what: &'static str, me: u64, mine: &'static str, at: &'static Location<'static>) {
        let checks = unsafe { &*self.checks };
        let this = Access { at, ..self.side(me, mine) };
        checks.report("global-race", Array::Buffer(self.buffer), Some(i as u64), None, self.side(earlier, what), Some(this));
    }
}

/// The one-word global shadow against the full one: each case a fast path could miss, found
/// (or not) with the lines and invocations the full shadow reports.
#[cfg(test)]
mod tests {
    use crate::testing::{Findings, Grid};

    fn races(findings: &Findings) -> Vec<String> {
        findings.items.iter().filter(|f| f.kind == "global-race").map(|f| f.message.clone()).collect()
    }

    /// "write by workgroup (g, 0, 0) local id (l, 0, 0) at src/host/sim.rs:LINE" and the like.
    fn side(what: &str, group: u32, local: u32, line: u32) -> String {
        format!("{what} by workgroup ({group}, 0, 0) local id ({local}, 0, 0) at src/host/sim.rs:{line}:")
    }

    /// One invocation reads, then another of its workgroup writes, the same element (and the
    /// other way round), no barrier between them: both are races, with both lines.
    #[test]
    fn a_read_then_another_invocations_write_is_a_race_and_the_other_way_round() {
        let mut y = vec![0u32; 4];
        let grid = Grid::with_workers([1, 1, 1], [4, 1, 1], 1);
        let yb = grid.output(&mut y);
        let l = line!();
        let findings = grid.check(move |ctx| {
            let mut yb = yb;
            match ctx.local_id_x() {
                0 => yb[3] = yb.get(0), // l + 4: reads 0, writes 3
                1 => yb.set(0, 1),      // l + 5
                2 => yb[1] = yb.get(3), // l + 6
                _ => {}
            }
        });
        let races = races(&findings);
        assert_eq!(races.len(), 2, "{findings:?}");
        assert!(races[0].contains(&side("read", 0, 0, l + 4)) && races[0].contains(&side("write", 0, 1, l + 5)), "{races:?}");
        assert!(races[1].contains(&side("write", 0, 0, l + 4)) && races[1].contains(&side("read", 0, 2, l + 6)), "{races:?}");
    }

    /// An element its own invocation read and wrote (saxpy's `y[i] = a * x[i] + y[i]`, one word
    /// with both lines), then written twice by an invocation of another workgroup: the first write
    /// races with the write, the second with the read, each at its own line.
    #[test]
    fn an_invocations_own_read_and_write_keep_both_lines() {
        let mut y = vec![0u32; 8];
        let grid = Grid::with_workers([2, 1, 1], [4, 1, 1], 1);
        let yb = grid.output(&mut y);
        let l = line!();
        let findings = grid.check(move |ctx| {
            let mut yb = yb;
            let i = ctx.global_id_x();
            let v = yb.get(i); // l + 4
            yb.set(i, v + 1); // l + 5
            if ctx.group_id_x() == 1 && ctx.local_id_x() == 0 {
                yb.set(0, 7); // l + 7
                yb.set(0, 8); // l + 8
            }
        });
        let races = races(&findings);
        assert_eq!(races.len(), 2, "{findings:?}");
        assert!(races[0].contains(&side("write", 0, 0, l + 5)) && races[0].contains(&side("write", 1, 0, l + 7)), "{races:?}");
        assert!(races[1].contains(&side("read", 0, 0, l + 4)) && races[1].contains(&side("write", 1, 0, l + 8)), "{races:?}");
    }

    /// Every workgroup writes the same elements without reading them first (a first write: the
    /// compare-exchange), on two worker threads: a race, whichever thread ran which workgroup.
    #[test]
    fn writers_in_different_workgroups_race_on_any_thread() {
        let mut y = vec![0u32; 64];
        let grid = Grid::with_workers([256, 1, 1], [64, 1, 1], 2);
        let yb = grid.output(&mut y);
        let l = line!();
        let findings = grid.check(move |ctx| {
            let mut yb = yb;
            yb[ctx.local_id_x()] = ctx.group_id_x() as u32; // l + 3
        });
        let races = races(&findings);
        assert_eq!(races.len(), 1, "{findings:?}");
        let at = format!("at src/host/sim.rs:{}:", l + 3);
        assert_eq!(races[0].matches("write by").count(), 2, "{races:?}");
        assert_eq!(races[0].matches(&at).count(), 2, "{races:?}");
    }

    /// Shared arrays keep their storage and shadow from workgroup to workgroup of a worker, the
    /// shadow's entries not cleared (their stamps say whose they are): an element the last
    /// workgroup wrote is still unwritten for the next one, on fibers and as lanes, across the
    /// stamps' new start (every few workgroups in the crate's tests: `STAMP_LIMIT`); an element
    /// written in this workgroup's earlier epoch is written.
    #[test]
    fn the_last_workgroups_shared_writes_are_not_the_next_ones() {
        use crate::testing::Grid;
        let groups = 30u32; // one worker, 3 epochs each: the stamps start again twice
        let uninitialized = |findings: &crate::testing::Findings| {
            findings.items.iter().filter(|f| f.kind == "uninitialized-read").map(|f| (f.line, f.message.clone())).collect::<Vec<_>>()
        };
        let grid = Grid::with_workers([groups, 1, 1], [8, 1, 1], 1);
        let l = line!();
        let findings = grid.check(|ctx| {
            let mut s = ctx.shared::<u32, 8>();
            let t = ctx.local_id_x();
            if ctx.group_id_x() % 3 != 2 {
                s.set(t, 1); // l + 5
            }
            ctx.barrier();
            ctx.barrier();
            let _ = s.get(t ^ 1); // l + 9
        });
        let found = uninitialized(&findings);
        assert_eq!(findings.kinds(), ["uninitialized-read"], "{findings:?}");
        assert_eq!(found[0].0, (l + 9) as u64, "{found:?}");
        assert!(found[0].1.contains("workgroup (2, 0, 0) local id (0, 0, 0)") && found[0].1.contains("[80 times]"), "{found:?}");

        let grid = Grid::with_workers([groups, 1, 1], [8, 1, 1], 1);
        let l = line!();
        let findings = grid.check_lanes(|wg| {
            wg.begin();
            let mut s = wg.shared::<u32, 8>();
            for t in 0..8 {
                let ctx = wg.ctx(t, [t as u32, 0, 0]);
                if ctx.group_id_x() % 3 != 2 {
                    s.set(t, 1); // l + 7
                }
            }
            wg.barrier();
            wg.barrier();
            for t in 0..8 {
                let _ctx = wg.ctx(t, [t as u32, 0, 0]);
                let _ = s.get(t ^ 1); // l + 14
            }
            wg.end();
        });
        let found = uninitialized(&findings);
        assert_eq!(findings.kinds(), ["uninitialized-read"], "{findings:?}");
        assert_eq!(found[0].0, (l + 14) as u64, "{found:?}");
        assert!(found[0].1.contains("workgroup (2, 0, 0) local id (0, 0, 0)") && found[0].1.contains("[80 times]"), "{found:?}");
    }

    /// Each side of a workgroup-memory finding keeps its invocation and line in the packed shadow
    /// entry (`SharedEntry`: the writer, two readers and the atomic, each with a location id): a
    /// write racing with the second reader (the first reader is the writer itself), a write after
    /// an atomic, an atomic after a read, two writers, a read after another invocation's write,
    /// reads after an atomic (one finding however many readers: the atomic's line stays its own
    /// beside two readers'), and a read of an element nobody wrote; and a write ordered by the
    /// barrier after another invocation's is none. As lanes, so the order is the code's: in one
    /// epoch each loop runs its lanes before the next loop.
    #[test]
    fn each_side_of_a_shared_finding_keeps_its_invocation_and_line() {
        let grid = Grid::with_workers([1, 1, 1], [4, 1, 1], 1);
        let l = line!();
        let findings = grid.check_lanes(|wg| {
            wg.begin();
            let mut s = wg.shared::<u32, 8>();
            for t in 0..4 {
                let _ctx = wg.ctx(t, [t as u32, 0, 0]);
                s.set(t, 1); // l + 6
                s.set(4, 1); // l + 7: every lane, one epoch: a race (not asserted)
            }
            let lane = |t: usize| wg.ctx(t, [t as u32, 0, 0]);
            let _ctx = lane(0);
            s.set(7, 1); // l + 11
            wg.barrier();
            let _ctx = lane(0);
            let _ = s.get(0); // l + 14: the first reader
            let _ctx = lane(1);
            let _ = s.get(0); // l + 16: the second reader
            let _ctx = lane(0);
            s.set(0, 2); // l + 18: the first reader writes: races with the second read
            let _ctx = lane(1);
            _ = s.atomic_add(1, 1); // l + 20
            let _ctx = lane(2);
            s.set(1, 3); // l + 22: races with lane 1's atomic
            let _ctx = lane(3);
            s.set(2, 4); // l + 24: lane 2 wrote element 2 before the barrier: ordered
            for t in 2..4 {
                let _ctx = lane(t);
                s.set(3, t as u32); // l + 27: lanes 2 and 3 write element 3
            }
            let _ctx = lane(0);
            let _ = s.get(4); // l + 30
            let _ctx = lane(1);
            _ = s.atomic_add(4, 1); // l + 32: races with lane 0's read
            let _ctx = lane(0);
            let _ = s.get(5); // l + 34: nobody wrote element 5
            let _ctx = lane(0);
            s.set(6, 1); // l + 36
            let _ctx = lane(1);
            let _ = s.get(6); // l + 38: races with lane 0's write
            let _ctx = lane(1);
            _ = s.atomic_add(7, 1); // l + 40
            for t in [0, 2, 3] {
                let _ctx = lane(t);
                let _ = s.get(7); // l + 43: each races with lane 1's atomic
            }
            wg.end();
        });
        let side = |what: &str, local: u32, line: u32| {
            format!("{what} by workgroup (0, 0, 0) local id ({local}, 0, 0) at src/host/sim.rs:{line}:")
        };
        let found = |kind: &str, line: u32| {
            let f = findings.items.iter().find(|f| f.kind == kind && f.line == line as u64);
            f.unwrap_or_else(|| panic!("no {kind} at line {line}: {findings:?}")).message.clone()
        };
        assert_eq!(findings.items.len(), 8, "{findings:?}");
        found("shared-race", l + 7);
        let race = found("shared-race", l + 18);
        assert!(race.contains(&side("read", 1, l + 16)) && race.contains(&side("write", 0, l + 18)), "{race}");
        let race = found("shared-race", l + 22);
        assert!(race.contains(&side("atomic", 1, l + 20)) && race.contains(&side("write", 2, l + 22)), "{race}");
        let race = found("shared-race", l + 27);
        assert!(race.contains(&side("write", 2, l + 27)) && race.contains(&side("write", 3, l + 27)), "{race}");
        let race = found("shared-race", l + 32);
        assert!(race.contains(&side("read", 0, l + 30)) && race.contains(&side("atomic", 1, l + 32)), "{race}");
        let unwritten = found("uninitialized-read", l + 34);
        assert!(unwritten.contains(&side("read", 0, l + 34)), "{unwritten}");
        let race = found("shared-race", l + 38);
        assert!(race.contains(&side("write", 0, l + 36)) && race.contains(&side("read", 1, l + 38)), "{race}");
        let race = found("shared-race", l + 43);
        assert!(race.contains(&side("atomic", 1, l + 40)) && race.contains(&side("read", 0, l + 43)), "{race}");
        assert!(race.contains("[3 times]"), "{race}");
    }

    /// Atomics on workgroup memory after the one-store fast path of `shared_atomic` (an entry of
    /// this epoch, written, no plain access, the last atomic at this line): a later atomic at
    /// another line is the one a racing read names; an atomic after another invocation's write
    /// (where the last atomic was at this line) and after its read, in the same epoch, are races;
    /// atomics at one line by every lane are none, nor is the next epoch's read after them.
    #[test]
    fn an_atomic_keeps_its_line_and_races_with_plain_accesses_after_the_fast_path() {
        let grid = Grid::with_workers([1, 1, 1], [4, 1, 1], 1);
        let l = line!();
        let findings = grid.check_lanes(|wg| {
            wg.begin();
            let mut s = wg.shared::<u32, 4>();
            for t in 0..4 {
                let _ctx = wg.ctx(t, [t as u32, 0, 0]);
                s.set(t, 0); // l + 6
            }
            wg.barrier();
            let lane = |t: usize| wg.ctx(t, [t as u32, 0, 0]);
            for t in 0..4 {
                let _ctx = lane(t);
                _ = s.atomic_add(0, 1); // l + 12: every lane, one line: no race
            }
            let _ctx = lane(1);
            _ = s.atomic_add(1, 1); // l + 15
            let _ctx = lane(2);
            _ = s.atomic_add(1, 1); // l + 17: the fast path's line test fails: this line kept
            let _ctx = lane(0);
            let _ = s.get(1); // l + 19: races with lane 2's atomic at l + 17
            for t in [1, 0, 3] {
                let _ctx = lane(t);
                if t == 0 {
                    s.set(2, 5); // l + 23: races with lane 1's atomic
                } else {
                    _ = s.atomic_add(2, 1); // l + 25: lane 3's races with lane 0's write
                }
            }
            for t in [1, 3, 2] {
                let _ctx = lane(t);
                if t == 3 {
                    let _ = s.get(3); // l + 31: races with lane 1's atomic
                } else {
                    _ = s.atomic_add(3, 1); // l + 33: lane 2's races with lane 3's read
                }
            }
            wg.barrier();
            for t in 0..4 {
                let _ctx = lane(t);
                let _ = s.get(0); // l + 39: ordered after the atomics by the barrier
            }
            wg.end();
        });
        let side = |what: &str, local: u32, line: u32| {
            format!("{what} by workgroup (0, 0, 0) local id ({local}, 0, 0) at src/host/sim.rs:{line}:")
        };
        let found = |line: u32| {
            let f = findings.items.iter().find(|f| f.kind == "shared-race" && f.line == line as u64);
            f.unwrap_or_else(|| panic!("no race at line {line}: {findings:?}")).message.clone()
        };
        assert_eq!(findings.items.len(), 5, "{findings:?}");
        let race = found(l + 19);
        assert!(race.contains(&side("atomic", 2, l + 17)) && race.contains(&side("read", 0, l + 19)), "{race}");
        let race = found(l + 23);
        assert!(race.contains(&side("atomic", 1, l + 25)) && race.contains(&side("write", 0, l + 23)), "{race}");
        let race = found(l + 25);
        assert!(race.contains(&side("write", 0, l + 23)) && race.contains(&side("atomic", 3, l + 25)), "{race}");
        let race = found(l + 31);
        assert!(race.contains(&side("atomic", 1, l + 33)) && race.contains(&side("read", 3, l + 31)), "{race}");
        let race = found(l + 33);
        assert!(race.contains(&side("read", 3, l + 31)) && race.contains(&side("atomic", 2, l + 33)), "{race}");
    }

    /// Runs of atomics (`AtomicRun`: more than `RUN_AFTER` atomics at one line in an epoch): a
    /// plain access after them, or an atomic at another line, names the element's last atomic
    /// (its invocation and line) as the entry-by-entry checks do; an element nobody wrote keeps
    /// the run from starting (each atomic on it is an uninitialized read); a barrier orders the
    /// run's atomics before what follows. The same findings on the tree before runs (eba92db's
    /// crate), which checks each atomic on its entry.
    #[test]
    fn runs_of_atomics_keep_each_elements_last_atomic_and_line() {
        let grid = Grid::with_workers([1, 1, 1], [64, 1, 1], 1);
        let l = line!();
        let findings = grid.check_lanes(|wg| {
            wg.begin();
            let mut s = wg.shared::<u32, 16>();
            let mut u = wg.shared::<u32, 8>();
            let lane = |t: usize| wg.ctx(t, [t as u32, 0, 0]);
            for t in 0..16 {
                let _ctx = lane(t);
                s.set(t, 0); // l + 8
                if t < 7 {
                    u.set(t, 0); // l + 10: u[7] is never written
                }
            }
            wg.barrier();
            let atomics = move |rounds: usize| { let mut s = s;
                for round in 0..rounds {
                    for t in 0..64 {
                        let _ctx = lane(t);
                        _ = s.atomic_add((t * 7 + round) % 16, 1); // l + 18: the run's line
                    }
                }
            };
            atomics(3);
            let _ctx = lane(0);
            let _ = s.get(5); // l + 24: its last atomic: lane 53's in round 2 (7 * 53 + 2 = 5 mod 16)
            let _ctx = lane(9);
            _ = s.atomic_add(6, 1); // l + 26: after the run ended, the entry's checks
            let _ctx = lane(1);
            s.set(6, 1); // l + 28: races with lane 9's atomic at l + 26
            wg.barrier();
            atomics(2);
            let _ctx = lane(2);
            _ = s.atomic_add(3, 1); // l + 32: another line ends the run
            for e in [3, 4] {
                let _ctx = lane(4);
                let _ = s.get(e); // l + 35: 3 races with l + 32, 4 with lane 53's at l + 18 (7 * 53 + 1 = 4 mod 16)
            }
            wg.barrier();
            atomics(3);
            wg.barrier();
            for t in 0..64 {
                let _ctx = lane(t);
                let _ = s.get(t % 16); // l + 42: ordered after the run by the barrier
            }
            for round in 0..3 {
                for t in 0..64 {
                    let _ctx = lane(t);
                    _ = u.atomic_add(if round == 2 && t == 5 { 7 } else { (t + round) % 7 }, 1); // l + 47: u[7] unwritten: no run
                }
            }
            wg.end();
        });
        let side = |what: &str, local: u32, line: u32| {
            format!("{what} by workgroup (0, 0, 0) local id ({local}, 0, 0) at src/host/sim.rs:{line}:")
        };
        let found = |kind: &str, line: u32, other: &str| {
            let f = findings.items.iter().find(|f| f.kind == kind && f.line == line as u64 && f.message.contains(other));
            f.unwrap_or_else(|| panic!("no {kind} at line {line} with {other}: {findings:?}")).message.clone()
        };
        assert_eq!(findings.items.len(), 5, "{findings:?}");
        let race = found("shared-race", l + 24, "");
        assert!(race.contains(&side("atomic", 53, l + 18)) && race.contains(&side("read", 0, l + 24)), "{race}");
        let race = found("shared-race", l + 28, "");
        assert!(race.contains(&side("atomic", 9, l + 26)) && race.contains(&side("write", 1, l + 28)), "{race}");
        let race = found("shared-race", l + 35, &format!(":{}:", l + 32));
        assert!(race.contains(&side("atomic", 2, l + 32)) && race.contains(&side("read", 4, l + 35)) && race.contains("[3]"), "{race}");
        let race = found("shared-race", l + 35, &format!(":{}:", l + 18));
        assert!(race.contains(&side("atomic", 53, l + 18)) && race.contains(&side("read", 4, l + 35)) && race.contains("[4]"), "{race}");
        // The one atomic on u[7], long after the run would have started.
        let unwritten = found("uninitialized-read", l + 47, "");
        assert!(unwritten.contains(&side("atomic", 5, l + 47)) && unwritten.contains("[7]"), "{unwritten}");
    }

    /// Launch after launch on buffers of one length (the pooled shadow, a new generation each
    /// time, past its wrap at 63): an element written by one invocation in one launch and read or
    /// written by another in the next is no race; nor are accesses ordered by a barrier, or one
    /// invocation's read and write in two epochs.
    #[test]
    fn launches_and_barriers_order_accesses() {
        let n = 256;
        let mut y = vec![0u32; n];
        for launch in 0..70 {
            let grid = Grid::with_workers([4, 1, 1], [64, 1, 1], 2);
            let yb = grid.output(&mut y);
            grid.run(move |ctx| {
                let mut yb = yb;
                let i = (ctx.global_id_x() + launch * 7) % n;
                let v = yb[i];
                ctx.barrier();
                yb[i] = v + 1; // after a barrier: the same invocation, a later epoch
                ctx.barrier();
                let j = ctx.group_id_x() * 64 + (ctx.local_id_x() + 1) % 64;
                let _ = yb.get((j + launch * 7) % n); // a neighbour's element, after the barrier
            });
        }
        assert!(y.iter().all(|&v| v == 70), "{y:?}");
    }

    /// A pooled shadow taken by launches out of their order: once the launches that used it span
    /// 63 (the generation comes round), its words are cleared, so a word of launch 70 never reads
    /// as current for launch 7, whose generation is the same; within 63 they are kept (another
    /// generation's word is not current).
    #[test]
    fn a_pooled_shadow_is_cleared_once_its_launches_span_a_generation() {
        use super::{GEN_LIMIT, GEN_SHIFT, GlobalShadow};
        use core::sync::atomic::Ordering;
        let len = 12_345; // no other test's length: the pool is shared by the tests' threads
        let generation = |launch: u64| (launch - 1) % GEN_LIMIT + 1;
        assert_eq!(generation(7), generation(70));
        let shadow = GlobalShadow::take(core::ptr::null(), 70, generation(70), 0, len);
        let word = (generation(70) << GEN_SHIFT) | (1 << 32);
        shadow.words[9].store(word, Ordering::Relaxed);
        assert_eq!(shadow.current(&shadow.words[9]), word);
        GlobalShadow::give_back(shadow);
        let shadow = GlobalShadow::take(core::ptr::null(), 100, generation(100), 0, len);
        assert_eq!(shadow.words[9].load(Ordering::Relaxed), word, "launches 70..=100: kept");
        assert_eq!(shadow.current(&shadow.words[9]), 0);
        GlobalShadow::give_back(shadow);
        let shadow = GlobalShadow::take(core::ptr::null(), 7, generation(7), 0, len);
        assert_eq!(shadow.words[9].load(Ordering::Relaxed), 0, "launches 7..=100: cleared");
        GlobalShadow::give_back(shadow);
    }
}
