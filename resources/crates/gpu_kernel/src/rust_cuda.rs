//! Rust-CUDA (rustc_codegen_nvvm): `cuda_std::thread` gives the indices and the barrier; memory
//! through raw pointers, shared arrays from `cuda_std::shared_array!` in the entry. Not compiled on
//! machines without Rust-CUDA (pinned nightly, LLVM 7, libNVVM): written against cuda_std 0.2.
use core::marker::PhantomData;

use cuda_std::thread;

pub use crate::raw::{In, Out};
use crate::Element;

#[derive(Clone, Copy)]
pub struct Ctx {
    _private: (),
}

impl Ctx {
    /// # Safety
    /// Only inside a `#[kernel]` entry.
    #[inline(always)]
    pub unsafe fn new() -> Self { Ctx { _private: () } }
    #[inline(always)]
    pub fn local_id_x(&self) -> usize { thread::thread_idx_x() as usize }
    #[inline(always)]
    pub fn local_id_y(&self) -> usize { thread::thread_idx_y() as usize }
    #[inline(always)]
    pub fn local_id_z(&self) -> usize { thread::thread_idx_z() as usize }
    #[inline(always)]
    pub fn group_id_x(&self) -> usize { thread::block_idx_x() as usize }
    #[inline(always)]
    pub fn group_id_y(&self) -> usize { thread::block_idx_y() as usize }
    #[inline(always)]
    pub fn group_id_z(&self) -> usize { thread::block_idx_z() as usize }
    #[inline(always)]
    pub fn group_size_x(&self) -> usize { thread::block_dim_x() as usize }
    #[inline(always)]
    pub fn group_size_y(&self) -> usize { thread::block_dim_y() as usize }
    #[inline(always)]
    pub fn num_groups_x(&self) -> usize { thread::grid_dim_x() as usize }
    #[inline(always)]
    pub fn num_groups_y(&self) -> usize { thread::grid_dim_y() as usize }
    #[inline(always)]
    pub fn group_linear(&self) -> usize {
        self.group_id_x() + self.num_groups_x() * (self.group_id_y() + self.num_groups_y() * self.group_id_z())
    }
    #[inline(always)]
    pub fn global_id_x(&self) -> usize { self.group_id_x() * self.group_size_x() + self.local_id_x() }
    #[inline(always)]
    pub fn global_id_y(&self) -> usize { self.group_id_y() * self.group_size_y() + self.local_id_y() }
    #[inline(always)]
    pub fn barrier(&self) { thread::sync_threads() }
    /// A warp: 32 lanes.
    #[inline(always)]
    pub fn subgroup_size(&self) -> usize { 32 }
    /// This invocation's lane (linear thread index mod 32: warps are consecutive threads).
    #[inline(always)]
    pub fn subgroup_invocation_id(&self) -> usize {
        (self.local_id_x() + self.group_size_x() * (self.local_id_y() + self.group_size_y() * self.local_id_z())) % 32
    }
    /// The `value` of the lane `delta` above this one, over the full warp (NVVM's
    /// `llvm.nvvm.shfl.sync.down.i32`, what `__shfl_down_sync` compiles to).
    #[inline(always)]
    pub fn subgroup_shuffle_down<T: Shuffle>(&self, value: T, delta: u32) -> T {
        T::from_word(unsafe { shfl_sync_down_i32(0xffff_ffff, value.to_word() as i32, delta, 0x1f) } as u32)
    }

    /// Record `value` under `name` for the invocation a cpu-sim run traces
    /// (docs/cpu-sim.md, "Tracing one invocation"); nothing on this target.
    #[inline(always)]
    pub fn trace<T: crate::Trace>(&self, _name: &'static str, _value: T) {}
}

// 16-byte accesses (`i` a multiple of 4): an aligned `[f32; 4]` read, which NVVM may make one
// `ld.global.v4.f32`; not compiled here (no Rust-CUDA toolchain), written against cuda_std 0.2.
#[repr(C, align(16))]
#[derive(Clone, Copy)]
struct Quad([f32; 4]);

impl In<'_, f32> {
    #[inline(always)]
    pub fn get4(&self, i: usize) -> [f32; 4] { unsafe { (*(self.ptr.add(i) as *const Quad)).0 } }
}

