//! Scan: the inclusive prefix sum of n u32 values, `y[i] = x[0] + x[1] + ... + x[i]`, in two
//! launches (two kernels of this project, run in this order):
//!
//! 1. `scan`: each workgroup of 256 invocations scans its tile of 2304 elements (9 per
//!    invocation) into `y`, and writes the tile's total to `sums[tile]`.
//! 2. `scan_add`: each workgroup adds the totals of every tile before its own (a workgroup
//!    reduction over `sums[0 .. tile]`) to its 2304 elements of `y`.
//!
//! Pass 1 is CUB's block scan with several items per invocation (`BlockLoad` / `BlockStore`
//! through workgroup memory, a raking reduce-then-scan `BlockScan`): the tile is read into
//! workgroup memory in striped order (element k * 256 + t by invocation t: neighbouring
//! invocations read neighbouring elements, one coalesced line a warp on a GPU); invocation t then
//! sums its own run of 9 consecutive elements there (t * 9 ..= t * 9 + 8); 32 invocations rake
//! the 256 run totals (8 each), then each raker sums the rake totals before its own and gives
//! each of its runs its offset in the tile; each invocation scans its run in place from that
//! offset, and the tile goes out striped as it came in, a copy. Five barriers a tile of 2304, three
//! workgroup-memory loads and two stores an element, no per-element lookup of a run's offset (its
//! `e / 9` and load); where two elements an invocation and a Hillis–Steele scan of the pair sums
//! took 17 barriers a tile of 512 and about four adds and shared loads and stores an element. On
//! the host (`#[lanes]`) the striped read and write are each one contiguous pass over the lanes a
//! round (a copy: loops LLVM vectorises where the accessors let it), the run's sum and scan nine
//! consecutive elements a lane.
//!
//! The classic scheme has a third launch between these (a scan of `sums`); here the second pass
//! reduces the sums before its tile itself, which costs O(tiles) reads per workgroup: cheap while
//! `sums` sits in cache (n up to tens of millions at 2304 an entry), and a recursive scan of
//! `sums` beyond that. u32 addition wraps and is associative, so every backend's result is exact,
//! whatever order.
#![cfg_attr(any(target_arch = "nvptx64", target_arch = "spirv"), no_std)]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(abi_ptx, stdarch_nvptx, asm_experimental_arch)
)]

use gpu_kernel::prelude::*;

/// Invocations per workgroup (the manifest's `threads`).
pub const BLOCK: usize = 256;
/// Elements per invocation. Odd, so that the runs of 32 consecutive invocations (t * ITEMS + j,
/// one j at a time) fall in 32 different banks of a GPU's workgroup memory: no bank conflict
/// where each invocation walks its own run (with 8, four invocations would share a bank).
pub const ITEMS: usize = 9;
/// Elements per tile (a workgroup's share of each pass).
pub const TILE: usize = ITEMS * BLOCK;
/// Invocations that rake the per-invocation totals (one warp on a GPU), `RAKE` totals each.
pub const RAKERS: usize = 32;
const RAKE: usize = BLOCK / RAKERS;

