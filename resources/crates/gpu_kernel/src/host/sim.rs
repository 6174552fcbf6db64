//! The simulator's checks (`sim` feature): shadow state beside every written buffer and every
//! workgroup-shared array, and the findings they produce.
//!
//! - Workgroup memory: per element, who wrote and who read it since the workgroup's last
//!   barrier (`epoch`). Two invocations touching one element in one epoch, at least one writing,
//!   is a race; a read of an element no invocation of this workgroup wrote is reported too.
//!   A workgroup's fibers run on one thread, so this shadow needs no atomics.
//! - Global buffers (`Out`): per element, the last writer and up to two readers, packed as
//!   (workgroup, local id, epoch, location) in atomics, as workgroups run on several threads.
//!   Accesses of one workgroup separated by a barrier are ordered; anything else by two
//!   invocations, at least one writing, is a race, whatever order the threads ran in.
//! - Atomics (`atomic_add`) never race with each other; an atomic and a plain access of one
//!   element by two unordered invocations do (each element's last atomic is kept beside its
//!   writer and readers).
//! - Out-of-bounds indexes of any buffer or shared array (the access is skipped, a read gives 0).
//! - Barrier divergence (`exec::run_group`).
//!
//! Findings are grouped by (kind, array, the two source locations): the first occurrence keeps
//! its coordinates, later ones only count.

use core::cell::{Cell, RefCell};
use core::panic::Location;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
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

