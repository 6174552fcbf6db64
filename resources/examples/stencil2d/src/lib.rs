//! Stencil2d: one step of Kernel Tuner's 5-point stencil (its tutorial's `stencil_kernel`): every
//! interior point of a width × height f32 grid becomes the mean of itself and its four
//! neighbours, `(c + w + e + s + n) / 5`; the boundary is copied. Each workgroup first stages its
//! block and a one-point halo around it in workgroup memory, so every input value is read from
//! global memory about once instead of five times.
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
pub const BLOCK_SIZE_X: usize = tunable(option_env!("WB_TUNABLE_BLOCK_SIZE_X"), 32);
#[cfg(target_arch = "nvptx64")]
pub const BLOCK_SIZE_Y: usize = tunable(option_env!("WB_TUNABLE_BLOCK_SIZE_Y"), 8);

/// The staged block with its halo: room for the largest workgroup the manifest allows
/// ((64 + 2) × (16 + 2) floats).
pub const HALO_ELEMENTS: usize = (64 + 2) * (16 + 2);

/// The kernel, for bx × by workgroups: the (bx + 2) × (by + 2) points around the workgroup's
/// block are loaded into `tile` by all its invocations together (points outside the grid as 0,
/// never used), then invocation (x, y) computes its point from the tile.
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
    let y0 = ctx.group_id_y() as u32 * by;
    let row = bx + 2;
    // The block and its halo: point (tx, ty) of the tile is grid point (x0 + tx - 1, y0 + ty - 1).
    let mut k = ly * bx + lx;
    while k < row * (by + 2) {
        let (tx, ty) = (k % row, k / row);
        // x0 + tx >= 1 && x0 + tx - 1 < width as one compare (0 - 1 wraps past width), the same
        // for y: rustc kept the four-way `&&` as three branches around the load, and ptxas then
        // neither predicated the load nor unrolled the loop, so an invocation with two tile points
        // waited for its first load before issuing its second. With one condition ptxas predicates
        // the load and unrolls the loop as it does nvcc's: both loads are in flight together.
        let (gx, gy) = ((x0 + tx).wrapping_sub(1), (y0 + ty).wrapping_sub(1));
        let inside = gx < width && gy < height;
        let value = if inside {
            x_old.get(gy as usize * width as usize + gx as usize)
        } else {
            0.0
        };
        tile.set(k as usize, value);
        k += bx * by;
    }
    ctx.barrier();
    let (x, y) = (x0 + lx, y0 + ly);
    if x < width && y < height {
        let at = ((ly + 1) * row + lx + 1) as usize;
        let row = row as usize;
        let c = tile.get(at);
        let value = if x > 0 && y > 0 && x + 1 < width && y + 1 < height {
            (c + tile.get(at - 1) + tile.get(at + 1) + tile.get(at + row) + tile.get(at - row))
                / 5.0
        } else {
            c // the boundary keeps its value
        };
        x_new.set(y as usize * width as usize + x as usize, value);
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

    /// 32 × 8 (`[kernel.launch.rust-gpu]`): `threads(..)` takes literals.
    #[spirv(compute(threads(32, 8)))]
    pub fn stencil2d_spirv(
        #[spirv(local_invocation_id)] lid: UVec3,
        #[spirv(workgroup_id)] wid: UVec3,
        #[spirv(num_workgroups)] groups: UVec3,
        #[spirv(uniform, descriptor_set = 0, binding = 0)] params: &Params,
        #[spirv(storage_buffer, descriptor_set = 0, binding = 1)] x_old: &[f32],
        #[spirv(storage_buffer, descriptor_set = 0, binding = 2)] x_new: &mut [f32],
        #[spirv(workgroup)] tile: &mut [f32; super::HALO_ELEMENTS],
    ) {
        let ctx = Ctx::new(lid, wid, groups, UVec3::new(32, 8, 1));
        let (old, new) = (In::new(x_old), Out::new(x_new));
        super::stencil2d_body(
            ctx,
            32,
            8,
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
