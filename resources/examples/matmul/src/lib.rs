//! Matrix multiply: C = A · B, f32, row-major, A is m×k, B is k×n, C is m×n. Compute-bound:
//! 2·m·n·k flops over 4·(m·k + k·n + m·n) bytes. The GPU entries stage 16×16 tiles of A and B in
//! block-shared memory; each thread accumulates one element of C.
//!
//! One kernel body (`matmul_body`), written with the workbench's kernel API (`gpu_kernel`), the
//! tiles in workgroup memory and barriers inside; thin entry points make its handles on each
//! backend. Every backend runs each element's chain in the same order (k ascending) with a fused
//! multiply-add per step (`matmul_acc`), as nvcc compiles the CUDA C++ reference.
#![cfg_attr(any(target_arch = "nvptx64", target_arch = "spirv"), no_std)]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(abi_ptx, stdarch_nvptx, asm_experimental_arch)
)]
#![cfg_attr(
    any(target_arch = "nvptx64", target_arch = "spirv"),
    feature(core_intrinsics),
    allow(internal_features)
)]

use gpu_kernel::prelude::*;

/// A tunable's value at compile time: the workbench sets `WB_TUNABLE_<NAME>` for each
/// configuration it builds (docs/manifest.md, "Tunables"); a plain `cargo build` gets `default`.
/// Only the nvptx entries read tunables here (cfg: the other targets never see the parser).
#[cfg(target_arch = "nvptx64")]
const fn tunable(value: Option<&str>, default: usize) -> usize {
    let digits = match value {
        Some(text) => text.as_bytes(),
        None => return default,
    };
    assert!(!digits.is_empty(), "a tunable must be a whole number");
    let mut out = 0usize;
    let mut i = 0;
    while i < digits.len() {
        assert!(digits[i].is_ascii_digit(), "a tunable must be a whole number");
        out = out * 10 + (digits[i] - b'0') as usize;
        i += 1;
    }
    out
}

/// Tile edge (`[kernel.tunables] tile`): threads per block are TILE × TILE (the manifest's
/// `threads`). The rust-gpu entry keeps its own 16: its `threads(..)` attribute takes literals; the
/// host entry takes the launch's own.
#[cfg(target_arch = "nvptx64")]
pub const TILE: usize = tunable(option_env!("WB_TUNABLE_TILE"), 16);

/// `acc + Σ a(t)·b(t)` for t = 0, 1, …, len-1 in that order, shared by every backend: `a(t)` is
/// element t of a stretch of a row of A, `b(t)` the matching element of a column of B, read from
/// the workgroup's tiles.
#[inline(always)]
pub fn matmul_acc<A: Fn(usize) -> f32, B: Fn(usize) -> f32>(
    mut acc: f32,
    len: usize,
    a: A,
    b: B,
) -> f32 {
    let mut t = 0;
    while t < len {
        acc = fused_multiply_add(a(t), b(t), acc);
        t += 1;
    }
    acc
}

/// `a·b + c` rounded once (IEEE fusedMultiplyAdd), on every backend: nvcc contracts
/// `acc += a * b` into `fma.rn.f32` by default, rustc never contracts, so the shared logic asks for
/// the fused operation itself. With it every backend rounds each step of the chain identically.
/// `f32::mul_add` lives in `std`; the no_std GPU targets take the intrinsic it is built on
/// (`llvm.fma.f32` → `fma.rn.f32` on NVPTX, GLSL.std.450 `Fma` in rust-gpu).
#[inline(always)]
pub fn fused_multiply_add(a: f32, b: f32, c: f32) -> f32 {
    #[cfg(any(target_arch = "nvptx64", target_arch = "spirv"))]
    #[allow(unused_unsafe)]
    return unsafe { core::intrinsics::fmaf32(a, b, c) };
    #[cfg(not(any(target_arch = "nvptx64", target_arch = "spirv")))]
    return a.mul_add(b, c);
}

/// The kernel, for `tile` × `tile` workgroups (`TT` ≥ tile · tile: the tiles' length):
/// invocation (tx, ty) of workgroup (bx, by) computes C[by·tile + ty][bx·tile + tx]. Per step of
/// `tile` along k, the workgroup loads a tile of A and one of B into workgroup memory (missing
/// elements 0), waits, accumulates its row of one by the column of the other, and waits again
/// before the tiles are overwritten. Invocations beyond tile × tile (a wider launch) only join the
/// barriers. The GPU entries pass a constant `tile` (inlined: the PTX is as if written for it).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn matmul_body<const TT: usize>(
    ctx: Ctx,
    tile: usize,
    m: u32,
    n: u32,
    k: u32,
    a: In<f32>,
    b: In<f32>,
    mut c: Out<f32>,
    mut a_tile: Shared<f32, TT>,
    mut b_tile: Shared<f32, TT>,
) {
    let (tx, ty) = (ctx.local_id_x(), ctx.local_id_y());
    let row = ctx.group_id_y() * tile + ty;
    let col = ctx.group_id_x() * tile + tx;
    let (m, n, k) = (m as usize, n as usize, k as usize);
    let in_tile = tx < tile && ty < tile;
    let mut acc = 0.0f32;
    let mut k0 = 0;
    while k0 < k {
        if in_tile {
            let (ka, kb) = (k0 + tx, k0 + ty);
            let va = if row < m && ka < k { a[row * k + ka] } else { 0.0 };
            let vb = if kb < k && col < n { b[kb * n + col] } else { 0.0 };
            a_tile.set(ty * tile + tx, va);
            b_tile.set(ty * tile + tx, vb);
        }
        ctx.barrier();
        if in_tile {
            acc = matmul_acc(acc, tile, |t| a_tile.get(ty * tile + t), |t| b_tile.get(t * tile + tx));
        }
        ctx.barrier();
        k0 += tile;
    }
    if in_tile && row < m && col < n {
        c[row * n + col] = acc;
    }
}

