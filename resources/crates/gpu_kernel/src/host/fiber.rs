//! Stackful fibers: every invocation of a workgroup runs on a stack of its own, and a barrier
//! switches to the next invocation. A switch saves the callee-saved registers, the stack pointer
//! and the return address in the fiber's `Context` (one cache line in an array per workgroup)
//! and loads the next one's: a few nanoseconds, where an OS thread per invocation would pay a
//! futex wake-up and a context switch through the kernel at every barrier.
//!
//! Stacks come from one `mmap` per worker thread with a `PROT_NONE` guard page below each, so an
//! overflowing kernel faults instead of writing into its neighbour's stack.

#[cfg(not(target_arch = "x86_64"))]
compile_error!("gpu_kernel's host executor switches fibers with x86_64 assembly; other hosts are not supported yet");

use core::cell::UnsafeCell;
use core::ffi::c_void;

/// Bytes of stack per invocation (kernel bodies keep their arrays in workgroup memory).
pub const STACK_BYTES: usize = 128 * 1024;
const PAGE: usize = 4096;

extern "C" {
    fn mmap(addr: *mut c_void, len: usize, prot: i32, flags: i32, fd: i32, off: i64) -> *mut c_void;
    fn mprotect(addr: *mut c_void, len: usize, prot: i32) -> i32;
    fn munmap(addr: *mut c_void, len: usize) -> i32;
}
const PROT_NONE: i32 = 0;
const PROT_READ_WRITE: i32 = 1 | 2;
const MAP_PRIVATE_ANONYMOUS_NORESERVE: i32 = 0x02 | 0x20 | 0x4000;

/// `count` stacks, each with a guard page below it.
pub struct Stacks {
    base: *mut u8,
    bytes: usize,
    count: usize,
}

impl Stacks {
    pub fn new(count: usize) -> Stacks {
        let slot = STACK_BYTES + PAGE;
        let bytes = slot * count;
        let base = unsafe {
            mmap(core::ptr::null_mut(), bytes, PROT_READ_WRITE, MAP_PRIVATE_ANONYMOUS_NORESERVE, -1, 0)
        };
        if base as isize == -1 {
            panic!("gpu_kernel: cannot map {bytes} bytes of fiber stacks");
        }
        for i in 0..count {
            unsafe { mprotect((base as *mut u8).add(i * slot) as *mut c_void, PAGE, PROT_NONE) };
        }
        Stacks { base: base as *mut u8, bytes, count }
    }

    /// How many stacks there are.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The top (highest address, 16-byte aligned) of stack `i`. Tops are staggered within the
    /// page: stacks that all began at the same page offset would map their hot frames onto the
    /// same cache sets, and a workgroup's fibers evict each other at every switch.
    pub fn top(&self, i: usize) -> *mut u8 {
        let stagger = (i * 17 * 64) % PAGE;
        unsafe { self.base.add((i + 1) * (STACK_BYTES + PAGE) - stagger) }
    }
}

impl Drop for Stacks {
    fn drop(&mut self) {
        unsafe { munmap(self.base as *mut c_void, self.bytes) };
    }
}

/// A suspended fiber (or the worker's own stack): the stack pointer it goes on with, the address
/// it goes on at, and the callee-saved registers rbx, rbp, r12-r15. One cache line, in an array
/// per workgroup (`exec::Group`), written by `switch`, `prepare` and `clear` only.
///
/// Kept off the fibers' stacks: `switch` pushed the six registers and popped the return address
/// on the fiber's own stack, seven words beside the kernel's frame on each of 256 stacks, each a
/// page of its own: 4-6 lines per fiber, more than the L1 cache holds for a round of a workgroup.
/// Here consecutive invocations' contexts are consecutive lines, and a suspended fiber's stack
/// holds only the kernel's own frame. With `barrier_wait`
/// saving no registers of its own and no status kept while none has returned (`exec::wait`),
/// CPU time a launch on both cores (`cpu_native.py --cpu-time`, main's tree and this one
/// alternating twice): reduction 64-68 -> 48-49 ms, softmax 264-332 -> 185-186 ms, scan 98-100
/// -> 71-72 ms, warp_reduce 185-223 -> 144-147 ms (docs/cpu-sim.md, ninth pass).
#[repr(C, align(64))]
pub struct Context(UnsafeCell<[usize; 8]>);

