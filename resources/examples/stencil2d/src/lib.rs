//! Stencil2d: one step of Kernel Tuner's 5-point stencil (its tutorial's `stencil_kernel`): every
//! interior point of a width × height f32 grid becomes the mean of itself and its four
//! neighbours, `(c + w + e + s + n) / 5`; the boundary is copied. Each workgroup first stages its
//! block and a one-point halo around it in workgroup memory, so every input value is read from
//! global memory about once instead of five times; each invocation then computes `TILE_SIZE_Y`
//! points of a column (Kernel Tuner's `tile_size_y`), each centre value read once and kept for
//! the points above and below it.
//!
//! One kernel body (`stencil2d_body`) on the workbench's kernel API; thin entry points per
//! backend. The sums run in the same order everywhere and there is no multiply to fuse; only the
//! division may round differently (WGSL allows 2.5 ULP), hence the manifest's `max_ulp`.
#![cfg_attr(any(target_arch = "nvptx64", target_arch = "spirv"), no_std)]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(abi_ptx, stdarch_nvptx, asm_experimental_arch)
)]

use gpu_kernel::prelude::*;

/// The workgroup's width and height (Kernel Tuner's `block_size_x` / `block_size_y`).
#[cfg(target_arch = "nvptx64")]
pub const BLOCK_SIZE_X: usize = tunable(option_env!("WB_TUNABLE_BLOCK_SIZE_X"), 64);
#[cfg(target_arch = "nvptx64")]
pub const BLOCK_SIZE_Y: usize = tunable(option_env!("WB_TUNABLE_BLOCK_SIZE_Y"), 4);
// The manifest's constraints, checked where the sizes are constants (the CUDA C++ reference's
// static_assert): the tile fits, and its halo columns are one point an invocation at most.
#[cfg(target_arch = "nvptx64")]
const _: () = assert!(
    (BLOCK_SIZE_X + 2) * (BLOCK_SIZE_Y * TILE_SIZE_Y as usize + 2) <= HALO_ELEMENTS
        && 2 * (BLOCK_SIZE_Y * TILE_SIZE_Y as usize + 2) <= BLOCK_SIZE_X * BLOCK_SIZE_Y,
    "block_size_x, block_size_y and tile_size_y outside the manifest's constraints"
);

/// Rows per invocation (Kernel Tuner's `tile_size_y`, `[kernel.tunables] tile_size_y`): invocation
/// (x, y) computes rows `TILE_SIZE_Y · y .. TILE_SIZE_Y · (y + 1)` of its workgroup's block. Every
/// entry reads it (the host's too: the launch's grid, `ceil_div(height, block_size_y *
/// tile_size_y)`, follows it).
pub const TILE_SIZE_Y: u32 = tunable(option_env!("WB_TUNABLE_TILE_SIZE_Y"), 4) as u32;

/// The staged block with its halo: (bx + 2) × (by · TILE_SIZE_Y + 2) floats, at most this many
/// (the manifest's constraint; (64 + 2) × (16 + 2), the largest one-row block's, as before).
pub const HALO_ELEMENTS: usize = (64 + 2) * (16 + 2);