pub struct Checks {
    grid: [u32; 3],
    size: [u32; 3],
    findings: Mutex<(Vec<Finding>, HashMap<(&'static str, Array, Loc, Option<Loc>), usize>)>,
    shadows: Mutex<Vec<Box<GlobalShadow>>>,
    pub(crate) dropped: AtomicU64,
}

fn order(access: &Access) -> ([u32; 3], [u32; 3]) {
    let (g, l) = (access.group, access.local);
    ([g[2], g[1], g[0]], [l[2], l[1], l[0]])
}

/// Findings kept in full; later distinct ones are only counted (`dropped`).
const MAX_FINDINGS: usize = 64;

impl Checks {
    pub fn new(grid: [u32; 3], size: [u32; 3]) -> Checks {
        Checks {
            grid,
            size,
            findings: Mutex::new((Vec::new(), HashMap::new())),
            shadows: Mutex::new(Vec::new()),
            dropped: AtomicU64::new(0),
        }
    }

    pub fn findings<R>(&self, read: impl FnOnce(&[Finding]) -> R) -> R {
        read(&self.findings.lock().unwrap().0)
    }

    pub fn global_shadow(&self, buffer: u32, len: usize) -> *const GlobalShadow {
        let shadow = Box::new(GlobalShadow::new(self as *const Checks, buffer, len));
        let ptr = &*shadow as *const GlobalShadow;
        self.shadows.lock().unwrap().push(shadow);
        ptr
    }

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
        CURRENT.with(|g| {
            let group = unsafe { &*g.get() };
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

thread_local! {
    /// The workgroup this worker thread runs (the fibers' accesses find their invocation here).
    static CURRENT: Cell<*const Group> = const { Cell::new(core::ptr::null()) };
    /// Location ids of this thread (a cache of `LOCATIONS`).
    static LOCAL_IDS: RefCell<HashMap<usize, u16>> = RefCell::new(HashMap::new());
}

pub(crate) fn enter_group(group: &Group) {
    CURRENT.with(|c| c.set(group));
}

pub(crate) fn leave_group() {
    CURRENT.with(|c| c.set(core::ptr::null()));
}

/// Every location an access came from, by id (0: none). At most 65,534 distinct locations.
static LOCATIONS: Mutex<Vec<&'static Location<'static>>> = Mutex::new(Vec::new());
const NO_LOCATION: u16 = 0;

/// A direct-mapped cache in front of `LOCAL_IDS`: a kernel's accesses come from a handful of
/// lines, and a hash map lookup per access was most of the checks' cost.
const FAST_SLOTS: usize = 64;

thread_local! {
    static FAST_IDS: [Cell<(usize, u16)>; FAST_SLOTS] = const { [const { Cell::new((0, 0)) }; FAST_SLOTS] };
}

#[inline(always)]
fn location_id(at: &'static Location<'static>) -> u16 {
    let key = at as *const Location as usize;
    let slot = (key >> 3) % FAST_SLOTS;
    let hit = FAST_IDS.with(|fast| {
        let (k, id) = fast[slot].get();
        (k == key).then_some(id)
    });
    if let Some(id) = hit {
        return id;
    }
    let id = location_id_slow(at);
    FAST_IDS.with(|fast| fast[slot].set((key, id)));
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
            None if all.len() < u16::MAX as usize - 1 => {
                all.push(at);
                all.len() as u16
            }
            None => NO_LOCATION,
        };
        ids.borrow_mut().insert(key, id);
        id
    })
}

fn location_of(id: u16) -> &'static Location<'static> {
    let all = LOCATIONS.lock().unwrap();
    all.get((id as usize).wrapping_sub(1)).copied().unwrap_or(Location::caller())
}

// ------------------------------------------------------------------------ workgroup memory

#[derive(Clone, Copy, Default)]
struct SharedEntry {
    epoch: u32,
    /// local id + 1 (0: none) and location id of this epoch's writer, first two readers and
    /// last atomic.
    writer: u16,
    wloc: u16,
    reader: u16,
    rloc: u16,
    reader2: u16,
    r2loc: u16,
    atomic: u16,
    aloc: u16,
    written: bool,
}

pub struct SharedShadow {
    entries: Vec<SharedEntry>,
}

impl SharedShadow {
    pub fn new(n: usize) -> SharedShadow {
        SharedShadow { entries: vec![SharedEntry::default(); n] }
    }
    pub fn reset(&mut self, n: usize) {
        self.entries.clear();
        self.entries.resize(n, SharedEntry::default());
    }
}

impl Group {
    pub(crate) fn shared_array(&self, slot: u32) -> Array {
        Array::Shared(slot, Loc(self.slot(slot).decl))
    }

    pub(crate) fn shared_access(&self, slot: u32, i: usize, write: bool, at: &'static Location<'static>) {
        let Some(checks) = self.checks() else { return };
        let shadow = unsafe { &mut *self.slot(slot).shadow.get() };
        let entry = &mut shadow.entries[i];
        let epoch = self.epoch.get();
        if entry.epoch != epoch {
            let written = entry.written;
            *entry = SharedEntry { epoch, written, ..SharedEntry::default() };
        }
        let me = (self.current.get() + 1) as u16;
        let lid = location_id(at);
        let group = self.coords.get();
        let side = |who: u16, loc: u16, what: &'static str| Access {
            group,
            local: self.local_coords(who as usize - 1),
            what,
            at: location_of(loc),
        };
        let array = self.shared_array(slot);
        let this = Access { group, local: self.local_coords(me as usize - 1), what: if write { "write" } else { "read" }, at };
        let race = |other: (u16, u16, &'static str)| {
            checks.report("shared-race", array, Some(i as u64), None, side(other.0, other.1, other.2), Some(this))
        };
        if write {
            if let Some(other) = entry.other_than(me, true) {
                race(other);
            }
            entry.writer = me;
            entry.wloc = lid;
            entry.written = true;
        } else {
            if !entry.written {
                checks.report("uninitialized-read", array, Some(i as u64), None, this, None);
            } else if let Some(other) = entry.other_than(me, false) {
                race(other);
            }
            entry.add_reader(me, lid);
        }
    }

    /// An atomic read-modify-write of element `i` of shared array `slot`: it races with another
    /// invocation's plain access in this epoch, never with an atomic; an atomic on an element no
    /// invocation wrote is an uninitialized read (GPU workgroup memory starts undefined).
    pub(crate) fn shared_atomic(&self, slot: u32, i: usize, at: &'static Location<'static>) {
        let Some(checks) = self.checks() else { return };
        let shadow = unsafe { &mut *self.slot(slot).shadow.get() };
        let entry = &mut shadow.entries[i];
        let epoch = self.epoch.get();
        if entry.epoch != epoch {
            let written = entry.written;
            *entry = SharedEntry { epoch, written, ..SharedEntry::default() };
        }
        let me = (self.current.get() + 1) as u16;
        let group = self.coords.get();
        let array = self.shared_array(slot);
        let this = Access { group, local: self.local_coords(me as usize - 1), what: "atomic", at };
        if !entry.written {
            checks.report("uninitialized-read", array, Some(i as u64), None, this, None);
        } else if let Some((who, loc, what)) = entry.plain_other(me, true) {
            // An atomic writes: any other invocation's plain access races with it.
            let other = Access { group, local: self.local_coords(who as usize - 1), what, at: location_of(loc) };
            checks.report("shared-race", array, Some(i as u64), None, other, Some(this));
        }
        entry.atomic = me;
        entry.aloc = location_id(at);
        entry.written = true;
    }
}

impl SharedEntry {
    /// Another invocation's plain access in this epoch that conflicts with one by `me`: its
    /// write, and for a write by `me` its reads too (two reads never conflict).
    fn plain_other(&self, me: u16, write: bool) -> Option<(u16, u16, &'static str)> {
        if self.writer != 0 && self.writer != me {
            return Some((self.writer, self.wloc, "write"));
        }
        if !write {
            return None;
        }
        [(self.reader, self.rloc), (self.reader2, self.r2loc)]
            .into_iter()
            .find(|&(r, _)| r != 0 && r != me)
            .map(|(r, l)| (r, l, "read"))
    }

