//! Reduction: partial sums of n f32 through workgroup-shared memory. A grid of
//! `groups = min(ceil(n / (512 · vector)), max_groups)` workgroups of 256 invocations walks the
//! input in steps of `groups` chunks (a grid-stride loop); each invocation adds two `vector`-wide
//! loads per step to its own sum, then the workgroup folds the 256 sums in shared memory into
//! `partial[group]`; the host (or a second launch) adds the partials. Memory-bound: a read stream.
//!
//! The tunables choose the form: `vector` 4 reads 16 bytes per access (`In::get4`:
//! `ld.global.v4.f32` on nvptx), 1 reads 4; `max_groups` caps the grid, so each workgroup loops
//! over many chunks and the nine barriers of the tree are paid once per workgroup, not once per
//! 512 elements. `vector` 1 with `max_groups` at least ceil(n / 512) is the plain one-chunk-per-
//! workgroup form, the one to read first.
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
/// Elements per load (`[kernel.tunables] vector`): 4 (16-byte loads) or 1.
pub const VECTOR: usize = tunable(option_env!("WB_TUNABLE_VECTOR"), 4);
const _: () = assert!(VECTOR == 1 || VECTOR == 4, "vector is 1 or 4");
/// The most workgroups of the launch (`[kernel.tunables] max_groups`): the manifest's grid is
/// `min(ceil_div(n, 512 * vector), max_groups)`, and the body computes the same number.
pub const MAX_GROUPS: usize = tunable(option_env!("WB_TUNABLE_MAX_GROUPS"), 2048);

/// The sum of elements `i .. i + vector` (those below n): one 16-byte load summed as
/// (x0 + x1) + (x2 + x3) where all four exist, else one by one from 0.
#[inline(always)]
fn load_sum(x: &In<f32>, vector: usize, i: usize, n: usize) -> f32 {
    if vector == 4 && i + 4 <= n {
        let v = x.get4(i);
        return (v[0] + v[1]) + (v[2] + v[3]);
    }
    let (mut sum, mut j) = (0.0f32, i);
    while j < n && j < i + vector {
        sum += x.get(j);
        j += 1;
    }
    sum
}

/// The kernel: workgroup `block` of `groups` sums chunks block, block + groups, … of 512 ·
/// `vector` elements: per chunk, invocation `tid` adds the `vector` elements at tid · vector and
/// those 256 · vector further on to its sum. Then the workgroup folds the upper half of the live
/// sums onto the lower half in `scratch` (strides 128, 64, ..., 1), a barrier after every step,
/// and invocation 0 writes the workgroup's sum.
#[inline(always)]
#[lanes]
pub fn reduction_body(
    ctx: Ctx,
    vector: usize,
    max_groups: usize,
    n: u32,
    x: In<f32>,
    mut partial: Out<f32>,
    mut scratch: Shared<f32, BLOCK>,
) {
    let n = n as usize;
    let tid = ctx.local_id_x();
    let block = ctx.group_linear();
    let chunk = 2 * BLOCK * vector;
    let groups = max_groups.min(n.div_ceil(chunk)); // the launch's grid, as the manifest says
    let active = tid < BLOCK; // a launch wider than BLOCK: the extra invocations only join the barriers
    if active {
        let mut sum = 0.0f32;
        if block < groups {
            // spare workgroups (a grid wgpu folded into 2-D/3-D) sum nothing
            let mut base = block * chunk;
            while base < n {
                let lo = base + tid * vector;
                sum += load_sum(&x, vector, lo, n) + load_sum(&x, vector, lo + BLOCK * vector, n);
                base += groups * chunk;
            }
        }
        scratch.set(tid, sum);
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
    if tid == 0 && block < groups {
        partial.set(block, scratch.get(0));
    }
}

// ---------------------------------------------------------------- cpu and cpu-sim: the host executor
/// # Safety
/// `launch` is the runtime's launch record and each pointer the buffer of that name, as the
/// workbench's cpu runtime passes them, valid for the call.
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
    k.run_lanes(
        move |ctx| {
            let scratch = ctx.shared::<f32, BLOCK>();
            reduction_body(ctx, VECTOR, MAX_GROUPS, n, x, partial, scratch)
        },
        move |wg| {
            let scratch = wg.shared::<f32, BLOCK>();
            reduction_body_lanes(wg, VECTOR, MAX_GROUPS, n, x, partial, scratch)
        },
    );
}

// ---------------------------------------------------------------- nvptx: rustc's NVPTX backend
#[cfg(all(target_arch = "nvptx64", not(feature = "rust-cuda")))]
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn reduction(n: u32, x: *const f32, partial: *mut f32) {
    let scratch = gpu_kernel::nvptx_shared!(REDUCTION_SCRATCH: [f32; BLOCK]);
    unsafe {
        reduction_body(
            Ctx::new(),
            VECTOR,
            MAX_GROUPS,
            n,
            In::new(x),
            Out::new(partial),
            scratch,
        )
    }
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
        super::reduction_body(
            ctx,
            super::VECTOR,
            super::MAX_GROUPS,
            params.n,
            In::new(x),
            Out::new(partial),
            Shared::new(scratch),
        );
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
        let scratch =
            unsafe { Shared::from_ptr(cuda_std::shared_array![f32; super::BLOCK] as *mut f32) };
        unsafe {
            super::reduction_body(
                Ctx::new(),
                super::VECTOR,
                super::MAX_GROUPS,
                n,
                In::new(x),
                Out::new(partial),
                scratch,
            )
        }
    }
}