/// The kernel, for bx × by workgroups: the (bx + 2) × (by · TILE_SIZE_Y + 2) points around the
/// workgroup's block are loaded into `tile` by all its invocations together (points outside the
/// grid as 0, never used), then invocation (x, y) computes its TILE_SIZE_Y points of a column from
/// the tile, each row's centre value read once and kept for the rows above and below it.
#[inline(always)]
#[lanes]
#[allow(clippy::too_many_arguments)] // the launch's buffers and scalars, as every entry passes them
pub fn stencil2d_body(
    ctx: Ctx,
    bx: usize,
    by: usize,
    width: u32,
    height: u32,
    x_old: In<f32>,
    mut x_new: Out<f32>,
    mut tile: Shared<f32, HALO_ELEMENTS>,
) {
    // Coordinates in u32, as the CUDA C++ reference's `unsigned int` (width and height are u32);
    // only the linear buffer index is a usize. In usize, rustc's NVPTX build does every compare,
    // add and multiply of this index math in 64 bits (two SASS instructions each, three for a
    // multiply), and this kernel's time is largely instruction issue, not memory bandwidth.
    let (bx, by) = (bx as u32, by as u32);
    let (lx, ly) = (ctx.local_id_x() as u32, ctx.local_id_y() as u32);
    let x0 = ctx.group_id_x() as u32 * bx;
    let y0 = ctx.group_id_y() as u32 * (by * TILE_SIZE_Y);
    let row = bx + 2;
    let rows = by * TILE_SIZE_Y + 2;
    // The lanes with a point in the grid: x0 + lx < width, written `lx < x_end` (none in a
    // workgroup past the grid). `lx`, not `t`: the compute part below is then not a run of one
    // `if t < bound` (`#[lanes]`'s `lane_bound`, whose loop over the lanes is not marked to run
    // long), so the cpu build's range check elimination splits its loop over the lanes and takes
    // the guard and most bounds checks out of the middle lanes (CPU time a launch 22.6-24.5 ->
    // 20.4-20.6 ms, docs/cpu-sim.md); the same PTX for nvptx (a u32 compare either way).
    let t = ctx.local_id_x();
    let x_end = width.saturating_sub(x0);
    // Point (tx, ty) of the tile is grid point (x0 + tx - 1, y0 + ty - 1). The block's columns
    // first: invocation (lx, ly) loads column lx + 1 of rows ly, ly + by, ly + 2·by, .. (a row of
    // invocations loads one contiguous row of the tile, no division): whole passes of by rows
    // (the tile test only in the last, partial one: rows % by = 2 % by), then the partial pass.
    // "Inside the grid" is one compare per axis (0 - 1 wraps past height): ptxas predicates each
    // load and, the loop unrolled, issues them all before the first store waits for one.
    let gx = x0 + lx;
    let mut ty0 = 0;
    while ty0 + by <= rows {
        let ty = ty0 + ly;
        let gy = (y0 + ty).wrapping_sub(1);
        let value = if gx < width && gy < height {
            x_old.get(gy as usize * width as usize + gx as usize)
        } else {
            0.0
        };
        tile.set((ty * row + lx + 1) as usize, value);
        ty0 += by;
    }
    // The partial pass and the halo's two columns (tile columns 0 and bx + 1: point h of their
    // 2 · rows is column (h % 2) · (bx + 1) of row h / 2, one point each for the first 2 · rows
    // invocations; the manifest's constraint keeps 2 · rows <= bx · by). Each load under one
    // condition, joined with `&` (with `&&` rustc branched around the halo column's load), and
    // its store under the tile test only: no branch, so ptxas issues these loads with the
    // passes' before the first store waits (three round trips to memory otherwise).
    let ty = ty0 + ly;
    let (gy, in_tile) = ((y0 + ty).wrapping_sub(1), ty < rows);
    let value = if in_tile & (gx < width) & (gy < height) {
        x_old.get(gy as usize * width as usize + gx as usize)
    } else {
        0.0
    };
    let h = ly * bx + lx;
    let (hx, hy, halo) = ((h & 1) * (bx + 1), h >> 1, h < 2 * rows);
    let (hgx, hgy) = ((x0 + hx).wrapping_sub(1), (y0 + hy).wrapping_sub(1));
    let halo_value = if halo & (hgx < width) & (hgy < height) {
        x_old.get(hgy as usize * width as usize + hgx as usize)
    } else {
        0.0
    };
    if in_tile {
        tile.set((ty * row + lx + 1) as usize, value);
    }
    if halo {
        tile.set((hy * row + hx) as usize, halo_value);
    }
    ctx.barrier();
    if lx < x_end {
        // The column's TILE_SIZE_Y points, top to bottom: each centre is the next point's north.
        // The indices in usize from the lane's x id `t`: the host's loop over the lanes then sees
        // them advance by one a lane (u32 sums widened are not affine to LLVM).
        let (x, row, first) = (x0 + lx, row as usize, y0 + ly * TILE_SIZE_Y);
        let at = (ly * TILE_SIZE_Y + 1) as usize * row + t + 1;
        let out = first as usize * width as usize + x0 as usize + t;
        let mut north = tile.get(at - row);
        let mut c = tile.get(at);
        let mut r = 0;
        while r < TILE_SIZE_Y {
            let (y, at) = (first + r, at + r as usize * row);
            let south = tile.get(at + row);
            // Computed for every point (the tile holds a value at each of the four, 0 outside the
            // grid) and chosen: no branch around the reads. The sums in the same order everywhere.
            let mean = (c + tile.get(at - 1) + tile.get(at + 1) + south + north) / 5.0;
            if y < height {
                let inside = x > 0 && y > 0 && x + 1 < width && y + 1 < height;
                x_new.set(
                    out + r as usize * width as usize,
                    if inside { mean } else { c },
                );
            }
            north = c;
            c = south;
            r += 1;
        }
    }
}

