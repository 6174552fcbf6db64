//! rustc's NVPTX backend: indices and the barrier are `core::arch::nvptx` intrinsics; memory is
//! reached through raw pointers, unchecked, as CUDA C does (the host's checks catch bad indices).
use core::arch::nvptx::*;
use core::marker::PhantomData;

pub use crate::raw::{In, Out};
use crate::Element;

/// The invocation: every index is a special register read. It holds one flag, known where the
/// entry makes it ([`Ctx::new_1d`]), so it costs nothing once inlined.
#[derive(Clone, Copy)]
pub struct Ctx {
    grid_1d: bool,
}

impl Ctx {
    /// # Safety
    /// Only inside a `ptx-kernel` entry.
    #[inline(always)]
    pub unsafe fn new() -> Self {
        Ctx { grid_1d: false }
    }
    /// As [`Ctx::new`], for an entry whose launch grid has one dimension (the manifest's `grid`
    /// has one entry: CUDA launches it as written, it is never folded as on wgpu). `group_linear`
    /// is then `%ctaid.x` alone. The general form reads `%ctaid.y`, `%ctaid.z`, `%nctaid.x` and
    /// `%nctaid.y` and multiplies in 64 bits before the first load: 13 more SASS instructions
    /// (sm_90) in the bitonic step, on the path of every warp, where nvcc's `blockIdx.x` has one.
    ///
    /// # Safety
    /// As [`Ctx::new`], and the launch's grid is 1-D (`%nctaid.y` = `%nctaid.z` = 1): on a 2-D or
    /// 3-D grid `group_linear` would give `group_id_x`, not the linear workgroup.
    #[inline(always)]
    pub unsafe fn new_1d() -> Self {
        Ctx { grid_1d: true }
    }
    #[inline(always)]
    pub fn local_id_x(&self) -> usize { unsafe { _thread_idx_x() as usize } }
    #[inline(always)]
    pub fn local_id_y(&self) -> usize { unsafe { _thread_idx_y() as usize } }
    #[inline(always)]
    pub fn local_id_z(&self) -> usize { unsafe { _thread_idx_z() as usize } }
    #[inline(always)]
    pub fn group_id_x(&self) -> usize { unsafe { _block_idx_x() as usize } }
    #[inline(always)]
    pub fn group_id_y(&self) -> usize { unsafe { _block_idx_y() as usize } }
    #[inline(always)]
    pub fn group_id_z(&self) -> usize { unsafe { _block_idx_z() as usize } }
    #[inline(always)]
    pub fn group_size_x(&self) -> usize { unsafe { _block_dim_x() as usize } }
    #[inline(always)]
    pub fn group_size_y(&self) -> usize { unsafe { _block_dim_y() as usize } }
    #[inline(always)]
    pub fn num_groups_x(&self) -> usize { unsafe { _grid_dim_x() as usize } }
    #[inline(always)]
    pub fn num_groups_y(&self) -> usize { unsafe { _grid_dim_y() as usize } }
    /// The linear workgroup index (x fastest); `%ctaid.x` for a [`Ctx::new_1d`] entry.
    #[inline(always)]
    pub fn group_linear(&self) -> usize {
        unsafe {
            if self.grid_1d {
                return _block_idx_x() as usize;
            }
            _block_idx_x() as usize
                + _grid_dim_x() as usize * (_block_idx_y() as usize + _grid_dim_y() as usize * _block_idx_z() as usize)
        }
    }
    /// `group_id_x * group_size_x + local_id_x`.
    #[inline(always)]
    pub fn global_id_x(&self) -> usize {
        unsafe { _block_idx_x() as usize * _block_dim_x() as usize + _thread_idx_x() as usize }
    }
    #[inline(always)]
    pub fn global_id_y(&self) -> usize {
        unsafe { _block_idx_y() as usize * _block_dim_y() as usize + _thread_idx_y() as usize }
    }
    /// A warp: 32 lanes.
    #[inline(always)]
    pub fn subgroup_size(&self) -> usize {
        32
    }
    /// This invocation's lane in its warp (`%laneid`).
    #[inline(always)]
    pub fn subgroup_invocation_id(&self) -> usize {
        let lane: u32;
        unsafe { core::arch::asm!("mov.u32 {l}, %laneid;", l = out(reg32) lane, options(pure, nomem, nostack)) };
        lane as usize
    }
    /// The `value` of the lane `delta` above this one (`shfl.sync.down.b32` over the full warp, as
    /// `__shfl_down_sync(0xffffffff, value, delta)`); its own value past the warp's end. Every lane
    /// of the warp must call it.
    #[inline(always)]
    pub fn subgroup_shuffle_down<T: Shuffle>(&self, value: T, delta: u32) -> T {
        let out: u32;
        unsafe {
            core::arch::asm!(
                "shfl.sync.down.b32 {o}, {v}, {d}, 0x1f, 0xffffffff;",
                o = out(reg32) out,
                v = in(reg32) value.to_word(),
                d = in(reg32) delta,
                options(nomem, nostack, preserves_flags),
            );
        }
        T::from_word(out)
    }
    /// Every invocation of the workgroup arrives before any goes on; workgroup memory written
    /// before it is visible after it (`bar.sync 0`).
    #[inline(always)]
    pub fn barrier(&self) {
        unsafe { _syncthreads() }
    }

