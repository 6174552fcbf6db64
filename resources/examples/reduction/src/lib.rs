//! Reduction: partial sums of n f32 through block-shared memory. Each block of 256 threads sums
//! 512 consecutive elements (two per thread) into `partial[block]`; the host (or a second launch)
//! adds the partials. Memory-bound, but every block synchronizes nine times.
//!
//! The logic is written once (`reduction_step`); thin entry points wrap it for each backend. The
//! cpu entry runs the same steps in the same order, so every backend adds in the same tree.
#![cfg_attr(any(target_arch = "nvptx64", target_arch = "spirv"), no_std)]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(abi_ptx, stdarch_nvptx, asm_experimental_arch)
)]

/// Threads per block (the manifest's `threads`).
pub const BLOCK: usize = 256;
/// Elements summed by one block: two per thread.
pub const PER_BLOCK: usize = 2 * BLOCK;
/// Folding steps after the load: log2(BLOCK).
pub const STEPS: u32 = 8;

/// Step `step` (0..=STEPS) of block `block`'s sum, as run by thread `tid`, shared by every
/// backend; callers put a block-wide barrier between steps. Step 0 loads two elements per thread
/// into `scratch` (missing ones count 0), steps 1..=8 fold the upper half of the live part onto
/// the lower half (strides 128, 64, ..., 1), and in step 8 thread 0 writes the block's sum.
///
/// Every index is guarded by a comparison the compiler can see, so no bounds-check panic is left
/// in the GPU code (rustc's NVPTX output must not call into `core`'s panic machinery).
#[inline(always)]
pub fn reduction_step(
    step: u32,
    tid: usize,
    block: usize,
    n: u32,
    x: &[f32],
    scratch: &mut [f32; BLOCK],
    partial: &mut [f32],
) {
    let n = n as usize;
    if tid >= BLOCK {
        return; // a launch wider than BLOCK: the extra threads only join the barriers
    }
    if step == 0 {
        let i = block * PER_BLOCK + tid;
        let lo = if i < n { x[i] } else { 0.0 };
        let hi = if i + BLOCK < n { x[i + BLOCK] } else { 0.0 };
        scratch[tid] = lo + hi;
    } else {
        let stride = BLOCK >> step;
        if tid < stride {
            scratch[tid] += scratch[tid + stride];
        }
        if step == STEPS && tid == 0 && block < partial.len() {
            partial[block] = scratch[0];
        }
    }
}

// ---------------------------------------------------------------- cpu: the whole grid, in order
#[cfg(not(any(target_arch = "nvptx64", target_arch = "spirv")))]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn reduction_cpu(n: u32, x: *const f32, partial: *mut f32) {
    if n == 0 {
        return;
    }
    let blocks = (n as usize).div_ceil(PER_BLOCK);
    let x = unsafe { core::slice::from_raw_parts(x, n as usize) };
    let partial = unsafe { core::slice::from_raw_parts_mut(partial, blocks) };
    let mut scratch = [0.0f32; BLOCK];
    for block in 0..blocks {
        // Every thread finishes a step before any starts the next: the barrier, sequentially.
        for step in 0..=STEPS {
            for tid in 0..BLOCK {
                reduction_step(step, tid, block, n, x, &mut scratch, partial);
            }
        }
    }
}

// ---------------------------------------------------------------- nvptx: rustc's NVPTX backend
#[cfg(all(target_arch = "nvptx64", not(feature = "rust-cuda")))]
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn reduction(n: u32, x: *const f32, partial: *mut f32) {
    use core::arch::nvptx::*;
    // 256 f32 of block-shared memory: no Rust API on this target, so declared in PTX, once.
    let scratch: *mut f32;
    unsafe {
        core::arch::asm!(
            ".shared .align 16 .b8 REDUCTION_SCRATCH[1024];",
            "cvta.shared.u64 {p}, REDUCTION_SCRATCH;",
            p = out(reg64) scratch,
        );
    }
    let tid = unsafe { _thread_idx_x() } as usize;
    let block = unsafe { _block_idx_x() } as usize;
    let blocks = (n as usize).div_ceil(PER_BLOCK);
    let x = unsafe { core::slice::from_raw_parts(x, n as usize) };
    let partial = unsafe { core::slice::from_raw_parts_mut(partial, blocks) };
    let mut step = 0;
    while step <= STEPS {
        // A fresh reference each step: other threads write the array between steps.
        let scratch = unsafe { &mut *(scratch as *mut [f32; BLOCK]) };
        reduction_step(step, tid, block, n, x, scratch, partial);
        unsafe { _syncthreads() };
        step += 1;
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
    use spirv_std::glam::UVec3;
    use spirv_std::spirv;

    #[repr(C)]
    pub struct Params {
        pub n: u32,
    }

    /// A grid beyond 65,535 workgroups arrives folded into 2-D/3-D (docs/manifest.md, "Large
    /// grids on wgpu"): the block is the linear workgroup, recovered from `num_workgroups`; spare
    /// workgroups of a folded grid fail `reduction_step`'s `block < partial.len()` and write nothing.
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
        let group = wid.x + groups.x * (wid.y + groups.y * wid.z);
        let (tid, block) = (lid.x as usize, group as usize);
        let mut step = 0;
        while step <= super::STEPS {
            super::reduction_step(step, tid, block, params.n, x, scratch, partial);
            unsafe { spirv_std::arch::workgroup_memory_barrier_with_group_sync() };
            step += 1;
        }
    }
}

// ---------------------------------------------------------------- rust-cuda: rustc_codegen_nvvm
#[cfg(all(target_os = "cuda", feature = "rust-cuda"))]
pub mod rust_cuda_entry {
    use cuda_std::prelude::*;
    // cuda_std 0.2's `shared_array!` names `MaybeUninit` unqualified (later versions import it).
    #[allow(unused_imports)]
    use core::mem::MaybeUninit;

    // Raw pointers, not slices: Rust-CUDA passes a slice as two parameters (pointer, length),
    // and the runners pass one device pointer per buffer.
    #[kernel]
    pub unsafe fn reduction(n: u32, x: *const f32, partial: *mut f32) {
        let scratch = cuda_std::shared_array![f32; super::BLOCK];
        let tid = thread::thread_idx_x() as usize;
        let block = thread::block_idx_x() as usize;
        let blocks = (n as usize).div_ceil(super::PER_BLOCK);
        let x = unsafe { core::slice::from_raw_parts(x, n as usize) };
        let partial = unsafe { core::slice::from_raw_parts_mut(partial, blocks) };
        let mut step = 0;
        while step <= super::STEPS {
            let scratch = unsafe { &mut *(scratch as *mut [f32; super::BLOCK]) };
            super::reduction_step(step, tid, block, n, x, scratch, partial);
            thread::sync_threads();
            step += 1;
        }
    }
}
