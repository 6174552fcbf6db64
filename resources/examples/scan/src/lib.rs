//! Scan: the inclusive prefix sum of n u32 values, `y[i] = x[0] + x[1] + ... + x[i]`, in two
//! launches (two kernels of this project, run in this order):
//!
//! 1. `scan`: each workgroup of 256 invocations scans its tile of 512 elements in workgroup
//!    memory (two elements per invocation, then a Hillis–Steele scan of the 256 pair sums) into
//!    `y`, and writes the tile's total to `sums[tile]`.
//! 2. `scan_add`: each workgroup adds the totals of every tile before its own (a workgroup
//!    reduction over `sums[0 .. tile]`) to its 512 elements of `y`.
//!
//! The classic scheme has a third launch between these (a scan of `sums`); here the second pass
//! reduces the sums before its tile itself, which costs O(tiles) reads per workgroup: cheap while
//! `sums` sits in cache (n up to a few million), and a recursive scan of `sums` beyond that.
//! u32 addition wraps and is associative, so every backend's result is exact, whatever order.
#![cfg_attr(any(target_arch = "nvptx64", target_arch = "spirv"), no_std)]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(abi_ptx, stdarch_nvptx, asm_experimental_arch)
)]

use gpu_kernel::prelude::*;

/// Invocations per workgroup (the manifest's `threads`).
pub const BLOCK: usize = 256;
/// Elements per tile: two per invocation.
pub const TILE: usize = 2 * BLOCK;

/// Pass 1: the tile's inclusive scan into `y`, its total into `sums[tile]`.
///
/// Invocation t holds elements 2t and 2t+1 of the tile (a, b) and puts a + b in `scan[t]`; the
/// Hillis–Steele steps (offsets 1, 2, ..., 128) make `scan[t]` the sum of pairs 0..=t. Each step
/// reads, waits at a barrier, then writes, and waits again: no invocation overwrites an element
/// another has yet to read.
#[inline(always)]
#[lanes]
pub fn scan_body(
    ctx: Ctx,
    n: u32,
    x: In<u32>,
    mut y: Out<u32>,
    mut sums: Out<u32>,
    mut scan: Shared<u32, BLOCK>,
) {
    let n = n as usize;
    let t = ctx.local_id_x();
    let tile = ctx.group_linear();
    let active = t < BLOCK; // a launch wider than BLOCK: the extra invocations only join the barriers
    let i = tile * TILE + 2 * t;
    let a = if active && i < n { x.get(i) } else { 0 };
    let b = if active && i + 1 < n { x.get(i + 1) } else { 0 };
    if active {
        scan.set(t, a.wrapping_add(b));
    }
    ctx.barrier();
    // An extra invocation reads as the last one does (reads of a step never race its writes,
    // a barrier lies between) and writes nothing. Only the store is guarded: with the reads
    // under `if active` too, LLVM split every step into an active and an inactive copy, each
    // with its own barriers (25 BAR.SYNC and a divergent branch per step on NVPTX against
    // nvcc's 17 and none; H200: 1.07x cuda-c).
    let r = if active { t } else { BLOCK - 1 };
    let mut offset = 1;
    while offset < BLOCK {
        let mut sum = scan.get(r);
        if r >= offset {
            sum = sum.wrapping_add(scan.get(r - offset));
        }
        ctx.barrier();
        if active {
            scan.set(t, sum);
        }
        ctx.barrier();
        offset *= 2;
    }
    if active && tile < n.div_ceil(TILE) {
        let before = if t > 0 { scan.get(t - 1) } else { 0 };
        if i < n {
            y.set(i, before.wrapping_add(a));
        }
        if i + 1 < n {
            y.set(i + 1, before.wrapping_add(a).wrapping_add(b));
        }
        if t == BLOCK - 1 {
            sums.set(tile, scan.get(t));
        }
    }
}

/// Pass 2: `y[i] += sums[0] + ... + sums[tile - 1]` for the tile's 512 elements.
///
/// The workgroup first sums the totals before its tile: invocation t adds sums[t], sums[t + 256],
/// ... below `tile`, then a tree in workgroup memory (as the reduction example folds) gives the
/// offset in `total[0]`.
#[inline(always)]
#[lanes]
pub fn scan_add_body(
    ctx: Ctx,
    n: u32,
    sums: In<u32>,
    mut y: Out<u32>,
    mut total: Shared<u32, BLOCK>,
) {
    let n = n as usize;
    let t = ctx.local_id_x();
    let tile = ctx.group_linear();
    let active = t < BLOCK;
    // Spare workgroups of a folded grid (tile >= tiles) must not read past `sums`.
    let before = if tile < n.div_ceil(TILE) { tile } else { 0 };
    if active {
        let mut part = 0u32;
        let mut k = t;
        while k < before {
            part = part.wrapping_add(sums.get(k));
            k += BLOCK;
        }
        total.set(t, part);
    }
    ctx.barrier();
    let mut stride = BLOCK / 2;
    while stride > 0 {
        if t < stride {
            total.set(t, total.get(t).wrapping_add(total.get(t + stride)));
        }
        ctx.barrier();
        stride /= 2;
    }
    let offset = total.get(0);
    let i = tile * TILE + t;
    if active && i < n {
        y[i] = y[i].wrapping_add(offset);
    }
    if active && i + BLOCK < n {
        y[i + BLOCK] = y[i + BLOCK].wrapping_add(offset);
    }
}

