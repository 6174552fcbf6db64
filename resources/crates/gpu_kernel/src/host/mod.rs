//! The host side: the launch a `cpu` / `cpu-sim` entry receives from the workbench's cpu runtime,
//! the executor that runs a kernel body with GPU semantics, and the host's memory handles.
//!
//! An entry looks like this (the launch first, then the manifest's arguments in order):
//!
//! ```ignore
//! #[unsafe(no_mangle)]
//! pub unsafe extern "C" fn sum_cpu(launch: *mut Launch, n: u32, x: *const f32, partial: *mut f32) {
//!     let k = unsafe { Kernel::new(launch) };
//!     let (x, partial) = unsafe { (k.input(0, x), k.output(1, partial)) };
//!     k.run(move |ctx| {
//!         let scratch = ctx.shared::<f32, BLOCK>();
//!         sum(ctx, n, x, partial, scratch)
//!     });
//! }
//! ```
//!
//! `move`: the closure holds the handles and scalars themselves, not references to the entry's
//! locals, so the executor's loop over a barrier-free workgroup loads them once (the body's
//! stores could change the entry's locals as far as LLVM knows, not the closure it was called
//! with): saxpy's cpu launch 1.56 -> 1.20 ms of CPU time. A kernel with barriers may lose by it:
//! each invocation then keeps the values across a barrier on its own stack, where a reference
//! reloads them from the one closure (matmul 113 -> 128 ms with `move`; its entry has none).
//!
//! Buffers are numbered in the manifest's order of buffer arguments (scalars do not count); the
//! runtime passes each one's length, so every index is checked.

mod exec;
mod fiber;
mod lanes;
mod panic_line;
mod pool;
#[cfg(feature = "sim")]
pub mod debug;
#[cfg(feature = "sim")]
mod report;
#[cfg(feature = "sim")]
mod sim;

use core::marker::PhantomData;
use core::ops::{Index, IndexMut};
use core::panic::Location;

pub use exec::Ctx;
pub use lanes::{Carried, LaneType, LaneVar, Lanes, Stash, Uniform, Vote, MAX_LANES};

use crate::Element;

/// The element types with atomic read-modify-write ([`Out::atomic_add`], [`Shared::atomic_add`]):
/// on the host, `core::sync::atomic` on the element's own address, so concurrent workgroups (one
/// per worker thread) add without losing an update, exactly as a GPU's `atom.add` does.
pub trait Atomic: Element {
    #[doc(hidden)]
    /// # Safety
    /// `ptr` is aligned and valid for reads and writes.
    unsafe fn fetch_add(ptr: *mut Self, value: Self) -> Self;
    #[doc(hidden)]
    /// `fetch_add` where no other thread can see the element (a workgroup's shared memory: see
    /// [`Shared::atomic_add`]): a plain read, wrapping add and write.
    /// # Safety
    /// `ptr` is aligned and valid for reads and writes, and no other thread touches it meanwhile.
    /// The default is `fetch_add` (an implementation outside this crate keeps working).
    unsafe fn add_unshared(ptr: *mut Self, value: Self) -> Self {
        unsafe { Self::fetch_add(ptr, value) }
    }
}

/// The element types a subgroup shuffle moves ([`Ctx::subgroup_shuffle_down`]): 32-bit ones, as
/// CUDA's `__shfl_down_sync` and WGSL's `subgroupShuffleDown` on scalars.
pub trait Shuffle: Element {
    #[doc(hidden)]
    fn to_word(self) -> u64;
    #[doc(hidden)]
    fn from_word(word: u64) -> Self;
}

impl Shuffle for f32 {
    fn to_word(self) -> u64 {
        self.to_bits() as u64
    }
    fn from_word(word: u64) -> f32 {
        f32::from_bits(word as u32)
    }
}

impl Shuffle for u32 {
    fn to_word(self) -> u64 {
        self as u64
    }
    fn from_word(word: u64) -> u32 {
        word as u32
    }
}

