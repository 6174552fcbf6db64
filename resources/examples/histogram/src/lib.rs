//! Histogram: counts of n u32 values in 256 bins (`bins[v % 256] += 1`), the atomics example.
//! Each workgroup first counts its stretch of the input in a private histogram in workgroup
//! memory (`Shared::atomic_add`: many invocations hit one bin at once), then adds its non-zero
//! bins to the global histogram (`Out::atomic_add`: one atomic per bin per workgroup instead of
//! one per element). Integer counts: every backend must agree exactly, whatever order the atomics
//! ran in.
//!
//! One kernel body (`histogram_body`), written with the workbench's kernel API (`gpu_kernel`);
//! thin entry points make its handles on each backend. On the cpu and cpu-sim backends the atomics
//! are real atomics (workgroups run on several threads at once), and cpu-sim reports no race
//! between two atomics, only between an atomic and a plain access. The host runs a grid of its
//! own (`[kernel.launch.cpu]`, at most 64 workgroups) with more elements an invocation
//! (`histogram_cpu`): the same body, fewer flushes of the bins.
#![cfg_attr(any(target_arch = "nvptx64", target_arch = "spirv"), no_std)]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(abi_ptx, stdarch_nvptx, asm_experimental_arch)
)]

use gpu_kernel::prelude::*;

/// Bins of the histogram (a value v counts in bin v % BINS).
pub const BINS: usize = 256;
/// Elements each invocation counts (`[kernel.tunables] items`): more items, fewer workgroups,
/// so fewer global atomics per element, but less parallelism. 32, with the `threads` tunable's
/// 512: 16,384 elements a workgroup, among the fastest tried on an H100 at the default n
/// (README.md has the figures). The host's entry counts more where its own grid needs it
/// (`histogram_cpu`).
pub const ITEMS: usize = tunable(option_env!("WB_TUNABLE_ITEMS"), 32);

/// The kernel: the workgroup zeroes its private bins, counts `items` elements per invocation into
/// them (consecutive invocations read consecutive elements), then adds each non-zero bin to the
/// global histogram. Any workgroup size works: the bins are spread over the invocations.
#[inline(always)]
#[lanes]
pub fn histogram_body(
    ctx: Ctx,
    items: usize,
    n: u32,
    x: In<u32>,
    mut bins: Out<u32>,
    mut local: Shared<u32, BINS>,
) {
    let n = n as usize;
    let tid = ctx.local_id_x();
    let threads = ctx.group_size_x();
    // Workgroup memory starts undefined on a GPU: zero the private bins first.
    let mut b = tid;
    while b < BINS {
        local.set(b, 0);
        b += threads;
    }
    ctx.barrier();
    let base = ctx.group_linear() * threads * items;
    let mut k = 0;
    while k < items {
        let i = base + k * threads + tid;
        if i < n {
            local.atomic_add((x.get(i) % BINS as u32) as usize, 1);
        }
        k += 1;
    }
    ctx.barrier();
    let mut b = tid;
    while b < BINS {
        let count = local.get(b);
        if count != 0 {
            bins.atomic_add(b, count);
        }
        b += threads;
    }
}

// ---------------------------------------------------------------- cpu and cpu-sim: the host executor
/// # Safety
/// `launch` is the runtime's launch record and each pointer the buffer of that name, as the
/// workbench's cpu runtime passes them, valid for the call.
#[cfg(not(any(target_arch = "nvptx64", target_arch = "spirv")))]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn histogram_cpu(
    launch: *mut gpu_kernel::host::Launch,
    n: u32,
    x: *const u32,
    bins: *mut u32,
) {
    // The host's grid is its own (`[kernel.launch.cpu]`: at most 64 workgroups, where the GPUs
    // have one a tile of threads × ITEMS): each invocation counts as many elements as that grid
    // needs to cover n, at least ITEMS. Fewer workgroups, fewer flushes of the 256 bins to the
    // global histogram, each of which takes the bins' 16 cache lines from the other cores. With
    // the GPUs' grid this is ITEMS, as on them.
    let (grid, threads) = unsafe { ((*launch).grid, (*launch).threads) };
    let invocations: usize = grid.iter().chain(&threads).map(|&d| d as usize).product();
    let items = ITEMS.max((n as usize).div_ceil(invocations.max(1)));
    let k = unsafe { gpu_kernel::host::Kernel::new(launch) };
    let (x, bins) = unsafe { (k.input(0, x), k.output(1, bins)) };
    k.run_lanes(
        move |ctx| {
            let local = ctx.shared::<u32, BINS>();
            histogram_body(ctx, items, n, x, bins, local)
        },
        move |wg| {
            let local = wg.shared::<u32, BINS>();
            histogram_body_lanes(wg, items, n, x, bins, local)
        },
    );
}

// ---------------------------------------------------------------- nvptx: rustc's NVPTX backend
#[cfg(all(target_arch = "nvptx64", not(feature = "rust-cuda")))]
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn histogram(n: u32, x: *const u32, bins: *mut u32) {
    let local = gpu_kernel::nvptx_shared!(HISTOGRAM_BINS: [u32; BINS]);
    unsafe { histogram_body(Ctx::new(), ITEMS, n, In::new(x), Out::new(bins), local) }
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

    /// `threads(..)` takes literals: this entry is 256 wide (`[kernel.launch.rust-gpu]`).
    #[spirv(compute(threads(256)))]
    pub fn histogram_spirv(
        #[spirv(local_invocation_id)] lid: UVec3,
        #[spirv(workgroup_id)] wid: UVec3,
        #[spirv(num_workgroups)] groups: UVec3,
        #[spirv(uniform, descriptor_set = 0, binding = 0)] params: &Params,
        #[spirv(storage_buffer, descriptor_set = 0, binding = 1)] x: &[u32],
        #[spirv(storage_buffer, descriptor_set = 0, binding = 2)] bins: &mut [u32],
        #[spirv(workgroup)] local: &mut [u32; super::BINS],
    ) {
        let ctx = Ctx::new(lid, wid, groups, UVec3::new(256, 1, 1));
        super::histogram_body(
            ctx,
            super::ITEMS,
            params.n,
            In::new(x),
            Out::new(bins),
            Shared::new(local),
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
    pub unsafe fn histogram(n: u32, x: *const u32, bins: *mut u32) {
        let local =
            unsafe { Shared::from_ptr(cuda_std::shared_array![u32; super::BINS] as *mut u32) };
        unsafe {
            super::histogram_body(
                Ctx::new(),
                super::ITEMS,
                n,
                In::new(x),
                Out::new(bins),
                local,
            )
        }
    }
}