    /// Record `value` under `name` for the invocation a cpu-sim run traces
    /// (docs/cpu-sim.md, "Tracing one invocation"); nothing on this target.
    #[inline(always)]
    pub fn trace<T: crate::Trace>(&self, _name: &'static str, _value: T) {}
}

impl<'a, T: Atomic> Out<'a, T> {
    /// Add `value` to element `i` atomically (wrapping) and give the value it held before
    /// (`atom.add` on the element's generic address, relaxed, as CUDA C's `atomicAdd`).
    #[inline(always)]
    pub fn atomic_add(&mut self, i: usize, value: T) -> T {
        unsafe { T::atomic_add_generic(self.ptr.add(i), value) }
    }
}

/// 16-byte accesses: four consecutive f32 at element `i` (a multiple of 4; the buffer's start is
/// 16-byte aligned, as cudaMalloc's always is) in one `ld.global.v4.f32` / `st.global.v4.f32`,
/// the width nvcc gives a `float4`. rustc would split `[f32; 4]` into four 4-byte accesses, so the
/// instruction is written here; the generic pointer goes to the global window first
/// (`cvta.to.global`), as nvcc does for a kernel's pointer parameters.
#[inline(always)]
unsafe fn load4(ptr: *const f32) -> [f32; 4] {
    let (a, b, c, d): (f32, f32, f32, f32);
    unsafe {
        core::arch::asm!(
            "cvta.to.global.u64 {g}, {p};",
            "ld.global.v4.f32 {{{a}, {b}, {c}, {d}}}, [{g}];",
            p = in(reg64) ptr,
            g = out(reg64) _,
            a = out(reg32) a,
            b = out(reg32) b,
            c = out(reg32) c,
            d = out(reg32) d,
            options(pure, readonly, nostack, preserves_flags),
        );
    }
    [a, b, c, d]
}

#[inline(always)]
unsafe fn store4(ptr: *mut f32, v: [f32; 4]) {
    unsafe {
        core::arch::asm!(
            "cvta.to.global.u64 {g}, {p};",
            "st.global.v4.f32 [{g}], {{{a}, {b}, {c}, {d}}};",
            p = in(reg64) ptr,
            g = out(reg64) _,
            a = in(reg32) v[0],
            b = in(reg32) v[1],
            c = in(reg32) v[2],
            d = in(reg32) v[3],
            options(nostack, preserves_flags),
        );
    }
}

impl In<'_, f32> {
    /// Elements `i .. i + 4` in one 16-byte load; `i` is a multiple of 4.
    #[inline(always)]
    pub fn get4(&self, i: usize) -> [f32; 4] {
        unsafe { load4(self.ptr.add(i)) }
    }
}

