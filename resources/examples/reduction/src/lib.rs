//! Reduction: partial sums of n f32 through workgroup-shared memory. Each workgroup of 256
//! invocations sums 512 consecutive elements (two per invocation) into `partial[group]`; the host
//! (or a second launch) adds the partials. Memory-bound, but every workgroup synchronizes nine times.
//!
//! One kernel body (`reduction_body`), written with the workbench's kernel API (`gpu_kernel`), barriers
//! inside; thin entry points make its handles on each backend. The cpu and cpu-sim backends run the
//! same body with GPU semantics: every invocation its own execution context, real barriers.
#![cfg_attr(any(target_arch = "nvptx64", target_arch = "spirv"), no_std)]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(abi_ptx, stdarch_nvptx, asm_experimental_arch)
)]

use gpu_kernel::prelude::*;

/// Invocations per workgroup (the manifest's `threads`).
pub const BLOCK: usize = 256;
/// Elements summed by one workgroup: two per invocation.
pub const PER_BLOCK: usize = 2 * BLOCK;

/// The kernel: invocation `tid` of workgroup `block` loads two elements into `scratch`, then the
/// workgroup folds the upper half of the live part onto the lower half (strides 128, 64, ..., 1),
/// a barrier after every step, and invocation 0 writes the workgroup's sum.
#[inline(always)]
pub fn reduction_body(ctx: Ctx, n: u32, x: In<f32>, mut partial: Out<f32>, mut scratch: Shared<f32, BLOCK>) {
    let n = n as usize;
    let tid = ctx.local_id_x();
    let block = ctx.group_linear();
    let active = tid < BLOCK; // a launch wider than BLOCK: the extra invocations only join the barriers
    if active {
        let i = block * PER_BLOCK + tid;
        let lo = if i < n { x.get(i) } else { 0.0 };
        let hi = if i + BLOCK < n { x.get(i + BLOCK) } else { 0.0 };
        scratch.set(tid, lo + hi);
    }
    ctx.barrier();
    let mut stride = BLOCK / 2;
    while stride > 0 {
        if tid < stride {
            scratch.set(tid, scratch.get(tid) + scratch.get(tid + stride));
        }
        ctx.barrier();
        stride /= 2;
    }
    if tid == 0 && block < n.div_ceil(PER_BLOCK) {
        partial.set(block, scratch.get(0));
    }
}

// ---------------------------------------------------------------- cpu and cpu-sim: the host executor
#[cfg(not(any(target_arch = "nvptx64", target_arch = "spirv")))]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn reduction_cpu(
    launch: *mut gpu_kernel::host::Launch,
    n: u32,
    x: *const f32,
    partial: *mut f32,
) {
    let k = unsafe { gpu_kernel::host::Kernel::new(launch) };
    let (x, partial) = unsafe { (k.input(0, x), k.output(1, partial)) };
    k.run(|ctx| {
        let scratch = ctx.shared::<f32, BLOCK>();
        reduction_body(ctx, n, x, partial, scratch)
    });
}

// ---------------------------------------------------------------- nvptx: rustc's NVPTX backend
#[cfg(all(target_arch = "nvptx64", not(feature = "rust-cuda")))]
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn reduction(n: u32, x: *const f32, partial: *mut f32) {
    let scratch = gpu_kernel::nvptx_shared!(REDUCTION_SCRATCH: [f32; BLOCK]);
    unsafe { reduction_body(Ctx::new(), n, In::new(x), Out::new(partial), scratch) }
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
    /// grids on wgpu"): `Ctx::group_linear` unfolds it; spare workgroups write nothing.
    #[spirv(compute(threads(256)))]
    pub fn reduction_spirv(
        #[spirv(local_invocation_id)] lid: UVec3,
        #[spirv(workgroup_id)] wid: UVec3,
        #[spirv(num_workgroups)] groups: UVec3,
        #[spirv(uniform, descriptor_set = 0, binding = 0)] params: &Params,
        #[spirv(storage_buffer, descriptor_set = 0, binding = 1)] x: &[f32],
        #[spirv(storage_buffer, descriptor_set = 0, binding = 2)] partial: &mut [f32],
        #[spirv(workgroup)] scratch: &mut [f32; super::BLOCK],
    ) {
        let ctx = Ctx::new(lid, wid, groups, UVec3::new(256, 1, 1));
        super::reduction_body(ctx, params.n, In::new(x), Out::new(partial), Shared::new(scratch));
    }
}

// ---------------------------------------------------------------- rust-cuda: rustc_codegen_nvvm
#[cfg(all(target_os = "cuda", feature = "rust-cuda"))]
pub mod rust_cuda_entry {
    use cuda_std::prelude::*;
    use gpu_kernel::prelude::*;
    // cuda_std 0.2's `shared_array!` names `MaybeUninit` unqualified (later versions import it).
    #[allow(unused_imports)]
    use core::mem::MaybeUninit;

    // Raw pointers, not slices: Rust-CUDA passes a slice as two parameters (pointer, length),
    // and the runners pass one device pointer per buffer.
    #[kernel]
    pub unsafe fn reduction(n: u32, x: *const f32, partial: *mut f32) {
        let scratch = unsafe { Shared::from_ptr(cuda_std::shared_array![f32; super::BLOCK] as *mut f32) };
        unsafe { super::reduction_body(Ctx::new(), n, In::new(x), Out::new(partial), scratch) }
    }
}