impl Shuffle for i32 {
    fn to_word(self) -> u64 {
        self as u32 as u64
    }
    fn from_word(word: u64) -> i32 {
        word as u32 as i32
    }
}

impl Atomic for u32 {
    #[inline(always)]
    unsafe fn fetch_add(ptr: *mut u32, value: u32) -> u32 {
        unsafe { core::sync::atomic::AtomicU32::from_ptr(ptr) }.fetch_add(value, core::sync::atomic::Ordering::Relaxed)
    }
    #[inline(always)]
    unsafe fn add_unshared(ptr: *mut u32, value: u32) -> u32 {
        let old = unsafe { load(ptr) };
        unsafe { store(ptr, old.wrapping_add(value)) };
        old
    }
}

impl Atomic for i32 {
    #[inline(always)]
    unsafe fn fetch_add(ptr: *mut i32, value: i32) -> i32 {
        unsafe { core::sync::atomic::AtomicI32::from_ptr(ptr) }.fetch_add(value, core::sync::atomic::Ordering::Relaxed)
    }
    #[inline(always)]
    unsafe fn add_unshared(ptr: *mut i32, value: i32) -> i32 {
        let old = unsafe { load(ptr) };
        unsafe { store(ptr, old.wrapping_add(value)) };
        old
    }
}

/// Exported by every cdylib built on the kernel API (the value is the `Launch` layout's version):
/// the cpu runtime (and the bare timing loop) find it and pass a `Launch` before the manifest's
/// arguments, whatever wrote the build record.
#[unsafe(no_mangle)]
#[used]
pub static gpu_kernel_host_abi: u32 = 2;

/// What the cpu runtime passes as an entry's first argument (`workbench/run/runtimes/cpu.py`
/// builds the same layout with ctypes).
#[repr(C)]
pub struct Launch {
    /// Workgroups in x, y, z (the manifest's `grid`).
    pub grid: [u32; 3],
    /// Invocations per workgroup in x, y, z (the manifest's `threads`).
    pub threads: [u32; 3],
    /// Each buffer's length in elements, in the manifest's order of buffer arguments.
    pub lens: *const u64,
    pub nbufs: u32,
    /// 1: run the simulator's checks (a `sim` build only; the plain host build ignores it).
    pub checks: u32,
    /// Worker threads (0: one per core).
    pub workers: u32,
    /// Where the findings go, as JSON text (`{"findings": [...], "dropped": N}`).
    pub report: *mut u8,
    pub report_cap: u64,
    /// Bytes written to `report` (0: nothing to report).
    pub report_len: u64,
    /// 1: record the `Ctx::trace` values of the invocation below (with the checks, in the report).
    pub trace: u32,
    pub trace_group: [u32; 3],
    pub trace_local: [u32; 3],
    /// 1: record each `Out` element's last writer (`debug::Writers`) into the arrays below, per
    /// buffer in manifest order (null for inputs); read only with the checks on.
    pub writers: u32,
    pub writer_last: *const *mut u64,
    pub writer_count: *const *mut u32,
}

/// A value [`Ctx::trace`] recorded (`crate::Trace`).
#[doc(hidden)]
#[derive(Clone, Copy)]
pub enum Traced {
    F32(f32),
    F64(f64),
    Int(i64, &'static str),
    Uint(u64, &'static str),
    Bool(bool),
}

/// One launch of a kernel body: the buffers' handles, then `run`.
pub struct Kernel<'l> {
    launch: &'l mut Launch,
    #[cfg(feature = "sim")]
    checks: Option<Box<sim::Checks>>,
}

impl<'l> Kernel<'l> {
    /// # Safety
    /// `launch` is the runtime's launch record, valid for the call of the entry.
    pub unsafe fn new(launch: *mut Launch) -> Kernel<'l> {
        panic_line::install(); // a panic's message and line reach the workbench (panic_line.rs)
        let launch = unsafe { &mut *launch };
        launch.report_len = 0;
        #[cfg(feature = "sim")]
        let checks = (launch.checks != 0).then(|| {
            // Read only with the checks on: a record without them may end before these fields.
            let traced = (launch.trace != 0).then_some((launch.trace_group, launch.trace_local));
            let mut checks = Box::new(sim::Checks::new(launch.grid, launch.threads, traced));
            checks.writers = launch.writers != 0;
            checks
        });
        Kernel {
            launch,
            #[cfg(feature = "sim")]
            checks,
        }
    }

