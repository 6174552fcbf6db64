//! A blank kernel: x = 2 * x + 1, element by element. Replace `blank_body` with your computation
//! (and the references in reference/ with the same one).
//!
//! One kernel body (`blank_body`), written with the workbench's kernel API (`gpu_kernel`: indices,
//! `ctx.barrier()`, workgroup-shared arrays from `ctx.shared`); thin entry points make its handles
//! on each backend. The cpu backend runs the body with GPU semantics; cpu-sim also checks it for
//! races and out-of-bounds indexes (docs/cpu-sim.md).
#![cfg_attr(any(target_arch = "nvptx64", target_arch = "spirv"), no_std)]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx, stdarch_nvptx))]

use gpu_kernel::prelude::*;

/// The kernel: invocation `i` (`block` invocations per workgroup, the linear workgroup first)
/// updates element i.
#[inline(always)]
pub fn blank_body(ctx: Ctx, block: usize, n: u32, mut x: Out<f32>) {
    let i = ctx.group_linear() * block + ctx.local_id_x();
    if i < n as usize {
        x.set(i, 2.0 * x.get(i) + 1.0);
    }
}

// ---------------------------------------------------------------- cpu and cpu-sim: the host executor
/// # Safety
/// `launch` is the runtime's launch record and each pointer the buffer of that name, as the
/// workbench's cpu runtime passes them, valid for the call.
#[cfg(not(any(target_arch = "nvptx64", target_arch = "spirv")))]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn blank_cpu(launch: *mut gpu_kernel::host::Launch, n: u32, x: *mut f32) {
    let kernel = unsafe { gpu_kernel::host::Kernel::new(launch) };
    let x = unsafe { kernel.output(0, x) };
    kernel.run(move |ctx| blank_body(ctx, ctx.group_size_x(), n, x));
}

// ---------------------------------------------------------------- nvptx: rustc's NVPTX backend
#[cfg(all(target_arch = "nvptx64", not(feature = "rust-cuda")))]
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn blank(n: u32, x: *mut f32) {
    let ctx = unsafe { Ctx::new() };
    unsafe { blank_body(ctx, ctx.group_size_x(), n, Out::new(x)) }
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
    }

    /// A grid beyond 65,535 workgroups arrives folded into 2-D/3-D (docs/manifest.md, "Large
    /// grids on wgpu"): `Ctx::group_linear` unfolds it.
    #[spirv(compute(threads(256)))]
    pub fn blank_spirv(
        #[spirv(local_invocation_id)] lid: UVec3,
        #[spirv(workgroup_id)] wid: UVec3,
        #[spirv(num_workgroups)] groups: UVec3,
        #[spirv(uniform, descriptor_set = 0, binding = 0)] params: &Params,
        #[spirv(storage_buffer, descriptor_set = 0, binding = 1)] x: &mut [f32],
    ) {
        let ctx = Ctx::new(lid, wid, groups, UVec3::new(256, 1, 1));
        super::blank_body(ctx, 256, params.n, Out::new(x));
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
    pub unsafe fn blank(n: u32, x: *mut f32) {
        let ctx = unsafe { Ctx::new() };
        unsafe { super::blank_body(ctx, ctx.group_size_x(), n, Out::new(x)) }
    }
}
