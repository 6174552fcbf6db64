//! Stackful fibers: every invocation of a workgroup runs on a stack of its own, and a barrier
//! switches back to the workgroup's scheduler. A switch saves the callee-saved registers on the
//! current stack and swaps stack pointers: a few nanoseconds, where an OS thread per invocation
//! would pay a futex wake-up and a context switch through the kernel at every barrier.
//!
//! Stacks come from one `mmap` per worker thread with a `PROT_NONE` guard page below each, so an
//! overflowing kernel faults instead of writing into its neighbour's stack.

#[cfg(not(target_arch = "x86_64"))]
compile_error!("gpu_kernel's host executor switches fibers with x86_64 assembly; other hosts are not supported yet");

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

/// Save the callee-saved registers and the stack pointer into `*save`, then continue on the
/// stack `to` (a pointer saved by an earlier `switch` or made by `prepare`).
///
/// It goes on with a `jmp` to the return address popped from the new stack, not a `ret`: the
/// `ret` came back from a call made on another stack, and the return predictor missed it at most
/// switches on this VM's AMD EPYC; an indirect jump is predicted from its own history, one or
/// a few targets (the barriers' call sites). CPU time a launch: scan 150 -> 101 ms, softmax
/// 379 -> 254 ms, reduction 91 -> 70 ms, a one-barrier kernel 33 -> 22 ns an invocation.
#[unsafe(naked)]
pub unsafe extern "C" fn switch(save: *mut usize, to: usize) {
    core::arch::naked_asm!(
        "push rbp",
        "push rbx",
        "push r12",
        "push r13",
        "push r14",
        "push r15",
        "mov [rdi], rsp",
        "mov rsp, rsi",
        "pop r15",
        "pop r14",
        "pop r13",
        "pop r12",
        "pop rbx",
        "pop rbp",
        "pop rcx",
        "jmp rcx",
    )
}

/// Bring the top of a suspended fiber's stack (its saved registers and the frames above them:
/// five lines) into the L1 cache ahead of the switch to it. Called one switch ahead: the stack
/// switched to was last touched a round of the workgroup ago (256 stacks of 4 to 6 hot lines
/// each, more than the L1 cache holds), and its first `pop` waited for the line (perf put 70 %
/// of `switch` on it). scan_add 121 -> 96 ms of CPU time a launch, reduction 128 -> 106 ms.
/// More lines, lines below the stack pointer for a fresh fiber, or two switches ahead measured
/// no better.
#[inline(always)]
pub fn prefetch(sp: usize) {
    use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
    let p = sp as *const i8;
    unsafe {
        _mm_prefetch::<_MM_HINT_T0>(p);
        _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(64));
        _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(128));
        _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(192));
        _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(256));
    }
}

/// The first code a fresh fiber runs (`switch` returns into it): `entry(arg)`, which never returns.
#[unsafe(naked)]
unsafe extern "C" fn trampoline() {
    core::arch::naked_asm!("mov rdi, r12", "call r13", "ud2")
}

/// A stack pointer that `switch` resumes as a call of `entry(arg)` on the stack whose top is `top`.
pub unsafe fn prepare(top: *mut u8, entry: extern "C" fn(*mut u8) -> !, arg: *mut u8) -> usize {
    // `switch` pops r15, r14, r13, r12, rbx, rbp, then returns: seven words. After the return
    // the stack pointer is `top` (16-byte aligned), so the trampoline's `call` enters `entry`
    // with the alignment the System V ABI asks (rsp + 8 a multiple of 16).
    let sp = top.sub(7 * 8) as *mut usize;
    let words = [0, 0, entry as usize, arg as usize, 0, 0, trampoline as *const () as usize];
    for (k, word) in words.iter().enumerate() {
        sp.add(k).write(*word);
    }
    sp as usize
}