    fn len_of(&self, buffer: usize) -> usize {
        if buffer >= self.launch.nbufs as usize {
            panic!("gpu_kernel: buffer {buffer} is not in the launch ({} buffers)", self.launch.nbufs);
        }
        unsafe { *self.launch.lens.add(buffer) as usize }
    }

    /// Buffer number `buffer` (manifest order), read-only.
    ///
    /// # Safety
    /// `ptr` is that buffer, as the runtime passed it.
    pub unsafe fn input<T: Element>(&self, buffer: usize, ptr: *const T) -> In<'l, T> {
        In {
            ptr,
            len: self.len_of(buffer),
            id: buffer as u32,
            #[cfg(feature = "sim")]
            checks: self.checks_ptr(),
            _life: PhantomData,
        }
    }

    /// Buffer number `buffer` (manifest order), written (and maybe read) by the kernel.
    ///
    /// # Safety
    /// `ptr` is that buffer, as the runtime passed it.
    pub unsafe fn output<T: Element>(&self, buffer: usize, ptr: *mut T) -> Out<'l, T> {
        let len = self.len_of(buffer);
        Out {
            ptr,
            len,
            id: buffer as u32,
            #[cfg(feature = "sim")]
            checks: self.checks_ptr(),
            #[cfg(feature = "sim")]
            shadow: match &self.checks {
                Some(checks) => checks.global_shadow(buffer as u32, len, debug::Writers::of(self.launch, buffer)),
                None => core::ptr::null(),
            },
            _life: PhantomData,
        }
    }

    #[cfg(feature = "sim")]
    fn checks_ptr(&self) -> *const sim::Checks {
        self.checks.as_deref().map_or(core::ptr::null(), |c| c as *const sim::Checks)
    }

    /// Run a `#[lanes]` kernel body: `lanes`, its host copy, once per workgroup (`lanes.rs`);
    /// `fibers`, the body as written, once per invocation in `workbench debug`'s build, where
    /// the debugger follows one invocation through the body. Only the closure the build runs is
    /// compiled.
    #[track_caller]
    pub fn run_lanes<F, L>(self, fibers: F, lanes: L)
    where
        F: Fn(Ctx) + Sync,
        L: Fn(&Lanes) + Sync,
    {
        #[cfg(feature = "debug")]
        {
            let _ = lanes;
            self.run(fibers)
        }
        #[cfg(not(feature = "debug"))]
        {
            let _ = fibers;
            self.lanes_only(lanes, Location::caller());
        }
    }

    /// `lanes`, a `#[lanes]` body's host copy, once per workgroup in every build (`debug`'s
    /// included): `run_lanes` outside `debug`, and `testing::Grid::run_lanes`, which compares
    /// the copy with the body on fibers.
    pub(crate) fn lanes_only<L>(mut self, lanes: L, at: &'static Location<'static>)
    where
        L: Fn(&Lanes) + Sync,
    {
        #[cfg(feature = "sim")]
        let checks = self.checks_ptr();
        #[cfg(not(feature = "sim"))]
        let checks = core::ptr::null();
        exec::run_lanes(self.launch.grid, self.launch.threads, self.launch.workers, checks, &lanes, at);
        self.report();
    }

    /// Run `body` once per invocation of the launch's grid, with GPU semantics; in a `sim` build
    /// with checks on, the findings go to the launch's report. A barrier-free body runs faster
    /// in a `move` closure (see the module's comment).
    #[track_caller]
    pub fn run<F>(mut self, body: F)
    where
        F: Fn(Ctx) + Sync,
    {
        #[cfg(feature = "sim")]
        let checks = self.checks_ptr();
        #[cfg(not(feature = "sim"))]
        let checks = core::ptr::null();
        let at = Location::caller();
        exec::run(self.launch.grid, self.launch.threads, self.launch.workers, checks, &body, at);
        self.report();
    }

    /// cpu-sim's findings into the launch's report.
    fn report(&mut self) {
        #[cfg(feature = "sim")]
        if let Some(checks) = &self.checks {
            let cap = self.launch.report_cap as usize;
            if !self.launch.report.is_null() && cap > 0 {
                let out = unsafe { core::slice::from_raw_parts_mut(self.launch.report, cap) };
                self.launch.report_len = report::write(checks, out) as u64;
            }
        }
    }
}

