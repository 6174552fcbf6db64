//! Warp reduce: partial sums (`partial[b]` = the sum of 4096 consecutive f32), with subgroup
//! (warp) shuffles instead of the reduction example's tree in workgroup memory. Each invocation
//! first adds its 16 elements (`PER_THREAD` loads, `BLOCK` apart: each load of a workgroup reads
//! 256 consecutive elements, coalesced), then each subgroup folds its values with
//! `subgroup_shuffle_down` (offsets size/2, ..., 1: no workgroup memory, no barrier), lane 0 of
//! every subgroup puts its subgroup's sum in workgroup memory, one barrier, and invocation 0 adds
//! those few sums.
//!
//! Sixteen elements an invocation, not two: the shuffles, the barrier and the workgroup's start
//! are paid once per 4096 elements instead of per 512 (on a GPU: an eighth of the workgroups,
//! each invocation with 16 independent loads in flight, as CUB's block reductions take 16 items
//! a thread; on the host: the executor's work per workgroup, and the loads a loop over the lanes
//! vectorises).
//!
//! Subgroups are 32 lanes in CUDA (a warp) and on the host, and whatever the adapter says in
//! WGSL (`subgroup_size`: 4 to 128; llvmpipe uses 8 on a 256-bit CPU): the kernel reads the size.
//! The sums are grouped differently for each size, so the check has a tolerance (as the
//! reduction example's).
#![cfg_attr(any(target_arch = "nvptx64", target_arch = "spirv"), no_std)]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(abi_ptx, stdarch_nvptx, asm_experimental_arch)
)]

use gpu_kernel::prelude::*;

/// Invocations per workgroup (the manifest's `threads`).
pub const BLOCK: usize = 256;
/// Elements each invocation adds before the shuffles, `BLOCK` apart.
pub const PER_THREAD: usize = 16;
/// Elements summed by one workgroup (the manifest's `4096`).
pub const PER_BLOCK: usize = PER_THREAD * BLOCK;

/// The kernel. Subgroup k holds the invocations k·size .. (k+1)·size - 1 (linear local ids): CUDA
/// defines warps so, and every Vulkan and WGSL implementation seen (NVIDIA, AMD, Intel,
/// llvmpipe) lays them out so; a layout that did not would fail the check.
///
/// `#[lanes]`: on the host (cpu and cpu-sim) the body also runs as `warp_reduce_body_lanes`, each
/// run of statements between two exchange points (a shuffle, the barrier) one loop over the
/// workgroup's invocations, instead of a fiber per invocation switching at each of them. The
/// loads' `while`s (their counter and bound the same in every invocation) run as loops over the
/// invocations, one a load, each reading 256 consecutive elements; a full block's, with no test
/// per element, is one LLVM vectorises. The two loops, not one testing `full || i < n`: as one,
/// rustc's NVPTX code tested each load and ptxas issued most of them one after the other (each
/// waiting for the add of the one before); as two, a full block's 16 loads go out together (as
/// nvcc's unswitched loop of the CUDA C++ does).
#[inline(always)]
#[lanes]
pub fn warp_reduce_body(
    ctx: Ctx,
    n: u32,
    x: In<f32>,
    mut partial: Out<f32>,
    mut sums: Shared<f32, BLOCK>,
) {
    let n = n as usize;
    let t = ctx.local_id_x();
    let block = ctx.group_linear();
    let first = block * PER_BLOCK + t;
    let mut value = 0.0;
    let mut k = 0;
    // Every element of the block below n (all but the last block): the loads need no test.
    let full = (block + 1) * PER_BLOCK <= n;
    while full && k < PER_THREAD {
        value += x.get(first + k * BLOCK);
        k += 1;
    }
    // The last block: each load tested (after a full block, k is PER_THREAD: none left).
    while k < PER_THREAD {
        let i = first + k * BLOCK;
        if i < n {
            value += x.get(i);
        }
        k += 1;
    }
    let size = ctx.subgroup_size();
    let mut offset = size / 2;
    while offset > 0 {
        // Lanes past the subgroup's end get an undefined value; lane 0 never reads one.
        value += ctx.subgroup_shuffle_down(value, offset as u32);
        offset /= 2;
    }
    if ctx.subgroup_invocation_id() == 0 {
        sums.set(t / size, value);
    }
    ctx.barrier();
    if t == 0 && block < n.div_ceil(PER_BLOCK) {
        let mut total = 0.0;
        let mut j = 0;
        while j < BLOCK / size {
            total += sums.get(j);
            j += 1;
        }
        partial.set(block, total);
    }
}

// ---------------------------------------------------------------- cpu and cpu-sim: the host executor
/// # Safety
/// `launch` is the runtime's launch record and each pointer the buffer of that name, as the
/// workbench's cpu runtime passes them, valid for the call.
#[cfg(not(any(target_arch = "nvptx64", target_arch = "spirv")))]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn warp_reduce_cpu(
    launch: *mut gpu_kernel::host::Launch,
    n: u32,
    x: *const f32,
    partial: *mut f32,
) {
    let k = unsafe { gpu_kernel::host::Kernel::new(launch) };
    let (x, partial) = unsafe { (k.input(0, x), k.output(1, partial)) };
    k.run_lanes(
        move |ctx| {
            let sums = ctx.shared::<f32, BLOCK>();
            warp_reduce_body(ctx, n, x, partial, sums)
        },
        move |wg| {
            let sums = wg.shared::<f32, BLOCK>();
            warp_reduce_body_lanes(wg, n, x, partial, sums)
        },
    );
}

// ---------------------------------------------------------------- nvptx: rustc's NVPTX backend
#[cfg(all(target_arch = "nvptx64", not(feature = "rust-cuda")))]
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn warp_reduce(n: u32, x: *const f32, partial: *mut f32) {
    let sums = gpu_kernel::nvptx_shared!(WARP_REDUCE_SUMS: [f32; BLOCK]);
    unsafe { warp_reduce_body(Ctx::new(), n, In::new(x), Out::new(partial), sums) }
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

    /// Subgroup builtins are entry-point inputs in SPIR-V: the entry hands them to `Ctx`.
    #[spirv(compute(threads(256)))]
    pub fn warp_reduce_spirv(
        #[spirv(local_invocation_id)] lid: UVec3,
        #[spirv(workgroup_id)] wid: UVec3,
        #[spirv(num_workgroups)] groups: UVec3,
        #[spirv(subgroup_local_invocation_id)] lane: u32,
        #[spirv(subgroup_size)] lanes: u32,
        #[spirv(uniform, descriptor_set = 0, binding = 0)] params: &Params,
        #[spirv(storage_buffer, descriptor_set = 0, binding = 1)] x: &[f32],
        #[spirv(storage_buffer, descriptor_set = 0, binding = 2)] partial: &mut [f32],
        #[spirv(workgroup)] sums: &mut [f32; super::BLOCK],
    ) {
        let ctx = Ctx::new(lid, wid, groups, UVec3::new(256, 1, 1)).with_subgroup(lane, lanes);
        super::warp_reduce_body(
            ctx,
            params.n,
            In::new(x),
            Out::new(partial),
            Shared::new(sums),
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

    #[kernel]
    pub unsafe fn warp_reduce(n: u32, x: *const f32, partial: *mut f32) {
        let sums =
            unsafe { Shared::from_ptr(cuda_std::shared_array![f32; super::BLOCK] as *mut f32) };
        unsafe { super::warp_reduce_body(Ctx::new(), n, In::new(x), Out::new(partial), sums) }
    }
}
