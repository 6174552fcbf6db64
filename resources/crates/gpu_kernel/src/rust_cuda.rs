//! Rust-CUDA (rustc_codegen_nvvm): `cuda_std::thread` gives the indices and the barrier; memory
//! through raw pointers, shared arrays from `cuda_std::shared_array!` in the entry. Not compiled on
//! machines without Rust-CUDA (pinned nightly, LLVM 7, libNVVM): written against cuda_std 0.2.
use core::marker::PhantomData;
use core::ops::{Index, IndexMut};

use cuda_std::thread;

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
}

#[derive(Clone, Copy)]
pub struct In<'a, T> { ptr: *const T, _life: PhantomData<&'a [T]> }

impl<'a, T: Element> In<'a, T> {
    /// # Safety
    /// `ptr` is the launch's buffer.
    #[inline(always)]
    pub unsafe fn new(ptr: *const T) -> Self { In { ptr, _life: PhantomData } }
    #[inline(always)]
    pub fn get(&self, i: usize) -> T { unsafe { *self.ptr.add(i) } }
}

pub struct Out<'a, T> { ptr: *mut T, _life: PhantomData<&'a mut [T]> }

impl<'a, T: Element> Out<'a, T> {
    /// # Safety
    /// `ptr` is the launch's buffer.
    #[inline(always)]
    pub unsafe fn new(ptr: *mut T) -> Self { Out { ptr, _life: PhantomData } }
    #[inline(always)]
    pub fn get(&self, i: usize) -> T { unsafe { *self.ptr.add(i) } }
    #[inline(always)]
    pub fn set(&mut self, i: usize, value: T) { unsafe { *self.ptr.add(i) = value } }
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

impl<T: Element> Index<usize> for In<'_, T> {
    type Output = T;
    #[inline(always)]
    fn index(&self, i: usize) -> &T { unsafe { &*self.ptr.add(i) } }
}

impl<T: Element> Index<usize> for Out<'_, T> {
    type Output = T;
    #[inline(always)]
    fn index(&self, i: usize) -> &T { unsafe { &*self.ptr.add(i) } }
}

impl<T: Element> IndexMut<usize> for Out<'_, T> {
    #[inline(always)]
    fn index_mut(&mut self, i: usize) -> &mut T { unsafe { &mut *self.ptr.add(i) } }
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

impl<const N: usize> Shared<'_, f32, N> {
    /// Elements `i .. i + 4` (`i` a multiple of 4): four loads (`shared_array!` promises no
    /// 16-byte alignment).
    #[inline(always)]
    pub fn get4(&self, i: usize) -> [f32; 4] { [self.get(i), self.get(i + 1), self.get(i + 2), self.get(i + 3)] }
}
