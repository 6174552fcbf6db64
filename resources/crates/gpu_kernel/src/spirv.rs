//! rust-gpu (SPIR-V): the indices are the entry's builtins, handed to [`Ctx::new`]; memory is the
//! entry's storage-buffer slices and `#[spirv(workgroup)]` arrays. Not compiled on machines
//! without cargo-gpu (it needs a pinned nightly): written against `spirv_std` 0.9's API.
use core::ops::{Index, IndexMut};

use spirv_std::glam::UVec3;

use crate::Element;

#[derive(Clone, Copy)]
pub struct Ctx {
    local: UVec3,
    group: UVec3,
    groups: UVec3,
    size: UVec3,
    /// `subgroup_local_invocation_id` and `subgroup_size` (0 until `with_subgroup`).
    lane: u32,
    lanes: u32,
}

impl Ctx {
    /// From the entry's `local_invocation_id`, `workgroup_id`, `num_workgroups` and its
    /// `compute(threads(...))` size.
    #[inline(always)]
    pub fn new(local: UVec3, group: UVec3, groups: UVec3, size: UVec3) -> Self {
        Ctx { local, group, groups, size, lane: 0, lanes: 0 }
    }
    /// The entry's `#[spirv(subgroup_local_invocation_id)]` and `#[spirv(subgroup_size)]`
    /// builtins, for kernels that use subgroups (the entry must declare them: SPIR-V builtins are
    /// entry-point inputs).
    #[inline(always)]
    pub fn with_subgroup(self, lane: u32, lanes: u32) -> Self {
        Ctx { lane, lanes, ..self }
    }
    #[inline(always)]
    pub fn subgroup_size(&self) -> usize { self.lanes as usize }
    #[inline(always)]
    pub fn subgroup_invocation_id(&self) -> usize { self.lane as usize }
    /// `OpGroupNonUniformShuffleDown` (`spirv_std::arch::subgroup_shuffle_down`): undefined past
    /// the subgroup's end.
    #[inline(always)]
    pub fn subgroup_shuffle_down<T: Shuffle>(&self, value: T, delta: u32) -> T {
        spirv_std::arch::subgroup_shuffle_down(value, delta)
    }
    #[inline(always)]
    pub fn local_id_x(&self) -> usize { self.local.x as usize }
    #[inline(always)]
    pub fn local_id_y(&self) -> usize { self.local.y as usize }
    #[inline(always)]
    pub fn local_id_z(&self) -> usize { self.local.z as usize }
    #[inline(always)]
    pub fn group_id_x(&self) -> usize { self.group.x as usize }
    #[inline(always)]
    pub fn group_id_y(&self) -> usize { self.group.y as usize }
    #[inline(always)]
    pub fn group_id_z(&self) -> usize { self.group.z as usize }
    #[inline(always)]
    pub fn group_size_x(&self) -> usize { self.size.x as usize }
    #[inline(always)]
    pub fn group_size_y(&self) -> usize { self.size.y as usize }
    #[inline(always)]
    pub fn num_groups_x(&self) -> usize { self.groups.x as usize }
    #[inline(always)]
    pub fn num_groups_y(&self) -> usize { self.groups.y as usize }
    /// The linear workgroup (a grid folded into 2-D/3-D by wgpu's per-dimension limit unfolds here).
    #[inline(always)]
    pub fn group_linear(&self) -> usize {
        (self.group.x + self.groups.x * (self.group.y + self.groups.y * self.group.z)) as usize
    }
    #[inline(always)]
    pub fn global_id_x(&self) -> usize { (self.group.x * self.size.x + self.local.x) as usize }
    #[inline(always)]
    pub fn global_id_y(&self) -> usize { (self.group.y * self.size.y + self.local.y) as usize }
    #[inline(always)]
    pub fn barrier(&self) {
        unsafe { spirv_std::arch::workgroup_memory_barrier_with_group_sync() }
    }

    /// Record `value` under `name` for the invocation a cpu-sim run traces
    /// (docs/cpu-sim.md, "Tracing one invocation"); nothing on this target.
    #[inline(always)]
    pub fn trace<T: crate::Trace>(&self, _name: &'static str, _value: T) {}
}

pub struct In<'a, T>(&'a [T]);

impl<'a, T: Element> In<'a, T> {
    #[inline(always)]
    pub fn new(slice: &'a [T]) -> Self { In(slice) }
    #[inline(always)]
    pub fn get(&self, i: usize) -> T { self.0[i] }
}

pub struct Out<'a, T>(&'a mut [T]);

