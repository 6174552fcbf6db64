//! Transpose: `b = aᵀ` for an m×n f32 matrix `a` (row-major; `b` is n×m), through a tile in
//! workgroup memory, the 2-D launch example. A workgroup of tile × block_rows invocations moves one
//! tile × tile block: it reads rows of `a` (consecutive invocations, consecutive addresses), and
//! writes rows of `b`, reading the tile by columns. Without the tile one side of the copy would
//! be strided in global memory.
//!
//! Reading a column of a tile whose rows are 32 floats long hits one shared-memory bank 32 times
//! (each bank is 4 bytes wide, 32 banks): a 32-way bank conflict. One float of padding per row
//! (`[kernel.tunables] tile_pad = 1`) shifts each row by one bank, so a column touches 32 banks.
//!
//! One kernel body (`transpose_body`) on the workbench's kernel API; thin entry points per backend.
#![cfg_attr(any(target_arch = "nvptx64", target_arch = "spirv"), no_std)]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(abi_ptx, stdarch_nvptx, asm_experimental_arch)
)]

use gpu_kernel::prelude::*;

/// Tile edge (`[kernel.tunables] tile`): the workgroup is TILE invocations wide (the manifest's
/// `threads = ["tile", "block_rows"]`). The rust-gpu entry keeps 32: its `threads(..)` takes literals.
pub const TILE: usize = tunable(option_env!("WB_TUNABLE_TILE"), 32);
/// Floats of padding after each tile row (`[kernel.tunables] tile_pad`): 1 against bank conflicts, 0
/// to see them.
pub const PAD: usize = tunable(option_env!("WB_TUNABLE_TILE_PAD"), 1);
/// The shared tile's length: room for the largest tile and padding the manifest allows (32 × 33).
pub const TILE_ELEMENTS: usize = 32 * 33;

/// The kernel: workgroup (gx, gy) moves the block of `a` at rows gy·tile.., columns gx·tile..
/// to `b` at rows gx·tile.., columns gy·tile... Invocation (x, y) copies elements x of rows y,
/// y + rows, ... of the block (rows = the workgroup's height, `block_rows`), in and out.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // the launch's buffers and scalars, as every entry passes them
#[lanes]
pub fn transpose_body(
    ctx: Ctx,
    tile: usize,
    pad: usize,
    m: u32,
    n: u32,
    a: In<f32>,
    mut b: Out<f32>,
    mut t: Shared<f32, TILE_ELEMENTS>,
) {
    let (m, n) = (m as usize, n as usize);
    let (x, y) = (ctx.local_id_x(), ctx.local_id_y());
    let rows = ctx.group_size_y();
    let stride = tile + pad;
    let col0 = ctx.group_id_x() * tile;
    let row0 = ctx.group_id_y() * tile;
    let mut j = y;
    while j < tile {
        let (r, c) = (row0 + j, col0 + x);
        if x < tile && r < m && c < n {
            t.set(j * stride + x, a.get(r * n + c));
        }
        j += rows;
    }
    ctx.barrier();
    let mut j = y;
    while j < tile {
        // Row col0 + j of b, column row0 + x: element (row0 + x, col0 + j) of a, a column of the tile.
        let (r, c) = (col0 + j, row0 + x);
        if x < tile && r < n && c < m {
            b.set(r * m + c, t.get(x * stride + j));
        }
        j += rows;
    }
}

// ---------------------------------------------------------------- cpu and cpu-sim: the host executor
/// # Safety
/// `launch` is the runtime's launch record and each pointer the buffer of that name, as the
/// workbench's cpu runtime passes them, valid for the call.
#[cfg(not(any(target_arch = "nvptx64", target_arch = "spirv")))]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn transpose_cpu(
    launch: *mut gpu_kernel::host::Launch,
    m: u32,
    n: u32,
    a: *const f32,
    b: *mut f32,
) {
    let k = unsafe { gpu_kernel::host::Kernel::new(launch) };
    let (a, b) = unsafe { (k.input(0, a), k.output(1, b)) };
    k.run_lanes(
        move |ctx| {
            let t = ctx.shared::<f32, TILE_ELEMENTS>();
            transpose_body(ctx, TILE, PAD, m, n, a, b, t)
        },
        move |wg| {
            let t = wg.shared::<f32, TILE_ELEMENTS>();
            transpose_body_lanes(wg, TILE, PAD, m, n, a, b, t)
        },
    );
}

// ---------------------------------------------------------------- nvptx: rustc's NVPTX backend
#[cfg(all(target_arch = "nvptx64", not(feature = "rust-cuda")))]
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn transpose(m: u32, n: u32, a: *const f32, b: *mut f32) {
    let t = gpu_kernel::nvptx_shared!(TRANSPOSE_TILE: [f32; TILE_ELEMENTS]);
    unsafe { transpose_body(Ctx::new(), TILE, PAD, m, n, In::new(a), Out::new(b), t) }
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
        pub m: u32,
        pub n: u32,
    }

    /// 32 × 8 (`[kernel.launch.rust-gpu]`): `threads(..)` takes literals.
    #[spirv(compute(threads(32, 8)))]
    pub fn transpose_spirv(
        #[spirv(local_invocation_id)] lid: UVec3,
        #[spirv(workgroup_id)] wid: UVec3,
        #[spirv(num_workgroups)] groups: UVec3,
        #[spirv(uniform, descriptor_set = 0, binding = 0)] params: &Params,
        #[spirv(storage_buffer, descriptor_set = 0, binding = 1)] a: &[f32],
        #[spirv(storage_buffer, descriptor_set = 0, binding = 2)] b: &mut [f32],
        #[spirv(workgroup)] t: &mut [f32; super::TILE_ELEMENTS],
    ) {
        let ctx = Ctx::new(lid, wid, groups, UVec3::new(32, 8, 1));
        super::transpose_body(
            ctx,
            32,
            super::PAD,
            params.m,
            params.n,
            In::new(a),
            Out::new(b),
            Shared::new(t),
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
    pub unsafe fn transpose(m: u32, n: u32, a: *const f32, b: *mut f32) {
        let t = unsafe {
            Shared::from_ptr(cuda_std::shared_array![f32; super::TILE_ELEMENTS] as *mut f32)
        };
        unsafe {
            super::transpose_body(
                Ctx::new(),
                super::TILE,
                super::PAD,
                m,
                n,
                In::new(a),
                Out::new(b),
                t,
            )
        }
    }
}