/// An entry's closure, marked `#[inline(always)]` in a cpu-sim build (this crate's `sim` feature)
/// and left as it is in the plain `cpu` build:
/// `let body = gpu_kernel::sim_inline!(move |ctx| ...); k.run(body)`.
/// For barrier-free kernels: cpu-sim's checks make the closure too large for LLVM to inline into
/// the executor's invocation loop, which then calls it out of line for every invocation (CPU time
/// per launch: saxpy 17.5 -> 11.3 ms, bitonic 12.7 -> 7.5 ms). Not in the plain build, where LLVM
/// inlines the closure anyway: marked there, it was inlined before LLVM knew that the body's
/// stores leave its captures alone, and saxpy reloaded them for every invocation (0.94 -> 1.10
/// ms); and a kernel with barriers gains nothing (its invocations after the first are fibers,
/// each a call of the closure).
///
/// Nor in `workbench debug`'s build (`debug`): unoptimised, it gains nothing, and the closure's
/// own frame keeps its locals (`ctx`) in the debugger's stops.
#[cfg(all(feature = "sim", not(feature = "debug")))]
#[macro_export]
macro_rules! sim_inline {
    // The attribute on a call's argument: the one place stable Rust takes it on an expression,
    // so the macro works wherever an expression does (`let body = sim_inline!(...)` too).
    ($($closure:tt)*) => {
        $crate::host::same(#[inline(always)] $($closure)*)
    };
}

/// `sim_inline!`'s closure as it came (its bound gives the closure the signature `run` takes).
#[doc(hidden)]
#[inline(always)]
pub fn same<F: Fn(Ctx) + Sync>(closure: F) -> F {
    closure
}

/// See the `sim` build's `sim_inline` above: the plain build (and the debugger's) leaves the
/// closure unmarked.
#[cfg(any(not(feature = "sim"), feature = "debug"))]
#[macro_export]
macro_rules! sim_inline {
    ($($closure:tt)*) => {
        $crate::host::same($($closure)*)
    };
}

/// Where a bad index stops a plain host build: the kernel's own line, like a slice's panic. It
/// takes the array's kind and number, not a formatted name: every access inlines the call, and a
/// `String` built there (and dropped) made a kernel's closure too costly for LLVM to inline into
/// the executor's loop (cost 330 against 325 for saxpy: 10 % slower on the cpu backend).
#[cold]
#[inline(never)]
#[track_caller]
fn out_of_bounds(what: &str, id: u32, index: usize, len: usize) -> ! {
    panic!("{what} {id}: index {index} is out of bounds (length {len})")
}

/// The one bounds rule of every accessor (`In`, `Out`, `Shared`; `get4`/`set4` go through them):
/// an index below the length goes on. Past the end, a cpu-sim build with checks reports it at
/// the kernel's line and skips the access (the accessor returns `skip`: a read gives the default
/// value, a write nothing); a plain host build stops the kernel there (`out_of_bounds`), as a slice does. A macro,
/// not a function: the sim branch names fields only a sim build has, and every access inlines it
/// (inlining decides the cpu backend's speed: benchmarks/kernel_crate_ab.py).
macro_rules! check_bounds {
    ($i:expr, $len:expr, $what:literal, $id:expr, $write:expr, sim: $sim:expr $(, skip: $skip:expr)?) => {
        if $i >= $len {
            #[cfg(feature = "sim")]
            if let Some((checks, array)) = $sim {
                checks.out_of_bounds(array, $i, $len, $write, Location::caller());
                return $($skip)?;
            }
            out_of_bounds($what, $id, $i, $len);
        }
    };
}

/// The element read of `Out::get`, `Shared::get` and `Shared::atomic_add` (`store`: their
/// writes): a plain load in the plain `cpu` build, a volatile one in a `sim` build.
///
/// Plain, LLVM may keep a value in a register, forward a store to a later load of the element,
/// and vectorise a loop over the lanes (volatile accesses it must emit one by one, in order).
/// Why that is sound, or no worse than before:
/// - **Workgroup memory** (`Shared`) is one workgroup's, and a workgroup runs on one worker
///   thread from start to end (`exec.rs`). As `#[lanes]` loops, the lanes' accesses are one
///   thread's program order, a loop after a barrier after the loop before (the barrier orders
///   nothing that order does not). On fibers, an invocation stops only inside a barrier or a
///   shuffle, in `fiber::switch` (naked assembly LLVM cannot see into: it must assume that any
///   memory another invocation can reach changed there, and the arrays' storage is reached
///   through the workgroup's `Group`, which every invocation holds). No other thread touches the
///   array while the workgroup runs, so no access of it races: plain accesses are the Rust
///   memory model's own for it, and no optimisation of them changes what a lane or fiber reads.
/// - **Global memory** (`Out`) may be raced on: two invocations of different workgroups, on two
///   workers, writing or reading-and-writing one element with no atomic. The kernel is wrong
///   then (cpu-sim reports it), on a GPU too, and its result undefined there. A volatile access
///   never made that race defined in Rust either (racing volatile accesses are a data race), it
///   only kept the compiler from merging or moving them; what plain accesses change is which
///   wrong value a racy kernel leaves. LLVM still loads each element it reads once into a
///   register and bounds-checks the index it then uses (to spare a register it reloads only
///   memory it knows never changes, not an ordinary load), so an index read from a raced element is checked as it is used and the
///   host's memory outside the buffers stays untouched; nothing is stored that the kernel did not
///   store. The one behaviour a racy kernel can newly show: a loop that spins on an element
///   another workgroup writes (`while flag.get(0) == 0 {}`) may read it once and never end, as
///   it may on a GPU: the GPU targets' `get` and `set` are plain loads and stores too
///   (`raw.rs`, `spirv.rs`), and such a wait is not GPU-safe without atomics anyway (on the cpu
///   backend it hung already when the writer's workgroup was queued behind it on the same
///   worker). `Out`'s `Index` / `IndexMut` (`y[i] += v`) already gave plain references.
///
/// A `sim` build (cpu-sim, the kernel tests, `workbench debug`) keeps volatile accesses: its
/// code stays what it was, so a racy kernel's values there, which later checks and findings
/// follow (an index read from a raced element decides which access is reported next), stay
/// the same, and its lane loops do not vectorise anyway (each access is checked).
#[inline(always)]
unsafe fn load<T>(ptr: *const T) -> T {
    #[cfg(feature = "sim")]
    return unsafe { ptr.read_volatile() };
    #[cfg(not(feature = "sim"))]
    unsafe { ptr.read() }
}

/// The element write of `Out::set`, `Shared::set` and `Shared::atomic_add`: see `load`.
#[inline(always)]
unsafe fn store<T>(ptr: *mut T, value: T) {
    #[cfg(feature = "sim")]
    return unsafe { ptr.write_volatile(value) };
    #[cfg(not(feature = "sim"))]
    unsafe { ptr.write(value) }
}

/// A read-only buffer.
pub struct In<'a, T> {
    ptr: *const T,
    len: usize,
    id: u32,
    #[cfg(feature = "sim")]
    checks: *const sim::Checks,
    _life: PhantomData<&'a [T]>,
}