// ---------------------------------------------------------------- cpu and cpu-sim: the host executor
/// # Safety
/// `launch` is the runtime's launch record and each pointer the buffer of that name, as the
/// workbench's cpu runtime passes them, valid for the call.
#[cfg(not(any(target_arch = "nvptx64", target_arch = "spirv")))]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn stencil2d_cpu(
    launch: *mut gpu_kernel::host::Launch,
    width: u32,
    height: u32,
    x_old: *const f32,
    x_new: *mut f32,
) {
    let k = unsafe { gpu_kernel::host::Kernel::new(launch) };
    let (x_old, x_new) = unsafe { (k.input(0, x_old), k.output(1, x_new)) };
    k.run_lanes(
        move |ctx| {
            let tile = ctx.shared::<f32, HALO_ELEMENTS>();
            let (bx, by) = (ctx.group_size_x(), ctx.group_size_y());
            stencil2d_body(ctx, bx, by, width, height, x_old, x_new, tile)
        },
        move |wg| {
            let tile = wg.shared::<f32, HALO_ELEMENTS>();
            let [bx, by, _] = wg.size();
            stencil2d_body_lanes(
                wg,
                bx as usize,
                by as usize,
                width,
                height,
                x_old,
                x_new,
                tile,
            )
        },
    );
}

// ---------------------------------------------------------------- nvptx: rustc's NVPTX backend
#[cfg(all(target_arch = "nvptx64", not(feature = "rust-cuda")))]
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn stencil2d(
    width: u32,
    height: u32,
    x_old: *const f32,
    x_new: *mut f32,
) {
    let tile = gpu_kernel::nvptx_shared!(STENCIL2D_TILE: [f32; HALO_ELEMENTS]);
    let ctx = unsafe { Ctx::new() };
    unsafe {
        stencil2d_body(
            ctx,
            BLOCK_SIZE_X,
            BLOCK_SIZE_Y,
            width,
            height,
            In::new(x_old),
            Out::new(x_new),
            tile,
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
        pub width: u32,
        pub height: u32,
    }

    /// 64 × 4 (`[kernel.launch.rust-gpu]`): `threads(..)` takes literals.
    #[spirv(compute(threads(64, 4)))]
    pub fn stencil2d_spirv(
        #[spirv(local_invocation_id)] lid: UVec3,
        #[spirv(workgroup_id)] wid: UVec3,
        #[spirv(num_workgroups)] groups: UVec3,
        #[spirv(uniform, descriptor_set = 0, binding = 0)] params: &Params,
        #[spirv(storage_buffer, descriptor_set = 0, binding = 1)] x_old: &[f32],
        #[spirv(storage_buffer, descriptor_set = 0, binding = 2)] x_new: &mut [f32],
        #[spirv(workgroup)] tile: &mut [f32; super::HALO_ELEMENTS],
    ) {
        let ctx = Ctx::new(lid, wid, groups, UVec3::new(64, 4, 1));
        let (old, new) = (In::new(x_old), Out::new(x_new));
        super::stencil2d_body(
            ctx,
            64,
            4,
            params.width,
            params.height,
            old,
            new,
            Shared::new(tile),
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
    pub unsafe fn stencil2d(width: u32, height: u32, x_old: *const f32, x_new: *mut f32) {
        let tile = unsafe {
            Shared::from_ptr(cuda_std::shared_array![f32; super::HALO_ELEMENTS] as *mut f32)
        };
        let ctx = unsafe { Ctx::new() };
        let (bx, by) = (ctx.group_size_x(), ctx.group_size_y());
        unsafe {
            super::stencil2d_body(
                ctx,
                bx,
                by,
                width,
                height,
                In::new(x_old),
                Out::new(x_new),
                tile,
            )
        }
    }
}