// ---------------------------------------------------------------- cpu and cpu-sim: the host executor
/// # Safety
/// `launch` is the runtime's launch record and each pointer the buffer of that name, as the
/// workbench's cpu runtime passes them, valid for the call.
#[cfg(not(any(target_arch = "nvptx64", target_arch = "spirv")))]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn scan_cpu(
    launch: *mut gpu_kernel::host::Launch,
    n: u32,
    x: *const u32,
    y: *mut u32,
    sums: *mut u32,
) {
    let k = unsafe { gpu_kernel::host::Kernel::new(launch) };
    let (x, y, sums) = unsafe { (k.input(0, x), k.output(1, y), k.output(2, sums)) };
    k.run_lanes(
        move |ctx| {
            let scan = ctx.shared::<u32, BLOCK>();
            scan_body(ctx, n, x, y, sums, scan)
        },
        move |wg| {
            let scan = wg.shared::<u32, BLOCK>();
            scan_body_lanes(wg, n, x, y, sums, scan)
        },
    );
}

/// # Safety
/// `launch` is the runtime's launch record and each pointer the buffer of that name, as the
/// workbench's cpu runtime passes them, valid for the call.
#[cfg(not(any(target_arch = "nvptx64", target_arch = "spirv")))]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn scan_add_cpu(
    launch: *mut gpu_kernel::host::Launch,
    n: u32,
    sums: *const u32,
    y: *mut u32,
) {
    let k = unsafe { gpu_kernel::host::Kernel::new(launch) };
    let (sums, y) = unsafe { (k.input(0, sums), k.output(1, y)) };
    k.run_lanes(
        move |ctx| {
            let total = ctx.shared::<u32, BLOCK>();
            scan_add_body(ctx, n, sums, y, total)
        },
        move |wg| {
            let total = wg.shared::<u32, BLOCK>();
            scan_add_body_lanes(wg, n, sums, y, total)
        },
    );
}

// ---------------------------------------------------------------- nvptx: rustc's NVPTX backend
#[cfg(all(target_arch = "nvptx64", not(feature = "rust-cuda")))]
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn scan(n: u32, x: *const u32, y: *mut u32, sums: *mut u32) {
    let shared = gpu_kernel::nvptx_shared!(SCAN_PAIRS: [u32; BLOCK]);
    // The manifest's grid is 1-D: `group_linear` is `%ctaid.x`, nvcc's `blockIdx.x`.
    unsafe {
        scan_body(
            Ctx::new_1d(),
            n,
            In::new(x),
            Out::new(y),
            Out::new(sums),
            shared,
        )
    }
}

#[cfg(all(target_arch = "nvptx64", not(feature = "rust-cuda")))]
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn scan_add(n: u32, sums: *const u32, y: *mut u32) {
    let shared = gpu_kernel::nvptx_shared!(SCAN_ADD_TOTAL: [u32; BLOCK]);
    unsafe { scan_add_body(Ctx::new_1d(), n, In::new(sums), Out::new(y), shared) }
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

    #[spirv(compute(threads(256)))]
    pub fn scan_spirv(
        #[spirv(local_invocation_id)] lid: UVec3,
        #[spirv(workgroup_id)] wid: UVec3,
        #[spirv(num_workgroups)] groups: UVec3,
        #[spirv(uniform, descriptor_set = 0, binding = 0)] params: &Params,
        #[spirv(storage_buffer, descriptor_set = 0, binding = 1)] x: &[u32],
        #[spirv(storage_buffer, descriptor_set = 0, binding = 2)] y: &mut [u32],
        #[spirv(storage_buffer, descriptor_set = 0, binding = 3)] sums: &mut [u32],
        #[spirv(workgroup)] scan: &mut [u32; super::BLOCK],
    ) {
        let ctx = Ctx::new(lid, wid, groups, UVec3::new(256, 1, 1));
        super::scan_body(
            ctx,
            params.n,
            In::new(x),
            Out::new(y),
            Out::new(sums),
            Shared::new(scan),
        );
    }

    #[spirv(compute(threads(256)))]
    pub fn scan_add_spirv(
        #[spirv(local_invocation_id)] lid: UVec3,
        #[spirv(workgroup_id)] wid: UVec3,
        #[spirv(num_workgroups)] groups: UVec3,
        #[spirv(uniform, descriptor_set = 0, binding = 0)] params: &Params,
        #[spirv(storage_buffer, descriptor_set = 0, binding = 1)] sums: &[u32],
        #[spirv(storage_buffer, descriptor_set = 0, binding = 2)] y: &mut [u32],
        #[spirv(workgroup)] total: &mut [u32; super::BLOCK],
    ) {
        let ctx = Ctx::new(lid, wid, groups, UVec3::new(256, 1, 1));
        super::scan_add_body(
            ctx,
            params.n,
            In::new(sums),
            Out::new(y),
            Shared::new(total),
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
    pub unsafe fn scan(n: u32, x: *const u32, y: *mut u32, sums: *mut u32) {
        let shared =
            unsafe { Shared::from_ptr(cuda_std::shared_array![u32; super::BLOCK] as *mut u32) };
        unsafe {
            super::scan_body(
                Ctx::new(),
                n,
                In::new(x),
                Out::new(y),
                Out::new(sums),
                shared,
            )
        }
    }

    #[kernel]
    pub unsafe fn scan_add(n: u32, sums: *const u32, y: *mut u32) {
        let shared =
            unsafe { Shared::from_ptr(cuda_std::shared_array![u32; super::BLOCK] as *mut u32) };
        unsafe { super::scan_add_body(Ctx::new(), n, In::new(sums), Out::new(y), shared) }
    }
}