impl<T> Clone for In<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for In<'_, T> {}
unsafe impl<T: Sync> Send for In<'_, T> {}
unsafe impl<T: Sync> Sync for In<'_, T> {}

// No `len()`: no GPU target knows a buffer's length (they take raw pointers), so a body that asked
// would build on the cpu and nowhere else (tests/build/test_kernel_api_surface.py holds the
// targets to one API); the host's own checks read the length from the handle's field.
impl<T: Element> In<'_, T> {
    #[inline(always)]
    #[track_caller]
    pub fn get(&self, i: usize) -> T {
        check_bounds!(i, self.len, "buffer", self.id, false,
            sim: (!self.checks.is_null()).then(|| (unsafe { &*self.checks }, sim::Array::Buffer(self.id))),
            skip: T::default());
        unsafe { self.ptr.add(i).read() }
    }
}

/// A buffer the kernel writes (and may read).
pub struct Out<'a, T> {
    ptr: *mut T,
    len: usize,
    id: u32,
    #[cfg(feature = "sim")]
    checks: *const sim::Checks,
    #[cfg(feature = "sim")]
    shadow: *const sim::GlobalShadow,
    _life: PhantomData<&'a mut [T]>,
}

impl<T> Clone for Out<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Out<'_, T> {}
unsafe impl<T: Send> Send for Out<'_, T> {}
unsafe impl<T: Send> Sync for Out<'_, T> {}