impl Out<'_, f32> {
    /// Elements `i .. i + 4` in one 16-byte load; `i` is a multiple of 4.
    #[inline(always)]
    pub fn get4(&self, i: usize) -> [f32; 4] {
        unsafe { load4(self.ptr.add(i)) }
    }
    /// Elements `i .. i + 4` in one 16-byte store; `i` is a multiple of 4.
    #[inline(always)]
    pub fn set4(&mut self, i: usize, value: [f32; 4]) {
        unsafe { store4(self.ptr.add(i), value) }
    }
}

/// A workgroup-shared array of `N` elements in PTX `.shared` memory, declared by
/// [`crate::nvptx_shared!`] and reached by its 32-bit address in the shared window with
/// `ld.shared` / `st.shared`, as nvcc does for `__shared__` arrays: a Rust reference would go
/// through 64-bit generic addresses (`ld.b32`), paying an address-space check per access.
#[derive(Clone, Copy)]
pub struct Shared<'a, T, const N: usize> {
    addr: u32,
    _life: PhantomData<&'a mut [T; N]>,
}

impl<'a, T: SharedWord, const N: usize> Shared<'a, T, N> {
    /// # Safety
    /// `addr` is the shared-window address of `N` elements of `.shared` memory.
    #[inline(always)]
    pub unsafe fn from_shared_addr(addr: u32) -> Self {
        Shared { addr, _life: PhantomData }
    }
    #[inline(always)]
    pub fn get(&self, i: usize) -> T {
        unsafe { T::load(self.addr + (i * core::mem::size_of::<T>()) as u32) }
    }
    #[inline(always)]
    pub fn set(&mut self, i: usize, value: T) {
        unsafe { T::store(self.addr + (i * core::mem::size_of::<T>()) as u32, value) }
    }
}

impl<'a, T: Atomic, const N: usize> Shared<'a, T, N> {
    /// Add `value` to element `i` atomically (wrapping) and give the value it held before
    /// (`atom.shared.add` on its shared-window address, as nvcc emits for `atomicAdd` on `__shared__`).
    #[inline(always)]
    pub fn atomic_add(&mut self, i: usize, value: T) -> T {
        unsafe { T::atomic_add_shared(self.addr + (i * core::mem::size_of::<T>()) as u32, value) }
    }
}

impl<const N: usize> Shared<'_, f32, N> {
    /// Elements `i .. i + 4` in one 16-byte `ld.shared.v4.f32` (`i` a multiple of 4; the array is
    /// declared `.align 16`): a quarter of the load instructions in a register-blocked inner loop.
    #[inline(always)]
    pub fn get4(&self, i: usize) -> [f32; 4] {
        let (a, b, c, d): (f32, f32, f32, f32);
        unsafe {
            core::arch::asm!(
                "ld.shared.v4.f32 {{{a}, {b}, {c}, {d}}}, [{p}];",
                p = in(reg32) self.addr + (i * 4) as u32,
                a = out(reg32) a,
                b = out(reg32) b,
                c = out(reg32) c,
                d = out(reg32) d,
                options(pure, readonly, nostack, preserves_flags),
            );
        }
        [a, b, c, d]
    }
}

/// The element types `ld.shared` / `st.shared` move. A load only reads memory (`pure, readonly`),
/// so the compiler may not move it across `_syncthreads`, which writes memory as far as it knows.
pub trait SharedWord: Element {
    /// # Safety
    /// `addr` is in the shared window.
    unsafe fn load(addr: u32) -> Self;
    /// # Safety
    /// `addr` is in the shared window.
    unsafe fn store(addr: u32, value: Self);
}