/// Pass 1: the tile's inclusive scan into `y`, its total into `sums[tile]`.
///
/// `items` holds the tile (striped in; then each invocation's run of ITEMS scanned in place from
/// the run's offset); `runs` the 256 run totals, then the offset of each run in the tile; `rakes`
/// the 32 rake totals (8 runs a rake). Raker t's offsets: the totals of the rakes before its own,
/// then run by run through its 8 (in place: raker t alone touches `runs[8t ..][.. 8]`). The tile
/// then goes out striped, a copy of `items`. Each step reads only what the barrier before it made
/// whole, and writes only what no other invocation reads in that step. A launch wider than
/// `BLOCK`: the extra invocations only join the barriers.
#[allow(clippy::too_many_arguments)] // the launch's buffers and the three workgroup arrays
#[inline(always)]
#[lanes]
pub fn scan_body(
    ctx: Ctx,
    n: u32,
    x: In<u32>,
    mut y: Out<u32>,
    mut sums: Out<u32>,
    mut items: Shared<u32, TILE>,
    mut runs: Shared<u32, BLOCK>,
    mut rakes: Shared<u32, RAKERS>,
) {
    let n = n as usize;
    let t = ctx.local_id_x();
    let tile = ctx.group_linear();
    let base = tile * TILE;
    // Striped: in round k the invocations read BLOCK consecutive elements, invocation t the t-th.
    // The round loop outside the `if` (both rounds loops here): as `#[lanes]` a uniform `while`,
    // each round one pass over the lanes through contiguous memory; with the loop inside the
    // `if`, each lane's nine strided elements in turn took about 20 % more CPU time a launch.
    let mut k = 0;
    while k < ITEMS {
        if t < BLOCK {
            let i = base + k * BLOCK + t;
            items.set(k * BLOCK + t, if i < n { x.get(i) } else { 0 });
        }
        k += 1;
    }
    ctx.barrier();
    // Invocation t's run of ITEMS consecutive elements: its total (the run is scanned after the
    // rake, from its offset: reduce, then scan).
    // `first` outside the loop: as `#[lanes]` a loop naming the lane id `t` inside a loop of its
    // own gets it through `black_box` (`LaneType::opaque`), a store and a reload a lane (6 % of
    // this pass's CPU time).
    if t < BLOCK {
        let first = t * ITEMS;
        let mut run = 0u32;
        let mut j = 0;
        while j < ITEMS {
            run = run.wrapping_add(items.get(first + j));
            j += 1;
        }
        runs.set(t, run);
    }
    ctx.barrier();
    if t < RAKERS {
        let mut rake = 0u32;
        let mut j = 0;
        while j < RAKE {
            rake = rake.wrapping_add(runs.get(t * RAKE + j));
            j += 1;
        }
        rakes.set(t, rake);
    }
    ctx.barrier();
    if t < RAKERS {
        // The rakes before t's, then run by run (raker t alone touches runs[t * RAKE ..][.. RAKE]).
        let mut before = 0u32;
        let mut r = 0;
        while r < RAKERS {
            // Every rake read, those from t's on counted as 0: once unrolled, 32 loads issued
            // together and a select each (a branch each around the load on NVPTX otherwise).
            let rake = rakes.get(r);
            before = before.wrapping_add(if r < t { rake } else { 0 });
            r += 1;
        }
        let mut j = 0;
        while j < RAKE {
            let run = runs.get(t * RAKE + j);
            runs.set(t * RAKE + j, before);
            before = before.wrapping_add(run);
            j += 1;
        }
        // The last raker's total is the tile's; spare workgroups must not write past `sums`.
        if t == RAKERS - 1 && tile < n.div_ceil(TILE) {
            sums.set(tile, before);
        }
    }
    ctx.barrier();
    // Invocation t's run scanned in place from its offset (invocation t alone has touched
    // items[t * ITEMS ..][.. ITEMS] since the first barrier).
    if t < BLOCK {
        let first = t * ITEMS;
        let mut run = runs.get(t);
        let mut j = 0;
        while j < ITEMS {
            run = run.wrapping_add(items.get(first + j));
            items.set(first + j, run);
            j += 1;
        }
    }
    ctx.barrier();
    // Striped out, a copy; spare workgroups have base >= n and write nothing.
    let mut k = 0;
    while k < ITEMS {
        if t < BLOCK {
            let i = base + k * BLOCK + t;
            if i < n {
                y.set(i, items.get(k * BLOCK + t));
            }
        }
        k += 1;
    }
}

