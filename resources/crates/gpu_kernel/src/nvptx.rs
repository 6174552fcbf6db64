//! rustc's NVPTX backend: indices and the barrier are `core::arch::nvptx` intrinsics; memory is
//! reached through raw pointers, unchecked, as CUDA C does (the host's checks catch bad indices).
use core::arch::nvptx::*;
use core::marker::PhantomData;

use crate::Element;

/// The invocation: on this target a zero-sized token, every index is a special register read.
#[derive(Clone, Copy)]
pub struct Ctx {
    _private: (),
}

impl Ctx {
    /// # Safety
    /// Only inside a `ptx-kernel` entry.
    #[inline(always)]
    pub unsafe fn new() -> Self {
        Ctx { _private: () }
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
    /// The linear workgroup index (x fastest).
    #[inline(always)]
    pub fn group_linear(&self) -> usize {
        unsafe {
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
    /// Every invocation of the workgroup arrives before any goes on; workgroup memory written
    /// before it is visible after it (`bar.sync 0`).
    #[inline(always)]
    pub fn barrier(&self) {
        unsafe { _syncthreads() }
    }
}

/// A read-only buffer.
#[derive(Clone, Copy)]
pub struct In<'a, T> {
    ptr: *const T,
    _life: PhantomData<&'a [T]>,
}

impl<'a, T: Element> In<'a, T> {
    /// # Safety
    /// `ptr` is the launch's buffer, valid for the kernel's reads.
    #[inline(always)]
    pub unsafe fn new(ptr: *const T) -> Self {
        In { ptr, _life: PhantomData }
    }
    #[inline(always)]
    pub fn get(&self, i: usize) -> T {
        unsafe { *self.ptr.add(i) }
    }
}

/// A buffer the kernel writes (and may read).
pub struct Out<'a, T> {
    ptr: *mut T,
    _life: PhantomData<&'a mut [T]>,
}

impl<'a, T: Element> Out<'a, T> {
    /// # Safety
    /// `ptr` is the launch's buffer, valid for the kernel's reads and writes.
    #[inline(always)]
    pub unsafe fn new(ptr: *mut T) -> Self {
        Out { ptr, _life: PhantomData }
    }
    #[inline(always)]
    pub fn get(&self, i: usize) -> T {
        unsafe { *self.ptr.add(i) }
    }
    #[inline(always)]
    pub fn set(&mut self, i: usize, value: T) {
        unsafe { *self.ptr.add(i) = value }
    }
}

/// A workgroup-shared array of `N` elements (PTX `.shared`, declared by [`crate::nvptx_shared!`]).
pub struct Shared<'a, T, const N: usize> {
    ptr: *mut T,
    _life: PhantomData<&'a mut [T; N]>,
}

impl<'a, T: Element, const N: usize> Shared<'a, T, N> {
    /// # Safety
    /// `ptr` is a generic pointer to `N` elements of `.shared` memory.
    #[inline(always)]
    pub unsafe fn from_ptr(ptr: *mut T) -> Self {
        Shared { ptr, _life: PhantomData }
    }
    #[inline(always)]
    pub fn get(&self, i: usize) -> T {
        unsafe { *self.ptr.add(i) }
    }
    #[inline(always)]
    pub fn set(&mut self, i: usize, value: T) {
        unsafe { *self.ptr.add(i) = value }
    }
}

/// `nvptx_shared!(NAME: [T; N])`: a workgroup-shared array in PTX `.shared` memory. Write it in the
/// `ptx-kernel` entry, once per name and kernel (ptxas refuses a declaration inlined twice); the
/// kernel crate needs `#![feature(asm_experimental_arch)]` on nvptx64.
#[macro_export]
macro_rules! nvptx_shared {
    ($name:ident : [$t:ty; $n:expr]) => {{
        let ptr: *mut $t;
        unsafe {
            core::arch::asm!(
                concat!(".shared .align 16 .b8 ", stringify!($name), "[{bytes}];"),
                concat!("cvta.shared.u64 {p}, ", stringify!($name), ";"),
                p = out(reg64) ptr,
                bytes = const ($n * core::mem::size_of::<$t>()),
            );
            $crate::Shared::<$t, { $n }>::from_ptr(ptr)
        }
    }};
}