impl Context {
    pub const fn new() -> Context {
        Context(UnsafeCell::new([0; 8]))
    }

    /// Where `switch` saves into or resumes from.
    #[inline(always)]
    pub fn ptr(&self) -> *mut Context {
        self.0.get() as *mut Context
    }

    /// The stack pointer it resumes with; 0 where no fiber is started (`clear`).
    #[inline(always)]
    pub fn sp(&self) -> usize {
        unsafe { (*self.0.get())[0] }
    }

    pub fn clear(&self) {
        unsafe { (*self.0.get())[0] = 0 };
    }
}

/// Save the callee-saved registers, the stack pointer and the return address into `*save`, then
/// go on where `*to` was saved (by an earlier `switch`, or made by `prepare`). It returns, to its
/// caller, when another `switch` resumes `*save`; called by a tail jump (`barrier_wait`), it
/// returns to that function's caller, the kernel.
///
/// It goes on with an indirect `jmp`, not a `ret`: a `ret` comes back from a call made on
/// another stack, and the return predictor missed it at most switches on this VM's AMD EPYC; an
/// indirect jump is predicted from its own history, one or a few targets (the barriers' call
/// sites). CPU time a launch: scan 150 -> 101 ms, softmax 379 -> 254 ms, reduction 91 -> 70 ms,
/// a one-barrier kernel 33 -> 22 ns an invocation (the fourth pass).
#[unsafe(naked)]
pub unsafe extern "C" fn switch(save: *mut Context, to: *const Context) {
    core::arch::naked_asm!(
        "mov rax, [rsp]",
        "lea rcx, [rsp + 8]",
        "mov [rdi], rcx",
        "mov [rdi + 8], rax",
        "mov [rdi + 16], rbx",
        "mov [rdi + 24], rbp",
        "mov [rdi + 32], r12",
        "mov [rdi + 40], r13",
        "mov [rdi + 48], r14",
        "mov [rdi + 56], r15",
        "mov rsp, [rsi]",
        "mov rbx, [rsi + 16]",
        "mov rbp, [rsi + 24]",
        "mov r12, [rsi + 32]",
        "mov r13, [rsi + 40]",
        "mov r14, [rsi + 48]",
        "mov r15, [rsi + 56]",
        "jmp [rsi + 8]",
    )
}

/// Bring the line at `p` into the L1 cache ahead of its use: the next-but-one fiber's context and
/// the top line of its stack, one switch ahead (the stack was last touched a round of the
/// workgroup ago; perf puts most of `barrier_wait`'s samples on this prefetch's wait). The old
/// layout prefetched five lines above the saved stack pointer; two or three measured faster
/// than five, and with the context off the stack one line of the stack is as fast as two, or
/// two switches ahead.
#[inline(always)]
pub fn prefetch(p: usize) {
    use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
    unsafe { _mm_prefetch::<_MM_HINT_T0>(p as *const i8) };
}

/// The first code a fresh fiber runs (`switch` returns into it): `entry(arg)`, which never returns.
#[unsafe(naked)]
unsafe extern "C" fn trampoline() {
    core::arch::naked_asm!("mov rdi, r12", "call r13", "ud2")
}

/// Make `ctx` resume as a call of `entry(arg)` on the stack whose top is `top` (16-byte aligned).
pub unsafe fn prepare(ctx: &Context, top: *mut u8, entry: extern "C" fn(*mut u8) -> !, arg: *mut u8) {
    // The trampoline starts with the stack pointer at `top`, so its `call` enters `entry` with
    // the alignment the System V ABI asks (rsp + 8 a multiple of 16); r12 and r13 carry its
    // argument and address.
    let words = [top as usize, trampoline as *const () as usize, 0, 0, arg as usize, entry as usize, 0, 0];
    unsafe { *ctx.0.get() = words };
}