impl<'a, T: Element> Out<'a, T> {
    #[inline(always)]
    pub fn new(slice: &'a mut [T]) -> Self { Out(slice) }
    #[inline(always)]
    pub fn get(&self, i: usize) -> T { self.0[i] }
    #[inline(always)]
    pub fn set(&mut self, i: usize, value: T) { self.0[i] = value }
}

// 16-byte accesses (`i` a multiple of 4): the entry's slices are of f32, so four loads; an
// entry wanting one vector access binds its buffer as `&[Vec4]` itself.
impl In<'_, f32> {
    #[inline(always)]
    pub fn get4(&self, i: usize) -> [f32; 4] { [self.0[i], self.0[i + 1], self.0[i + 2], self.0[i + 3]] }
}

impl Out<'_, f32> {
    #[inline(always)]
    pub fn get4(&self, i: usize) -> [f32; 4] { [self.0[i], self.0[i + 1], self.0[i + 2], self.0[i + 3]] }
    #[inline(always)]
    pub fn set4(&mut self, i: usize, value: [f32; 4]) {
        self.0[i] = value[0];
        self.0[i + 1] = value[1];
        self.0[i + 2] = value[2];
        self.0[i + 3] = value[3];
    }
}

impl<T: Element> Index<usize> for In<'_, T> {
    type Output = T;
    #[inline(always)]
    fn index(&self, i: usize) -> &T { &self.0[i] }
}

impl<T: Element> Index<usize> for Out<'_, T> {
    type Output = T;
    #[inline(always)]
    fn index(&self, i: usize) -> &T { &self.0[i] }
}

impl<T: Element> IndexMut<usize> for Out<'_, T> {
    #[inline(always)]
    fn index_mut(&mut self, i: usize) -> &mut T { &mut self.0[i] }
}

pub struct Shared<'a, T, const N: usize>(&'a mut [T; N]);

impl<'a, T: Element, const N: usize> Shared<'a, T, N> {
    /// From the entry's `#[spirv(workgroup)] name: &mut [T; N]` parameter.
    #[inline(always)]
    pub fn new(array: &'a mut [T; N]) -> Self { Shared(array) }
    #[inline(always)]
    pub fn get(&self, i: usize) -> T { self.0[i] }
    #[inline(always)]
    pub fn set(&mut self, i: usize, value: T) { self.0[i] = value }
}

/// The element types with atomic read-modify-write: `spirv_std::arch::atomic_i_add`
/// (`OpAtomicIAdd`, relaxed: no memory semantics), device scope on buffers, workgroup scope on
/// workgroup arrays.
pub trait Atomic: Element + spirv_std::integer::Integer {}
impl Atomic for u32 {}
impl Atomic for i32 {}

const DEVICE: u32 = spirv_std::memory::Scope::Device as u32;
const WORKGROUP: u32 = spirv_std::memory::Scope::Workgroup as u32;
const RELAXED: u32 = spirv_std::memory::Semantics::NONE.bits();

impl<'a, T: Atomic> Out<'a, T> {
    /// Add `value` to element `i` atomically (wrapping); the value it held before.
    #[inline(always)]
    pub fn atomic_add(&mut self, i: usize, value: T) -> T {
        unsafe { spirv_std::arch::atomic_i_add::<T, DEVICE, RELAXED>(&mut self.0[i], value) }
    }
}

impl<'a, T: Atomic, const N: usize> Shared<'a, T, N> {
    /// Add `value` to element `i` atomically (wrapping); the value it held before.
    #[inline(always)]
    pub fn atomic_add(&mut self, i: usize, value: T) -> T {
        unsafe { spirv_std::arch::atomic_i_add::<T, WORKGROUP, RELAXED>(&mut self.0[i], value) }
    }
}

/// The 32-bit scalars a subgroup shuffle moves.
pub trait Shuffle: Element + spirv_std::scalar::Scalar {}
impl Shuffle for f32 {}
impl Shuffle for u32 {}
impl Shuffle for i32 {}

impl<const N: usize> Shared<'_, f32, N> {
    /// Elements `i .. i + 4` (`i` a multiple of 4): four loads.
    #[inline(always)]
    pub fn get4(&self, i: usize) -> [f32; 4] { [self.0[i], self.0[i + 1], self.0[i + 2], self.0[i + 3]] }
}