impl<T: Element> Out<'_, T> {
    #[inline(always)]
    #[track_caller]
    pub fn get(&self, i: usize) -> T {
        check_bounds!(i, self.len, "buffer", self.id, false,
            sim: (!self.checks.is_null()).then(|| (unsafe { &*self.checks }, sim::Array::Buffer(self.id))),
            skip: T::default());
        #[cfg(feature = "sim")]
        if !self.shadow.is_null() {
            unsafe { &*self.shadow }.access(i, false, Location::caller());
        }
        unsafe { load(self.ptr.add(i)) }
    }
    #[inline(always)]
    #[track_caller]
    pub fn set(&mut self, i: usize, value: T) {
        check_bounds!(i, self.len, "buffer", self.id, true,
            sim: (!self.checks.is_null()).then(|| (unsafe { &*self.checks }, sim::Array::Buffer(self.id))));
        #[cfg(feature = "sim")]
        if !self.shadow.is_null() {
            unsafe { &*self.shadow }.access(i, true, Location::caller());
        }
        unsafe { store(self.ptr.add(i), value) }
    }
}

impl<T: Atomic> Out<'_, T> {
    /// Add `value` to element `i` atomically (wrapping) and give the value it held before: no
    /// update is lost however many invocations add to the element at once. cpu-sim reports no
    /// race between two atomics, but does between an atomic and a plain access of the element by
    /// another invocation with no barrier between them.
    #[inline(always)]
    #[track_caller]
    pub fn atomic_add(&mut self, i: usize, value: T) -> T {
        check_bounds!(i, self.len, "buffer", self.id, true,
            sim: (!self.checks.is_null()).then(|| (unsafe { &*self.checks }, sim::Array::Buffer(self.id))),
            skip: T::default());
        #[cfg(feature = "sim")]
        if !self.shadow.is_null() {
            unsafe { &*self.shadow }.atomic(i, Location::caller());
        }
        unsafe { T::fetch_add(self.ptr.add(i), value) }
    }
}

// 16-byte accesses, `get4` / `set4`: elements `i .. i + 4` as one access on the GPU targets
// (`ld.global.v4.f32`). Here four element accesses, each checked as `get` / `set` (a sim build
// reports the first one out of bounds at the caller's line); an `i` that is not a multiple of 4
// stops the kernel, as the misaligned address would fault on a GPU.
#[cold]
#[inline(never)]
#[track_caller]
fn misaligned(what: &str, id: u32, index: usize) -> ! {
    panic!("{what} {id}: a 16-byte access at element {index}, which is not a multiple of 4")
}

