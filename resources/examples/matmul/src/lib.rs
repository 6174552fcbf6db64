//! Matrix multiply: C = A · B, f32, row-major, A is m×k, B is k×n, C is m×n. Compute-bound:
//! 2·m·n·k flops over 4·(m·k + k·n + m·n) bytes. Two forms, chosen by the tunable `per_thread`:
//! 1 (the default, the one to read first) stages tile×tile tiles of A and B in block-shared memory
//! and each thread accumulates one element of C (`matmul_body`); 4 or 8 is register blocking
//! (`matmul_blocked_body`): each thread accumulates per_thread × per_thread elements of C in
//! registers from (tile·per_thread)×8 slices of A and B that the workgroup loads in 16-byte
//! accesses, reading them back from shared memory 16 bytes at a time, so each value loaded feeds
//! per_thread fused multiply-adds.
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

/// Tile edge (`[kernel.tunables] tile`): threads per block are TILE × TILE (the manifest's
/// `threads`). The rust-gpu entry keeps its own 16: its `threads(..)` attribute takes literals; the
/// host entry takes the launch's own.
#[cfg(target_arch = "nvptx64")]
pub const TILE: usize = tunable(option_env!("WB_TUNABLE_TILE"), 16);

/// Elements of C per invocation along each axis (`[kernel.tunables] per_thread`): 1 (the tiled
/// form), 4 or 8 (register blocking). Every Rust entry but rust-gpu's reads it (the host's too: the
/// launch's grid, `ceil_div(n, tile * per_thread)`, follows it).
pub const PER_THREAD: usize = tunable(option_env!("WB_TUNABLE_PER_THREAD"), 1);
const _: () = assert!(
    PER_THREAD == 1 || PER_THREAD == 4 || PER_THREAD == 8,
    "per_thread is 1, 4 or 8"
);

/// k per step of the register-blocked form: each step stages (tile·per_thread)×STEP of A and
/// STEP×(tile·per_thread) of B.
pub const STEP: usize = 8;

/// Shared-memory elements each of the two tiles needs (the larger of the two forms').
pub const fn tile_elements(tile: usize, per_thread: usize) -> usize {
    let blocked = STEP * tile * per_thread;
    if per_thread > 1 && blocked > tile * tile {
        blocked
    } else {
        tile * tile
    }
}

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
            let va = if row < m && ka < k {
                a[row * k + ka]
            } else {
                0.0
            };
            let vb = if kb < k && col < n {
                b[kb * n + col]
            } else {
                0.0
            };
            a_tile.set(ty * tile + tx, va);
            b_tile.set(ty * tile + tx, vb);
        }
        ctx.barrier();
        if in_tile {
            acc = matmul_acc(
                acc,
                tile,
                |t| a_tile.get(ty * tile + t),
                |t| b_tile.get(t * tile + tx),
            );
        }
        ctx.barrier();
        k0 += tile;
    }
    if in_tile && row < m && col < n {
        c[row * n + col] = acc;
    }
}

/// `unroll!(i < N, { body })` runs `body` for `i` = 0, 1, …, N-1 (N ≤ 8, a constant: `STEP`, `R`
/// or `R / 4`), written out once per `i` rather than looped, so every index into the accumulators
/// is a constant in the compiled code on every backend. A loop leaves that to LLVM's unroller: at
/// per_thread = 8 the k step (8 × 64 fused multiply-adds) is above its size threshold, so rustc
/// kept that loop, and the write-back's loop over rows, which indexes `acc` by a variable and so
/// put the 64 accumulators in local memory (256 B of stack, all 64 stored to it after every k
/// step). Written out, they are 64 registers, as nvcc's `#pragma unroll` makes them. The `if`s on
/// constants fold away: no test is left in the code.
macro_rules! unroll {
    ($i:ident < $n:expr, $body:block) => {
        unroll!(@each $i, $n, $body, 0 1 2 3 4 5 6 7)
    };
    (@each $i:ident, $n:expr, $body:block, $($at:literal)*) => {
        $(
            if $at < $n {
                let $i: usize = $at;
                $body
            }
        )*
    };
}
const _: () = assert!(
    STEP <= 8 && PER_THREAD <= 8,
    "unroll! writes out at most 8 steps"
);

