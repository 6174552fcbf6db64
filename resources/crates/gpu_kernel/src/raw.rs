//! The buffers both PTX targets (rustc's NVPTX backend and Rust-CUDA) hand a kernel body: the
//! launch's raw pointers, unchecked, as CUDA C does (the host's checks catch bad indices). Each
//! target adds what it lowers its own way (`get4` / `set4`, `atomic_add`) in its module.
use core::marker::PhantomData;
use core::ops::{Index, IndexMut};

use crate::Element;

/// A read-only buffer.
#[derive(Clone, Copy)]
pub struct In<'a, T> {
    pub(crate) ptr: *const T,
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
    pub(crate) ptr: *mut T,
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

impl<T: Element> Index<usize> for In<'_, T> {
    type Output = T;
    #[inline(always)]
    fn index(&self, i: usize) -> &T {
        unsafe { &*self.ptr.add(i) }
    }
}

impl<T: Element> Index<usize> for Out<'_, T> {
    type Output = T;
    #[inline(always)]
    fn index(&self, i: usize) -> &T {
        unsafe { &*self.ptr.add(i) }
    }
}

impl<T: Element> IndexMut<usize> for Out<'_, T> {
    #[inline(always)]
    fn index_mut(&mut self, i: usize) -> &mut T {
        unsafe { &mut *self.ptr.add(i) }
    }
}