impl Out<'_, f32> {
    #[inline(always)]
    pub fn get4(&self, i: usize) -> [f32; 4] { unsafe { (*(self.ptr.add(i) as *const Quad)).0 } }
    #[inline(always)]
    pub fn set4(&mut self, i: usize, value: [f32; 4]) { unsafe { *(self.ptr.add(i) as *mut Quad) = Quad(value) } }
}

pub struct Shared<'a, T, const N: usize> { ptr: *mut T, _life: PhantomData<&'a mut [T; N]> }

impl<'a, T: Element, const N: usize> Shared<'a, T, N> {
    /// # Safety
    /// `ptr` comes from `cuda_std::shared_array![T; N]`.
    #[inline(always)]
    pub unsafe fn from_ptr(ptr: *mut T) -> Self { Shared { ptr, _life: PhantomData } }
    #[inline(always)]
    pub fn get(&self, i: usize) -> T { unsafe { *self.ptr.add(i) } }
    #[inline(always)]
    pub fn set(&mut self, i: usize, value: T) { unsafe { *self.ptr.add(i) = value } }
}

/// The element types with atomic read-modify-write: `core::sync::atomic` on the element's
/// address, which NVVM lowers to `atom.add` (device scope for buffers; a shared array's generic
/// address reaches the same instruction on its shared window).
pub trait Atomic: Element {
    /// # Safety
    /// `ptr` is a valid, aligned element.
    unsafe fn fetch_add(ptr: *mut Self, value: Self) -> Self;
}

impl Atomic for u32 {
    #[inline(always)]
    unsafe fn fetch_add(ptr: *mut u32, value: u32) -> u32 {
        unsafe { core::sync::atomic::AtomicU32::from_ptr(ptr) }.fetch_add(value, core::sync::atomic::Ordering::Relaxed)
    }
}

impl Atomic for i32 {
    #[inline(always)]
    unsafe fn fetch_add(ptr: *mut i32, value: i32) -> i32 {
        unsafe { core::sync::atomic::AtomicI32::from_ptr(ptr) }.fetch_add(value, core::sync::atomic::Ordering::Relaxed)
    }
}

impl<'a, T: Atomic> Out<'a, T> {
    /// Add `value` to element `i` atomically (wrapping); the value it held before.
    #[inline(always)]
    pub fn atomic_add(&mut self, i: usize, value: T) -> T { unsafe { T::fetch_add(self.ptr.add(i), value) } }
}

impl<'a, T: Atomic, const N: usize> Shared<'a, T, N> {
    /// Add `value` to element `i` atomically (wrapping); the value it held before.
    #[inline(always)]
    pub fn atomic_add(&mut self, i: usize, value: T) -> T { unsafe { T::fetch_add(self.ptr.add(i), value) } }
}

unsafe extern "C" {
    #[link_name = "llvm.nvvm.shfl.sync.down.i32"]
    fn shfl_sync_down_i32(mask: u32, value: i32, delta: u32, clamp: u32) -> i32;
}

/// The 32-bit element types a warp shuffle moves.
pub trait Shuffle: Element {
    fn to_word(self) -> u32;
    fn from_word(word: u32) -> Self;
}
impl Shuffle for f32 {
    fn to_word(self) -> u32 { self.to_bits() }
    fn from_word(word: u32) -> f32 { f32::from_bits(word) }
}
impl Shuffle for u32 {
    fn to_word(self) -> u32 { self }
    fn from_word(word: u32) -> u32 { word }
}
impl Shuffle for i32 {
    fn to_word(self) -> u32 { self as u32 }
    fn from_word(word: u32) -> i32 { word as i32 }
}

impl<const N: usize> Shared<'_, f32, N> {
    /// Elements `i .. i + 4` (`i` a multiple of 4): four loads (`shared_array!` promises no
    /// 16-byte alignment).
    #[inline(always)]
    pub fn get4(&self, i: usize) -> [f32; 4] { [self.get(i), self.get(i + 1), self.get(i + 2), self.get(i + 3)] }
}