impl In<'_, f32> {
    /// Elements `i .. i + 4` (one 16-byte load on a GPU); `i` is a multiple of 4.
    #[inline(always)]
    #[track_caller]
    pub fn get4(&self, i: usize) -> [f32; 4] {
        if !i.is_multiple_of(4) {
            misaligned("buffer", self.id, i);
        }
        [self.get(i), self.get(i + 1), self.get(i + 2), self.get(i + 3)]
    }
}

impl Out<'_, f32> {
    /// Elements `i .. i + 4` (one 16-byte load on a GPU); `i` is a multiple of 4.
    #[inline(always)]
    #[track_caller]
    pub fn get4(&self, i: usize) -> [f32; 4] {
        if !i.is_multiple_of(4) {
            misaligned("buffer", self.id, i);
        }
        [self.get(i), self.get(i + 1), self.get(i + 2), self.get(i + 3)]
    }
    /// Elements `i .. i + 4` (one 16-byte store on a GPU); `i` is a multiple of 4.
    #[inline(always)]
    #[track_caller]
    pub fn set4(&mut self, i: usize, value: [f32; 4]) {
        if !i.is_multiple_of(4) {
            misaligned("buffer", self.id, i);
        }
        self.set(i, value[0]);
        self.set(i + 1, value[1]);
        self.set(i + 2, value[2]);
        self.set(i + 3, value[3]);
    }
}

/// A workgroup-shared array of `N` elements: one per workgroup, from [`Ctx::shared`].
pub struct Shared<'a, T, const N: usize> {
    ptr: *mut T,
    #[cfg_attr(not(feature = "sim"), allow(dead_code))]
    slot: u32,
    #[cfg_attr(not(feature = "sim"), allow(dead_code))]
    group: &'a exec::Group,
    /// cpu-sim: the array's shadow, null without checks (`Ctx::shared`).
    #[cfg(feature = "sim")]
    shadow: *mut sim::SharedEntry,
}

impl<T, const N: usize> Clone for Shared<'_, T, N> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, const N: usize> Copy for Shared<'_, T, N> {}

impl<T: Element, const N: usize> Shared<'_, T, N> {
    #[inline(always)]
    #[track_caller]
    pub fn get(&self, i: usize) -> T {
        check_bounds!(i, N, "shared array", self.slot, false,
            sim: self.group.checks().map(|checks| (checks, self.group.shared_array(self.slot))),
            skip: T::default());
        #[cfg(feature = "sim")]
        if !self.shadow.is_null() {
            self.group.shared_access(self.shadow, self.slot, i, false, Location::caller());
        }
        unsafe { load(self.ptr.add(i)) }
    }
    #[inline(always)]
    #[track_caller]
    pub fn set(&mut self, i: usize, value: T) {
        check_bounds!(i, N, "shared array", self.slot, true,
            sim: self.group.checks().map(|checks| (checks, self.group.shared_array(self.slot))));
        #[cfg(feature = "sim")]
        if !self.shadow.is_null() {
            self.group.shared_access(self.shadow, self.slot, i, true, Location::caller());
        }
        unsafe { store(self.ptr.add(i), value) }
    }
}

impl<T: Atomic, const N: usize> Shared<'_, T, N> {
    /// Add `value` to element `i` atomically (wrapping) and give the value it held before (see
    /// [`Out::atomic_add`]; cpu-sim also reports an atomic on an element nobody wrote first).
    #[inline(always)]
    #[track_caller]
    pub fn atomic_add(&mut self, i: usize, value: T) -> T {
        check_bounds!(i, N, "shared array", self.slot, true,
            sim: self.group.checks().map(|checks| (checks, self.group.shared_array(self.slot))),
            skip: T::default());
        #[cfg(feature = "sim")]
        if !self.shadow.is_null() {
            self.group.shared_atomic(self.shadow, self.slot, i, N, Location::caller());
        }
        // A plain read-modify-write: a workgroup's invocations all run on one worker thread,
        // switching only at barriers (exec.rs), so no other thread touches its shared memory and
        // no invocation runs between this read and write. `lock xadd` was most of histogram's
        // counting loop in the plain build. In cpu-sim (its checks, `shared_atomic`, the same
        // either way) it gained nothing on fibers, but as #[lanes] lanes histogram's CPU time a
        // launch went 19.8 -> 18.9 ms (four alternations, each faster, load 3-4).
        unsafe { T::add_unshared(self.ptr.add(i), value) }
    }
}