    /// What a plain access by `me` races with: another invocation's atomic, or its conflicting
    /// plain access.
    fn other_than(&self, me: u16, write: bool) -> Option<(u16, u16, &'static str)> {
        if self.atomic != 0 && self.atomic != me {
            return Some((self.atomic, self.aloc, "atomic"));
        }
        self.plain_other(me, write)
    }

    fn add_reader(&mut self, me: u16, lid: u16) {
        if self.reader == 0 {
            self.reader = me;
            self.rloc = lid;
        } else if self.reader != me && self.reader2 == 0 {
            self.reader2 = me;
            self.r2loc = lid;
        }
    }
}

// ------------------------------------------------------------------------ global buffers

/// Per element: the last writer, two readers and the last atomic, each `pack`ed (0: none).
pub struct GlobalShadow {
    checks: *const Checks,
    buffer: u32,
    writer: Vec<AtomicU64>,
    reader: Vec<AtomicU64>,
    reader2: Vec<AtomicU64>,
    atomic: Vec<AtomicU64>,
}

unsafe impl Send for GlobalShadow {}
unsafe impl Sync for GlobalShadow {}

fn zeroed_atomics(len: usize) -> Vec<AtomicU64> {
    // vec![0; n] comes from calloc: pages of a large buffer's shadow are only touched where used.
    let mut plain = core::mem::ManuallyDrop::new(vec![0u64; len]);
    unsafe { Vec::from_raw_parts(plain.as_mut_ptr() as *mut AtomicU64, plain.len(), plain.capacity()) }
}

// (workgroup + 1: 28 bits) (local id: 11 bits) (epoch mod 512: 9 bits) (location id: 16 bits)
const GROUP_LIMIT: u64 = (1 << 28) - 1;

fn pack(group: u64, local: usize, epoch: u32, loc: u16) -> u64 {
    ((group + 1) << 36) | ((local as u64) << 25) | (((epoch & 0x1FF) as u64) << 16) | loc as u64
}

fn unpack(word: u64) -> (u64, u32, u32, u16) {
    ((word >> 36) - 1, ((word >> 25) & 0x7FF) as u32, ((word >> 16) & 0x1FF) as u32, (word & 0xFFFF) as u16)
}

/// Whether `earlier` and an access by `me` (both packed) are unordered and by two invocations.
fn conflicts(earlier: u64, me: u64) -> bool {
    if earlier == 0 {
        return false;
    }
    let (g0, l0, e0, _) = unpack(earlier);
    let (g1, l1, e1, _) = unpack(me);
    if g0 != g1 {
        return true;
    }
    l0 != l1 && e0 == e1 // one workgroup: a barrier between the two orders them
}

fn same_invocation(a: u64, b: u64) -> bool {
    let (g0, l0, _, _) = unpack(a);
    let (g1, l1, _, _) = unpack(b);
    g0 == g1 && l0 == l1
}

impl GlobalShadow {
    fn new(checks: *const Checks, buffer: u32, len: usize) -> GlobalShadow {
        GlobalShadow {
            checks,
            buffer,
            writer: zeroed_atomics(len),
            reader: zeroed_atomics(len),
            reader2: zeroed_atomics(len),
            // Touched only by kernels that use atomics (calloc'd pages stay unmapped otherwise).
            atomic: zeroed_atomics(len),
        }
    }