/// Four elements of a row of A or B from `base`, of which `avail` exist (the rest 0): one 16-byte
/// load where all four exist and `aligned` (the row length a multiple of 4), else one by one.
#[inline(always)]
fn quad(x: &In<f32>, base: usize, avail: usize, aligned: bool) -> [f32; 4] {
    if aligned && avail >= 4 {
        return x.get4(base);
    }
    // Written out, not a loop over an array index: a GPU keeps the four in registers.
    let at = |t: usize| if t < avail { x.get(base + t) } else { 0.0 };
    [at(0), at(1), at(2), at(3)]
}

/// The register-blocked kernel, for `tile` × `tile` workgroups and `R` (= per_thread, 4 or 8):
/// workgroup (bx, by) computes the edge × edge block of C at (by·edge, bx·edge), edge = tile·R.
/// Invocation (tx, ty) owns rows ty·4 + g·4·tile + (0..4) and columns tx·4 + g·4·tile + (0..4) of
/// it (g < R/4), so the 16-byte reads of the shared tiles by neighbouring invocations are
/// neighbouring. Per step of STEP along k the workgroup stages A's edge × STEP slice (k-major:
/// transposed) and B's STEP × edge slice (16-byte global loads, missing elements 0), waits, and
/// every invocation does R·R fused multiply-adds per k from 2·R/4 16-byte shared reads. Each
/// element's chain runs k ascending from 0, one fused multiply-add a step, as `matmul_body`'s:
/// the two forms agree bit for bit.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn matmul_blocked_body<const R: usize, const TT: usize>(
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
    let (m, n, k) = (m as usize, n as usize, k as usize);
    let edge = tile * R;
    let (row0, col0) = (ctx.group_id_y() * edge, ctx.group_id_x() * edge);
    let threads = tile * tile;
    let tid = ty * tile + tx;
    let in_tile = tx < tile && ty < tile; // a wider launch: the extra invocations only join the barriers
    let mut acc = [[0.0f32; R]; R];
    let mut k0 = 0;
    while k0 < k {
        if in_tile {
            let mut q = tid;
            while q < edge * STEP / 4 {
                let (r, kq) = (q / (STEP / 4), (q % (STEP / 4)) * 4);
                let avail = if row0 + r < m {
                    k.saturating_sub(k0 + kq)
                } else {
                    0
                };
                let v = quad(&a, (row0 + r) * k + k0 + kq, avail, k % 4 == 0);
                a_tile.set(kq * edge + r, v[0]); // written out, as `quad`'s four loads
                a_tile.set((kq + 1) * edge + r, v[1]);
                a_tile.set((kq + 2) * edge + r, v[2]);
                a_tile.set((kq + 3) * edge + r, v[3]);
                q += threads;
            }
            let mut q = tid;
            while q < STEP * edge / 4 {
                let (r, cq) = (q / (edge / 4), (q % (edge / 4)) * 4);
                let avail = if k0 + r < k {
                    n.saturating_sub(col0 + cq)
                } else {
                    0
                };
                let v = quad(&b, (k0 + r) * n + col0 + cq, avail, n % 4 == 0);
                b_tile.set(r * edge + cq, v[0]);
                b_tile.set(r * edge + cq + 1, v[1]);
                b_tile.set(r * edge + cq + 2, v[2]);
                b_tile.set(r * edge + cq + 3, v[3]);
                q += threads;
            }
        }
        ctx.barrier();
        if in_tile {
            unroll!(kk < STEP, {
                let (mut av, mut bv) = ([0.0f32; R], [0.0f32; R]);
                unroll!(g < R / 4, {
                    let a4 = a_tile.get4(kk * edge + g * 4 * tile + ty * 4);
                    let b4 = b_tile.get4(kk * edge + g * 4 * tile + tx * 4);
                    unroll!(t < 4, {
                        av[g * 4 + t] = a4[t];
                        bv[g * 4 + t] = b4[t];
                    });
                });
                unroll!(i < R, {
                    unroll!(j < R, {
                        acc[i][j] = fused_multiply_add(av[i], bv[j], acc[i][j]);
                    });
                });
            });
        }
        ctx.barrier();
        k0 += STEP;
    }
    if in_tile {
        unroll!(i < R, {
            let row = row0 + (i / 4) * 4 * tile + ty * 4 + i % 4;
            unroll!(g < R / 4, {
                let col = col0 + g * 4 * tile + tx * 4;
                let v = [
                    acc[i][g * 4],
                    acc[i][g * 4 + 1],
                    acc[i][g * 4 + 2],
                    acc[i][g * 4 + 3],
                ];
                if row < m && n % 4 == 0 && col + 4 <= n {
                    c.set4(row * n + col, v);
                } else if row < m {
                    unroll!(t < 4, {
                        if col + t < n {
                            c.set(row * n + col + t, v[t]);
                        }
                    });
                }
            });
        });
    }
}