macro_rules! shared_word {
    ($t:ty, $ty:literal, $reg:ident) => {
        impl SharedWord for $t {
            #[inline(always)]
            unsafe fn load(addr: u32) -> Self {
                let value: $t;
                unsafe {
                    core::arch::asm!(
                        concat!("ld.shared.", $ty, " {v}, [{a}];"),
                        v = out($reg) value,
                        a = in(reg32) addr,
                        options(pure, readonly, nostack, preserves_flags),
                    );
                }
                value
            }
            #[inline(always)]
            unsafe fn store(addr: u32, value: Self) {
                unsafe {
                    core::arch::asm!(
                        concat!("st.shared.", $ty, " [{a}], {v};"),
                        a = in(reg32) addr,
                        v = in($reg) value,
                        options(nostack, preserves_flags),
                    );
                }
            }
        }
    };
}
shared_word!(f32, "f32", reg32);
shared_word!(u32, "u32", reg32);
shared_word!(i32, "s32", reg32);
shared_word!(f64, "f64", reg64);
shared_word!(u64, "u64", reg64);
shared_word!(i64, "s64", reg64);

/// `nvptx_shared!(NAME: [T; N])`: a workgroup-shared array in PTX `.shared` memory. Write it in the
/// `ptx-kernel` entry, once per name and kernel (ptxas refuses a declaration inlined twice); the
/// kernel crate needs `#![feature(asm_experimental_arch)]` on nvptx64.
#[macro_export]
macro_rules! nvptx_shared {
    ($name:ident : [$t:ty; $n:expr]) => {{
        let addr: u32;
        unsafe {
            core::arch::asm!(
                concat!(".shared .align 16 .b8 ", stringify!($name), "[{bytes}];"),
                concat!("mov.u32 {p}, ", stringify!($name), ";"),
                p = out(reg32) addr,
                bytes = const ($n * core::mem::size_of::<$t>()),
            );
            $crate::Shared::<$t, { $n }>::from_shared_addr(addr)
        }
    }};
}

/// The element types with atomic read-modify-write: `atom.add.u32` / `atom.add.s32`. Neither asm
/// is `pure`: the compiler treats each as reading and writing memory.
pub trait Atomic: SharedWord {
    /// # Safety
    /// `ptr` is a valid, aligned element of global memory.
    unsafe fn atomic_add_generic(ptr: *mut Self, value: Self) -> Self;
    /// # Safety
    /// `addr` is in the shared window.
    unsafe fn atomic_add_shared(addr: u32, value: Self) -> Self;
}

macro_rules! atomic_word {
    ($t:ty, $ty:literal) => {
        impl Atomic for $t {
            #[inline(always)]
            unsafe fn atomic_add_generic(ptr: *mut Self, value: Self) -> Self {
                let old: $t;
                unsafe {
                    core::arch::asm!(
                        concat!("atom.add.", $ty, " {o}, [{p}], {v};"),
                        o = out(reg32) old,
                        p = in(reg64) ptr,
                        v = in(reg32) value,
                        options(nostack, preserves_flags),
                    );
                }
                old
            }
            #[inline(always)]
            unsafe fn atomic_add_shared(addr: u32, value: Self) -> Self {
                let old: $t;
                unsafe {
                    core::arch::asm!(
                        concat!("atom.shared.add.", $ty, " {o}, [{a}], {v};"),
                        o = out(reg32) old,
                        a = in(reg32) addr,
                        v = in(reg32) value,
                        options(nostack, preserves_flags),
                    );
                }
                old
            }
        }
    };
}
atomic_word!(u32, "u32");
atomic_word!(i32, "s32");

/// The 32-bit element types `shfl.sync` moves.
pub trait Shuffle: Element {
    fn to_word(self) -> u32;
    fn from_word(word: u32) -> Self;
}
impl Shuffle for f32 {
    #[inline(always)]
    fn to_word(self) -> u32 { self.to_bits() }
    #[inline(always)]
    fn from_word(word: u32) -> f32 { f32::from_bits(word) }
}
impl Shuffle for u32 {
    #[inline(always)]
    fn to_word(self) -> u32 { self }
    #[inline(always)]
    fn from_word(word: u32) -> u32 { word }
}
impl Shuffle for i32 {
    #[inline(always)]
    fn to_word(self) -> u32 { self as u32 }
    #[inline(always)]
    fn from_word(word: u32) -> i32 { word as i32 }
}