    fn side(&self, word: u64, what: &'static str) -> Access {
        let (group, local, _, loc) = unpack(word);
        let (group, local) = unsafe { &*self.checks }.coords(group, local);
        Access { group, local, what, at: location_of(loc) }
    }

    /// This invocation, packed (None: a workgroup beyond what the shadow can number).
    fn me(at: &'static Location<'static>) -> Option<u64> {
        CURRENT.with(|g| {
            let group = unsafe { &*g.get() };
            let linear = group.linear.get();
            (linear < GROUP_LIMIT).then(|| pack(linear, group.current.get(), group.epoch.get(), location_id(at)))
        })
    }

    /// An atomic read-modify-write of element `i`: it races with another invocation's unordered
    /// plain write or read, never with another atomic.
    pub fn atomic(&self, i: usize, at: &'static Location<'static>) {
        let Some(me) = Self::me(at) else { return };
        self.atomic[i].store(me, Ordering::Relaxed);
        let checks = unsafe { &*self.checks };
        let array = Array::Buffer(self.buffer);
        let this = || Access { at, ..self.side(me, "atomic") };
        for (slot, what) in [(&self.writer[i], "write"), (&self.reader[i], "read"), (&self.reader2[i], "read")] {
            let other = slot.load(Ordering::Relaxed);
            if conflicts(other, me) {
                checks.report("global-race", array, Some(i as u64), None, self.side(other, what), Some(this()));
                return;
            }
        }
    }

    pub fn access(&self, i: usize, write: bool, at: &'static Location<'static>) {
        let Some(me) = Self::me(at) else { return };
        let checks = unsafe { &*self.checks };
        let array = Array::Buffer(self.buffer);
        // Built only for a report: `side` takes the locations' lock.
        let this = || Access { at, ..self.side(me, if write { "write" } else { "read" }) };
        let atomic = self.atomic[i].load(Ordering::Relaxed);
        if conflicts(atomic, me) {
            checks.report("global-race", array, Some(i as u64), None, self.side(atomic, "atomic"), Some(this()));
        }
        if write {
            let before = self.writer[i].swap(me, Ordering::Relaxed);
            if conflicts(before, me) {
                checks.report("global-race", array, Some(i as u64), None, self.side(before, "write"), Some(this()));
                return;
            }
            for slot in [&self.reader[i], &self.reader2[i]] {
                let reader = slot.load(Ordering::Relaxed);
                if conflicts(reader, me) {
                    checks.report("global-race", array, Some(i as u64), None, self.side(reader, "read"), Some(this()));
                    return;
                }
            }
        } else {
            let writer = self.writer[i].load(Ordering::Relaxed);
            if conflicts(writer, me) {
                checks.report("global-race", array, Some(i as u64), None, self.side(writer, "write"), Some(this()));
            }
            let first = &self.reader[i];
            match first.compare_exchange(0, me, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => {}
                Err(other) if !same_invocation(other, me) => self.reader2[i].store(me, Ordering::Relaxed),
                Err(_) => {}
            }
        }
    }
}