/// The kernel in the form `PER_THREAD` chooses (a constant: the other form is not in the code).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn matmul_kernel<const TT: usize>(
    ctx: Ctx,
    tile: usize,
    m: u32,
    n: u32,
    k: u32,
    a: In<f32>,
    b: In<f32>,
    c: Out<f32>,
    a_tile: Shared<f32, TT>,
    b_tile: Shared<f32, TT>,
) {
    match PER_THREAD {
        4 => matmul_blocked_body::<4, TT>(ctx, tile, m, n, k, a, b, c, a_tile, b_tile),
        8 => matmul_blocked_body::<8, TT>(ctx, tile, m, n, k, a, b, c, a_tile, b_tile),
        _ => matmul_body::<TT>(ctx, tile, m, n, k, a, b, c, a_tile, b_tile),
    }
}

/// The largest tile a workgroup holds: tile × tile ≤ 1024 invocations, and (tile · per_thread) ×
/// STEP ≤ 1024 (the manifest's constraints): the host's tiles are this long.
pub const MAX_TILE_ELEMENTS: usize = 1024;

// ---------------------------------------------------------------- cpu and cpu-sim: the host executor
/// # Safety
/// `launch` is the runtime's launch record and each pointer the buffer of that name, as the
/// workbench's cpu runtime passes them, valid for the call.
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
    // Not `move` (see gpu_kernel's host/mod.rs): by value, the captures stay live across the
    // tile loop's barriers on every invocation's own stack, 12 % slower on the cpu backend.
    kernel.run(|ctx| {
        let a_tile = ctx.shared::<f32, MAX_TILE_ELEMENTS>();
        let b_tile = ctx.shared::<f32, MAX_TILE_ELEMENTS>();
        matmul_kernel(ctx, tile, m, n, k, a, b, c, a_tile, b_tile)
    });
}

// ---------------------------------------------------------------- nvptx: rustc's NVPTX backend
#[cfg(all(target_arch = "nvptx64", not(feature = "rust-cuda")))]
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn matmul(
    m: u32,
    n: u32,
    k: u32,
    a: *const f32,
    b: *const f32,
    c: *mut f32,
) {
    // Two f32 tiles of block-shared memory (TILE × TILE, or (TILE · PER_THREAD) × STEP), declared
    // in PTX once each.
    let a_tile = gpu_kernel::nvptx_shared!(MATMUL_A_TILE: [f32; tile_elements(TILE, PER_THREAD)]);
    let b_tile = gpu_kernel::nvptx_shared!(MATMUL_B_TILE: [f32; tile_elements(TILE, PER_THREAD)]);
    let (a, b, c) = unsafe { (In::new(a), In::new(b), Out::new(c)) };
    unsafe { matmul_kernel(Ctx::new(), TILE, m, n, k, a, b, c, a_tile, b_tile) }
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

    /// rust-gpu's `threads(..)` takes literals, so this entry keeps 16 × 16 tiles and the tiled
    /// form whatever the `tile` and `per_thread` tunables say (its launch is `[kernel.launch.rust-gpu]`).
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
    use super::{tile_elements, PER_THREAD, TILE};
    use cuda_std::prelude::*;
    use gpu_kernel::prelude::*;
    // cuda_std 0.2's `shared_array!` names `MaybeUninit` unqualified (later versions import it).
    #[allow(unused_imports)]
    use core::mem::MaybeUninit;

    // Raw pointers, not slices: Rust-CUDA passes a slice as two parameters (pointer, length),
    // and the runners pass one device pointer per buffer.
    #[kernel]
    pub unsafe fn matmul(m: u32, n: u32, k: u32, a: *const f32, b: *const f32, c: *mut f32) {
        let a_tile = unsafe {
            Shared::from_ptr(
                cuda_std::shared_array![f32; tile_elements(TILE, PER_THREAD)] as *mut f32,
            )
        };
        let b_tile = unsafe {
            Shared::from_ptr(
                cuda_std::shared_array![f32; tile_elements(TILE, PER_THREAD)] as *mut f32,
            )
        };
        let (a, b, c) = unsafe { (In::new(a), In::new(b), Out::new(c)) };
        unsafe { super::matmul_kernel(Ctx::new(), TILE, m, n, k, a, b, c, a_tile, b_tile) }
    }
}
