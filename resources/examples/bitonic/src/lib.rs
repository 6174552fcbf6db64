//! Bitonic sort, one compare-and-swap step on u32 keys: the kernel of the "Rust on every GPU"
//! demo (LegNeato/rust-gpu-chimera). A full sort of n = 2^p keys runs this step for every stage
//! k = 2, 4, …, n and, inside each stage, every stride j = k/2, k/4, …, 1.
//!
//! One kernel body (`bitonic_body`), written with the workbench's kernel API (`gpu_kernel`); thin
//! entry points make its handles on each backend.
#![cfg_attr(any(target_arch = "nvptx64", target_arch = "spirv"), no_std)]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx, stdarch_nvptx))]

use gpu_kernel::prelude::*;

/// Invocation `i` of one step (stride `j`, stage `k`; `block` invocations per workgroup, the
/// linear workgroup first): it owns the pair (i, i ^ j) when i ^ j > i, and orders it ascending
/// when `i & k == 0`, descending otherwise. Each pair has one owner, so the invocations of a step
/// can run in any order (cpu-sim checks that no two touch one key).
#[inline(always)]
pub fn bitonic_body(ctx: Ctx, block: usize, n: u32, j: u32, k: u32, mut data: Out<u32>) {
    let i = ctx.group_linear() * block + ctx.local_id_x();
    if i >= n as usize {
        return;
    }
    // i < n, a u32: the pair's arithmetic fits in 32 bits, as in the CUDA reference. In usize
    // the NVPTX build compared in 64 bits (two SASS instructions per compare).
    let i = i as u32;
    let l = i ^ j;
    if l > i && l < n {
        let (a, b) = (data.get(i as usize), data.get(l as usize));
        let ascending = (i & k) == 0;
        // `&` and `|`, not `&&` and `||`: both compares are made and the swap is one predicate,
        // as nvcc makes it. The short-circuit form became a branch on `ascending`, which differs
        // between lanes of a warp when k < 32 (it flips every k invocations): the warp split in
        // two paths and met again before the stores (BSSY/BSYNC in the NVPTX build's SASS).
        if (ascending & (a > b)) | (!ascending & (a < b)) {
            data.set(i as usize, b);
            data.set(l as usize, a);
        }
    }
}

// ---------------------------------------------------------------- cpu and cpu-sim: the host executor
/// # Safety
/// `launch` is the runtime's launch record and each pointer the buffer of that name, as the
/// workbench's cpu runtime passes them, valid for the call.
#[cfg(not(any(target_arch = "nvptx64", target_arch = "spirv")))]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bitonic_cpu(
    launch: *mut gpu_kernel::host::Launch,
    n: u32,
    j: u32,
    k: u32,
    data: *mut u32,
) {
    let kernel = unsafe { gpu_kernel::host::Kernel::new(launch) };
    let data = unsafe { kernel.output(0, data) };
    // `sim_inline!`: cpu-sim's invocation loop inlines the closure, checks and all (docs/cpu-sim.md).
    let body =
        gpu_kernel::sim_inline!(move |ctx| bitonic_body(ctx, ctx.group_size_x(), n, j, k, data));
    kernel.run(body);
}

// ---------------------------------------------------------------- nvptx: rustc's NVPTX backend
#[cfg(all(target_arch = "nvptx64", not(feature = "rust-cuda")))]
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn bitonic(n: u32, j: u32, k: u32, data: *mut u32) {
    // The manifest's grid is 1-D: `group_linear` is `%ctaid.x`, nvcc's `blockIdx.x`.
    let ctx = unsafe { Ctx::new_1d() };
    unsafe { bitonic_body(ctx, ctx.group_size_x(), n, j, k, Out::new(data)) }
}

#[cfg(all(target_arch = "nvptx64", not(feature = "rust-cuda")))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    unsafe { core::arch::nvptx::trap() }
}

// ---------------------------------------------------------------- rust-gpu: SPIR-V via cargo-gpu
#[cfg(target_arch = "spirv")]
pub mod spirv_entry {
    use gpu_kernel::prelude::*;
    use spirv_std::glam::UVec3;
    use spirv_std::spirv;

    #[repr(C)]
    pub struct Params {
        pub n: u32,
        pub j: u32,
        pub k: u32,
    }

    /// A grid beyond 65,535 workgroups arrives folded into 2-D/3-D (docs/manifest.md, "Large
    /// grids on wgpu"): `Ctx::group_linear` unfolds it.
    #[spirv(compute(threads(256)))]
    pub fn bitonic_spirv(
        #[spirv(local_invocation_id)] lid: UVec3,
        #[spirv(workgroup_id)] wid: UVec3,
        #[spirv(num_workgroups)] groups: UVec3,
        #[spirv(uniform, descriptor_set = 0, binding = 0)] params: &Params,
        #[spirv(storage_buffer, descriptor_set = 0, binding = 1)] data: &mut [u32],
    ) {
        let ctx = Ctx::new(lid, wid, groups, UVec3::new(256, 1, 1));
        super::bitonic_body(ctx, 256, params.n, params.j, params.k, Out::new(data));
    }
}

// ---------------------------------------------------------------- rust-cuda: rustc_codegen_nvvm
#[cfg(all(target_os = "cuda", feature = "rust-cuda"))]
pub mod rust_cuda_entry {
    use cuda_std::prelude::*;
    use gpu_kernel::prelude::*;

    // A raw pointer, not a slice: Rust-CUDA passes a slice as two parameters (pointer, length),
    // and the runners pass one device pointer per buffer.
    #[kernel]
    pub unsafe fn bitonic(n: u32, j: u32, k: u32, data: *mut u32) {
        let ctx = unsafe { Ctx::new() };
        unsafe { super::bitonic_body(ctx, ctx.group_size_x(), n, j, k, Out::new(data)) }
    }
}