impl<const N: usize> Shared<'_, f32, N> {
    /// Elements `i .. i + 4` (one 16-byte load on a GPU); `i` is a multiple of 4. Four element
    /// reads here, each checked as `get`.
    #[inline(always)]
    #[track_caller]
    pub fn get4(&self, i: usize) -> [f32; 4] {
        if !i.is_multiple_of(4) {
            misaligned("shared array", self.slot, i);
        }
        [self.get(i), self.get(i + 1), self.get(i + 2), self.get(i + 3)]
    }
}

// `x[i]` and `y[i] = v`: the natural form of a kernel line. A read through `Index` is a read, any
// use of `IndexMut` (`y[i] = v`, `y[i] += v`) counts as a write. An index out of bounds in a sim
// build is reported like `get`/`set`'s, and the access goes to a spare element instead (reads 0).

impl<T: Element> Index<usize> for In<'_, T> {
    type Output = T;
    #[inline(always)]
    #[track_caller]
    fn index(&self, i: usize) -> &T {
        check_bounds!(i, self.len, "buffer", self.id, false,
            sim: (!self.checks.is_null()).then(|| (unsafe { &*self.checks }, sim::Array::Buffer(self.id))),
            skip: spare_zero());
        unsafe { &*self.ptr.add(i) }
    }
}

impl<T: Element> Index<usize> for Out<'_, T> {
    type Output = T;
    #[inline(always)]
    #[track_caller]
    fn index(&self, i: usize) -> &T {
        check_bounds!(i, self.len, "buffer", self.id, false,
            sim: (!self.checks.is_null()).then(|| (unsafe { &*self.checks }, sim::Array::Buffer(self.id))),
            skip: spare_zero());
        #[cfg(feature = "sim")]
        if !self.shadow.is_null() {
            unsafe { &*self.shadow }.access(i, false, Location::caller());
        }
        unsafe { &*self.ptr.add(i) }
    }
}

impl<T: Element> IndexMut<usize> for Out<'_, T> {
    #[inline(always)]
    #[track_caller]
    fn index_mut(&mut self, i: usize) -> &mut T {
        check_bounds!(i, self.len, "buffer", self.id, true,
            sim: (!self.checks.is_null()).then(|| (unsafe { &*self.checks }, sim::Array::Buffer(self.id))),
            skip: spare_slot());
        #[cfg(feature = "sim")]
        if !self.shadow.is_null() {
            unsafe { &*self.shadow }.access(i, true, Location::caller());
        }
        unsafe { &mut *self.ptr.add(i) }
    }
}

/// Sixteen zero bytes: an element (every `Element` is at most 8 bytes) an out-of-bounds read sees.
#[cfg(feature = "sim")]
static ZERO: [u128; 1] = [0];

#[cfg(feature = "sim")]
fn spare_zero<T: Element>() -> &'static T {
    unsafe { &*(ZERO.as_ptr() as *const T) }
}

#[cfg(feature = "sim")]
thread_local! {
    static SPARE: core::cell::UnsafeCell<u128> = const { core::cell::UnsafeCell::new(0) };
}

/// Where an out-of-bounds write through `IndexMut` goes (this thread's spare element).
#[cfg(feature = "sim")]
fn spare_slot<T: Element>() -> &'static mut T {
    SPARE.with(|s| unsafe { &mut *(s.get() as *mut T) })
}