/// Pass 2: `y[i] += sums[0] + ... + sums[tile - 1]` for the tile's 2304 elements.
///
/// The workgroup first sums the totals before its tile, raked as pass 1 rakes its runs: in rounds
/// of `BLOCK` consecutive totals invocation t adds its one (`part`, round by round), the 32
/// rakers each add 8 of the 256 partial sums (raker t those at t, t + 32, ...: 32 banks), and
/// invocation 0 adds the 32 rake totals into `total[0]`: three barriers, where a tree in
/// workgroup memory took nine. The tile is then updated striped, as pass 1 wrote it, each round
/// one contiguous stretch of `BLOCK` elements.
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
    // Spare workgroups of a folded grid (tile >= tiles) must not read past `sums` (they sum it
    // all and write nothing).
    let before = tile.min(n.div_ceil(TILE));
    // The round loop outside the `if`, its counter the same in every invocation: as `#[lanes]` a
    // uniform `while` (each round one pass over the lanes, `part` a lane's slot), its own name
    // (a name's every assignment decides whether it is uniform: `macros/src/lib.rs`).
    let mut part = 0u32;
    let mut round = 0;
    while round < before {
        if t < BLOCK && round + t < before {
            part = part.wrapping_add(sums.get(round + t));
        }
        round += BLOCK;
    }
    if t < BLOCK {
        total.set(t, part);
    }
    ctx.barrier();
    if t < RAKERS {
        // Raker t alone reads total[t + 32 j] and writes total[t].
        let mut rake = 0u32;
        let mut j = 0;
        while j < RAKE {
            rake = rake.wrapping_add(total.get(t + j * RAKERS));
            j += 1;
        }
        total.set(t, rake);
    }
    ctx.barrier();
    if t < 1 {
        let mut offset = 0u32;
        let mut r = 0;
        while r < RAKERS {
            offset = offset.wrapping_add(total.get(r));
            r += 1;
        }
        total.set(0, offset);
    }
    ctx.barrier();
    // Typed: a local the rounds below read is kept per lane only where its type is seen to be
    // a primitive one (the `#[lanes]` rule); untyped, the rounds ran inside each lane, nine
    // elements 256 apart, not one contiguous pass a round.
    let offset: u32 = total.get(0);
    let base = tile * TILE;
    let mut k = 0;
    while k < ITEMS {
        if t < BLOCK {
            let i = base + k * BLOCK + t;
            if i < n {
                y[i] = y[i].wrapping_add(offset);
            }
        }
        k += 1;
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
            let items = ctx.shared::<u32, TILE>();
            let runs = ctx.shared::<u32, BLOCK>();
            let rakes = ctx.shared::<u32, RAKERS>();
            scan_body(ctx, n, x, y, sums, items, runs, rakes)
        },
        move |wg| {
            let items = wg.shared::<u32, TILE>();
            let runs = wg.shared::<u32, BLOCK>();
            let rakes = wg.shared::<u32, RAKERS>();
            scan_body_lanes(wg, n, x, y, sums, items, runs, rakes)
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
    let items = gpu_kernel::nvptx_shared!(SCAN_ITEMS: [u32; TILE]);
    let runs = gpu_kernel::nvptx_shared!(SCAN_RUNS: [u32; BLOCK]);
    let rakes = gpu_kernel::nvptx_shared!(SCAN_RAKES: [u32; RAKERS]);
    // The manifest's grid is 1-D: `group_linear` is `%ctaid.x`, nvcc's `blockIdx.x`.
    unsafe {
        scan_body(
            Ctx::new_1d(),
            n,
            In::new(x),
            Out::new(y),
            Out::new(sums),
            items,
            runs,
            rakes,
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
        #[spirv(workgroup)] items: &mut [u32; super::TILE],
        #[spirv(workgroup)] runs: &mut [u32; super::BLOCK],
        #[spirv(workgroup)] rakes: &mut [u32; super::RAKERS],
    ) {
        let ctx = Ctx::new(lid, wid, groups, UVec3::new(256, 1, 1));
        super::scan_body(
            ctx,
            params.n,
            In::new(x),
            Out::new(y),
            Out::new(sums),
            Shared::new(items),
            Shared::new(runs),
            Shared::new(rakes),
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
        let items =
            unsafe { Shared::from_ptr(cuda_std::shared_array![u32; super::TILE] as *mut u32) };
        let runs =
            unsafe { Shared::from_ptr(cuda_std::shared_array![u32; super::BLOCK] as *mut u32) };
        let rakes =
            unsafe { Shared::from_ptr(cuda_std::shared_array![u32; super::RAKERS] as *mut u32) };
        unsafe {
            super::scan_body(
                Ctx::new(),
                n,
                In::new(x),
                Out::new(y),
                Out::new(sums),
                items,
                runs,
                rakes,
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
