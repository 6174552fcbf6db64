//! The workbench's kernel API: one kernel body, written once, for every target.
//!
//! A kernel body is a plain function taking a [`Ctx`] (the invocation's indices and the
//! workgroup barrier) and handles to its memory: [`In`] (a read-only buffer), [`Out`] (a buffer
//! it writes, and may read) and [`Shared`] (a workgroup-shared array); `atomic_add` on the last
//! two for the [`Atomic`] element types (`u32`, `i32`); subgroup shuffles on [`Ctx`] for the
//! [`Shuffle`] types (`f32`, `u32`, `i32`). Thin entry points, one per
//! backend, make those from what the backend passes and call the body:
//!
//! | target | `Ctx` | memory |
//! |---|---|---|
//! | rustc's NVPTX (`nvptx64`) | `core::arch::nvptx` intrinsics, `_syncthreads` | raw pointers, PTX `.shared` ([`nvptx_shared!`]) |
//! | rust-gpu (`spirv`) | the entry's builtins (`local_invocation_id`, …), `spirv_std` barrier | the entry's slices, `#[spirv(workgroup)]` arrays |
//! | Rust-CUDA (`target_os = "cuda"` + feature `rust-cuda`) | `cuda_std::thread` | raw pointers, `shared_array!` |
//! | the host (`cpu`, `cpu-sim`) | [`host::Kernel::run`]: every invocation its own execution context | the caller's buffers, [`Ctx::shared`] per workgroup |
//!
//! On the host, every invocation of a workgroup runs on a stack of its own (a fiber), so a
//! barrier inside loops and branches suspends it until the whole workgroup arrives; workgroups
//! are spread over the cores. A body marked [`lanes`] also gets a host copy split at its barriers
//! into loops over the workgroup's invocations, which `host::Kernel::run_lanes` runs once per
//! workgroup: no fiber, no switch. With the `sim` feature (the `cpu-sim` backend) every access is
//! checked: races on workgroup and global memory, out-of-bounds indexing, barrier divergence and
//! reads of workgroup memory nobody wrote are reported with the invocations' coordinates and
//! the Rust file:line of the accesses (`#[track_caller]`). docs/cpu-sim.md says what is modelled.
#![cfg_attr(any(target_arch = "nvptx64", target_arch = "spirv"), no_std)]
#![cfg_attr(target_arch = "nvptx64", feature(stdarch_nvptx, asm_experimental_arch))]
// Rust-CUDA's warp shuffle is NVVM's intrinsic, declared by its LLVM name.
#![cfg_attr(all(target_os = "cuda", feature = "rust-cuda"), feature(link_llvm_intrinsics), allow(internal_features))]

// Both PTX targets (rustc's NVPTX backend, Rust-CUDA) take the launch's raw pointers.
#[cfg(target_arch = "nvptx64")]
mod raw;

#[cfg(all(target_arch = "nvptx64", not(feature = "rust-cuda")))]
mod nvptx;
#[cfg(all(target_arch = "nvptx64", not(feature = "rust-cuda")))]
pub use nvptx::{Atomic, Ctx, In, Out, Shared, SharedWord, Shuffle};

#[cfg(all(target_os = "cuda", feature = "rust-cuda"))]
mod rust_cuda;
#[cfg(all(target_os = "cuda", feature = "rust-cuda"))]
pub use rust_cuda::{Atomic, Ctx, In, Out, Shared, Shuffle};

#[cfg(target_arch = "spirv")]
mod spirv;
#[cfg(target_arch = "spirv")]
pub use spirv::{Atomic, Ctx, In, Out, Shared, Shuffle};

#[cfg(not(any(target_arch = "nvptx64", target_arch = "spirv")))]
pub mod host;
#[cfg(not(any(target_arch = "nvptx64", target_arch = "spirv")))]
pub use host::{Atomic, Ctx, In, Out, Shared, Shuffle};
/// Kernel unit tests on the host: a body launched over a grid a `#[test]` chooses, checked.
#[cfg(not(any(target_arch = "nvptx64", target_arch = "spirv")))]
#[path = "host/testing.rs"]
pub mod testing;

pub mod math;

/// `#[lanes]` on a kernel body: its host copy `NAME_lanes` runs each workgroup as loops over its
/// invocations between barriers, no fibers (`macros/src/lib.rs` says what it takes;
/// `host::Kernel::run_lanes` runs it). Every GPU target compiles the body as written.
pub use gpu_kernel_macros::lanes;

/// The element types buffers and shared arrays hold (what the manifest's `type` names).
pub trait Element: Copy + Default + 'static {}
impl Element for f32 {}
impl Element for f64 {}
impl Element for i32 {}
impl Element for u32 {}
impl Element for i64 {}
impl Element for u64 {}

/// The values [`Ctx::trace`] takes: every `Element`, `usize` and `bool`. cpu-sim records them for
/// the invocation a run traces; every GPU target compiles the call away.
pub trait Trace: Copy {
    #[cfg(not(any(target_arch = "nvptx64", target_arch = "spirv")))]
    #[doc(hidden)]
    fn traced(self) -> host::Traced;
}

macro_rules! trace_impl {
    ($($t:ty => |$v:ident| $e:expr),* $(,)?) => {
        $(impl Trace for $t {
            #[cfg(not(any(target_arch = "nvptx64", target_arch = "spirv")))]
            #[inline(always)]
            fn traced(self) -> host::Traced {
                let $v = self;
                $e
            }
        })*
    };
}

trace_impl! {
    f32 => |v| host::Traced::F32(v),
    f64 => |v| host::Traced::F64(v),
    i32 => |v| host::Traced::Int(v as i64, "i32"),
    i64 => |v| host::Traced::Int(v, "i64"),
    u32 => |v| host::Traced::Uint(v as u64, "u32"),
    u64 => |v| host::Traced::Uint(v, "u64"),
    usize => |v| host::Traced::Uint(v as u64, "usize"),
    bool => |v| host::Traced::Bool(v),
}

/// What a kernel body needs in one line: `use gpu_kernel::prelude::*;`.
pub mod prelude {
    pub use crate::{Atomic, Ctx, Element, In, Out, Shared, Shuffle, Trace, lanes, tunable};
}

/// A tunable's value at compile time: the workbench sets `WB_TUNABLE_<NAME>` for each
/// configuration it builds (docs/manifest.md, "Tunables"); a plain `cargo build` gets `default`.
/// Called as `tunable(option_env!("WB_TUNABLE_THREADS"), 256)` in the kernel's own crate, whose
/// build the variable is set for.
pub const fn tunable(value: Option<&str>, default: usize) -> usize {
    let digits = match value {
        Some(text) => text.as_bytes(),
        None => return default,
    };
    assert!(!digits.is_empty(), "a tunable must be a whole number");
    let mut out = 0usize;
    let mut i = 0;
    while i < digits.len() {
        assert!(digits[i].is_ascii_digit(), "a tunable must be a whole number");
        out = out * 10 + (digits[i] - b'0') as usize;
        i += 1;
    }
    out
}