/// The largest tile × tile a workgroup holds (1024 invocations): the host's tiles are this long.
pub const MAX_TILE_ELEMENTS: usize = 1024;

// ---------------------------------------------------------------- cpu and cpu-sim: the host executor
#[cfg(not(any(target_arch = "nvptx64", target_arch = "spirv")))]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn matmul_cpu(
    launch: *mut gpu_kernel::host::Launch,
    m: u32,
    n: u32,
    k: u32,
    a: *const f32,
    b: *const f32,
    c: *mut f32,
) {
    // The tile is the launch's (`threads = ["tile", "tile"]`), whatever value the tunable takes.
    let tile = unsafe { (*launch).threads[0] } as usize;
    let kernel = unsafe { gpu_kernel::host::Kernel::new(launch) };
    let (a, b, c) = unsafe { (kernel.input(0, a), kernel.input(1, b), kernel.output(2, c)) };
    kernel.run(|ctx| {
        let a_tile = ctx.shared::<f32, MAX_TILE_ELEMENTS>();
        let b_tile = ctx.shared::<f32, MAX_TILE_ELEMENTS>();
        matmul_body(ctx, tile, m, n, k, a, b, c, a_tile, b_tile)
    });
}

// ---------------------------------------------------------------- nvptx: rustc's NVPTX backend
#[cfg(all(target_arch = "nvptx64", not(feature = "rust-cuda")))]
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn matmul(m: u32, n: u32, k: u32, a: *const f32, b: *const f32, c: *mut f32) {
    // Two TILE × TILE f32 tiles of block-shared memory, declared in PTX once each.
    let a_tile = gpu_kernel::nvptx_shared!(MATMUL_A_TILE: [f32; TILE * TILE]);
    let b_tile = gpu_kernel::nvptx_shared!(MATMUL_B_TILE: [f32; TILE * TILE]);
    let (a, b, c) = unsafe { (In::new(a), In::new(b), Out::new(c)) };
    unsafe { matmul_body(Ctx::new(), TILE, m, n, k, a, b, c, a_tile, b_tile) }
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
        pub k: u32,
    }

    /// rust-gpu's `threads(..)` takes literals, so this entry keeps 16 × 16 tiles whatever the
    /// `tile` tunable says (its launch is `[kernel.launch.rust-gpu]`).
    const TILE: usize = 16;

    #[spirv(compute(threads(16, 16)))]
    pub fn matmul_spirv(
        #[spirv(local_invocation_id)] lid: UVec3,
        #[spirv(workgroup_id)] wid: UVec3,
        #[spirv(num_workgroups)] groups: UVec3,
        #[spirv(uniform, descriptor_set = 0, binding = 0)] params: &Params,
        #[spirv(storage_buffer, descriptor_set = 0, binding = 1)] a: &[f32],
        #[spirv(storage_buffer, descriptor_set = 0, binding = 2)] b: &[f32],
        #[spirv(storage_buffer, descriptor_set = 0, binding = 3)] c: &mut [f32],
        #[spirv(workgroup)] a_tile: &mut [f32; TILE * TILE],
        #[spirv(workgroup)] b_tile: &mut [f32; TILE * TILE],
    ) {
        let ctx = Ctx::new(lid, wid, groups, UVec3::new(16, 16, 1));
        let (p, a, b, c) = (params, In::new(a), In::new(b), Out::new(c));
        let (a_tile, b_tile) = (Shared::new(a_tile), Shared::new(b_tile));
        super::matmul_body(ctx, TILE, p.m, p.n, p.k, a, b, c, a_tile, b_tile);
    }
}

// ---------------------------------------------------------------- rust-cuda: rustc_codegen_nvvm
#[cfg(all(target_os = "cuda", feature = "rust-cuda"))]
pub mod rust_cuda_entry {
    use super::TILE;
    use cuda_std::prelude::*;
    use gpu_kernel::prelude::*;
    // cuda_std 0.2's `shared_array!` names `MaybeUninit` unqualified (later versions import it).
    #[allow(unused_imports)]
    use core::mem::MaybeUninit;

    // Raw pointers, not slices: Rust-CUDA passes a slice as two parameters (pointer, length),
    // and the runners pass one device pointer per buffer.
    #[kernel]
    pub unsafe fn matmul(m: u32, n: u32, k: u32, a: *const f32, b: *const f32, c: *mut f32) {
        let a_tile = unsafe { Shared::from_ptr(cuda_std::shared_array![f32; TILE * TILE] as *mut f32) };
        let b_tile = unsafe { Shared::from_ptr(cuda_std::shared_array![f32; TILE * TILE] as *mut f32) };
        let (a, b, c) = unsafe { (In::new(a), In::new(b), Out::new(c)) };
        unsafe { super::matmul_body(Ctx::new(), TILE, m, n, k, a, b, c, a_tile, b_tile) }
    }
}
